//! The probe that `ukue work` runs in the conformance cases:
//! `ukue-probe LOG`. See ukue_harness::commands::probe.

fn main() {
    ukue_harness::commands::probe::main()
}
