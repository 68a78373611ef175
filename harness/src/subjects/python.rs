//! The Python programs the runner carries inside itself, so that a third
//! party needs only the binary: add_job.py (a producer), http_worker.py (a
//! worker over HTTP), and the Python step driver with the steps it
//! imports. [`install`] writes them into a directory and names the
//! subjects that run them.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::process::Procs;
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

/// How long an interpreter may take to say where it lives.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// The interpreter that `command` starts, by its own path
/// (`sys.executable`), asked once in `dir`. A version manager's `python3`
/// (pyenv's is a shell script) costs a shell and a version lookup at every
/// start; the interpreter it ends at costs neither. None when the answer is
/// not one line naming an executable file, or takes longer than 10 s.
fn executable(command: &[OsString], dir: &Path) -> Option<PathBuf> {
    let (program, args) = command.split_first()?;
    let procs = Procs::new(format!("{}-python", std::process::id()));
    let mut cmd = Command::new(program);
    cmd.args(args)
        .args(["-c", "import sys; print(sys.executable or '')"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut spawned = procs.spawn(&mut cmd).ok()?;
    let status = spawned.wait_timeout(ASK_TIMEOUT).ok()??;
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut spawned.child.stdout.take()?, &mut out).ok()?;
    let line = out.strip_suffix(b"\n")?;
    let path = PathBuf::from(OsStr::from_bytes(line));
    let usable = status.success()
        && !line.contains(&b'\n')
        && path.is_absolute()
        && std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    usable.then_some(path)
}

/// The Python that runs add_job.py, ukue_driver.py and http_worker.py:
/// `python` resolved once (in `dir`, where the cases run, so that a
/// version manager picks the version it would pick for them), else
/// `python` as given.
pub fn interpreter(python: &Path, dir: &Path) -> PathBuf {
    executable(&[python.as_os_str().to_owned()], dir).unwrap_or_else(|| python.to_path_buf())
}

/// The command a script's `#!` line runs when it names a Python plainly:
/// `#!/usr/bin/env python3` (env and one word), or `#!/usr/bin/python3`
/// (the interpreter's path alone). None for any other first line, and for
/// a file that is not executable (the kernel would not run it either).
fn python_shebang(script: &Path) -> Option<Vec<OsString>> {
    let meta = std::fs::metadata(script).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return None;
    }
    let mut first = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(std::fs::File::open(script).ok()?, 256), &mut first)
        .ok()?;
    // The whole line, as the kernel reads it (a carriage return would be
    // part of the interpreter's name, so such a script does not run).
    let end = first.iter().position(|b| *b == b'\n')?;
    let line = std::str::from_utf8(first[..end].strip_prefix(b"#!")?).ok()?;
    if line.contains('\r') {
        return None;
    }
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    let named_python = |word: &str| {
        let name = word.rsplit('/').next().unwrap_or(word);
        name.strip_prefix("python").is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    match words[..] {
        [env, name]
            if env.starts_with('/') && env.ends_with("/env") && named_python(name) && !name.contains('/') =>
        {
            Some(vec![env.into(), name.into()])
        }
        [python] if python.starts_with('/') && named_python(python) => Some(vec![python.into()]),
        _ => None,
    }
}

/// `subject` run as `PYTHON SCRIPT` when it is a Python script whose `#!`
/// line names its Python plainly (see [`python_shebang`]): that Python
/// resolved once, in `dir`, so that a version manager's shim does not
/// start a shell at every command. The same interpreter runs the same
/// script with the same arguments; the subject keeps its name. Any other
/// subject, or one whose Python does not answer, is left as it is.
pub fn by_interpreter(subject: Subject, dir: &Path) -> Subject {
    if !subject.args.is_empty() {
        return subject;
    }
    let Some(python) = python_shebang(&subject.program).and_then(|command| executable(&command, dir)) else {
        return subject;
    };
    let Some(script) = subject.program.to_str().map(str::to_string) else { return subject };
    Subject { program: python, args: vec![script], ..subject }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_plain_python_shebang_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let command = |text: &str| python_shebang(&script(d, "s", text, 0o755));
        let words = |w: &[&str]| Some(w.iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(command("#!/usr/bin/env python3\nprint(1)\n"), words(&["/usr/bin/env", "python3"]));
        assert_eq!(command("#! /usr/bin/env  python\n"), words(&["/usr/bin/env", "python"]));
        assert_eq!(command("#!/usr/bin/python3.12\n"), words(&["/usr/bin/python3.12"]));
        for other in [
            "#!/usr/bin/env -S python3 -u\n",
            "#!/usr/bin/python3 -u\n",
            "#!/usr/bin/env python3\r\n",
            "#!/usr/bin/env ruby\n",
            "#!/bin/sh\n",
            "#!/usr/bin/env ./python3\n",
            "#!python3\n",
            "print(1)\n",
            "#!/usr/bin/env python3",
        ] {
            assert_eq!(command(other), None, "{other:?}");
        }
        let not_executable = script(d, "n", "#!/usr/bin/env python3\n", 0o644);
        assert_eq!(python_shebang(&not_executable), None);
    }

    #[test]
    fn an_interpreter_is_what_it_answers_else_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // A shim that answers with where "its" interpreter lives.
        let shim = script(d, "python3", "#!/bin/sh\necho /bin/sh\n", 0o755);
        assert_eq!(interpreter(&shim, d), PathBuf::from("/bin/sh"));
        for (name, text) in [
            ("relative", "#!/bin/sh\necho python3\n"),
            ("empty", "#!/bin/sh\necho\n"),
            ("failing", "#!/bin/sh\necho /bin/sh; exit 1\n"),
            ("missing", "#!/bin/sh\necho /no/such/python\n"),
            ("two-lines", "#!/bin/sh\necho /bin/sh; echo /bin/sh\n"),
        ] {
            let given = script(d, name, text, 0o755);
            assert_eq!(interpreter(&given, d), given, "{name}");
        }
        let gone = d.join("no-such-python");
        assert_eq!(interpreter(&gone, d), gone);
    }

    #[test]
    fn a_python_script_runs_by_its_resolved_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let shim = script(d, "python3", "#!/bin/sh\necho /bin/sh\n", 0o755);
        let ukue = script(d, "ukue.py", &format!("#!{}\nprint(1)\n", shim.display()), 0o755);
        let subject = by_interpreter(Subject::binary(&ukue), d);
        assert_eq!(subject.name, "ukue.py");
        assert_eq!(subject.program, PathBuf::from("/bin/sh"));
        assert_eq!(subject.args, vec![ukue.display().to_string()]);
        let binary = Subject::binary("/bin/sh");
        assert_eq!(by_interpreter(binary.clone(), d), binary);
    }
}
