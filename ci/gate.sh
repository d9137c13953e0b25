#!/usr/bin/env bash
# Pre-merge throughput gate for a CI job: runs `cargo xtask bench` on two FDB arms and
# leaves junit.xml and the results directory where the job uploads them.
#
#   ci/gate.sh --baseline-build ../fdb-base/build --experiment-build ../fdb-pr/build [bench flags]
#   ci/gate.sh --fdb-src ../foundationdb --baseline BASE_SHA --experiment PR_SHA [bench flags]
#
# Any bench flag given here wins over the default this script would set for it
# (--profile, --trials, --time-budget, --strict, --out, --junit, --baselines-dir).
# Environment (all optional):
#   PERFGATE_PROFILE  workload profile, default quick
#   PERFGATE_TRIALS   A/B pairs per engine, default auto: pairs are added until the verdict
#                     is decided or PERFGATE_TIME_BUDGET (default 30m) is spent
#   PERFGATE_STRICT   1 (default): INCONCLUSIVE fails the job (exit 1), so a loss the trials
#                     could not rule out never passes silently; 0 lets it pass
#   PERFGATE_OUT      results directory (must not exist yet), default a new
#                     perfgate-results/<UTC time>-<pid>, so that a rerun in the same
#                     workspace (a self-hosted runner keeps it) does not find the last one
#   PERFGATE_JUNIT    JUnit file, default junit.xml (replaced by each run)
#   PERFGATE_XTASK    a built gate binary to run instead of `cargo run` (e.g. target/release/xtask)
#   PERFGATE_SLO_TPS_<ENGINE>  TPS floors, see README
# Exit status is the gate's: 0 pass, 1 REGRESSION/SLO-VIOLATION (or INCONCLUSIVE, strict),
# 2 TIMEOUT/error, 64 usage.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# Whether flag $1 is among the remaining arguments (as `--flag value` or `--flag=value`).
given() {
  local flag=$1
  shift
  for a in "$@"; do
    case $a in "$flag" | "$flag"=*) return 0 ;; esac
  done
  return 1
}

# The value of flag $1 among the remaining arguments, if given.
value_of() {
  local flag=$1
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      "$flag"=*) echo "${1#*=}"; return ;;
      "$flag") echo "${2:-}"; return ;;
    esac
    shift
  done
}

out=${PERFGATE_OUT:-perfgate-results/$(date -u +%Y%m%dT%H%M%SZ)-$$}
junit=${PERFGATE_JUNIT:-junit.xml}
trials=${PERFGATE_TRIALS:-auto}
defaults=()
given --profile "$@" || defaults+=(--profile "${PERFGATE_PROFILE:-quick}")
if ! given --trials "$@"; then
  defaults+=(--trials "$trials")
  if [ "$trials" = auto ] && ! given --time-budget "$@"; then
    defaults+=(--time-budget "${PERFGATE_TIME_BUDGET:-30m}")
  fi
fi
if [ "${PERFGATE_STRICT:-1}" = 1 ] && ! given --strict "$@"; then
  defaults+=(--strict)
fi
if given --out "$@"; then out=$(value_of --out "$@"); else defaults+=(--out "$out"); fi
if given --junit "$@"; then junit=$(value_of --junit "$@"); else defaults+=(--junit "$junit"); fi
given --baselines-dir "$@" || defaults+=(--baselines-dir "$root/baselines")

if [ -n "${PERFGATE_XTASK:-}" ]; then
  gate=("$PERFGATE_XTASK")
else
  gate=(cargo run --quiet --manifest-path "$root/Cargo.toml" --package xtask --)
fi
# A junit.xml of an earlier run is not this run's: only one written after this stamp is.
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT
"${gate[@]}" bench "${defaults[@]}" "$@"
status=$?
if [ -f "$junit" ] && [ "$junit" -nt "$stamp" ]; then
  where="JUnit in $junit"
else
  where="no JUnit written by this run ($junit)"
fi
if [ -d "$out" ]; then
  where="$where, results in $out"
else
  where="$where, no results directory"
fi
echo "perfgate: exit status $status (0 pass, 1 regression, SLO violation or, strict, inconclusive; 2 timeout or error, 64 usage); $where"
exit $status
