#!/usr/bin/env bash
# Pre-merge throughput gate for a CI job: runs `cargo xtask bench` on two FDB build trees
# and leaves junit.xml and the results directory where the job uploads them.
#
#   ci/gate.sh --baseline-build ../fdb-base/build --experiment-build ../fdb-pr/build [bench flags]
#
# Environment (all optional):
#   PERFGATE_PROFILE  workload profile, default quick
#   PERFGATE_TRIALS   A/B pairs per engine, default auto: pairs are added until the verdict
#                     is decided or PERFGATE_TIME_BUDGET (default 30m) is spent
#   PERFGATE_STRICT   1 (default): INCONCLUSIVE fails the job (exit 1), so a loss the trials
#                     could not rule out never passes silently; 0 lets it pass
#   PERFGATE_OUT      results directory, default perfgate-results (must not exist yet)
#   PERFGATE_JUNIT    JUnit file, default junit.xml
#   PERFGATE_SLO_TPS_<ENGINE>  TPS floors, see README
# Exit status is the gate's: 0 pass, 1 REGRESSION/SLO-VIOLATION (or INCONCLUSIVE, strict),
# 2 TIMEOUT/error, 64 usage.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${PERFGATE_OUT:-perfgate-results}
junit=${PERFGATE_JUNIT:-junit.xml}
trials=${PERFGATE_TRIALS:-auto}
budget=()
[ "$trials" = auto ] && budget=(--time-budget "${PERFGATE_TIME_BUDGET:-30m}")
strict=()
[ "${PERFGATE_STRICT:-1}" = 1 ] && strict=(--strict)
cargo run --quiet --manifest-path "$root/Cargo.toml" --package xtask -- bench \
  --profile "${PERFGATE_PROFILE:-quick}" \
  --trials "$trials" "${budget[@]}" "${strict[@]}" \
  --out "$out" --junit "$junit" \
  --baselines-dir "$root/baselines" \
  "$@"
status=$?
echo "perfgate: exit status $status (0 pass, 1 regression, SLO violation or, strict, inconclusive; 2 timeout or error, 64 usage); JUnit in $junit, results in $out"
exit $status
