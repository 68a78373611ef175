//! The probe that `ukue work` runs in the conformance cases:
//! `ukue-probe LOG`. See ukue_harness::probe.

fn main() {
    let Some(log) = std::env::args_os().nth(1) else {
        eprintln!("usage: ukue-probe LOG (run by ukue work; the job's payload is its script)");
        std::process::exit(2);
    };
    std::process::exit(ukue_harness::probe::main(log.into()));
}
