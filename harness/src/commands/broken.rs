//! `ukue-broken`: a deliberately broken `ukue`: the reference command line
//! running an edited FORMAT.md, chosen by `UKUE_BROKEN=NAME`
//! (crate::subjects::broken). The conformance tests show that the suite
//! fails each one.

use std::process::ExitCode;

use crate::subjects::broken;

pub fn main() -> ExitCode {
    let name = std::env::var("UKUE_BROKEN").unwrap_or_default();
    let Some(bug) = broken::bug(&name) else {
        eprintln!("ukue-broken: set UKUE_BROKEN to one of {}", broken::names());
        return ExitCode::from(3);
    };
    match broken::spec(bug) {
        Ok(spec) => ukue::cli::main_with_flaws(ukue::OpenOptions::default().spec(spec), bug.serve.clone()),
        Err(e) => {
            eprintln!("ukue-broken: {e}");
            ExitCode::from(3)
        }
    }
}
