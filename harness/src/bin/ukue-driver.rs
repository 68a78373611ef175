//! `ukue-driver`: the step-driver protocol over the reference library; see
//! ukue_harness::commands::driver.

fn main() -> std::process::ExitCode {
    ukue_harness::commands::driver::main()
}
