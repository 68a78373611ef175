//! The suite passes the reference and fails each deliberately broken
//! program on the case meant to catch it.

mod support;

use support::*;

#[test]
fn heavy_the_whole_suite_passes_the_reference() {
    // --slow: the cases that wait 30 s run too (beside the others).
    let (code, reports, stderr) = whole_suite_against_the_reference();
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| r.get("status").is_some_and(|s| !["pass", "skipped"].contains(&s.as_str().unwrap_or(""))))
        .map(|r| r.to_string())
        .collect();
    assert!(bad.is_empty(), "cases that did not pass the reference:\n{}\n{stderr}", bad.join("\n"));
    assert_eq!(code, 0, "{stderr}");
    let summary = reports.last().expect("a summary line");
    assert_eq!(summary["ok"], true);
    assert!(summary["cases"].as_u64().unwrap() >= 50);
}

/// (bug, the case meant to catch it)
const CAUGHT_BY: &[(&str, &str)] = &[
    ("reversed-priority", "steps/claim-order-priority"),
    ("finish-without-token", "leases/stopped-worker-loses-job"),
    ("no-reaping", "steps/lease-reaped-counted"),
    ("split-claim", "concurrency/drain-while-adding"),
    ("accepts-version-2", "refusal/format-version-2"),
    ("uncounted-attempts", "steps/dead-after-max-attempts"),
    ("no-renew", "leases/renewed-while-running"),
    ("renew-from-old-end", "leases/renewed-while-running"),
    // Survivors of the cases' mutation score (docs/mutation-score.md), each
    // killed since by the case named.
    ("renew/cmp-1", "http/wrong-token-409"),
    ("release/cmp-1", "http/wrong-token-409"),
    ("fail/set-2", "cli/work-exit-other"),
    ("fail/set-6", "cli/work-exit-other"),
    ("finish_keep/hand-1", "http/tidy"),
    ("read_version/cmp-2", "sweep/format-versions"),
    ("renew/set-2", "http/claim-options"),
    ("pick/cmp-10", "steps/claim-past-delayed-levels"),
    ("pick/cmp-11", "steps/claim-own-queue"),
    ("pick/cmp-12", "steps/claim-own-queue"),
    ("finish_delete/cmp-6", "http/wrong-token-409"),
    ("finish_keep/cmp-6", "http/wrong-token-409"),
    ("fail/cmp-10", "http/wrong-token-409"),
    ("reap_dead/where-2", "leases/last-attempt-kept"),
    ("look/order-2", "steps/lease-reaped-beside-live-lease"),
    ("keep-done-dropped-with-concurrency", "steps/keep-done"),
    ("stats-without-finished-queues", "steps/stats-json"),
    ("finish_keep/cmp-1", "http/wrong-token-409"),
    ("find_index/cmp-3", "compat/app-indexes"),
    ("find_index/where-1", "compat/app-triggers"),
    ("find_tables/where-1", "refusal/triggers-named-ukue"),
    ("find_tables/cmp-2", "refusal/triggers-named-ukue"),
    ("uncounted-attempts", "steps/attempts-exact"),
    ("no-reaping", "crash/kill-workers-1"),
    ("split-add", "crash/kill-workers-1"),
    ("sync-normal", "durability/add-acknowledged-after-sync"),
    ("sync-normal", "durability/work-starts-after-sync"),
    ("sync-normal", "powerloss/subject-adds"),
    ("journal-off", "powerloss/subject-adds"),
    ("journal-off", "ioerror/add-disk-full"),
    ("wal-before-checks", "refusal/format-version-2-delete"),
    ("wal-before-checks", "refusal/no-meta-table-truncate"),
    ("wal-before-checks", "refusal/missing-version-persist"),
    // The four a server must be shown to catch: an ack without the token
    // check, a claim outside BEGIN IMMEDIATE, an endpoint without the
    // token, no body limit; and the faults of the http family.
    ("finish-without-token", "http/wrong-token-409"),
    // (http/mixed-delivery meets split-claim's race only now and then: its
    // claims are spread out in time, and a loaded CI passed it with every
    // seed. claims-race makes the claims collide.)
    ("split-claim", "http/claims-race"),
    ("serve-unauthenticated-delete", "http/auth"),
    ("serve-no-body-limit", "http/body-limit"),
    ("short-token", "steps/claim-token-fresh"),
    ("no-busy-timeout", "steps/add-waits-for-busy-file"),
    ("default-layout-only", "compat/page-size-and-encoding"),
    ("no-reaping", "http/server-killed"),
    ("serve-finishes-abandoned-claims", "http/poll-disconnect"),
    // `should` cases: they fail under --strict, which every run here has.
    ("serve-keeps-abandoned-claims", "http/poll-disconnect-gives-back"),
    ("serve-refuses-unread", "http/keep-alive-after-refusal"),
    // The servers of spec/COMMAND.md §6 and §13 (`serve-retry-conflict`'s case is a `should`).
    ("serve-negative-delay", "http/refusals"),
    ("serve-id-sign-dropped", "http/refusals"),
    ("serve-retry-conflict", "http/refusal-statuses"),
    ("serve-milliseconds", "http/add-options"),
    ("serve-milliseconds", "http/claim-options"),
    ("serve-milliseconds", "http/long-poll"),
    ("serve-json-content-type-only", "http/add-options"),
    ("serve-ignores-retry-in", "http/fail-options"),
    ("serve-expired-lease-lost", "http/lease-lost"),
    ("serve-looks-only-at-ends", "http/claim-wakes"),
    ("serve-list-limit-50", "http/list-filters"),
    ("serve-retry-all-queues", "http/tidy"),
    ("serve-ignores-keep-done", "http/tidy"),
    ("serve-host-port", "http/hosts"),
    ("serve-hosts-with-token", "http/hosts"),
    ("serve-body-limit-short", "http/body-exact"),
    ("serve-untrimmed-token", "http/serve-options"),
    ("serve-stop-fails", "http/stop"),
    ("serve-wait-uncapped", "http/claim-wait-most"),
    // The command line (spec/COMMAND.md) beyond the steps.
    ("usage-exit-1", "cli/usage-exit-2"),
    ("no-double-dash", "cli/double-dash"),
    ("version-without-format", "cli/version"),
    ("list-limit-plus-one", "cli/list-limit"),
    ("raw-control-characters", "cli/text-escape"),
    ("quiet-retry-purge", "cli/manage-prints"),
    ("add-on-interrupt", "cli/add-stdin-interrupted"),
    ("usage-twice", "cli/usage-once"),
    // The sweeps: each table run whole against one wrong reading of it.
    ("payload-argument-trimmed", "sweep/payload-argument"),
    ("add-stdin-64k", "sweep/payload-stdin"),
    ("add-stdin-lossy", "sweep/payload-stdin"),
    ("base64-url-no-padding", "sweep/payload-json"),
    ("short-stdin", "sweep/work-stdin"),
    ("claim-64k-payload", "sweep/work-stdin"),
    ("claim-64k-payload", "sweep/payload-http"),
    ("json-raw-control", "sweep/json-valid"),
    ("queue-bytes", "sweep/queue-names"),
    ("queue-cut-to-200", "sweep/queue-names"),
    ("queue-check-bytes", "sweep/queue-names-http"),
    ("priority-clamped", "sweep/priority"),
    ("attempts-32-bit", "sweep/attempts"),
    ("duration-no-fraction", "sweep/delay"),
    ("duration-no-micro", "sweep/delay"),
    ("duration-no-fraction", "sweep/work-durations"),
    ("id-32-bit", "sweep/ids"),
    ("lenient-version", "sweep/format-versions"),
    ("accepts-version-2", "sweep/format-versions"),
    ("keeps-rollback-journal", "sweep/app-databases"),
    ("vacuums-page-size", "sweep/app-databases"),
    // The command line's `work` (COMMAND.md §5).
    ("serial-work", "cli/work-concurrency"),
    ("extra-slot", "cli/work-concurrency"),
    ("no-grace", "cli/work-stop"),
    ("drops-empty-args", "cli/work-command-untouched"),
    ("command-found-late", "cli/work-command-not-found"),
    ("env-without-path-home", "cli/work-env-inherited"),
    ("signal-finishes", "cli/work-exit-other"),
    ("blank-last-error", "cli/work-exit-other"),
    ("status-only-error", "cli/work-last-error-text"),
    ("timeout-unnamed", "cli/work-last-error-text"),
    ("lease-ignored", "cli/work-lease"),
    ("poll-ignored", "cli/work-poll"),
    ("loud-quiet", "cli/work-output"),
    // Options that meet, and commands that name several jobs: caught by
    // hand-written cases too.
    ("stdin-add-default-options", "steps/add-stored"),
    ("list-limit-dropped-with-queue", "steps/list-json"),
    ("list-queue-dropped-with-after", "steps/list-json"),
    ("retry-first-only", "cli/manage-prints"),
    // Options that meet, commands that name several jobs: each caught by a
    // hand-written case every time, and by the generated runs
    // (GENERATED_FINDS) with a seed that meets them.
    ("list-state-dropped-with-queue", "steps/list-json"),
    ("purge-dead-every-queue", "steps/purge"),
    ("delete-first-only", "steps/delete"),
    ("priority-clamped", "sweep/priority"),
    ("list-after-dropped-with-state", "steps/list-json"),
    ("stats-without-finished-queues", "steps/stats-json"),
    ("keep-done-dropped-with-concurrency", "steps/keep-done"),
    // The cost of the steps (scale/*, `should` cases): each of these keeps
    // every rule and only gets slower as the file grows.
    ("no-indexes", "scale/empty-claim"),
    ("no-indexes", "scale/claim-delayed-lower"),
    ("no-indexes", "scale/claim-done-dead"),
    ("no-indexes", "scale/http-empty-claim"),
    ("pick-without-index", "scale/claim-delayed-higher"),
    ("pick-without-index", "scale/http-claim"),
    ("reap-walks-running", "scale/claim-running"),
    ("add-counts-queue", "scale/add"),
    ("list-walks-from-start", "scale/list-deep"),
    // Values read wrong, and the steps' values (issue 42): each class of
    // each input, each default, each path to the last attempt, each field
    // a step sets twice, each way of reading.
    ("at-offset-ignored", "sweep/at"),
    ("at-offset-reversed", "sweep/at"),
    ("at-fraction-dropped", "sweep/at"),
    ("delay-times-1000", "sweep/delay"),
    ("delay-over-1000", "sweep/delay"),
    ("lease-times-1000", "cli/work-lease"),
    ("timeout-times-1000", "steps/paths-to-last-attempt"),
    ("timeout-over-1000", "cli/work-stop-kill"),
    ("poll-times-1000", "cli/work-poll"),
    ("grace-times-1000", "steps/paths-to-last-attempt"),
    ("grace-over-1000", "cli/work-stop"),
    ("queue-trimmed", "sweep/queue-classes"),
    ("queue-lowercased", "sweep/queue-classes"),
    ("queue-nfc", "sweep/queue-classes"),
    ("priority-100-refused", "sweep/priority"),
    ("queue-200-refused", "sweep/queue-names"),
    ("list-limit-999", "cli/list-limit"),
    ("exit-66-permanent", "cli/work-exit-other"),
    ("timeout-permanent", "steps/paths-to-last-attempt"),
    ("default-concurrency-2", "cli/work-concurrency"),
    ("default-lease-30s", "cli/work-lease"),
    ("default-poll-2s", "cli/work-poll"),
    ("default-timeout-50s", "sweep/work-defaults"),
    ("default-grace-10s", "sweep/work-defaults"),
    ("default-grace-60s", "sweep/work-defaults"),
    ("default-attempts-5", "steps/add-stored"),
    ("default-priority-1", "steps/add-stored"),
    ("default-list-limit-100", "cli/list-limit"),
    ("default-addr-7661", "sweep/serve-defaults"),
    ("default-max-body-2m", "http/body-exact"),
    ("json-time-no-zero-millis", "sweep/json-times"),
    ("json-time-nano-form", "sweep/json-times"),
    ("base64-no-padding", "sweep/payload-json"),
    ("reap-dead-one-early", "steps/paths-to-last-attempt"),
    ("reap-dead-one-early", "http/paths-to-last-attempt"),
    ("fail-dead-one-early", "steps/paths-to-last-attempt"),
    ("fail-first-error", "steps/paths-to-last-attempt"),
    ("fail-first-error", "http/last-value-wins"),
    ("reap-first-error", "steps/paths-to-last-attempt"),
    ("reap-first-error", "http/paths-to-last-attempt"),
    ("renew-keeps-longer", "http/last-value-wins"),
    ("fail-first-run-at", "http/last-value-wins"),
    ("fail-first-updated-at", "steps/paths-to-last-attempt"),
    ("serve-stale-reads", "http/reads-fresh"),
    ("serve-time-no-zero-millis", "sweep/json-times-http"),
    ("serve-base64-no-padding", "sweep/payload-http"),
    ("serve-default-wait-10s", "sweep/serve-defaults"),
    ("serve-default-lease-30s", "http/claim-options"),
    ("serve-default-attempts-5", "http/add-options"),
    ("serve-priority-ends-refused", "http/add-options"),
    // The sign: survivors of the classic operators (abs) until a case gave
    // a negative value and read back what was done with it.
    ("get/abs-2", "sweep/ids"),
    ("delete/abs-2", "sweep/ids"),
    ("list/abs-2", "steps/list-json"),
    ("stats/abs-14", "sweep/at"),
    ("list/abs-4", "sweep/at"),
    ("pick/abs-13", "sweep/at-http"),
    ("fail/abs-5", "sweep/at-http"),
];

/// Bugs that only show when processes race, or a claim with the moment
/// its client leaves.
const RACES: &[&str] = &["split-claim", "serve-finishes-abandoned-claims", "serve-keeps-abandoned-claims"];

/// The bugs the generated command runs (differential/commands) find
/// beside their hand-written cases. A generated case searches for a time
/// (two minutes a seed here), and how far it gets depends on the machine:
/// seed 14 finds each by its 40th sequence on a quiet one, and found
/// list-state-dropped-with-queue in neither seed's two minutes on a
/// machine at load 20. So the gate holds each bug to its hand-written case
/// (CAUGHT_BY), and the `full` profile (docs/testing.md) checks the search.
const GENERATED_FINDS: &[(&str, &str)] = &[
    ("list-state-dropped-with-queue", "differential/commands"),
    ("purge-dead-every-queue", "differential/commands"),
    ("delete-first-only", "differential/commands"),
    ("priority-clamped", "differential/commands"),
    ("stats-without-finished-queues", "differential/commands"),
    ("keep-done-dropped-with-concurrency", "differential/commands"),
];

#[test]
fn heavy_each_broken_program_fails_the_case_meant_to_catch_it() {
    each_fails_its_case(CAUGHT_BY);
}

#[test]
fn full_the_generated_runs_find_the_bugs_of_options_that_meet() {
    each_fails_its_case(GENERATED_FINDS);
}

fn each_fails_its_case(caught_by: &[(&str, &str)]) {
    let escaped: Vec<String> = each_in_parallel(caught_by, HEAVY_THREADS, |(bug, case)| {
        // A race (split-claim) shows only when claims collide: it gets a
        // few seeds; the others are caught on every run.
        let seeds: &[&str] = if RACES.contains(bug) { &["1", "2", "3", "4"] } else { &["1"] };
        // --strict: a `should` case (add-waits-for-busy-file) fails too.
        // A generated case runs until it finds a difference: here for up
        // to two minutes a seed. Seed 14 finds each of these bugs by its
        // 40th sequence (seconds); seed 11, tried next, needed 340 for
        // purge-dead-every-queue, past two minutes in a loaded CI.
        let (seeds, generated): (&[&str], &[&str]) = if case.starts_with("differential/") {
            (&["14", "11"], &["--generate-for", "120s"])
        } else {
            (seeds, &[])
        };
        let program = broken();
        let mut runs = seeds.iter().map(|seed| {
            let mut args = vec![
                "--impl",
                program.to_str().unwrap(),
                "--cases",
                case,
                "--seed",
                seed,
                "--strict",
                "--slow",
            ];
            args.extend_from_slice(generated);
            run_suite(&args, &[("UKUE_BROKEN", bug)])
        });
        let (code, reports, stderr) = runs
            .find(|(code, _, _)| *code == 1)
            .unwrap_or_else(|| (0, Vec::new(), format!("passed with every seed of {seeds:?}")));
        let report = reports.iter().find(|r| r["id"] == *case);
        let status = report.and_then(|r| r["status"].as_str()).unwrap_or("missing");
        if code != 1 || !["fail", "timeout", "error"].contains(&status) {
            return Some(format!("{bug}: {case} was {status} (exit {code}) {stderr}"));
        }
        let report = report.unwrap();
        let replay = report["replay"].as_str().unwrap();
        assert!(replay.contains(case), "a replay command for {case}");
        assert!(replay.starts_with(&format!("UKUE_BROKEN={bug} ")), "the replay keeps the bug: {replay}");
        assert!(report["expected"].is_string() && report["seen"].is_string(), "{report}");
        None
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(escaped.is_empty(), "broken programs the suite passed:\n{}", escaped.join("\n"));
}

#[test]
fn expected_failures_are_reported_and_a_listed_pass_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("known.txt");
    std::fs::write(&list, "# known bugs\nsteps/claim-order-priority  priorities are reversed\n").unwrap();
    let list = list.to_str().unwrap();
    let listed_run = |subject: std::path::PathBuf, cases: &str, env: &[(&str, &str)]| {
        run_suite(&["--impl", subject.to_str().unwrap(), "--cases", cases, "--expected-failures", list], env)
    };
    let (code, reports, _) =
        listed_run(broken(), "steps/claim-order-*", &[("UKUE_BROKEN", "reversed-priority")]);
    let status =
        |id: &str| reports.iter().find(|r| r["id"] == id).map(|r| r["status"].as_str().unwrap().to_string());
    assert_eq!(status("steps/claim-order-priority").as_deref(), Some("expected_failure"));
    assert_eq!(code, 1, "claim-order-run-at also fails on reversed priorities, and is not listed");
    let (code, reports, _) = listed_run(reference(), "steps/claim-order-priority", &[]);
    let status = reports.iter().find(|r| r["id"] == "steps/claim-order-priority").unwrap()["status"].clone();
    assert_eq!(status, "unexpected_pass");
    assert_eq!(code, 1);
}

#[test]
fn usage_errors_and_missing_binaries_have_their_own_exit_codes() {
    let (code, _, _) = run_suite(&["--cases", "no-such-case/*"], &[]);
    assert_eq!(code, 2);
    let (code, _, stderr) = run_suite(&["--impl", "/nonexistent/ukue"], &[]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("/nonexistent/ukue"), "{stderr}");
    let out = std::process::Command::new(conformance()).arg("--frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn junit_and_skips() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("report.xml");
    let (code, reports, _) = run_suite(
        &[
            "--impl",
            reference().to_str().unwrap(),
            "--cases",
            "format/*",
            "--skip",
            "format/schema",
            "--junit",
            junit.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0);
    let skipped = reports.iter().find(|r| r["id"] == "format/schema").unwrap();
    assert_eq!(skipped["status"], "skipped");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testsuite name=\"format\"") && xml.contains("format/application-id"), "{xml}");
    assert!(xml.contains("<skipped"), "{xml}");
}

/// A `should` case that does not pass is a warning, reported with its level
/// and without failing the run; `--strict` makes it fail, and JUnit shows
/// the level.
#[test]
fn a_should_case_warns_and_fails_only_under_strict() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("report.xml");
    let program = broken();
    let args = ["--impl", program.to_str().unwrap(), "--cases", "steps/fail-backoff"];
    let env = [("UKUE_BROKEN", "uncounted-attempts")];
    let mut lenient = args.to_vec();
    lenient.extend(["--junit", junit.to_str().unwrap()]);
    let (code, reports, stderr) = run_suite(&lenient, &env);
    let report = reports.iter().find(|r| r["id"] == "steps/fail-backoff").expect("a report");
    assert_eq!(
        (report["status"].as_str(), report["level"].as_str()),
        (Some("warn"), Some("should")),
        "{report}"
    );
    assert!(report["expected"].is_string() && report["seen"].is_string(), "{report}");
    assert_eq!(code, 0, "a warning does not fail the run: {stderr}");
    assert_eq!(reports.last().unwrap()["summary"]["warn"], 1);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"name="level" value="should""#) && xml.contains(r#"name="status" value="warn""#),
        "{xml}"
    );

    let mut strict = args.to_vec();
    strict.push("--strict");
    let (code, reports, _) = run_suite(&strict, &env);
    let report = reports.iter().find(|r| r["id"] == "steps/fail-backoff").expect("a report");
    assert_eq!(report["status"], "fail", "{report}");
    assert_eq!(code, 1);
    assert!(report["replay"].as_str().unwrap().contains("--strict"), "the replay keeps --strict: {report}");
}

/// A subject without `serve` (the Python command) skips the http family,
/// with the reason, and the run passes.
#[test]
fn the_http_family_skips_a_subject_without_serve() {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/python/ukue.py");
    if !have("python3") {
        return;
    }
    let (code, reports, stderr) = run_suite(&["--impl", python.to_str().unwrap(), "--cases", "http/*"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let cases: Vec<_> =
        reports.iter().filter(|r| r["id"].as_str().is_some_and(|id| id.starts_with("http/"))).collect();
    assert!(cases.len() >= 10, "{reports:?}");
    for report in cases {
        assert_eq!(report["status"], "skipped", "{report}");
        assert!(report["reason"].as_str().unwrap().contains("has no `serve`"), "{report}");
    }
}

/// The http family passes the reference's `serve`, its slow cases too: the
/// http cases of the whole suite's run (shared with the test above).
#[test]
fn the_http_family_passes_the_reference() {
    let (code, reports, stderr) = whole_suite_against_the_reference();
    let http: Vec<&serde_json::Value> =
        reports.iter().filter(|r| r["id"].as_str().is_some_and(|id| id.starts_with("http/"))).collect();
    assert!(http.len() >= 30, "the whole run's http cases: {http:?}\n{stderr}");
    let bad: Vec<String> = http.iter().filter(|r| r["status"] != "pass").map(|r| r.to_string()).collect();
    assert!(bad.is_empty() && code == 0, "{}\n{stderr}", bad.join("\n"));
}
