#!/usr/bin/env bash
# Builds the core library's tests for aarch64 and runs them under qemu-user:
# the NEON kernel against the blake3 crate, and every plot, prove and check
# test on that target (little-endian, no AVX, NEON). Installs what is
# missing: the target's standard library with rustup, and Debian's
# qemu-user, gcc-aarch64-linux-gnu and libc6-dev-arm64-cross.
# Exits 77 when those cannot be had here (no rustup, no network), having
# said which: "not run" apart from "failed". CI fails on either, since the
# README promises this run.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu

if ! command -v rustup >/dev/null 2>&1 || ! rustup target add "$target" >&2; then
  echo "aarch64 tests not run: rustup cannot add the $target target here" >&2
  exit 77
fi
if ! command -v qemu-aarch64 >/dev/null 2>&1 || ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
  if ! { apt-get update -qq && apt-get install -y -qq qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross; } >&2; then
    echo "aarch64 tests not run: qemu-user and the aarch64 cross linker cannot be installed" >&2
    exit 77
  fi
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
# Release: the plot tests hash millions of records, slow under emulation.
cargo test --locked --release --target "$target" -p spacevault
