//! `open_bytes`: see ukue_harness::explore::fuzzing::open_bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ukue_harness::explore::fuzzing::open_bytes(data));
