#!/usr/bin/env bash
# /x402/settle beside the x402-rs facilitator, in one run, each on a fresh
# devnet base chain (anvil slows as its chain grows): the same EIP-3009
# generator (devnet/bench-facilitator.mjs mirrors ../shared/bench/
# x402rs_bench.mjs in v2 bodies), N payloads at each concurrency of CONC.
#   N=200 CONC="1 32 200" scripts/bench-facilitator.sh
# x402-rs runs only when its binary is installed (`cargo install
# x402-facilitator --locked`, or X402RS_BIN); otherwise stablerail alone.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
bin=target/release/stablerail
for c in ${CONC:-1 32 200}; do
    dir=$(mktemp -d); port=$((27000 + RANDOM % 4000))
    $bin devnet up --dir "$dir/dn" --port "$port" --chains base >/dev/null || exit 1
    db="sqlite://$dir/dn/stablerail.db"
    key=$($bin facilitator create-key bench --config "$dir/dn/chains.toml" --database "$db" | python3 -c 'import json,sys;print(json.load(sys.stdin)["key"])')
    RUST_LOG=warn $bin serve --config "$dir/dn/chains.toml" --database "$db" --listen "127.0.0.1:$((port + 800))" >"$dir/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$((port + 800))/api/health" >/dev/null && break; sleep 0.1; done
    FAC="http://127.0.0.1:$((port + 800))/x402" KEY=$key DIR=$dir/dn N=${N:-200} C=$c node devnet/bench-facilitator.mjs
    kill $server; wait $server 2>/dev/null
    $bin devnet down --dir "$dir/dn" >/dev/null; rm -rf "$dir"
    if command -v "${X402RS_BIN:-x402-facilitator}" >/dev/null; then
        N=${N:-200} CONC=$c ../shared/bench/peer-x402rs.sh
    fi
done
