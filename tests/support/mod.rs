//! Helpers for the tests that drive the `ukue` binary and add_job.py.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn ukue_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ukue"))
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn add_job_py() -> PathBuf {
    repo().join("clients/python/add_job.py")
}

pub fn ukue(args: &[&str]) -> Output {
    Command::new(ukue_bin()).args(args).stdin(Stdio::null()).output().expect("ukue runs")
}

pub fn ukue_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(ukue_bin()).args(args).current_dir(dir).stdin(Stdio::null()).output().expect("ukue runs")
}

pub fn python(args: &[&str]) -> Output {
    Command::new("python3").args(args).stdin(Stdio::null()).output().expect("python3 runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts the exit code, showing stdout and stderr when it differs.
#[track_caller]
pub fn expect_status(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: exit status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// `ukue ARGS` must succeed; returns its stdout.
#[track_caller]
pub fn ok(args: &[&str]) -> String {
    let out = ukue(args);
    expect_status(&out, 0, &format!("ukue {}", args.join(" ")));
    text(&out.stdout)
}

/// A file in a new temporary directory, removed with it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch { dir: tempfile::tempdir().expect("temp dir") }
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// Copies a file of fixtures/ in; returns the copy's path.
    pub fn fixture(&self, relative: &str) -> PathBuf {
        let from = repo().join("fixtures").join(relative);
        let to = self.path(Path::new(relative).file_name().unwrap().to_str().unwrap());
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
        to
    }
    /// The names of the files in the directory, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Polls `condition` until it holds or `limit` passes; false on timeout.
pub fn wait_for(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}
