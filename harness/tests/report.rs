//! The reports of a failing run, against a deliberately broken subject
//! (`split-claim`: two workers take one job): its JSON report carries the
//! timeline of the history, JUnit and `merge --html` carry it too, and the
//! HTML page, rendered in headless Chromium, draws the lanes and bars the
//! history says, with no console error. The test leaves a screenshot in
//! target/tmp/report-split-claim.png.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

const CASE: &str = "concurrency/drain-while-adding";

/// A run of CASE against split-claim that failed (a race: a few seeds),
/// with its directory kept, its HTML page and its JUnit file; returns the
/// case's JSON report.
fn failing_run(dir: &Path) -> serde_json::Value {
    let html = dir.join("report.html");
    let junit = dir.join("junit.xml");
    for seed in ["1", "2", "3", "4"] {
        let (code, reports, stderr) = run_suite(
            &[
                "--impl",
                broken().to_str().unwrap(),
                "--cases",
                CASE,
                "--seed",
                seed,
                "--keep",
                "--html",
                html.to_str().unwrap(),
                "--junit",
                junit.to_str().unwrap(),
            ],
            &[("UKUE_BROKEN", "split-claim")],
        );
        if code == 1 {
            std::fs::write(
                dir.join("report.json"),
                reports.iter().map(|r| format!("{r}\n")).collect::<String>(),
            )
            .unwrap();
            return reports.into_iter().find(|r| r["id"] == CASE).expect("the case's report");
        }
        eprintln!("seed {seed}: exit {code} (the race did not show) {stderr}");
    }
    panic!("split-claim passed {CASE} with every seed");
}

/// The history the case kept (`history.jsonl`, Jepsen-style ops): each
/// run's probe pid and its worker's pid, and its job.
fn kept_runs(report: &serde_json::Value) -> BTreeMap<u32, (u32, i64)> {
    let dir = PathBuf::from(report["work_dir"].as_str().expect("--keep keeps the case's directory"));
    let text = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    let mut runs = BTreeMap::new();
    for line in text.lines() {
        let op: serde_json::Value = serde_json::from_str(line).unwrap();
        if op["f"] != "run" || op["type"] != "invoke" {
            continue;
        }
        // "probe PID (worker WPID)"
        let process = op["process"].as_str().unwrap();
        let numbers: Vec<u32> =
            process.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
        runs.insert(numbers[0], (numbers[1], op["job"].as_i64().unwrap()));
    }
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    runs
}

#[test]
fn a_failing_runs_json_and_junit_carry_its_timeline_and_merge_makes_the_same_page() {
    let dir = tempfile::tempdir().unwrap();
    let report = failing_run(dir.path());
    let runs = kept_runs(&report);
    let timeline = &report["timeline"];
    let lanes: BTreeSet<u64> =
        timeline["lanes"].as_array().unwrap().iter().map(|l| l["worker_pid"].as_u64().unwrap()).collect();
    let workers: BTreeSet<u64> = runs.values().map(|(w, _)| u64::from(*w)).collect();
    assert_eq!(lanes, workers, "a lane per worker process of the history");
    let bars: BTreeSet<u64> =
        timeline["bars"].as_array().unwrap().iter().map(|b| b["pid"].as_u64().unwrap()).collect();
    let pids: BTreeSet<u64> = runs.keys().map(|p| u64::from(*p)).collect();
    assert_eq!(bars, pids, "a bar per run of the history");
    let blamed: Vec<&serde_json::Value> =
        timeline["bars"].as_array().unwrap().iter().filter(|b| b["blamed"] == true).collect();
    assert!(blamed.len() >= 2, "the checkers blame runs: {report}");
    assert!(report["rule_text"].as_str().unwrap().contains("At least once"), "{report}");
    assert!(report["rules"][0] == "6.3");

    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(junit.contains("timeline: 3 worker processes") && junit.contains("[blamed]"), "{junit}");
    assert!(
        junit.contains("name=\"run\" value=\"") && junit.contains("ukue-broken (ukue "),
        "the run, as the HTML's top: {junit}"
    );

    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let merged = dir.path().join("merged.html");
    let out = Command::new(conformance())
        .arg("merge")
        .arg(dir.path().join("report.json"))
        .arg("--html")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let merged = std::fs::read_to_string(merged).unwrap();
    let svg = |page: &str| overview(page).to_string();
    assert_eq!(svg(&merged), svg(&page), "merge draws the same timeline from the JSON report");
    assert!(merged.contains("ukue-broken"), "the run's implementation");
}

/// The first overview timeline of a page.
fn overview(page: &str) -> &str {
    let start = page.find("<svg class=\"timeline overview").expect("an overview timeline");
    let end = start + page[start..].find("</svg>").unwrap();
    &page[start..end]
}

/// `name="VALUE"` attributes of the elements of `html` that start with `tag`.
fn attributes<'a>(html: &'a str, tag: &str, name: &str) -> Vec<&'a str> {
    html.split(tag)
        .skip(1)
        .filter_map(|rest| {
            let element = &rest[..rest.find('>')?];
            let at = element.find(&format!(" {name}=\""))? + name.len() + 3;
            element[at..].split('"').next()
        })
        .collect()
}

/// Runs headless Chromium with the flags of DEVELOPERS.md (and no name
/// resolution: nothing may be fetched), a fresh profile, and `args`, until
/// it ends or `done` holds; kills it (its whole group) then, or after
/// [`CHROMIUM_DEADLINE`]. Returns stdout and stderr, or None when it hung.
fn chromium_until(args: &[&str], done: &dyn Fn() -> bool) -> Option<(String, String)> {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("chromium starts");
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let out_pipe = child.stdout.take().unwrap();
    let err_pipe = child.stderr.take().unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let (out, err) = (read(Box::new(out_pipe)), read(Box::new(err_pipe)));
    let deadline = Instant::now() + CHROMIUM_DEADLINE;
    let hung = loop {
        if child.try_wait().unwrap().is_some() || done() {
            break false;
        }
        if Instant::now() > deadline {
            break true;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Its helpers share its group; none may outlive it (and the pipes
    // close only when they have all gone).
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    if hung {
        eprintln!("chromium {args:?} did not end within {CHROMIUM_DEADLINE:?}; its log:\n{err}");
        return None;
    }
    Some((out, err))
}

/// [`chromium_until`] it ends.
fn chromium(args: &[&str]) -> (String, String) {
    chromium_until(args, &|| false)
        .unwrap_or_else(|| panic!("chromium {args:?} did not end within {CHROMIUM_DEADLINE:?}"))
}

/// A screenshot of `url` in `shot`: done once the file is a whole PNG, as
/// headless Chromium may linger after writing it. A Chromium that hangs
/// before it writes (seen once, on a loaded CI machine) is tried once more:
/// what is tested is the page, not the browser.
fn screenshot(url: &str, shot: &Path) -> Vec<u8> {
    let whole_png =
        || std::fs::read(shot).is_ok_and(|png| png.starts_with(b"\x89PNG") && png.ends_with(PNG_END));
    let size = "--window-size=1300,1900";
    let arg = format!("--screenshot={}", shot.display());
    for _ in 0..2 {
        let _ = std::fs::remove_file(shot);
        if chromium_until(&["--hide-scrollbars", size, &arg, url], &whole_png).is_some() && whole_png() {
            return std::fs::read(shot).unwrap();
        }
    }
    panic!("chromium wrote no whole screenshot of {url} in two tries of {CHROMIUM_DEADLINE:?}")
}

/// How long one run of Chromium may take: a page of this size renders in
/// seconds, even beside the other tests.
const CHROMIUM_DEADLINE: Duration = Duration::from_secs(120);

/// The last chunk of every PNG file: IEND, no data, and its CRC.
const PNG_END: &[u8] = b"IEND\xaeB`\x82";

/// Lines of Chromium's log that are messages of the page's console.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn the_html_report_shows_the_overlapping_runs_in_chromium() {
    if !have("chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The console check can fail: a page with an error shows it.
    let bad = dir.path().join("bad.html");
    std::fs::write(&bad, "<!doctype html><p>x</p><script>no_such_function();</script>").unwrap();
    let (_, stderr) = chromium(&["--dump-dom", &format!("file://{}", bad.display())]);
    assert!(
        console_lines(&stderr).iter().any(|l| l.contains("no_such_function")),
        "Chromium's log shows no console error of a page that has one: the check below would see none either\n{stderr}"
    );

    let report = failing_run(dir.path());
    let runs = kept_runs(&report);
    let page = dir.path().join("report.html");
    let url = format!("file://{}", page.display());
    let (dom, stderr) = chromium(&["--dump-dom", &url]);
    assert!(console_lines(&stderr).is_empty(), "console messages: {:?}", console_lines(&stderr));
    assert!(dom.contains("data-ready=\"yes\""), "the page's script ran to its end");
    let html = std::fs::read_to_string(&page).unwrap();
    for fetch in ["src=", "href=\"http", "url(", "@import"] {
        assert!(!html.contains(fetch), "the page fetches something ({fetch})");
    }

    // The lanes and bars the history says, in the overview the browser built.
    let svg = overview(&dom);
    let workers: BTreeSet<String> = runs.values().map(|(w, _)| w.to_string()).collect();
    let lanes: BTreeSet<String> =
        attributes(svg, "<g class=\"lane\"", "data-worker").into_iter().map(String::from).collect();
    assert_eq!(lanes, workers, "a lane per worker process");
    let pids: BTreeSet<String> = runs.keys().map(|p| p.to_string()).collect();
    let bars: Vec<&str> = attributes(svg, "<rect class=\"run ", "data-pid");
    assert_eq!(bars.len(), runs.len(), "a bar per run");
    assert_eq!(bars.into_iter().map(String::from).collect::<BTreeSet<_>>(), pids);

    // Two blamed runs of one job overlap, and a band shows where.
    let blamed: Vec<(i64, i64, i64)> = svg
        .split("<rect class=\"run ")
        .skip(1)
        .filter(|r| r[..r.find('>').unwrap()].contains("blamed"))
        .map(|r| {
            let get = |name: &str| -> i64 {
                let at = r.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                r[at..].split('"').next().unwrap().parse().unwrap()
            };
            (get("data-job"), get("data-from"), get("data-to"))
        })
        .collect();
    let overlapping = blamed
        .iter()
        .enumerate()
        .any(|(i, a)| blamed[i + 1..].iter().any(|b| a.0 == b.0 && a.1 < b.2 && b.1 < a.2));
    assert!(overlapping, "no two blamed runs of one job overlap: {blamed:?}");
    assert!(svg.contains("<rect class=\"overlap\""), "a band where they overlap");

    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-split-claim.png");
    let png = screenshot(&url, &shot);
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "{} bytes", png.len());
    eprintln!("screenshot: {}", shot.display());
}
