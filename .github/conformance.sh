#!/usr/bin/env bash
# Runs the ukue conformance suite against an implementation, as the
# composite action (action.yml) does, or by hand. Settings, all from the
# environment:
#   UKUE_IMPL                the program under test (required)
#   UKUE_PARTITION           a shard: count:K/N or hash:K/N (default: the whole run)
#   UKUE_EXPECTED_FAILURES   a known-failures file
#   UKUE_STRICT              true: a `should` case that does not pass fails the run
#   UKUE_ARGS                more arguments for ukue-conformance (split on spaces)
#   UKUE_OUT                 where the reports go (default: ukue-conformance-report)
#   UKUE_RUNNER              the ukue-conformance to run (default: the one on PATH,
#                            else one installed as UKUE_INSTALL says)
#   UKUE_INSTALL             wheel (default): pip installs UKUE_PACKAGE into a venv;
#                            cargo: `cargo install --path harness` from this repository
#   UKUE_PACKAGE             what pip installs (default: ukue-conformance==VERSION,
#                            harness/Cargo.toml's version); a wheel's path or URL works
# Writes $UKUE_OUT/report.json (one JSON object a case: `ukue-conformance
# merge` joins shards), junit.xml, and report.html when the runner has
# --html; prints the summary; exits with the runner's status.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${UKUE_IMPL:?UKUE_IMPL names the implementation under test}"
out=${UKUE_OUT:-ukue-conformance-report}
mkdir -p "$out"

runner=${UKUE_RUNNER:-}
if [[ -z $runner ]]; then
    runner=$(command -v ukue-conformance || true)
fi
if [[ -z $runner ]]; then
    # Either way the runner, ukue-probe and the reference ukue-reference end
    # up in one bin directory; fixtures and add_job.py are inside the runner.
    root=${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ukue-conformance
    case ${UKUE_INSTALL:-wheel} in
    wheel)
        # The runner of the version this script came with, so that the
        # action at a tag runs that tag's suite.
        version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$here/harness/Cargo.toml" | head -n 1)
        python3 -m venv "$root"
        "$root/bin/python" -m pip install --quiet --disable-pip-version-check "${UKUE_PACKAGE:-ukue-conformance==$version}"
        ;;
    cargo)
        cargo install --locked --path "$here/harness" --root "$root"
        ;;
    *)
        echo "UKUE_INSTALL is wheel or cargo, not ${UKUE_INSTALL}" >&2
        exit 2
        ;;
    esac
    runner=$root/bin/ukue-conformance
fi

args=(--impl "$UKUE_IMPL" --format json --junit "$out/junit.xml")
[[ -n ${UKUE_PARTITION:-} ]] && args+=(--partition "$UKUE_PARTITION")
[[ -n ${UKUE_EXPECTED_FAILURES:-} ]] && args+=(--expected-failures "$UKUE_EXPECTED_FAILURES")
[[ ${UKUE_STRICT:-false} == true ]] && args+=(--strict)
if "$runner" --help | grep -q -- '--html'; then
    args+=(--html "$out/report.html")
fi
# shellcheck disable=SC2206 # split on purpose
extra=(${UKUE_ARGS:-})

status=0
"$runner" "${args[@]}" "${extra[@]}" >"$out/report.json" || status=$?
# The human summary of this run (or shard), from its own report.
"$runner" merge "$out/report.json" || true

if [[ -n ${GITHUB_OUTPUT:-} ]]; then
    suffix=${UKUE_PARTITION:+-${UKUE_PARTITION//[:\/]/-}}
    echo "artifact=ukue-conformance$suffix" >>"$GITHUB_OUTPUT"
fi
exit "$status"
