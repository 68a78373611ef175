//! `cli_args`: see ukue_harness::fuzzing::cli_args.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ukue_harness::fuzzing::cli_args(data));
