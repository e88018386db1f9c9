#!/usr/bin/env bash
# Settlement throughput against the x402 reference facilitator, same devnet,
# same run. Prints a JSON report (see devnet/bench/bench.mjs). BIN: another build
# of stablerail to measure (an earlier commit's, for an after ÷ before).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh
bin=${BIN:-target/release/stablerail}
dir=.stablerail/bench
rm -rf "$dir"
$bin devnet up --dir "$dir" --port 19545 --chains base,arbitrum >/dev/null
RUST_LOG=${RUST_LOG:-info} $bin serve --config "$dir/chains.toml" --database "sqlite://$PWD/$dir/stablerail.db" --listen 127.0.0.1:19402 >"$dir/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; $bin devnet down --dir "$dir" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:19402/api/health >/dev/null && break; sleep 0.1; done
node devnet/bench/bench.mjs --dir "$dir" --url http://127.0.0.1:19402 --n "${N:-40}"
