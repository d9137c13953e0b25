#!/usr/bin/env bash
# Pre-merge throughput gate for a CI job: runs `cargo xtask bench` on two FDB arms and
# leaves junit.xml and the results directory where the job uploads them.
#
#   ci/gate.sh --baseline-build ../fdb-base/build --experiment-build ../fdb-pr/build [bench flags]
#   ci/gate.sh --fdb-src ../foundationdb --baseline BASE_SHA --experiment PR_SHA [bench flags]
#
# Any bench flag given here wins over the default this script would set for it
# (--profile, --trials, --time-budget, --strict, --out, --junit, --baselines-dir).
# With --export-markdown FILE (a CI job summary, e.g. $GITHUB_STEP_SUMMARY), a run that
# ends without adding its verdict table to FILE (refused before the gate started, a gate
# that did not build or crashed) adds a paragraph with its exit status instead, so the
# summary says something on every exit status. It is added only to a regular file there
# (or a new one), never through a link.
# Environment (all optional):
#   PERFGATE_PROFILE  workload profile, default quick
#   PERFGATE_TRIALS   A/B pairs per engine, default auto: pairs are added until the verdict
#                     is decided or PERFGATE_TIME_BUDGET (default 30m) is spent
#   PERFGATE_STRICT   1 (default; or true/yes/on): INCONCLUSIVE fails the job (exit 1), so
#                     a loss the trials could not rule out never passes silently; 0 (or
#                     false/no/off) lets it pass; any other value is refused (exit 64)
#   PERFGATE_OUT      results directory (must not exist yet), default a new
#                     perfgate-results/<UTC time>-<pid>, so that a rerun in the same
#                     workspace (a self-hosted runner keeps it) does not find the last one
#   PERFGATE_JUNIT    JUnit file, default junit.xml (removed before each run, so a run that
#                     stops before writing one leaves none for CI to show)
#   PERFGATE_XTASK    a built gate binary to run instead of `cargo run` (e.g. target/release/xtask)
#   PERFGATE_XTASK_CACHE  a directory where the gate is built once per commit of this
#                     checkout (DIR/<commit>/xtask, beside that commit's files) and run
#                     from then on: a job that clones the gate afresh does not compile it
#                     again. DIR/target is its cargo target dir. Like the FDB build cache,
#                     whoever can write it can run code as the job: keep it the job's own.
#                     A checkout with changes to tracked files is run with `cargo run`.
#   PERFGATE_SLO_TPS_<ENGINE>  TPS floors, see docs/slo.md
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

# The size of file $1 as `stat` gives it (of a link itself, not followed), or "none".
size_of() { stat -c %s -- "$1" 2>/dev/null || echo none; }

# Adds the paragraph on stdin to the --export-markdown file: appended to a regular file,
# or created exclusively (noclobber opens with O_EXCL, which fails on a link) where
# nothing is.
add_markdown() {
  local file=$1 text sep=
  text=$(cat)
  if [ -L "$file" ] || { [ -e "$file" ] && [ ! -f "$file" ]; }; then
    echo "perfgate: did not add the exit status to $file: not a regular file" >&2
    return 0
  fi
  if [ -s "$file" ]; then sep=$'\n'; fi
  if [ -e "$file" ]; then
    printf '%s%s\n' "$sep" "$text" >>"$file"
  else
    (set -C && printf '%s\n' "$text" >"$file")
  fi
}

# Prints the last line, naming what this run left, and with --export-markdown adds the
# exit status there when the gate added nothing to it; exits with status $1.
finish() {
  local status=$1 where
  # A link there is not this run's: the gate refuses to write through one.
  if [ -f "$junit" ] && [ ! -L "$junit" ]; then
    where="JUnit in $junit"
  else
    where="no JUnit written by this run ($junit)"
  fi
  if [ "$out_was_full" = 1 ]; then
    where="$where, no results directory of this run ($out holds an earlier one)"
  elif [ -d "$out" ]; then
    where="$where, results in $out"
  else
    where="$where, no results directory"
  fi
  echo "perfgate: exit status $status (0 pass, 1 regression, SLO violation or, strict, inconclusive; 2 timeout or error, 64 usage); $where"
  if [ -n "$markdown" ] && [ "$(size_of "$markdown")" = "$markdown_size" ]; then
    printf '## perfgate: exit status %s, no verdict table\n\n%s\n\nThis run left: %s.\n' \
      "$status" "${why:-"The gate wrote none: the job's log says why."}" "$where" \
      | add_markdown "$markdown"
  fi
  exit "$status"
}

# Refuses the run with the usage status, 64, saying why on stderr and in the job summary.
refuse() {
  why="perfgate: $1"
  echo "$why" >&2
  finish 64
}

out=${PERFGATE_OUT:-perfgate-results/$(date -u +%Y-%m-%dT%H%M%SZ)-$$}
junit=${PERFGATE_JUNIT:-junit.xml}
if given --out "$@"; then out=$(value_of --out "$@"); fi
if given --junit "$@"; then junit=$(value_of --junit "$@"); fi
markdown=$(value_of --export-markdown "$@")
markdown_size=$(size_of "$markdown")
why=
# An earlier run's JUnit file is not this run's: CI would show (and upload) its verdict
# for a run that stopped before writing one. Only a regular file is removed.
if [ -f "$junit" ] && [ ! -L "$junit" ]; then rm -f -- "$junit"; fi
# Results already in --out before the run are not this run's (the gate refuses the dir).
out_was_full=0
if [ -d "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then out_was_full=1; fi

trials=${PERFGATE_TRIALS:-auto}
defaults=()
given --profile "$@" || defaults+=(--profile "${PERFGATE_PROFILE:-quick}")
if given --trials "$@"; then trials=$(value_of --trials "$@"); else defaults+=(--trials "$trials"); fi
# --trials auto, the script's or the job's own, needs a budget.
if [ "$trials" = auto ] && ! given --time-budget "$@"; then
  defaults+=(--time-budget "${PERFGATE_TIME_BUDGET:-30m}")
fi
# A value the script does not know must not turn strictness off silently.
case "${PERFGATE_STRICT:-1}" in
  1 | true | yes | on) given --strict "$@" || defaults+=(--strict) ;;
  0 | false | no | off) ;;
  *) refuse "PERFGATE_STRICT='$PERFGATE_STRICT' is not 1/true/yes/on or 0/false/no/off" ;;
esac
given --out "$@" || defaults+=("--out=$out")
given --junit "$@" || defaults+=("--junit=$junit")
given --baselines-dir "$@" || defaults+=("--baselines-dir=$root/baselines")

cargo_run=(cargo run --quiet --manifest-path "$root/Cargo.toml" --package xtask --)

# Sets `gate` to this checkout's commit built once into $PERFGATE_XTASK_CACHE/<commit>/:
# a fresh clone (a new path, new file times) would be compiled again by `cargo run`. The
# commit's files are kept there beside the binary, in src/: the gate finds its own
# workspace (cargo metadata) where it was built, and the job removes its clone. The binary
# is copied in under a temporary name and renamed, so that a killed build never leaves
# half a binary for the next job to run.
cached_gate() {
  local cache=$PERFGATE_XTASK_CACHE commit dir bin tmp
  commit=$(git -C "$root" rev-parse --verify --quiet 'HEAD^{commit}' 2>/dev/null)
  # A checkout with changes is not its commit: caching it would run them as that commit.
  if [ -z "$commit" ] || [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>&1)" ]; then
    echo "perfgate: $root is not a clean git checkout: running it with cargo run, not from PERFGATE_XTASK_CACHE" >&2
    gate=("${cargo_run[@]}")
    return 0
  fi
  dir=$cache/$commit
  bin=$dir/xtask
  if [ -L "$dir" ] || [ -L "$dir/src" ] || [ -L "$bin" ]; then
    refuse "PERFGATE_XTASK_CACHE: $dir, its src or its xtask is a symbolic link, which this script does not make: remove it"
  fi
  if [ -e "$bin" ] && [ ! -f "$bin" ]; then
    refuse "PERFGATE_XTASK_CACHE: $bin is there and not a file, which this script does not make: remove it"
  fi
  if [ -f "$bin" ] && [ -x "$bin" ]; then
    echo "perfgate: the gate at $commit was built before: $bin"
  else
    echo "perfgate: building the gate at $commit once, into $bin"
    rm -rf -- "$dir/src" && mkdir -p -- "$dir/src" || return 2
    git -C "$root" archive --format=tar HEAD | tar -x -C "$dir/src" || return 2
    cargo build --locked --manifest-path "$dir/src/Cargo.toml" --package xtask --bin xtask \
      --target-dir "$cache/target" || return 2
    tmp=$(mktemp -- "$dir/.xtask.XXXXXX") || return 2
    if ! { cp -- "$cache/target/debug/xtask" "$tmp" && chmod 755 -- "$tmp" && mv -f -- "$tmp" "$bin"; }; then
      rm -f -- "$tmp"
      return 2
    fi
  fi
  gate=("$bin")
}

if [ -n "${PERFGATE_XTASK:-}" ]; then
  if [ ! -f "$PERFGATE_XTASK" ] || [ ! -x "$PERFGATE_XTASK" ]; then
    refuse "PERFGATE_XTASK=$PERFGATE_XTASK is not an executable file (a built gate, e.g. target/release/xtask)"
  fi
  gate=("$PERFGATE_XTASK")
elif [ -n "${PERFGATE_XTASK_CACHE:-}" ]; then
  if ! cached_gate; then
    why="perfgate: the gate could not be built into PERFGATE_XTASK_CACHE ($PERFGATE_XTASK_CACHE): the job's log says why."
    finish 2
  fi
else
  gate=("${cargo_run[@]}")
fi
"${gate[@]}" bench "${defaults[@]}" "$@"
finish $?
