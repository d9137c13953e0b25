#!/usr/bin/env bash
# Fuzzes perfgate's parsers of FDB and mako output for a bounded time: each cargo fuzz
# target in fuzz/ runs FUZZ_SECONDS (default 15) from a seed corpus of the real outputs
# in fdb/testdata/ (xtask/testdata/ for the baseline file). A panic fails this script and
# leaves the input in fuzz/artifacts/<target>/. Installs cargo-fuzz (crates.io) when missing; runs on the
# stable toolchain (--sanitizer none: the parsers are safe Rust, panics are the bugs).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-15}
# --debug: it only orchestrates builds, and compiles in half the time (45 s vs 87 s here).
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked --debug cargo-fuzz
data=fdb/testdata
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
seed() { # seed TARGET NAME FILE...: one corpus entry, the files joined by NUL bytes
  local dir="$corpus/$1" out="$corpus/$1/$2"; shift 2
  mkdir -p "$dir"; : > "$out"
  local first=1
  for f in "$@"; do
    [ $first = 1 ] || printf '\0' >> "$out"
    cat "$f" >> "$out"; first=0
  done
}
seed mako_report run "$data/mako-run.txt" "$data/mako.json"
seed mako_report errors "$data/mako-run-errors.txt" "$data/mako-errors.json"
seed mako_report verbose0 "$data/mako-run-verbose0.txt" "$data/mako-verbose0.json"
seed mako_report build "$data/mako-build.txt"
seed status_json available "$data/status-json-available.json"
seed status_json never "$data/status-json-never-configured-8.0.json"
seed status_json incomplete "$data/status-json-incomplete-min-trace-severity-8.0.json"
seed status_json frozen "$data/status-json-frozen-coordinator-8.0.json"
seed trace_events knobs "$data/trace-knob-events.txt"
seed trace_events stderr "$data/fdbserver-stderr-invalid-knob.txt"
seed baseline_file real xtask/testdata/baseline-real.json
for run in pointread contention overdriven two-tests; do
  seed multitest_results "$run" "$data/multitest/$run-stdout.txt" "$data/multitest/$run-trace.xml"
done
seed simulation_outputs real "$data/simulation/cachegrind-excerpt.out" "$data/simulation/stdout-seed1.txt"
for spec in g18ui grv:1 gr5:10ui ir:3 cr1:2; do
  mkdir -p "$corpus/transaction_spec"; printf '%s' "$spec" > "$corpus/transaction_spec/$spec"
done
cd fuzz
for target in mako_report status_json trace_events baseline_file transaction_spec multitest_results \
  simulation_outputs; do
  echo "fuzz: $target for ${secs}s"
  log="$corpus/$target.log"
  if ! cargo fuzz run --sanitizer none "$target" "$corpus/$target" -- \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "fuzz: $target failed (a build error above, or a crash whose input is in fuzz/artifacts/$target/)" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$log" || true
done
