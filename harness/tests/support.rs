//! Finding the binaries the harness tests drive.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The repository's root (the workspace, above the harness crate).
pub fn repo() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub fn conformance() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ukue-conformance"))
}

pub fn broken() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ukue-broken"))
}

/// The reference `ukue`, beside the harness's binaries. A workspace test
/// run builds it; a run of this package alone builds it here.
pub fn reference() -> PathBuf {
    let path = conformance().with_file_name("ukue");
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "ukue", "--bin", "ukue"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the reference ukue failed");
    }
    path
}

/// Runs the suite with `args`; returns the exit code and the JSON reports.
pub fn run_suite(args: &[&str], env: &[(&str, &str)]) -> (i32, Vec<serde_json::Value>, String) {
    let out = Command::new(conformance())
        .args(["--format", "json", "--reference"])
        .arg(reference())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("ukue-conformance runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let reports = stdout.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).collect();
    (out.status.code().unwrap_or(-1), reports, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// [`run_suite`] with `args`, run once for the whole test run and shared by
/// every test that asks for it: the tests that assert on one run of the
/// suite (the whole suite against the reference) read that run's reports
/// instead of running the suite again. nextest runs each test in a process
/// of its own, so the run is kept in a file under target/tmp/, named for
/// the test run (`NEXTEST_RUN_ID`; under `cargo test`, this process) and
/// the arguments: never another run's verdict. The first test to ask runs
/// it; the others wait on the file's lock and read what it left.
pub fn run_suite_shared(args: &[&str]) -> (i32, Vec<serde_json::Value>, String) {
    use std::hash::{Hash, Hasher};
    let run = std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| format!("process-{}", std::process::id()));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    args.hash(&mut hasher);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("suite-runs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{run}-{:016x}.json", hasher.finish()));
    let lock = std::fs::File::create(path.with_extension("lock")).unwrap();
    let _held =
        nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, e)| e).unwrap();
    if let Ok(text) = std::fs::read_to_string(&path) {
        let kept: serde_json::Value = serde_json::from_str(&text).unwrap();
        let reports = kept["reports"].as_array().unwrap().clone();
        return (
            kept["code"].as_i64().unwrap() as i32,
            reports,
            kept["stderr"].as_str().unwrap().to_string(),
        );
    }
    // Other test runs' files (a day old) go.
    for old in std::fs::read_dir(&dir).unwrap().flatten() {
        let age = old.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
        if age.is_some_and(|age| age.as_secs() > 24 * 3600) {
            let _ = std::fs::remove_file(old.path());
        }
    }
    let (code, reports, stderr) = run_suite(args, &[]);
    let kept = serde_json::json!({"code": code, "reports": reports, "stderr": stderr});
    let partial = path.with_extension("partial");
    std::fs::write(&partial, kept.to_string()).unwrap();
    std::fs::rename(&partial, &path).unwrap();
    (code, reports, stderr)
}

/// The whole suite, with `--slow`, against the reference ([`run_suite_shared`]).
pub fn whole_suite_against_the_reference() -> (i32, Vec<serde_json::Value>, String) {
    run_suite_shared(&["--impl", reference().to_str().unwrap(), "--jobs", "2", "--slow"])
}

/// Whether `tool` is on PATH. A test that needs it and finds none says so
/// and returns; with `CI` set (as `.ci/run`, which installs every tool,
/// sets it) a missing tool fails the test instead, so that CI never passes
/// a test it did not run.
pub fn have(tool: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()));
    if !found {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(!ci, "{tool} is not on PATH, and CI is set: .ci/run installs it");
        eprintln!("SKIPPED: {tool} is not on PATH; this test did not run");
    }
    found
}

/// `f` of each item, in the items' order, run by `threads` threads at
/// once: the heavy tests run one suite a bug, and each suite mostly waits
/// on its subject's processes, so a few at a time keep two cores busy.
pub fn each_in_parallel<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = f(item);
                results.lock().unwrap().push((i, result));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// How many suites a heavy test runs at once (nextest gives a heavy test
/// the machine: `threads-required = 4`).
pub const HEAVY_THREADS: usize = 3;
