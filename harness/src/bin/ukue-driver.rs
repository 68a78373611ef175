//! `ukue-driver`: the step-driver protocol over the reference library
//! (spec/CONFORMANCE.md, "The step-driver protocol"). With `UKUE_BROKEN`
//! set it runs that bug's edited FORMAT.md (ukue_harness::broken).

fn main() -> std::process::ExitCode {
    ukue_harness::driver::main()
}
