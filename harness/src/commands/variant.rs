//! `ukue-variant`: a correct `ukue` that differs from the reference, chosen
//! by `UKUE_VARIANT=NAME` (crate::subjects::variants): the reference's
//! command line and FORMAT.md's steps with the other side of each choice
//! the variant takes. harness/tests/variants.rs shows that the suite
//! passes each one on every `must` case.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use ukue::cli::args::Cli;
use ukue::OpenOptions;

use crate::subjects::variant_cli::{argv, error_line, error_text, run, unreadable};
use crate::subjects::variants;

pub fn main() -> ExitCode {
    let name = std::env::var("UKUE_VARIANT").unwrap_or_default();
    let Some(variant) = variants::named(&name) else {
        eprintln!("ukue-variant: set UKUE_VARIANT to one of {}", variants::names());
        return ExitCode::from(3);
    };
    let spec = match variant.spec() {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("ukue-variant: {e}");
            return ExitCode::from(3);
        }
    };
    let options = OpenOptions::default().spec(spec);
    let words: Vec<OsString> = std::env::args_os().collect();
    let words = match argv(variant, words) {
        Ok(words) => words,
        Err(status) => return ExitCode::from(status),
    };
    let cli = match Cli::try_parse_from(&words) {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(unreadable(variant, &words, e)),
    };
    let command = cli.command.name();
    let mut out = std::io::stdout().lock();
    // Returning (rather than exiting) drops every connection first, as the
    // reference does.
    match run(variant, cli.command, &options, &mut out).and_then(|()| Ok(out.flush()?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", error_line(variant, command, &error_text(variant, &e)));
            ExitCode::from(ukue::cli::exit_status(&e))
        }
    }
}
