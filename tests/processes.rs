//! Several processes sharing one file: `ukue work` processes draining jobs
//! while the reference and Python's add_job.py add more. Every job must run
//! exactly once (each run is recorded by the command itself).

mod support;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::*;
use ukue::{NewJob, Ukue};

/// The command each job runs: one line per run, `ID PAYLOAD`, appended
/// with O_APPEND so lines from many processes never interleave.
const RECORD: &str = r#"echo "$UKUE_JOB_ID $(cat)" >> "$0""#;

fn start_workers(file: &str, log: &str, processes: usize, concurrency: &str) -> Vec<Child> {
    (0..processes)
        .map(|_| {
            Command::new(ukue_bin())
                .args(["work", file, "q", "--quiet", "--concurrency", concurrency, "--poll", "50ms"])
                .args(["--", "sh", "-c", RECORD, log])
                .stdin(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect()
}

fn stop_all(workers: Vec<Child>) {
    for child in &workers {
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    }
    for mut child in workers {
        let stopped = wait_for(Duration::from_secs(30), || child.try_wait().unwrap().is_some());
        if !stopped {
            let _ = child.kill();
        }
        assert!(stopped, "a worker did not stop within 30 s of SIGTERM");
        assert!(child.wait().unwrap().success(), "a worker failed");
    }
}

/// Runs per job id, from the log.
fn runs(log: &std::path::Path) -> BTreeMap<i64, Vec<String>> {
    let mut runs: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let (id, payload) = line.split_once(' ').unwrap_or((line, ""));
        runs.entry(id.parse().unwrap()).or_default().push(payload.to_string());
    }
    runs
}

fn queue_is_empty(file: &str) -> bool {
    Ukue::open(file).and_then(|f| f.stats()).map(|s| s.is_empty()).unwrap_or(false)
}

fn assert_intact(file: &str) {
    let file = Ukue::open(file).unwrap();
    let ok: String = file.connection().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn heavy_four_workers_with_concurrency_four_drain_2000_jobs_exactly_once() {
    const JOBS: usize = 2000;
    let scratch = Scratch::new();
    let path = scratch.path("jobs.ukue");
    let file = path_str(&path).to_string();
    let log = scratch.path("runs.log");
    let jobs: Vec<NewJob> = (0..JOBS).map(|i| NewJob::new("q", format!("p{i}"))).collect();
    let ids = Ukue::create(&path).unwrap().add_batch(&jobs).unwrap();

    let workers = start_workers(&file, path_str(&log), 4, "4");
    let drained = wait_for(Duration::from_secs(240), || queue_is_empty(&file));
    stop_all(workers);
    assert!(drained, "the queue was not drained in time; {} runs logged", runs(&log).len());

    let runs = runs(&log);
    let twice: Vec<_> = runs.iter().filter(|(_, r)| r.len() > 1).collect();
    assert!(twice.is_empty(), "jobs run more than once: {twice:?}");
    assert_eq!(runs.keys().copied().collect::<Vec<_>>(), ids, "every job ran");
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(runs[id], [format!("p{i}")], "job {id} got its own payload");
    }
    assert_intact(&file);
}

#[test]
fn heavy_python_adds_jobs_while_rust_workers_take_them() {
    const JOBS: usize = 200;
    let scratch = Scratch::new();
    let path = scratch.path("jobs.ukue");
    let file = path_str(&path).to_string();
    let log = scratch.path("runs.log");
    ok(&["init", &file]);

    let workers = start_workers(&file, path_str(&log), 2, "2");
    // Two Python producers at once, each printing the ids it was given.
    let producers: Vec<_> = (0..2)
        .map(|producer| {
            let file = file.clone();
            std::thread::spawn(move || {
                (0..JOBS / 2)
                    .map(|i| {
                        let payload = format!("py{producer}-{i}");
                        let out = python(&[path_str(&add_job_py()), &file, "q", &payload]);
                        expect_status(&out, 0, "add_job.py");
                        (text(&out.stdout).trim().parse::<i64>().unwrap(), payload)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let added: BTreeMap<i64, String> = producers.into_iter().flat_map(|p| p.join().unwrap()).collect();
    assert_eq!(added.len(), JOBS, "every add printed its own id");
    let drained = wait_for(Duration::from_secs(120), || runs(&log).len() == JOBS && queue_is_empty(&file));
    stop_all(workers);
    assert!(drained, "only {} of {JOBS} jobs ran", runs(&log).len());

    let runs = runs(&log);
    for (id, payload) in &added {
        assert_eq!(runs.get(id), Some(&vec![payload.clone()]), "job {id} ran exactly once");
    }
    assert_intact(&file);
}
