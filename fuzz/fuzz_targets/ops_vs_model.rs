//! `ops_vs_model`: see ukue_harness::explore::fuzzing::ops_vs_model.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ukue_harness::explore::fuzzing::ops_vs_model(data));
