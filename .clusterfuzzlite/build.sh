#!/usr/bin/env bash
# Builds every cargo-fuzz target (fuzz/fuzz_targets/*.rs) for ClusterFuzzLite
# or OSS-Fuzz, and puts each in $OUT with its dictionary (fuzz/dict/T.dict,
# as T.dict) and its seed corpus (fixtures/fuzz/T/, as T_seed_corpus.zip).
#
#   .clusterfuzzlite/build.sh           builds into $OUT (unset: a new temporary folder, printed)
#   .clusterfuzzlite/build.sh --check   builds nothing: checks that every target has its
#                                       dictionary and seeds, and prints them
#
# In ClusterFuzzLite's image (.clusterfuzzlite/Dockerfile) this runs as
# $SRC/build.sh with the checkout in $SRC/ukue, and $OUT and $SANITIZER are
# set. Run from a checkout, it builds that checkout, with stable Rust and
# RUSTC_BOOTSTRAP=1 for cargo-fuzz's nightly flags (as fuzz/run.sh), installs
# cargo-fuzz from crates.io when it is missing, and takes the sanitizer that
# ClusterFuzzLite's Rust builds use, address, unless SANITIZER says otherwise
# (none: no sanitizer). Release builds with debug assertions and overflow
# checks on, as fuzz/run.sh builds them.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
if [ -f "$here/../fuzz/Cargo.toml" ]; then
  root=$(cd "$here/.." && pwd)
else
  root=${SRC:?neither a checkout around this script nor \$SRC}/ukue
fi
cd "$root"

targets=()
for source in fuzz/fuzz_targets/*.rs; do
  targets+=("$(basename "$source" .rs)")
done
missing=0
for target in "${targets[@]}"; do
  for need in "fuzz/dict/$target.dict" "fixtures/fuzz/$target"; do
    if [ ! -e "$need" ]; then
      echo "build.sh: fuzz target $target has no $need" >&2
      missing=1
    fi
  done
done
[ $missing = 0 ] || exit 1

if [ "${1:-}" = --check ]; then
  for target in "${targets[@]}"; do
    echo "$target: fuzz/dict/$target.dict, $(find "fixtures/fuzz/$target" -type f | wc -l) seeds in fixtures/fuzz/$target"
  done
  exit 0
fi

out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/ukue-fuzz-out-XXXXXX")}
mkdir -p "$out"
sanitizer=${SANITIZER:-address}
case $sanitizer in
  address | leak | memory | thread | none) sanitize=(--sanitizer "$sanitizer") ;;
  # coverage, introspector: the image's cargo adds what they need.
  *) sanitize=() ;;
esac
command -v zip >/dev/null || { echo "build.sh: zip is missing (apt-get install zip)" >&2; exit 1; }
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
export RUSTC_BOOTSTRAP=1

echo "build.sh: building ${targets[*]} from $root (sanitizer $sanitizer) into $out"
cargo fuzz build -O --debug-assertions "${sanitize[@]}"
built=fuzz/target/x86_64-unknown-linux-gnu/release
for target in "${targets[@]}"; do
  cp "$built/$target" "$out/$target"
  cp "fuzz/dict/$target.dict" "$out/$target.dict"
  rm -f "$out/${target}_seed_corpus.zip"
  (cd "fixtures/fuzz/$target" && zip -q -j "$out/${target}_seed_corpus.zip" ./*)
  echo "$target: $(stat -c %s "$out/$target") bytes, $target.dict, ${target}_seed_corpus.zip ($(find "fixtures/fuzz/$target" -type f | wc -l) seeds)"
done
echo "build.sh: ${#targets[@]} targets in $out"
