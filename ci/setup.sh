#!/usr/bin/env bash
# Installs what perfgate's build and tests need on Debian/Ubuntu: a C linker, git, cmake
# and ninja (Debian packages), chromium (Debian; the tests render report.html in it headless), and
# junitparser (PyPI), the independent JUnit reader the tests check junit.xml with, and
# gitlab-ci-local (npm), which runs ci/examples/gitlab-ci.yml in the tests. The Rust toolchain (cargo) must already be there (rustup).
# Safe to run twice.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)   # the linker rustc calls
command -v git >/dev/null 2>&1 || need+=(git)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
# The build tests configure a tiny CMake project with Ninja (FDB asks for cmake 3.24.2+:
# Debian 12 has 3.25, `pip install cmake` the latest).
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
# The JUnit tests validate junit.xml against Jenkins' junit-10.xsd with xmllint.
command -v xmllint >/dev/null 2>&1 || need+=(libxml2-utils)
# gitlab-ci-local copies the job's files and artifacts with rsync; it is an npm package.
command -v rsync >/dev/null 2>&1 || need+=(rsync)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi
if ! python3 -c 'import junitparser' 2>/dev/null; then
  python3 -m pip install -q junitparser 2>/dev/null \
    || python3 -m pip install -q --break-system-packages junitparser
fi
# gitlab-ci-local 4.73.0 needs Node.js 20 (4.74 and later need 22); Debian 12's is 18, and
# the npm package `node` ships 20.
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then
  $SUDO npm install -g -q node@20
  hash -r
fi
if [ "$(gitlab-ci-local --version 2>/dev/null)" != 4.73.0 ]; then
  $SUDO npm install -g -q gitlab-ci-local@4.73.0
fi
command -v cargo >/dev/null 2>&1 || {
  echo "cargo not found: install Rust 1.89 or newer with rustup (https://rustup.rs), then rerun" >&2
  exit 1
}
