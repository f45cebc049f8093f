#!/usr/bin/env bash
# Builds every fuzz target on the stable toolchain and runs each one
# briefly, so that a target that no longer builds, or that fails on its
# first inputs, is caught without nightly or cargo-fuzz.
#
#   scripts/fuzz-smoke.sh build   # build the targets
#   scripts/fuzz-smoke.sh run     # run each from a few seed inputs
#   scripts/fuzz-smoke.sh         # both
#
# The targets are instrumented for coverage as cargo fuzz instruments them
# (libfuzzer-sys links libFuzzer's own main), less the address sanitizer,
# which needs nightly: the runs below then grow their inputs as a fuzzer
# does, rather than replay random bytes. Fuzzing proper is still
# `cargo +nightly fuzz run TARGET` (README).
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
# Each target stops at whichever comes first.
runs=${FUZZ_SMOKE_RUNS:-2000}
seconds=${FUZZ_SMOKE_SECONDS:-5}
host=$(rustc -vV | sed -n 's/^host: //p')
# A directory of its own: the flags below change every crate's build, so
# nothing could be shared with the workspace's.
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$PWD/target/fuzz}
# With --target, the flags reach the targets' code but not build scripts
# and proc macros, which would not link against the coverage hooks.
export RUSTFLAGS="-Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares \
 --cfg fuzzing"
bins=$CARGO_TARGET_DIR/$host/debug
targets=()
for f in fuzz/fuzz_targets/*.rs; do
  targets+=("$(basename "$f" .rs)")
done

build() {
  if ! command -v c++ >/dev/null 2>&1; then
    echo "fuzz targets not built: libFuzzer needs a C++ compiler (apt-get install g++)" >&2
    return 1
  fi
  cargo build --manifest-path fuzz/Cargo.toml --bins --locked --target "$host"
}

run() {
  local work
  work=$(mktemp -d)
  seq 1 100000 > "$work/digits"
  for t in "${targets[@]}"; do
    if [ ! -x "$bins/$t" ]; then
      echo "fuzz target $t not built: is it a [[bin]] in fuzz/Cargo.toml?" >&2
      return 1
    fi
    # Seeds of the sizes the targets look for: none, a byte, a challenge
    # and more, a proof and challenge, a header, past a header.
    mkdir -p "$work/$t"
    for size in 0 1 33 105 300 4097 20000; do
      head -c "$size" "$work/digits" > "$work/$t/seed-$size"
    done
    local status=0
    "$bins/$t" -seed=1 -runs="$runs" -max_total_time="$seconds" -timeout=30 -artifact_prefix="$work/$t-" \
      "$work/$t" > "$work/$t.log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
      cat "$work/$t.log" >&2
      echo "fuzz target $t failed (exit $status): the input that failed is in $work" >&2
      return 1
    fi
    echo "fuzz target $t: $(grep -m1 '^Done' "$work/$t.log" || tail -1 "$work/$t.log")" >&2
  done
  rm -rf "$work"
}

case $what in
  build) build ;;
  run) run ;;
  all) build && run ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
