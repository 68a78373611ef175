//! The library's worker loop: several jobs at once, leases renewed while a
//! handler runs, and a graceful stop that gives unfinished jobs back.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ukue::worker::{Event, JobControl, Outcome, StopReason, Worker, WorkerOptions};
use ukue::{Claimed, NewJob, Retry, State, Ukue};

fn file_with(jobs: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.ukue");
    let batch: Vec<NewJob> = (0..jobs).map(|i| NewJob::new("q", format!("job {i}"))).collect();
    Ukue::create(&path).unwrap().add_batch(&batch).unwrap();
    (dir, path)
}

/// Runs `worker` until `done` holds (checked on a connection of its own),
/// then stops it; returns the events.
fn run_until(
    worker: Worker,
    handler: impl Fn(&Claimed, &JobControl) -> Outcome + Send + Sync,
    path: &std::path::Path,
    done: impl Fn(&Ukue) -> bool + Send + Sync,
) -> Vec<Event> {
    let events = Mutex::new(Vec::new());
    let stopper = worker.stopper();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let file = Ukue::open(path).unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            while !done(&file) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            stopper.stop();
        });
        worker.run(&handler, &|e| events.lock().unwrap().push(e)).unwrap();
    });
    events.into_inner().unwrap()
}

fn is_empty(file: &Ukue) -> bool {
    file.stats().unwrap().is_empty()
}

#[test]
fn several_jobs_at_once_each_exactly_once() {
    let (_dir, path) = file_with(40);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(Mutex::new((0usize, 0usize))); // (now, most at once)
    let options =
        WorkerOptions { concurrency: 4, poll: Duration::from_millis(10), ..WorkerOptions::default() };
    let events = run_until(
        Worker::new(&path, "q", options),
        |job, control| {
            {
                let mut r = running.lock().unwrap();
                r.0 += 1;
                r.1 = r.1.max(r.0);
            }
            seen.lock().unwrap().push(job.id);
            control.wait(Duration::from_millis(20));
            running.lock().unwrap().0 -= 1;
            Outcome::Finish
        },
        &path,
        is_empty,
    );
    let mut ids = seen.lock().unwrap().clone();
    ids.sort();
    assert_eq!(ids, (1..=40).collect::<Vec<i64>>(), "each job once");
    let most = running.lock().unwrap().1;
    assert!(most > 1 && most <= 4, "{most} jobs ran at once with concurrency 4");
    assert_eq!(events.iter().filter(|e| matches!(e, Event::Finished { .. })).count(), 40);
}

/// A wake that lands before the handler waits (its command ended just
/// after the handler last looked) ends the next wait at once. Were it lost,
/// the handler would sleep through its whole timeout and, here, be stopped
/// at the end of the grace: the job given back, not finished.
#[test]
fn a_wake_before_the_wait_is_kept() {
    let (_dir, path) = file_with(1);
    let options = WorkerOptions {
        grace: Duration::from_millis(100),
        poll: Duration::from_millis(10),
        ..WorkerOptions::default()
    };
    let events = run_until(
        Worker::new(&path, "q", options),
        |_, control| {
            control.wake();
            match control.wait(Duration::from_secs(3600)) {
                None => Outcome::Finish,
                Some(reason) => {
                    Outcome::Fail { error: format!("stopped: {reason:?}"), retry: Retry::Backoff }
                }
            }
        },
        &path,
        is_empty,
    );
    assert!(events.iter().any(|e| matches!(e, Event::Finished { .. })), "{events:?}");
}

#[test]
fn a_handler_that_outlives_its_lease_keeps_the_job() {
    let (_dir, path) = file_with(1);
    let options = WorkerOptions {
        // Renewed every ~330 ms: a loaded 2-core machine keeps that margin.
        lease: ms(1_000),
        keep_done: true,
        poll: Duration::from_millis(10),
        ..WorkerOptions::default()
    };
    // A rival claims all the time: it would reap the job if nobody renewed.
    let rival_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rival = {
        let (path, stop) = (path.clone(), rival_stop.clone());
        std::thread::spawn(move || {
            let mut file = Ukue::open(&path).unwrap();
            // Start once the worker holds the job.
            let deadline = Instant::now() + Duration::from_secs(30);
            while file.get(1).unwrap().is_some_and(|j| j.state == State::Ready) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let mut taken = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                if file.claim("q", ms(60_000)).unwrap().is_some() {
                    taken += 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            taken
        })
    };
    let events = run_until(
        Worker::new(&path, "q", options),
        |_, control| match control.wait(Duration::from_millis(2_500)) {
            Some(reason) => Outcome::Fail { error: format!("stopped: {reason:?}"), retry: Retry::Backoff },
            None => Outcome::Finish,
        },
        &path,
        |file| file.get(1).unwrap().is_some_and(|j| j.state == State::Done),
    );
    rival_stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(rival.join().unwrap(), 0, "the rival took the job");
    assert!(!events.iter().any(|e| matches!(e, Event::LeaseLost { .. })), "{events:?}");
    let job = Ukue::open(&path).unwrap().get(1).unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (State::Done, 1));
}

#[test]
fn a_stop_gives_unfinished_jobs_back_after_the_grace() {
    let (_dir, path) = file_with(2);
    let options = WorkerOptions {
        concurrency: 2,
        grace: Duration::from_millis(100),
        poll: Duration::from_millis(10),
        ..WorkerOptions::default()
    };
    let reasons = Mutex::new(Vec::new());
    let started = Mutex::new(0);
    let events = run_until(
        Worker::new(&path, "q", options),
        |_, control| {
            *started.lock().unwrap() += 1;
            // Works until told to stop.
            let reason = loop {
                if let Some(r) = control.wait(Duration::from_secs(60)) {
                    break r;
                }
            };
            reasons.lock().unwrap().push(reason);
            Outcome::Fail { error: "interrupted".into(), retry: Retry::Backoff }
        },
        &path,
        |file| file.stats().unwrap().first().is_some_and(|s| s.running == 2),
    );
    assert_eq!(*reasons.lock().unwrap(), vec![StopReason::Shutdown, StopReason::Shutdown]);
    assert_eq!(events.iter().filter(|e| matches!(e, Event::Released { .. })).count(), 2, "{events:?}");
    let file = Ukue::open(&path).unwrap();
    for id in [1, 2] {
        let job = file.get(id).unwrap().unwrap();
        assert_eq!((job.state, job.attempts), (State::Ready, 0), "job {id} given back, attempt not counted");
    }
}

#[test]
fn outcomes_become_steps() {
    let (_dir, path) = file_with(3);
    let options =
        WorkerOptions { poll: Duration::from_millis(10), keep_done: true, ..WorkerOptions::default() };
    run_until(
        Worker::new(&path, "q", options),
        |job, _| match job.id {
            1 => Outcome::Finish,
            2 => Outcome::Fail { error: "bad input".into(), retry: Retry::Never },
            _ => Outcome::Fail { error: "later".into(), retry: Retry::After(ms(60_000)) },
        },
        &path,
        |file| file.stats().unwrap().first().is_some_and(|s| s.done == 1 && s.dead == 1 && s.delayed == 1),
    );
    let file = Ukue::open(&path).unwrap();
    let state = |id| file.get(id).unwrap().unwrap();
    assert_eq!(state(1).state, State::Done);
    assert_eq!((state(2).state, state(2).last_error.as_deref()), (State::Dead, Some("bad input")));
    let later = state(3);
    assert_eq!((later.state, later.attempts), (State::Ready, 1));
    assert!(later.run_at >= later.updated_at + 60_000);
}

#[test]
fn a_bad_file_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let worker = Worker::new(dir.path().join("missing.ukue"), "q", WorkerOptions::default());
    let err = worker.run(&|_: &Claimed, _: &JobControl| Outcome::Finish, &|_| {}).unwrap_err();
    assert!(matches!(err, ukue::Error::Refused(ukue::Refusal::NotFound { .. })), "{err}");
}

fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}
