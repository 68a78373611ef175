//! The power-loss cases pass the reference and check hundreds of crash
//! states, not a handful (a model that saw no writes would pass too).
//! Set UKUE_POWERLOSS_CASES to an id prefix (`powerloss/`, `ioerror/`) to
//! run more than subject-adds and see each case's figures (what the
//! reference did under each fault).

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::*;
use ukue_harness::cases;
use ukue_harness::subjects::ctx::Ctx;
use ukue_harness::subjects::{python, Subject, Subjects};

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| PathBuf::from(d).join(name)).find(|p| p.is_file())
}

#[test]
fn heavy_powerloss_checks_hundreds_of_crash_states_of_the_reference() {
    if !have("strace") {
        return;
    }
    let strace = on_path("strace").expect("found by have()");
    let dir = tempfile::tempdir().unwrap();
    // add_job.py and the step driver, laid out as the runner lays them out.
    let python = on_path("python3").map(|program| python::install(dir.path(), &program).unwrap());
    let subjects = Arc::new(Subjects {
        subject: Subject::binary(reference()),
        reference: Subject::binary(reference()),
        python: python.as_ref().map(|p| p.add_job.clone()),
        probe: conformance().with_file_name("ukue-probe"),
        strace: Some(strace),
        python_http_worker: python.as_ref().map(|p| p.http_worker.clone()),
        python_driver: python.map(|p| p.driver),
    });
    let wanted = std::env::var("UKUE_POWERLOSS_CASES").unwrap_or_else(|_| "powerloss/subject-adds".into());
    let chosen: Vec<_> = cases::all().into_iter().filter(|c| c.id.starts_with(&wanted)).collect();
    assert!(!chosen.is_empty(), "no case starts with {wanted}");
    for case in chosen {
        if case.needs.python && subjects.python.is_none() {
            continue;
        }
        let case_dir = dir.path().join(case.id.replace('/', "__"));
        std::fs::create_dir_all(&case_dir).unwrap();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(120);
        let mut ctx = Ctx::new(case_dir.clone(), 1, subjects.clone(), format!("test-{}", case.id), deadline);
        let result = (case.run)(&mut ctx);
        ctx.procs.kill_all();
        assert_eq!(result, Ok(()), "{}", case.id);
        if let Ok(report) = std::fs::read_to_string(case_dir.join("ioerror.txt")) {
            eprintln!("{}: in {} ms:\n{}", case.id, started.elapsed().as_millis(), report.trim());
            continue;
        }
        let summary = std::fs::read_to_string(case_dir.join("powerloss.txt")).unwrap();
        eprintln!("{}: {} in {} ms", case.id, summary.trim(), started.elapsed().as_millis());
        let (checked, of) = summary
            .split_once(" crash states")
            .and_then(|(head, _)| head.rsplit_once(", "))
            .and_then(|(_, n)| n.split_once(" of "))
            .map(|(a, b)| (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()))
            .expect("N of M crash states in powerloss.txt");
        assert_eq!(checked, of, "{summary}");
        assert!(checked >= 100, "{}: only {checked} crash states: {summary}", case.id);
    }
}
