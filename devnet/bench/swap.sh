#!/usr/bin/env bash
# Swap proxying against the devnet's provider called directly, same devnet,
# same run: quote latency p50/p99 and cached discovery throughput. Prints a
# JSON report (see devnet/bench/bench-swap.mjs). A script, not part of the suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh
dir=.stablerail/bench-swap
rm -rf "$dir"
target/release/stablerail devnet up --dir "$dir" --port 19645 --chains base,solana >/dev/null
RUST_LOG=${RUST_LOG:-warn} target/release/stablerail serve --config "$dir/chains.toml" --database "sqlite://$PWD/$dir/stablerail.db" --listen 127.0.0.1:19602 >"$dir/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; target/release/stablerail devnet down --dir "$dir" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:19602/api/health >/dev/null && break; sleep 0.1; done
node devnet/bench/bench-swap.mjs --dir "$dir" --url http://127.0.0.1:19602 --n "${N:-200}"
