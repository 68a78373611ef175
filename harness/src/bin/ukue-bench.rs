//! The benchmark: the reference against the disk's own ceiling; see
//! `ukue-bench --help` and ukue_harness::bench.

fn main() -> std::process::ExitCode {
    ukue_harness::bench::main()
}
