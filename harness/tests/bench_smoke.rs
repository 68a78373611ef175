//! The benchmark runs end to end with tiny sizes and reports every
//! figure. No timing is asserted: the figures only have to be there,
//! positive, each with its ratio to the ceiling; the HTTP load run must
//! lose no job and answer no 5xx, which is not a time.

use std::process::Command;

#[test]
fn the_bench_reports_every_figure_with_its_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ukue-bench"))
        .args([
            "--json",
            "--quick",
            "--max-delayed",
            "1000",
            "--checker-events",
            "4000",
            "--polls",
            "20",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .expect("ukue-bench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ukue-bench failed: {}\n{stderr}", out.status);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));

    let positive = |v: &serde_json::Value| v.as_f64().is_some_and(|x| x > 0.0 && x.is_finite());
    assert!(positive(&report["ceiling_per_s"]), "{report:#}");
    let figures = report["figures"].as_array().expect("figures");
    let mut keys = vec![
        "ceiling",
        "ceiling_4p",
        "add_1p",
        "add_4p",
        "add_batch",
        "work_1p",
        "work_1p_c4",
        "work_4p",
        "work_1p_t4",
        "add_1p_t4",
        "http_add_4c",
        "http_work_4c",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    for delayed in [1, 100, 1000] {
        for figure in ["empty_claim", "add_claim_finish"] {
            for which in ["median", "p99"] {
                keys.push(format!("{figure}_{delayed}_{which}"));
            }
        }
    }
    for key in &keys {
        let figure = figures
            .iter()
            .find(|f| f["key"] == key.as_str())
            .unwrap_or_else(|| panic!("no figure {key} in {report:#}"));
        assert!(positive(&figure["value"]), "{key}: {figure}");
        assert!(positive(&figure["ratio"]), "{key}: {figure}");
        assert!(figure["unit"].as_str().is_some_and(|u| !u.is_empty()), "{key}: {figure}");
    }

    let checkers = report["checkers"].as_array().expect("checkers");
    assert_eq!(checkers.len(), 3, "{report:#}");
    assert_eq!(
        checkers.iter().map(|c| c["events"].as_u64().unwrap()).collect::<Vec<_>>(),
        [1000, 2000, 4000]
    );
    for checker in checkers {
        assert!(positive(&checker["seconds"]), "{checker}");
    }
    assert!(positive(&report["checker_ratio"]), "{report:#}");

    let http = &report["http"];
    let trip = &http["round_trip_ms"];
    for key in ["http_median", "http_p99", "in_process_median", "in_process_p99"] {
        assert!(positive(&trip[key]), "round_trip_ms.{key}: {http:#}");
    }
    for key in ["added_median", "added_p99"] {
        assert!(trip[key].as_f64().is_some_and(f64::is_finite), "round_trip_ms.{key}: {http:#}");
    }
    let polls = &http["polls"];
    assert_eq!(polls["polls"], 20, "{http:#}");
    for key in ["rss_idle_kib", "rss_polling_kib", "held_s"] {
        assert!(positive(&polls[key]), "polls.{key}: {http:#}");
    }
    for key in ["per_poll_kib", "cpu_while_waiting"] {
        assert!(polls[key].as_f64().is_some_and(|v| v >= 0.0), "polls.{key}: {http:#}");
    }
    let load = &http["load"];
    assert!(
        load["requests"].as_u64().is_some_and(|n| n > 0) && load["added"].as_u64().is_some_and(|n| n > 0)
    );
    for key in ["lost", "twice", "five_xx", "errors"] {
        assert_eq!(load[key], 0, "load.{key}: {http:#}");
    }
    assert_eq!(load["added"], load["acked"], "{http:#}");

    let targets = report["targets"].as_array().expect("targets");
    assert!(targets.len() >= 10, "{report:#}");
    for target in targets {
        assert!(target["measured"].as_f64().is_some_and(f64::is_finite), "{target}");
        assert!(target["met"].is_boolean(), "{target}");
    }
    for field in ["cpus", "memory", "disk", "sqlite"] {
        assert!(!report["machine"][field].is_null(), "machine.{field} missing: {report:#}");
    }

    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "the bench left files behind: {left:?}");
}
