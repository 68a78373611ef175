//! The runner as someone without Rust gets it: the wheel of pyproject.toml,
//! built with maturin and zig against glibc 2.17, installed by pip into a
//! fresh venv, run with no cargo on PATH and from outside the repository.
//! It gives the `steps/*` cases against the Python command the verdicts
//! this build's runner gives with the same seed; it names the reference
//! and probe it found beside it; the wheel's tag is manylinux x86_64 and
//! each binary loads nothing beyond glibc's libraries. The action's script
//! installs the same wheel (`UKUE_INSTALL=wheel`) and runs it.
//!
//! It needs `maturin` and `zig` on PATH (.ci/run installs both from PyPI:
//! maturin and ziglang), and python3 with its venv module.

mod support;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::*;

/// The binaries the wheel installs: what a run needs, and nothing more.
const BINARIES: [&str; 4] = ["ukue-conformance", "ukue-driver", "ukue-probe", "ukue-reference"];

/// What a manylinux wheel's binary may load (PEP 600 lists glibc's
/// libraries; libgcc_s is there for unwinding, the vDSO is the kernel's).
const ALLOWED_LIBRARIES: [&str; 8] = [
    "linux-vdso.so",
    "libc.so",
    "libm.so",
    "libpthread.so",
    "libdl.so",
    "librt.so",
    "ld-linux-x86-64.so",
    "libgcc_s.so",
];

/// The manylinux tags old enough for the CI images in use: glibc 2.17
/// (CentOS 7 on) or 2.28 (Debian 10, RHEL 8 on).
const MANYLINUX: [u32; 2] = [17, 28];

/// The promise to someone installing it in CI.
const INSTALL_AT_MOST: Duration = Duration::from_secs(15);

const SEED: &str = "20261205";

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// PATH as on a machine with Python and no Rust, where the runner comes
/// only from the wheel: `venv_bin` first, then each directory of this PATH,
/// or, for one that holds cargo, rustc, rustup or a ukue program, a
/// directory of links to everything else it holds (python3 and cargo may
/// share /usr/bin).
fn path_without_rust(venv_bin: &Path, links: &Path) -> OsString {
    const LEFT_OUT: [&str; 4] = ["cargo", "rustc", "rustup", "ukue"];
    let left_out = |name: &OsString| LEFT_OUT.iter().any(|tool| name.to_string_lossy().starts_with(tool));
    std::fs::create_dir_all(links).unwrap();
    let mut dirs = vec![venv_bin.to_path_buf()];
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let names: Vec<OsString> =
            std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
        if !names.iter().any(left_out) {
            dirs.push(dir);
            continue;
        }
        for name in names.iter().filter(|n| !left_out(n)) {
            if links.join(name).symlink_metadata().is_err() {
                std::os::unix::fs::symlink(dir.join(name), links.join(name)).unwrap();
            }
        }
        if !dirs.contains(&links.to_path_buf()) {
            dirs.push(links.to_path_buf());
        }
    }
    std::env::join_paths(dirs).unwrap()
}

/// Builds the wheel into `out`; returns its path and how long it took.
fn build_wheel(out: &Path) -> (PathBuf, Duration) {
    let started = Instant::now();
    // Niced: the build takes minutes of both cores, beside the other tests.
    let built = Command::new("nice")
        .args(["-n", "10", "maturin", "build", "--release", "--zig"])
        .arg("--out")
        .arg(out)
        .current_dir(repo())
        .output()
        .expect("maturin runs");
    let took = started.elapsed();
    assert!(built.status.success(), "maturin build failed:\n{}", text(&built));
    let wheels: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "one wheel: {wheels:?}");
    (wheels.into_iter().next().unwrap(), took)
}

/// A file of the wheel (a zip), read by the venv's Python.
fn wheel_member(python: &Path, wheel: &Path, suffix: &str) -> String {
    let script = "import sys, zipfile\n\
                  z = zipfile.ZipFile(sys.argv[1])\n\
                  print('\\n'.join(z.namelist()) if sys.argv[2] == '' else \
                  next(z.read(n).decode() for n in z.namelist() if n.endswith(sys.argv[2])))";
    let out = Command::new(python).args(["-c", script]).arg(wheel).arg(suffix).output().unwrap();
    assert!(out.status.success(), "reading {} of the wheel: {}", suffix, text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The newest `GLIBC_2.N` symbol version a binary asks for.
fn newest_glibc(binary: &Path) -> (u32, u32) {
    let bytes = std::fs::read(binary).unwrap();
    let mut newest = (0, 0);
    for at in bytes.windows(8).enumerate().filter(|(_, w)| *w == b"GLIBC_2.").map(|(i, _)| i + 6) {
        let version: String = bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'.')
            .map(|b| *b as char)
            .collect();
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        newest = newest.max((parts.next().unwrap_or(0), parts.next().unwrap_or(0)));
    }
    newest
}

/// The libraries `ldd` says a binary loads, by file name.
fn loaded_libraries(binary: &Path) -> Vec<String> {
    let out = Command::new("ldd").arg(binary).output().expect("ldd runs");
    assert!(out.status.success(), "ldd {}: {}", binary.display(), text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|l| Path::new(l).file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// Each case's status, by id, from a JSON report; and its summary's `run`.
fn verdicts(out: &Output) -> (BTreeMap<String, String>, serde_json::Value) {
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let run = lines.iter().find_map(|l| l.get("run").cloned()).unwrap_or_default();
    let cases = lines
        .iter()
        .filter_map(|l| Some((l.get("id")?.as_str()?.to_string(), l.get("status")?.as_str()?.to_string())))
        .collect();
    (cases, run)
}

#[test]
fn full_the_wheel_installs_into_a_fresh_venv_and_gives_the_verdicts_of_this_build() {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        eprintln!("SKIPPED: the wheel checked here is Linux x86_64's (release.yml builds the others)");
        return;
    }
    if !(have("maturin") && have("zig") && have("python3") && have("ldd")) {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (wheel, build_took) = build_wheel(&dir.path().join("wheels"));
    eprintln!("the wheel built in {:.0} s: {}", build_took.as_secs_f64(), wheel.display());

    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let prefix = format!("ukue_conformance-{}-py3-none-", env!("CARGO_PKG_VERSION"));
    assert!(name.starts_with(&prefix), "{name}");
    let venv = dir.path().join("venv");
    let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).output().unwrap();
    assert!(made.status.success(), "python3 -m venv: {}", text(&made));
    let (bin, python) = (venv.join("bin"), venv.join("bin/python"));
    let tags = wheel_member(&python, &wheel, ".dist-info/WHEEL");
    // The glibc the wheel claims: no binary may ask for a newer one.
    let glibc = tags
        .lines()
        .filter_map(|l| l.strip_prefix("Tag: py3-none-manylinux_2_")?.strip_suffix("_x86_64")?.parse().ok())
        .find(|minor| MANYLINUX.contains(minor))
        .map(|minor| (2, minor))
        .unwrap_or_else(|| panic!("no manylinux_2_17 or 2_28 x86_64 tag: {tags}"));
    let mut scripts: Vec<String> = wheel_member(&python, &wheel, "")
        .lines()
        .filter_map(|l| l.split_once(".data/scripts/").map(|(_, s)| s.to_string()))
        .collect();
    scripts.sort();
    assert_eq!(scripts, BINARIES, "the wheel's binaries");

    // As on a CI machine with Python and no Rust: nothing of cargo's on
    // PATH, nothing from the index, and the repository out of reach but
    // for the program under test.
    let path = path_without_rust(&bin, &dir.path().join("no-rust"));
    let no_cargo =
        Command::new("sh").args(["-c", "command -v cargo rustc"]).env("PATH", &path).output().unwrap();
    assert!(no_cargo.stdout.is_empty(), "cargo on the PATH: {}", text(&no_cargo));
    let started = Instant::now();
    let installed = Command::new(&python)
        .args(["-m", "pip", "install", "--no-index", "--disable-pip-version-check", "--quiet"])
        .arg(&wheel)
        .env("PATH", &path)
        .output()
        .unwrap();
    let install_took = started.elapsed();
    assert!(installed.status.success(), "pip install: {}", text(&installed));
    eprintln!("pip installed it in {:.1} s", install_took.as_secs_f64());
    assert!(install_took < INSTALL_AT_MOST, "pip install took {install_took:?}");

    for binary in BINARIES {
        let binary = bin.join(binary);
        let outside: Vec<String> = loaded_libraries(&binary)
            .into_iter()
            .filter(|lib| !ALLOWED_LIBRARIES.iter().any(|allowed| lib.starts_with(allowed)))
            .collect();
        assert!(outside.is_empty(), "{} loads {outside:?}, beyond glibc's", binary.display());
        let newest = newest_glibc(&binary);
        assert!(
            newest >= (2, 2) && newest <= glibc,
            "{} asks for GLIBC_{}.{} at the newest: the wheel claims glibc {}.{}",
            binary.display(),
            newest.0,
            newest.1,
            glibc.0,
            glibc.1
        );
    }

    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let runner = |args: &[&str]| {
        Command::new(bin.join("ukue-conformance"))
            .args(args)
            .current_dir(&work)
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    let version = runner(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("ukue-conformance {} (ukue file format {})", env!("CARGO_PKG_VERSION"), ukue::FORMAT_VERSION)
    );

    // Bare, it runs against the reference it brought, and says where it
    // found the reference and the probe.
    let bare = runner(&["--cases", "cli/version"]);
    let header = String::from_utf8_lossy(&bare.stderr);
    assert_eq!(bare.status.code(), Some(0), "{}", text(&bare));
    let beside = std::fs::canonicalize(&bin).unwrap();
    let reference = beside.join("ukue-reference").display().to_string();
    assert!(header.contains(&format!("cases against {reference} (ukue ")), "{header}");
    assert!(
        header.contains(&format!("reference: none: {reference} is the implementation under test")),
        "{header}"
    );
    assert!(header.contains(&format!("probe: {}", beside.join("ukue-probe").display())), "{header}");

    let subject = repo().join("clients/python/ukue.py");
    let args =
        ["--impl", subject.to_str().unwrap(), "--cases", "steps/*", "--seed", SEED, "--format", "json"];
    let from_wheel = runner(&args);
    let (wheel_verdicts, run) = verdicts(&from_wheel);
    assert_eq!(from_wheel.status.code(), Some(0), "{}", text(&from_wheel));
    assert_eq!(run["reference"], reference, "{run}");
    assert_eq!(run["probe"], beside.join("ukue-probe").display().to_string(), "{run}");
    let built = Command::new(conformance()).args(args).output().unwrap();
    let (built_verdicts, _) = verdicts(&built);
    assert!(built_verdicts.len() > 10, "{}", text(&built));
    assert_eq!(wheel_verdicts, built_verdicts, "the wheel's verdicts, then this build's, seed {SEED}");

    // The action's script, installing the same wheel as it installs
    // ukue-conformance from PyPI.
    let out = dir.path().join("report");
    let action = Command::new("bash")
        .arg(repo().join(".github/conformance.sh"))
        .current_dir(&work)
        .env("PATH", path_without_rust(Path::new("/nonexistent"), &dir.path().join("no-rust")))
        .env("RUNNER_TEMP", dir.path().join("runner-temp"))
        .env("UKUE_INSTALL", "wheel")
        .env("UKUE_PACKAGE", &wheel)
        .env("UKUE_IMPL", &subject)
        .env("UKUE_ARGS", "--cases steps/claim-*")
        .env("UKUE_OUT", &out)
        .output()
        .unwrap();
    assert_eq!(action.status.code(), Some(0), "{}", text(&action));
    let report = std::fs::read_to_string(out.join("report.json")).unwrap();
    let installed = dir.path().join("runner-temp/ukue-conformance/bin/ukue-reference");
    let installed = std::fs::canonicalize(installed).unwrap();
    assert!(report.contains(&format!("\"reference\":\"{}\"", installed.display())), "{report}");
}
