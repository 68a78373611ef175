//! A deliberately broken `ukue`: see ukue_harness::commands::broken.

fn main() -> std::process::ExitCode {
    ukue_harness::commands::broken::main()
}
