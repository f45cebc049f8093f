#!/usr/bin/env bash
# Measures `spacevault bench hash` against the reference tools side by side,
# in one run: OpenSSL-backed SHA-256/SHA-512 against `openssl speed -evp`
# (one thread, same sizes), and BLAKE3 on 1 MiB against the blake3 crate's own
# multi-threaded hashing (update_rayon). Prints each pair and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p spacevault-cli
cargo build --release -q -p spacevault-hashbench --example blake3_reference
sv=target/release/spacevault
sizes="64 1024 16384 1048576"

echo "algorithm size spacevault_MB/s openssl_speed_MB/s ratio"
for algo in sha256 sha512; do
  csv=$($sv bench hash --csv --algo "$algo" --backend openssl --threads 1 --duration 0.5 --repeats 3 \
        --size "$(echo $sizes | tr ' ' ',')")
  for size in $sizes; do
    ours=$(echo "$csv" | awk -F, -v s="$size" '$3 == s { printf "%.1f", $10 / 1e6 }')
    # openssl speed prints thousands of bytes per second.
    ref=$(openssl speed -evp "$algo" -seconds 2 -bytes "$size" 2>/dev/null | awk -v a="$algo" '$1 == a { v = $2 } END { sub("k", "", v); printf "%.1f", v / 1000 }')
    echo "$algo $size $ours $ref $(awk -v a="$ours" -v b="$ref" 'BEGIN { printf "%.3f", a / b }')"
  done
done

cores=$(nproc)
csv=$($sv bench hash --csv --algo blake3 --size 1MiB --threads "1,$cores" --duration 0.5 --repeats 3)
ref=$(target/release/examples/blake3_reference)
for t in 1 "$cores"; do
  ours=$(echo "$csv" | awk -F, -v t="$t" '$4 == t { printf "%.2f", $10 / 1e9 }')
  theirs=$(echo "$ref" | awk -v t="$t" '$5 == t"" || $5 == t { v = $(NF-1) } END { print v }')
  echo "blake3 1MiB x${t}thr spacevault ${ours} GB/s, update_rayon ${theirs} GB/s, ratio $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.3f", a / b }')"
done
