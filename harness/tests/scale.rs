//! The scale family's options and figures, and `--processes`: what a run
//! with them reports, and that its replay commands keep them. (Which
//! broken programs the scale cases catch is in broken.rs and python.rs.)

mod support;

use support::*;

#[test]
fn scale_rows_sets_the_large_file_and_every_report_carries_the_figures() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("report.xml");
    let html = dir.path().join("report.html");
    let (code, reports, stderr) = run_suite(
        &[
            "--impl",
            reference().to_str().unwrap(),
            "--cases",
            "scale/list-deep",
            "--scale-rows",
            "20000",
            "--junit",
            junit.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let report = reports.iter().find(|r| r["id"] == "scale/list-deep").expect("a report");
    assert_eq!(report["status"], "pass", "{report}");
    let scale = &report["scale"];
    assert_eq!(
        (scale["small_rows"].as_u64(), scale["large_rows"].as_u64()),
        (Some(100), Some(20_000)),
        "{report}"
    );
    let samples = scale["large_samples"].as_array().expect("samples");
    assert!(samples.len() >= 10, "{report}");
    assert!(scale["ratio"].as_f64().unwrap() <= scale["bound"].as_f64().unwrap(), "{report}");
    assert!(scale["noop_ms"].as_f64().unwrap() > 0.0, "a step timed whole has its no-op: {report}");
    assert!(report["replay"].as_str().unwrap().contains("--scale-rows 20000"), "{report}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"name="scale-large-jobs" value="20000""#) && xml.contains("scale-ratio"), "{xml}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2 id=\"scale\">") && page.contains("<svg class=\"scale"),
        "the chart is on the page"
    );
}

#[test]
fn processes_scales_the_workers_and_producers_and_no_busy_wait_runs_out() {
    let (code, reports, stderr) = run_suite(
        &[
            "--impl",
            reference().to_str().unwrap(),
            "--cases",
            "concurrency/*",
            "--cases",
            "interop/reference-adds-subject-works",
            "--processes",
            "6",
            "--no-python",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    for id in ["concurrency/drain-while-adding", "interop/reference-adds-subject-works"] {
        let report = reports.iter().find(|r| r["id"] == id).expect("a report");
        assert_eq!(report["status"], "pass", "{report}");
        let figures = &report["figures"];
        assert_eq!(figures["worker_processes"], 6, "{report}");
        assert_eq!(figures["producer_processes"], 6, "{report}");
        assert_eq!(figures["database_locked"], 0, "{report}");
        assert!(report["replay"].as_str().unwrap().contains("--processes 6"), "{report}");
    }
    // Six producers of 20 jobs, run exactly once by six workers.
    let interop = reports.iter().find(|r| r["id"] == "interop/reference-adds-subject-works").unwrap();
    assert_eq!(interop["figures"]["jobs"], 120, "{interop}");
}
