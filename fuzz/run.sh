#!/usr/bin/env bash
# Runs each cargo-fuzz target for SECONDS (default 60), one at a time,
# starting from its seed corpus in fixtures/fuzz/<target>/ with its
# dictionary fuzz/dict/<target>.dict, and prints per target execs/s, execs,
# and the coverage libFuzzer counts at the end: cov (edges) and ft (features).
#
#   fuzz/run.sh [SECONDS] [TARGET...]      targets: those of fuzz_targets/ (default: all)
#
# Environment: SEED (libFuzzer's -seed; default: a new one, printed),
# SANITIZER (cargo fuzz --sanitizer; default none: the Rust code is safe and
# SQLite's C is not instrumented either way; use address for ASan). The
# build is .clusterfuzzlite/build.sh's: release, with debug assertions and
# overflow checks.
# cargo-fuzz needs nightly flags: this uses the stable toolchain with
# RUSTC_BOOTSTRAP=1, and installs cargo-fuzz from crates.io when missing.
# New inputs go to fuzz/corpus/<target>/ (ignored by git; fuzz/cmin.sh
# minimises them into fixtures/fuzz/); a crash is saved in
# fuzz/artifacts/<target>/ — once fixed, copy it to
# fixtures/fuzz/<target>/regression-NAME so that `cargo test`
# (harness/tests/fuzz_corpus.rs) replays it from then on (cmin.sh keeps it).
#
# UKUE_BROKEN=NAME runs ops_vs_model against a deliberately broken FORMAT.md
# (harness/src/subjects/broken.rs): it should fail within seconds.
set -euo pipefail
cd "$(dirname "$0")"

secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in fuzz_targets/*.rs; do targets+=("$(basename "$source" .rs)"); done
fi
seed=${SEED:-$(( (RANDOM << 15 | RANDOM) + 1 ))}
sanitizer=${SANITIZER:-none}

command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz
export RUSTC_BOOTSTRAP=1
echo "fuzz: ${secs}s per target, seed $seed, sanitizer $sanitizer"
cargo fuzz build -O --debug-assertions --sanitizer "$sanitizer"

mkdir -p logs
status=0
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  log="logs/$target.log"
  if cargo fuzz run -O --debug-assertions --sanitizer "$sanitizer" "$target" "corpus/$target" "../fixtures/fuzz/$target" -- \
      -seed="$seed" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -dict="dict/$target.dict" \
      >"$log" 2>&1; then
    verdict=ok
  else
    verdict="FAILED (see fuzz/$log and fuzz/artifacts/$target/; replay: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run -O --debug-assertions --sanitizer $sanitizer $target ARTIFACT)"
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  cov=$(grep -o 'DONE *cov: [0-9]* ft: [0-9]*' "$log" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]*' || true)
  printf '%-14s %8s execs/s  %10s execs  %-20s %s\n' "$target" "${rate:-?}" "${execs:-?}" "${cov:-cov: ?}" "$verdict"
done
exit $status
