#!/usr/bin/env bash
# The abuse load test of docs/benchmarks.md (outside CI): stablerail behind
# a trusted proxy on a fresh devnet, alone on CPU 0; devnet/bench/abuse.mjs on
# CPU 1 measures a legit client's creates alone, then while one client
# floods /api/intents from 10,000 rotating IPv6 /64s and another holds
# 1,000 slow connections, and samples the service's RSS; then
# devnet/bench/abuse-queues.mjs measures a legit agent's webhook latency
# beside strangers' endpoints that never answer, and a legit client's
# stream beside a stream flood (issue 69).
#   LEGIT=200 SECONDS_OF_FLOOD=30 QUEUES_N=50 QUEUES_SECONDS=20 scripts/bench.sh abuse
# BIN= measures another build; OUT= keeps the report (default
# .stablerail/abuse/report.json).
set -uo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh >/dev/null; fi
bin=${BIN:-$PWD/target/release/stablerail}
out=${OUT:-$PWD/.stablerail/abuse}
mkdir -p "$out"
dir=$(mktemp -d)
port=${PORT:-$((21000 + RANDOM % 8000))}
taskset -c 1 "$bin" devnet up --dir "$dir/dn" --port "$port" --chains base >/dev/null || exit 1
# The proxy is this host; each client may create 600 a minute; the header
# timeout is the default.
sed -i 's/^\[service\]$/[service]\ntrusted_proxies = ["127.0.0.1"]/' "$dir/dn/chains.toml"
sed -i 's/^requests_per_minute = .*/requests_per_minute = 600/' "$dir/dn/chains.toml"
# Agents for the queues' part: a legit one, and two strangers of another account.
cli() { "$bin" --output json "$@" --config "$dir/dn/chains.toml" --database "sqlite://$dir/dn/stablerail.db"; }
legit_account=$(cli account create --name legit | node -pe 'JSON.parse(require("fs").readFileSync(0)).account_id')
stranger_account=$(cli account create --name stranger | node -pe 'JSON.parse(require("fs").readFileSync(0)).account_id')
bearer() { cli agent create --account "$1" --name "$2" | node -pe 'JSON.parse(require("fs").readFileSync(0)).bearer_token'; }
legit_bearer=$(bearer "$legit_account" legit)
strangers="$(bearer "$stranger_account" s1),$(bearer "$stranger_account" s2)"
url=http://127.0.0.1:$((port + 50))
RUST_LOG=warn taskset -c 0 "$bin" serve --config "$dir/dn/chains.toml" --database "sqlite://$dir/dn/stablerail.db" \
    --listen "127.0.0.1:$((port + 50))" >"$dir/serve.log" 2>&1 &
server=$!
wait_up "$url/api/health" || exit 1
ulimit -n 20000 2>/dev/null || true
taskset -c 1 node devnet/bench/abuse.mjs --url "$url" --pid "$server" --legit "${LEGIT:-200}" --seconds "${SECONDS_OF_FLOOD:-30}" | tee "$out/report.json"
taskset -c 1 node devnet/bench/abuse-queues.mjs --url "$url" --legit "$legit_bearer" --strangers "$strangers" \
    --n "${QUEUES_N:-50}" --seconds "${QUEUES_SECONDS:-20}" | tee "$out/queues.json"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
"$bin" devnet down --dir "$dir/dn" >/dev/null 2>&1
rm -rf "$dir"
