#!/usr/bin/env bash
# Runs, once more, the test binaries `cargo test --workspace` built, for the
# packages named: each from its package's directory, as cargo runs it, with
# the environment this script was given (CI sets SPACEVAULT_BACKEND to run
# the core library's tests on each kernel).
#
# `cargo test -p PACKAGE` would build them again: cargo unifies the
# dependencies' features over the packages it is asked for, so one package
# alone compiles its dependencies anew (minutes on a small machine), for
# the same tests.
#
# Usage: scripts/run-built-tests.sh PACKAGE... [-- TEST-BINARY-ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  packages+=("$1")
  shift
done
[ "${1:-}" = -- ] && shift
if [ "${#packages[@]}" -eq 0 ]; then
  echo "usage: $0 PACKAGE... [-- TEST-BINARY-ARGS...]" >&2
  exit 2
fi

# The same flags as the build, so that cargo finds everything fresh; it
# names each test binary in a JSON line.
listing=$(cargo test --workspace --locked --no-run --message-format=json)

program=$(cat <<'PY'
import json, os, sys, tomllib
wanted = set(sys.argv[1:])
names = {}
found = set()
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("reason") != "compiler-artifact" or not message.get("executable"):
        continue
    if not message["profile"]["test"]:
        continue
    manifest = message["manifest_path"]
    if manifest not in names:
        with open(manifest, "rb") as f:
            names[manifest] = tomllib.load(f)["package"]["name"]
    if names[manifest] in wanted:
        found.add(names[manifest])
        print(os.path.dirname(manifest) + "\t" + message["executable"])
missing = wanted - found
if missing:
    sys.exit("no test binaries built for: " + ", ".join(sorted(missing)))
PY
)
chosen=$(python3 -c "$program" "${packages[@]}" <<<"$listing")
mapfile -t runs <<<"$chosen"
if [ "${#runs[@]}" -eq 0 ]; then
  echo "no test binaries to run" >&2
  exit 1
fi

for run in "${runs[@]}"; do
  dir=${run%%$'\t'*}
  binary=${run#*$'\t'}
  echo "     Running $binary" >&2
  (cd "$dir" && "$binary" "$@")
done
