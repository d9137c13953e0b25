#!/usr/bin/env bash
# Pre-merge throughput gate for a CI job: runs `cargo xtask bench` on two FDB build trees
# and leaves junit.xml and the results directory where the job uploads them.
#
#   ci/gate.sh --baseline-build ../fdb-base/build --experiment-build ../fdb-pr/build [bench flags]
#
# Environment (all optional):
#   PERFGATE_PROFILE  workload profile, default quick
#   PERFGATE_TRIALS   A/B pairs per engine, default 3 (or auto, with --time-budget)
#   PERFGATE_OUT      results directory, default perfgate-results (must not exist yet)
#   PERFGATE_JUNIT    JUnit file, default junit.xml
#   PERFGATE_SLO_TPS_<ENGINE>  TPS floors, see README
# Exit status is the gate's: 0 pass, 1 REGRESSION/SLO-VIOLATION, 2 TIMEOUT/error, 64 usage.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${PERFGATE_OUT:-perfgate-results}
junit=${PERFGATE_JUNIT:-junit.xml}
cargo run --quiet --manifest-path "$root/Cargo.toml" --package xtask -- bench \
  --profile "${PERFGATE_PROFILE:-quick}" \
  --trials "${PERFGATE_TRIALS:-3}" \
  --out "$out" --junit "$junit" \
  --baselines-dir "$root/baselines" \
  "$@"
status=$?
echo "perfgate: exit status $status (0 pass, 1 regression or SLO violation, 2 timeout or error, 64 usage); JUnit in $junit, results in $out"
exit $status
