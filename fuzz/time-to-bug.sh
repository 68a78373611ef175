#!/usr/bin/env bash
# Times a fuzz target to each known bug, as FuzzBench and Magma measure
# fuzzers: for each mutant, RUNS runs (libFuzzer seeds 1..RUNS), each from a
# fixed start and capped at CAP seconds, and the seconds to the first crash
# that the target's check explains (a panic of its property, not a timeout
# or running out of memory).
#
#   fuzz/time-to-bug.sh [TARGET] [NAME...]     TARGET: ops_vs_model (default),
#                                              driver_lines, serve_requests, cli_args,
#                                              open_bytes
#
# The mutants (`ukue-conformance mutants` lists them) are chosen at run time
# by UKUE_BROKEN=NAME, so one build runs them all:
# - ops_vs_model, driver_lines: every mutant of FORMAT.md's statements
#   (generated and hand-made, harness/src/subjects/mutants.rs) and the step
#   bugs of ukue-broken, from an empty corpus;
# - serve_requests: the broken-server layers of ukue-broken, from the seed
#   corpus without its catches-* inputs (not serve-stop-fails, which is
#   `serve-unreached`: only the exit status of the process shows it);
# - cli_args: the command-line bugs of ukue-broken, from an empty corpus;
# - open_bytes: the mutants that run only as a file is made or opened (the
#   `unreached` of ops_vs_model), from the seed corpus (files to open), each
#   opening compared with the builtin FORMAT.md's.
# Mutants listed as equivalent or unreached are skipped (ALL=1 runs them).
# A mutant that the first run does not kill is not run again (FULL=1 runs
# every seed regardless).
#
# When the time is short, SAMPLE=SEED times the mutants in an order shuffled
# by SEED (NAMEs given first keep their place), and UNTIL=HH:MM starts no
# mutant after that time (UTC): those timed are then a seeded random sample,
# and the summary counts those left untimed.
#
# Environment: RUNS (3), CAP (60 s), OUT (fuzz/logs/time-to-bug), ALL, FULL,
# SAMPLE, UNTIL.
# Prints a line a run, and at the end: mutants, killed in every run, killed
# in some, not killed, and the median and worst seconds to kill. The runs'
# lines go to $OUT/TARGET.tsv (mutant, seed, seconds or -, verdict), each
# run's log to $OUT/TARGET/, and the first input that killed each mutant to
# $OUT/TARGET/MUTANT.crash (a catches-* seed, once copied to fixtures/fuzz/).
set -euo pipefail
cd "$(dirname "$0")"

target=${1:-ops_vs_model}
shift || true
runs=${RUNS:-3}
cap=${CAP:-60}
out=${OUT:-logs/time-to-bug}
mkdir -p "$out/$target"
table="$out/$target.tsv"

command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O --debug-assertions --sanitizer none "$target" >&2
binary=target/x86_64-unknown-linux-gnu/release/$target

case $target in
  ops_vs_model | driver_lines) kinds='^(generated|hand-made|bug)$'; explained='disagrees with the model|after the last op|panicked at' ;;
  serve_requests) kinds='^serve-bug$'; explained='serve_requests:' ;;
  cli_args) kinds='^cli-bug$'; explained='cli_args:' ;;
  open_bytes) kinds='^unreached$'; explained='open_bytes: the mutant' ;;
  *) echo "time-to-bug.sh: no mutants for $target" >&2; exit 2 ;;
esac
# driver_lines checks no model: any panic of its checks is one it explains.
[ "$target" = driver_lines ] && explained='panicked at'
# ops_vs_model: inputs of any length from the start (some 64 ops, about 9
# bytes each), not grown a few bytes at a time: from an empty corpus
# libFuzzer's length control kept them to two or three ops for a minute,
# and the mutants of the holder steps' `id = :id` need five.
lengths=()
[ "$target" = ops_vs_model ] && lengths=(-len_control=0 -max_len=640)

names=("$@")
if [ ${#names[@]} -eq 0 ] || [ -n "${SAMPLE:-}" ]; then
  listing=$(cd .. && cargo run -q --release -p ukue-harness --bin ukue-conformance -- mutants)
  rest=()
  while IFS=$'\t' read -r name kind _; do
    kind=${kind%%:*}
    if [[ $kind =~ $kinds ]] || { [ -n "${ALL:-}" ] && [[ $kind =~ ^(equivalent|unreached)$ ]] && [[ $target =~ ^(ops_vs_model|driver_lines)$ ]]; }; then
      [[ " ${names[*]} " == *" $name "* ]] || rest+=("$name")
    fi
  done <<<"$listing"
  if [ -n "${SAMPLE:-}" ]; then
    # shuf's random source: a stream made from the seed alone.
    mapfile -t rest < <(printf '%s\n' "${rest[@]}" | shuf --random-source=<(openssl enc -aes-256-ctr -pass "pass:$SAMPLE" -nosalt </dev/zero 2>/dev/null))
  fi
  names+=("${rest[@]}")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ukue-time-to-bug-XXXXXX")
trap 'rm -rf "$work"' EXIT
: >"$table"
echo "time-to-bug: $target, ${#names[@]} mutants, $runs runs of at most ${cap}s each" >&2
untimed=0
for name in "${names[@]}"; do
  if [ -n "${UNTIL:-}" ] && [[ $(date -u +%H:%M) > $UNTIL || $(date -u +%H:%M) == "$UNTIL" ]]; then
    untimed=$((untimed + 1))
    continue
  fi
  for seed in $(seq 1 "$runs"); do
    corpus="$work/corpus"
    rm -rf "$corpus" "$work/crash-"*
    mkdir -p "$corpus"
    if [ "$target" = serve_requests ] || [ "$target" = open_bytes ]; then
      find "../fixtures/fuzz/$target" -type f ! -name 'catches-*' -exec cp {} "$corpus/" \;
    fi
    log="$out/$target/${name//\//_}.$seed.log"
    start=$(date +%s.%N)
    UKUE_BROKEN=$name timeout -k 5 $((cap + 30)) "$binary" "$corpus" -seed="$seed" -max_total_time="$cap" "${lengths[@]}" \
      -timeout=10 -rss_limit_mb=4096 -dict="dict/$target.dict" -artifact_prefix="$work/" \
      -print_final_stats=1 >"$log" 2>&1 && status=0 || status=$?
    end=$(date +%s.%N)
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    if [ "$status" = 0 ]; then
      verdict=survived seconds=-
    elif grep -Eq "$explained" "$log" && ! grep -Eq 'ALARM: working on the last Unit|out-of-memory' "$log"; then
      verdict=killed
    else
      verdict="crashed unexplained (see $log)" seconds=-
    fi
    if [ "$verdict" = killed ] && [ ! -e "$out/$target/${name//\//_}.crash" ]; then
      cp "$(ls "$work"/crash-* | head -1)" "$out/$target/${name//\//_}.crash" 2>/dev/null || true
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$seed" "$seconds" "$verdict" | tee -a "$table"
    [ "$verdict" = killed ] || [ -n "${FULL:-}" ] || break
  done
done

# The summary (plain awk: no gawk on every machine).
times=$(awk -F'\t' '$4 == "killed" { print $3 }' "$table" | sort -n)
kills=$(printf '%s\n' "$times" | grep -c . || true)
median=$(printf '%s\n' "$times" | awk -v n="$kills" 'n { v[NR] = $1 } END { if (!n) print 0; else if (n % 2) print v[(n + 1) / 2]; else print (v[n / 2] + v[n / 2 + 1]) / 2 }')
worst=$(printf '%s\n' "$times" | tail -1)
awk -F'\t' -v runs="$runs" -v kills="$kills" -v median="$median" -v worst="${worst:-0}" '
  { n[$1] += 0; if ($4 == "killed") k[$1]++ }
  END {
    for (x in n) { all++; if (k[x] == runs) every++; else if (k[x] > 0) some++; else none++ }
    printf "mutants %d, killed in %d of %d runs: %d, in some: %d, not killed: %d; seconds to kill: median %s, worst %s (%d kills)\n",
      all, runs, runs, every + 0, some + 0, none + 0, median, worst, kills
    for (x in n) if (k[x] < runs) print "  not killed in every run: " x
  }' "$table"
[ "$untimed" = 0 ] || echo "not timed (UNTIL=$UNTIL): $untimed of ${#names[@]} mutants"
