//! `driver_lines`: see ukue_harness::explore::fuzzing::driver_lines.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ukue_harness::explore::fuzzing::driver_lines(data));
