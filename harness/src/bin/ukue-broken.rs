//! A deliberately broken `ukue`: the reference command line running an
//! edited FORMAT.md, chosen by `UKUE_BROKEN=NAME` (see ukue_harness::broken).
//! The conformance tests show that the suite fails each one.

use std::process::ExitCode;

fn main() -> ExitCode {
    let name = std::env::var("UKUE_BROKEN").unwrap_or_default();
    let Some(bug) = ukue_harness::broken::bug(&name) else {
        let names: Vec<&str> = ukue_harness::broken::BUGS.iter().map(|b| b.name).collect();
        eprintln!("ukue-broken: set UKUE_BROKEN to one of {}", names.join(", "));
        return ExitCode::from(3);
    };
    match ukue_harness::broken::spec(bug) {
        Ok(spec) => ukue::cli::main_with(ukue::OpenOptions::default().spec(spec)),
        Err(e) => {
            eprintln!("ukue-broken: {e}");
            ExitCode::from(3)
        }
    }
}
