#!/usr/bin/env bash
# /x402/settle beside the x402-rs facilitator, in one run, each on a fresh
# devnet base chain (anvil slows as its chain grows), driven by the same
# generator with the same x402 v1 bodies: ../shared/bench/x402rs_bench.mjs,
# N EIP-3009 payloads at each concurrency of CONC. stablerail runs with
# keyless access on (the generator sends no key), its limit lifted.
#   N=200 CONC="1 32 200" scripts/bench-facilitator.sh
# x402-rs runs only when its binary is installed (`cargo install
# x402-facilitator --locked`, or X402RS_BIN); otherwise stablerail alone.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
bin=target/release/stablerail
generator=../shared/bench/x402rs_bench.mjs
for c in ${CONC:-1 32 200}; do
    dir=$(mktemp -d); port=$((27000 + RANDOM % 4000))
    $bin devnet up --dir "$dir/dn" --port "$port" --chains base >/dev/null || exit 1
    printf '\n[facilitator]\npublic = true\npublic_requests_per_minute = 1000000\n' >>"$dir/dn/chains.toml"
    [ -n "${WORKERS:-}" ] && sed -i "s/^\[service\]/[service]\nsettlement_workers = $WORKERS/" "$dir/dn/chains.toml"
    db="sqlite://$dir/dn/stablerail.db"
    RUST_LOG=warn $bin serve --config "$dir/dn/chains.toml" --database "$db" --listen "127.0.0.1:$((port + 800))" >"$dir/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$((port + 800))/api/health" >/dev/null && break; sleep 0.1; done
    cp "$generator" "$dir/"; ln -s "$PWD/devnet/node_modules" "$dir/node_modules"
    printf 'stablerail /x402/settle: '
    FAC="http://127.0.0.1:$((port + 800))/x402" DIR=$dir/dn N=${N:-200} C=$c node "$dir/x402rs_bench.mjs" | sed 's/"peer":"[^"]*",//'
    kill $server; wait $server 2>/dev/null
    $bin devnet down --dir "$dir/dn" >/dev/null; rm -rf "$dir"
    if command -v "${X402RS_BIN:-x402-facilitator}" >/dev/null; then
        printf 'x402-rs /settle: '
        N=${N:-200} CONC=$c ../shared/bench/peer-x402rs.sh
    fi
done
