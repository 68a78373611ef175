//! Shards, merging and soak passes: the shards of the real catalogue are
//! disjoint and make the whole run; merging their reports gives the run's
//! verdict; a soak runs each pass on its own seed and replays it alone.

mod support;

use std::collections::BTreeSet;
use std::process::Command;

use support::*;

fn listed(partition: Option<&str>) -> Vec<String> {
    let mut cmd = Command::new(conformance());
    cmd.args(["--list", "--format", "json"]);
    if let Some(p) = partition {
        cmd.args(["--partition", p]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_shards_of_the_catalogue_are_disjoint_and_make_the_whole_run() {
    let all = listed(None);
    assert!(all.len() >= 50);
    for kind in ["count", "hash"] {
        for n in [1, 2, 3, 7] {
            let mut union = BTreeSet::new();
            let mut sizes = Vec::new();
            for k in 1..=n {
                let shard = listed(Some(&format!("{kind}:{k}/{n}")));
                sizes.push(shard.len());
                for id in shard {
                    assert!(union.insert(id.clone()), "{kind}:{k}/{n}: {id} is in an earlier shard too");
                }
            }
            let whole: BTreeSet<String> = all.iter().cloned().collect();
            assert_eq!(union, whole, "{kind} with {n} shards: the union is not the whole run");
            if n > 1 {
                assert!(sizes.iter().all(|&s| s > 0), "{kind}/{n}: an empty shard {sizes:?}");
            }
        }
    }
    let bad = Command::new(conformance()).args(["--list", "--partition", "hash:4/3"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

fn shard_report(dir: &std::path::Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = Command::new(conformance())
        .args(["--format", "json", "--reference"])
        .arg(reference())
        .args(args)
        .output()
        .unwrap();
    let path = dir.join(name);
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

#[test]
fn merging_the_shards_gives_the_whole_runs_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let subject = reference();
    let args =
        |p: &'static str| ["--impl", subject.to_str().unwrap(), "--cases", "format/*", "--partition", p];
    let one = shard_report(dir.path(), "1.json", &args("count:1/2"));
    let two = shard_report(dir.path(), "2.json", &args("count:2/2"));
    let junit = dir.path().join("all.xml");
    let merge = |files: &[&std::path::Path]| {
        Command::new(conformance()).arg("merge").args(files).arg("--junit").arg(&junit).output().unwrap()
    };
    let out = merge(&[&one, &two]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let format_cases = listed(None).into_iter().filter(|id| id.starts_with("format/")).count();
    assert!(stdout.contains(&format!("\n{format_cases} cases in")), "{stdout}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), format_cases, "{xml}");

    // A shard twice overlaps; a shard cut short fails the merged run.
    assert_eq!(merge(&[&one, &one]).status.code(), Some(2));
    let text = std::fs::read_to_string(&two).unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, text.lines().filter(|l| !l.contains("\"summary\"")).collect::<Vec<_>>().join("\n"))
        .unwrap();
    let out = merge(&[&one, &cut]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did not finish"));

    // A failing case in a shard fails the merged run.
    let broken = broken();
    let out = Command::new(conformance())
        .args(["--format", "json", "--reference"])
        .arg(reference())
        .args(["--impl", broken.to_str().unwrap(), "--cases", "steps/claim-order-priority"])
        .env("UKUE_BROKEN", "reversed-priority")
        .output()
        .unwrap();
    let failing = dir.path().join("failing.json");
    std::fs::write(&failing, &out.stdout).unwrap();
    let out = merge(&[&one, &failing]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_soak_runs_each_pass_on_a_seed_of_its_own_and_replays_it() {
    let subject = reference();
    let args =
        ["--impl", subject.to_str().unwrap(), "--cases", "format/meta-keys", "--repeat", "3", "--seed", "5"];
    let (code, reports, stderr) = run_suite(&args, &[]);
    let cases: Vec<&serde_json::Value> = reports.iter().filter(|r| r.get("id").is_some()).collect();
    assert_eq!(code, 0, "{stderr}\n{cases:#?}");
    assert_eq!(cases.len(), 3);
    let seeds: BTreeSet<u64> = cases.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds.len(), 3, "each pass has its own seed");
    assert!(!seeds.contains(&5));
    for r in &cases {
        let replay = r["replay"].as_str().unwrap();
        assert!(replay.contains(&format!("--seed {}", r["seed"])), "{replay}");
        assert!(!replay.contains("--repeat"), "a replay runs that pass alone: {replay}");
    }
    let iterations: Vec<u64> = cases.iter().map(|r| r["iteration"].as_u64().unwrap()).collect();
    assert_eq!(iterations, [1, 2, 3]);
    assert_eq!(reports.last().unwrap()["figures"]["runs"], 3);

    // --fail-fast stops after the first failing pass.
    let broken = broken();
    let args = ["--impl", broken.to_str().unwrap(), "--cases", "steps/claim-order-priority", "--repeat", "3"];
    let mut fast = args.to_vec();
    fast.push("--fail-fast");
    let (code, reports, _) = run_suite(&fast, &[("UKUE_BROKEN", "reversed-priority")]);
    assert_eq!(code, 1);
    assert_eq!(reports.iter().filter(|r| r.get("id").is_some()).count(), 1, "stopped after pass 1");
}
