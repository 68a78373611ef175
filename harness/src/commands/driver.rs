//! `ukue-driver`: the step-driver protocol (spec/CONFORMANCE.md, "The
//! step-driver protocol") over the reference library
//! (crate::subjects::driver::ReferenceDriver). With `UKUE_BROKEN` set it
//! runs that bug's edited FORMAT.md (crate::subjects::broken), so that a
//! broken driver exists.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use crate::subjects::broken;
use crate::subjects::driver::ReferenceDriver;

/// The `ukue-driver` binary: hello, then one answer per request line until
/// stdin ends.
pub fn main() -> ExitCode {
    let spec = match broken::spec_from_env() {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("ukue-driver: {e}");
            return ExitCode::from(3);
        }
    };
    let mut driver = ReferenceDriver::new(spec);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let hello = serde_json::to_string(&driver.hello()).expect("a hello is JSON");
    if writeln!(out, "{hello}").and_then(|()| out.flush()).is_err() {
        return ExitCode::from(1);
    }
    let mut stdin = std::io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        let answer = driver.handle_line(text.trim_end_matches(['\n', '\r']));
        if writeln!(out, "{answer}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}
