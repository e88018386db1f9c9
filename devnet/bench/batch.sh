#!/usr/bin/env bash
# batch-settlement (issue 66): vouchers verified per second at a
# facilitator's /verify (p50/p99, EOA payer authorizer) and the gas per
# charged request after one claim and sweep, beside `exact`'s gas per
# request, through the reference facilitator (@x402/core + @x402/evm,
# devnet/nodes/x402-facilitator.mjs) on one devnet, with the reference
# client and an @x402/express route, then the same through stablerail (its
# batch-settlement adapter enabled by config; the route signs its own claims
# with a key of its own). Rows go to $OUT/batch.jsonl, one per facilitator.
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
sale() { # $1: port, $2: scheme, $3: facilitator URL, $4: its key (stablerail) or nothing
    printf '{"port":%s,"facilitator":"%s","key":"%s","network":"eip155:8453","asset":"%s","amount":"10000","payTo":"0x000000000000000000000000000000000000c0fe","name":"USD Coin","version":"2","scheme":"%s","unitPrice":"1000","storage":"%s/%s","authorizerKey":"%s"}' \
        "$1" "$3" "${4:-}" "$usdc" "$2" "$dir/channels" "$1" "${4:+0x$(openssl rand -hex 32)}" | sed 's/,"key":""//; s/,"authorizerKey":""//'
}
taskset -c 1 node devnet/clients/x402-server.mjs "$(sale "$shop" batch-settlement "http://127.0.0.1:$fac")" >"$out/shop.log" 2>&1 &
pids+=($!)
taskset -c 1 node devnet/clients/x402-server.mjs "$(sale "$exact" exact "http://127.0.0.1:$fac")" >"$out/exact.log" 2>&1 &
pids+=($!)
wait_up "http://127.0.0.1:$shop/served" || exit 1
wait_up "http://127.0.0.1:$exact/served" || exit 1
report=$(DIR=$dir/dn FAC=http://127.0.0.1:$fac SHOP=http://127.0.0.1:$shop/paid EXACT=http://127.0.0.1:$exact/paid \
    PAYER=6 N=${N:-60} V=${V:-400} C=${C:-16} taskset -c 1 node devnet/bench/bench-batch.mjs) || exit 1
echo "{\"facilitator\":\"reference\",\"report\":$report}" | tee "$out/batch.jsonl"

# stablerail: `devnet up` serves the scheme on base's USDC (usdc-batch); a facilitator key.
cli() { "$bin" --output json "$@" --config "$dir/dn/chains.toml" --database "sqlite://$dir/dn/stablerail.db"; }
key=$(cli facilitator create-key bench | node -pe 'JSON.parse(require("fs").readFileSync(0)).key') || exit 1
sr=$((port + 63)) sr_shop=$((port + 64)) sr_exact=$((port + 65))
RUST_LOG=warn taskset -c 0 "$bin" serve --config "$dir/dn/chains.toml" --database "sqlite://$dir/dn/stablerail.db" \
    --listen "127.0.0.1:$sr" >"$out/serve.log" 2>&1 &
pids+=($!)
wait_up "http://127.0.0.1:$sr/api/health" || exit 1
taskset -c 1 node devnet/clients/x402-server.mjs "$(sale "$sr_shop" batch-settlement "http://127.0.0.1:$sr/x402" "$key")" >"$out/sr-shop.log" 2>&1 &
pids+=($!)
taskset -c 1 node devnet/clients/x402-server.mjs "$(sale "$sr_exact" exact "http://127.0.0.1:$sr/x402" "$key")" >"$out/sr-exact.log" 2>&1 &
pids+=($!)
wait_up "http://127.0.0.1:$sr_shop/served" || exit 1
wait_up "http://127.0.0.1:$sr_exact/served" || exit 1
report=$(DIR=$dir/dn FAC=http://127.0.0.1:$sr/x402 KEY=$key SHOP=http://127.0.0.1:$sr_shop/paid EXACT=http://127.0.0.1:$sr_exact/paid \
    PAYER=7 N=${N:-60} V=${V:-400} C=${C:-16} taskset -c 1 node devnet/bench/bench-batch.mjs) || exit 1
echo "{\"facilitator\":\"stablerail\",\"report\":$report}" | tee -a "$out/batch.jsonl"
