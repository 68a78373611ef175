#!/usr/bin/env bash
# Minimises each target's corpus into fixtures/fuzz/<target>/: what is there
# and what the runs found (fuzz/corpus/<target>/), through `cargo fuzz cmin`
# with -use_counters=0, which keeps the fewest inputs that reach every edge
# (not every hit count: the repository stays small, and a fuzzer regrows
# those in minutes). Seeds keep their names when cmin keeps them, and every
# regression-* and catches-* seed stays whether or not it adds an edge.
#
#   fuzz/cmin.sh [TARGET...]      targets: those of fuzz/fuzz_targets/
set -euo pipefail
cd "$(dirname "$0")"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in fuzz_targets/*.rs; do targets+=("$(basename "$source" .rs)"); done
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
export RUSTC_BOOTSTRAP=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for target in "${targets[@]}"; do
  seeds=../fixtures/fuzz/$target
  mkdir -p "$work/$target" "corpus/$target"
  cp "$seeds"/* "$work/$target/"
  find "corpus/$target" -type f -exec cp {} "$work/$target/" \;
  before=$(find "$work/$target" -type f | wc -l)
  cargo fuzz cmin -O --debug-assertions --sanitizer none "$target" "$work/$target" -- -use_counters=0 \
    >"$work/$target.log" 2>&1 || { cat "$work/$target.log" >&2; exit 1; }
  # cmin names what it keeps by the SHA-1 of its bytes: give seeds their names back.
  for seed in "$seeds"/*; do
    hash=$(sha1sum <"$seed" | cut -c1-40)
    kept=$work/$target/$hash
    case $(basename "$seed") in
      "$hash") ;;
      regression-* | catches-*) rm -f "$kept"; cp "$seed" "$work/$target/" ;;
      *) [ ! -e "$kept" ] || mv "$kept" "$work/$target/$(basename "$seed")" ;;
    esac
  done
  rm -rf "$seeds"
  mv "$work/$target" "$seeds"
  echo "$target: $before inputs -> $(find "$seeds" -type f | wc -l) seeds, $(cat "$seeds"/* | wc -c) bytes"
done
