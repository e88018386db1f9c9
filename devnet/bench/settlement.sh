#!/usr/bin/env bash
# Settlement throughput against the x402 reference facilitator, same devnet,
# same run. Prints a JSON report (see devnet/bench/bench.mjs). BIN: another build
# of stablerail to measure (an earlier commit's, for an after ÷ before).
set -euo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh; fi
bin=${BIN:-target/release/stablerail}
dir=$(realpath -m "${OUT:-.stablerail/bench}")
port=${PORT:-19545}
url=http://127.0.0.1:$((port + 50))
rm -rf "$dir"
$bin devnet up --dir "$dir" --port "$port" --chains base,arbitrum >/dev/null
RUST_LOG=${RUST_LOG:-info} $bin serve --config "$dir/chains.toml" --database "sqlite://$dir/stablerail.db" --listen "127.0.0.1:$((port + 50))" >"$dir/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; $bin devnet down --dir "$dir" >/dev/null 2>&1 || true' EXIT
wait_up "$url/api/health" || exit 1
node devnet/bench/bench.mjs --dir "$dir" --url $url --n "${N:-40}"
