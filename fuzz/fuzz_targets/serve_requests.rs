//! `serve_requests`: see ukue_harness::explore::fuzz_serve::serve_requests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ukue_harness::explore::fuzz_serve::serve_requests(data));
