//! The Python programs the runner carries inside itself, so that a third
//! party needs only the binary: add_job.py (a producer), http_worker.py (a
//! worker over HTTP), and the Python step driver with the steps it
//! imports. [`install`] writes them into a directory and names the
//! subjects that run them.

use std::path::Path;

use super::Subject;

pub const ADD_JOB_PY: &str = include_str!("../../../clients/python/add_job.py");
pub const HTTP_WORKER_PY: &str = include_str!("../../../clients/python/http_worker.py");
pub const UKUE_DRIVER_PY: &str = include_str!("../../../clients/python/ukue_driver.py");
/// The steps ukue_driver.py imports: written beside it.
pub const UKUE_STEPS_PY: &str = include_str!("../../../clients/python/ukue_steps.py");

/// The Python subjects: `PYTHON add_job.py`, `PYTHON http_worker.py` and
/// `PYTHON ukue_driver.py`.
#[derive(Debug, Clone)]
pub struct PythonSubjects {
    /// Its `add` is spelled without the word `add` (see
    /// [`crate::subjects::ctx::Ctx::python_add`]).
    pub add_job: Subject,
    pub http_worker: Subject,
    pub driver: Subject,
}

/// Writes add_job.py, http_worker.py, ukue_driver.py and the ukue_steps.py
/// it imports into `dir`, and names the subjects that run them with `python`.
pub fn install(dir: &Path, python: &Path) -> std::io::Result<PythonSubjects> {
    let add_job = dir.join("add_job.py");
    std::fs::write(&add_job, ADD_JOB_PY)?;
    let http_worker = dir.join("http_worker.py");
    std::fs::write(&http_worker, HTTP_WORKER_PY)?;
    let driver = dir.join("ukue_driver.py");
    std::fs::write(&driver, UKUE_DRIVER_PY)?;
    std::fs::write(dir.join("ukue_steps.py"), UKUE_STEPS_PY)?;
    let run = |name: &str, script: &Path| Subject {
        name: name.into(),
        program: python.to_path_buf(),
        args: vec![script.display().to_string()],
    };
    Ok(PythonSubjects {
        add_job: run("add_job.py", &add_job),
        http_worker: run("http_worker.py", &http_worker),
        driver: run("ukue_driver.py", &driver),
    })
}

/// The interpreter to run the Python subjects with, when `python` was
/// found on PATH: a `python3` that is a script (a pyenv shim: bash, then
/// `pyenv exec`, some 250 ms before Python itself starts) is replaced by
/// the interpreter it starts, as that interpreter's `sys.executable` names
/// it, asked once in `dir` (where the cases run: a shim picks its version
/// by the directory). The same Python then runs every add_job.py without
/// the shim's start each time. A `python3` that is no script, or whose
/// interpreter does not answer within 10 s, is kept as it is.
pub fn interpreter(python: &Path, dir: &Path) -> std::path::PathBuf {
    let is_script = std::fs::File::open(python)
        .and_then(|mut f| {
            let mut start = [0u8; 2];
            std::io::Read::read_exact(&mut f, &mut start).map(|()| start == *b"#!")
        })
        .unwrap_or(false);
    if !is_script {
        return python.to_path_buf();
    }
    let procs = super::process::Procs::new(format!("{}-python", std::process::id()));
    let mut cmd = std::process::Command::new(python);
    cmd.args(["-c", "import sys; print(sys.executable)"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let resolved = (|| {
        let mut spawned = procs.spawn(&mut cmd).ok()?;
        let status = spawned.wait_timeout(std::time::Duration::from_secs(10)).ok()??;
        let mut out = String::new();
        std::io::Read::read_to_string(&mut spawned.child.stdout.take()?, &mut out).ok()?;
        let path = std::path::PathBuf::from(out.trim());
        (status.success() && path.is_absolute() && path.is_file()).then_some(path)
    })();
    resolved.unwrap_or_else(|| python.to_path_buf())
}
