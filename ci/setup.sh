#!/usr/bin/env bash
# Installs the system packages perfgate's build and tests need on Debian/Ubuntu.
# The Rust toolchain (cargo) must already be there (rustup). Safe to run twice.
set -euo pipefail

need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)   # the linker rustc calls
command -v git >/dev/null 2>&1 || need+=(git)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi
command -v cargo >/dev/null 2>&1 || {
  echo "cargo not found: install Rust with rustup (https://rustup.rs), then rerun" >&2
  exit 1
}
