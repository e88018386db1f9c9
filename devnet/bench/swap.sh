#!/usr/bin/env bash
# Swap proxying against the devnet's provider called directly, same devnet,
# same run: quote latency p50/p99 and cached discovery throughput. Prints a
# JSON report (see devnet/bench/bench-swap.mjs). A script, not part of the suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh; fi
bin=${BIN:-target/release/stablerail}
dir=$(realpath -m "${OUT:-.stablerail/bench-swap}")
port=${PORT:-19645}
url=http://127.0.0.1:$((port + 50))
rm -rf "$dir"
$bin devnet up --dir "$dir" --port "$port" --chains base,solana >/dev/null
RUST_LOG=${RUST_LOG:-warn} $bin serve --config "$dir/chains.toml" --database "sqlite://$dir/stablerail.db" --listen "127.0.0.1:$((port + 50))" >"$dir/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; $bin devnet down --dir "$dir" >/dev/null 2>&1 || true' EXIT
wait_up "$url/api/health" || exit 1
node devnet/bench/bench-swap.mjs --dir "$dir" --url $url --n "${N:-200}"
