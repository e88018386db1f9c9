#!/usr/bin/env bash
# batch-settlement (issue 66): vouchers verified per second at a
# facilitator's /verify (p50/p99, EOA payer authorizer) and the gas per
# charged request after one claim and sweep, beside `exact`'s gas per
# request, through the reference facilitator (@x402/core + @x402/evm,
# devnet/nodes/x402-facilitator.mjs) on one devnet, with the reference
# client and an @x402/express route. stablerail does not serve the scheme
# yet: its row joins this one when it does. Rows go to $OUT/batch.jsonl.
#   N=60 V=400 C=16 scripts/bench.sh batch
set -uo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh >/dev/null; fi
bin=${BIN:-$PWD/target/release/stablerail}
out=${OUT:-$PWD/.stablerail/bench-batch}
mkdir -p "$out"
dir=$(mktemp -d)
port=${PORT:-$((21000 + RANDOM % 8000))}
fac=$((port + 60)) shop=$((port + 61)) exact=$((port + 62))
taskset -c 1 "$bin" devnet up --dir "$dir/dn" --port "$port" --chains base >/dev/null || exit 1
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; "$bin" devnet down --dir "$dir/dn" >/dev/null 2>&1; rm -rf "$dir"' EXIT
usdc=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).chains.base.assets.usdc.address)' "$dir/dn/devnet.json")
# anvil's tenth account relays; a fresh key authorizes claims and refunds.
taskset -c 0 node devnet/nodes/x402-facilitator.mjs --port "$fac" --rpc "http://127.0.0.1:$port" --chain-id 8453 \
    --key 0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6 --authorizer "0x$(openssl rand -hex 32)" \
    >"$out/facilitator.log" 2>&1 &
pids+=($!)
wait_up "http://127.0.0.1:$fac/supported" || exit 1
sale() { # $1: port, $2: scheme
    printf '{"port":%s,"facilitator":"http://127.0.0.1:%s","network":"eip155:8453","asset":"%s","amount":"10000","payTo":"0x000000000000000000000000000000000000c0fe","name":"USD Coin","version":"2","scheme":"%s","unitPrice":"1000","storage":"%s"}' \
        "$1" "$fac" "$usdc" "$2" "$dir/channels"
}
taskset -c 1 node devnet/clients/x402-server.mjs "$(sale "$shop" batch-settlement)" >"$out/shop.log" 2>&1 &
pids+=($!)
taskset -c 1 node devnet/clients/x402-server.mjs "$(sale "$exact" exact)" >"$out/exact.log" 2>&1 &
pids+=($!)
wait_up "http://127.0.0.1:$shop/served" || exit 1
wait_up "http://127.0.0.1:$exact/served" || exit 1
report=$(DIR=$dir/dn FAC=http://127.0.0.1:$fac SHOP=http://127.0.0.1:$shop/paid EXACT=http://127.0.0.1:$exact/paid \
    N=${N:-60} V=${V:-400} C=${C:-16} taskset -c 1 node devnet/bench/bench-batch.mjs) || exit 1
echo "{\"facilitator\":\"reference\",\"report\":$report}" | tee "$out/batch.jsonl"
