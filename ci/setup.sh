#!/usr/bin/env bash
# Installs what perfgate's build and tests need on Debian/Ubuntu: a C linker, git, cmake
# and ninja (Debian packages), chromium (Debian; the tests render report.html in it headless), and
# junitparser (PyPI), the independent JUnit reader the tests check junit.xml with. The Rust toolchain (cargo) must already be there (rustup).
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
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi
if ! python3 -c 'import junitparser' 2>/dev/null; then
  python3 -m pip install -q junitparser 2>/dev/null \
    || python3 -m pip install -q --break-system-packages junitparser
fi
command -v cargo >/dev/null 2>&1 || {
  echo "cargo not found: install Rust 1.89 or newer with rustup (https://rustup.rs), then rerun" >&2
  exit 1
}
