//! `cli_args`: see ukue_harness::explore::fuzz_cli::cli_args.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ukue_harness::explore::fuzz_cli::cli_args(data));
