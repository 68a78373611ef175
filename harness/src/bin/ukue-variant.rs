//! A correct `ukue` that differs from the reference: see
//! ukue_harness::commands::variant.

fn main() -> std::process::ExitCode {
    ukue_harness::commands::variant::main()
}
