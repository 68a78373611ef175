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
