#!/usr/bin/env bash
# stablerail beside its peers, in one run, each row on a fresh devnet (anvil
# slows as its chain grows):
#   - stablerail /x402/settle and the Rust peers, driven by one generator
#     with x402 v1 bodies (devnet/bench/bench-x402.mjs, the bodies of
#     ../shared/bench/x402rs_bench.mjs), at each concurrency: the fork
#     (`x402-facilitator` 0.11 from crates.io, X402RS_BIN) and x402-rs 2.0.2
#     itself (X402RS2_BIN, by default what ../shared/bench/x402rs-peer/build.sh
#     built), the latter polling receipts every X402RS_PEER_POLL_MS (250);
#   - stablerail's intents at the same concurrency (devnet/bench/bench.mjs --c:
#     C payers, each posting a proof and waiting for its source leg);
#   - the TypeScript reference facilitator (@x402/evm), sequential, once.
# BLOCKS="0 2" runs every row on instant blocks (0: anvil's automine) and
# on blocks every 2 s (as Base), set after the devnet's setup.
# Rows carry throughput, latency percentiles and, for /settle, the gas per
# settled payment read from the receipts; each (blocks, concurrency) prints
# its ratios to the faster peer.
# Fair measurement on 2 cores: the service under test (stablerail or a
# peer) runs alone on CPU 0; the load generator and anvil on CPU 1.
# Every row goes to $OUT/results.jsonl, and $OUT/benchmarks.svg is drawn
# from the rows.
#   N=200 CONC="1 32 200" BLOCKS="0 2" scripts/bench.sh peers
# A peer runs when its binary is found. BIN= measures another build of
# stablerail; ROWS= picks rows (default "x402 intents peer reference");
# SERVE_LOG= is the service's RUST_LOG (warn), e.g. sqlx::query=debug;
# FAC_WORKERS= the facilitator's settlements in flight ([facilitator] workers);
# BATCH_WINDOW_MS= [service] settlement_batch_window_ms; ADAPTERS_DIR= the
# .wasm files the service loads (another build's, beside its BIN).
# RATE=R drives /settle open-loop at R payments per second (CONC then caps
# the open requests).
set -uo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh >/dev/null; fi
bin=${BIN:-$PWD/target/release/stablerail}
rows=" ${ROWS:-x402 intents peer reference} "
out=${OUT:-$PWD/.stablerail/bench-peers}
mkdir -p "$out"
results=$out/results.jsonl
: >"$results"
n=${N:-200}
SERVICE_CPU=${SERVICE_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
fork=${X402RS_BIN:-x402-facilitator}
x402rs=${X402RS2_BIN:-$(ls "${XDG_CACHE_HOME:-$HOME/.cache}"/stablerail-x402rs-peer/release/x402rs-peer 2>/dev/null)}
commit=$(git rev-parse --short HEAD)

# A fresh devnet (anvil pinned with the load) in $dir/dn on a random port.
devnet() {
    dir=$(mktemp -d)
    port=${PORT:-$((21000 + RANDOM % 8000))}
    DEVNET_BLOCK_TIME=$blocks taskset -c "$LOAD_CPU" "$bin" devnet up --dir "$dir/dn" --port "$port" --chains "$1" >/dev/null || exit 1
    ln -s "$PWD/devnet/node_modules" "$dir/node_modules"
}
undevnet() {
    "$bin" devnet down --dir "$dir/dn" >/dev/null 2>&1
    rm -rf "$dir"
}
# A row that fails (exit 1) leaves nothing running either.
trap '[ -n "${server:-}" ] && kill "$server" 2>/dev/null; [ -n "${dir:-}" ] && [ -d "$dir" ] && undevnet' EXIT
# stablerail on the devnet, keyless facilitator on with its limits lifted.
serve() {
    sed -i 's/^\[facilitator\]$/[facilitator]\npublic = true\npublic_requests_per_minute = 100000000\npublic_settlements_per_minute = 100000000\npublic_gas_per_hour = 1000000000000000\npublic_chain_gas_per_hour = 1000000000000000/' "$dir/dn/chains.toml"
    if [ -n "${FAC_WORKERS:-}" ]; then sed -i "s/^\[facilitator\]$/[facilitator]\nworkers = $FAC_WORKERS/" "$dir/dn/chains.toml"; fi
    if [ -n "${WORKERS:-}" ]; then sed -i "s/^\[service\]$/[service]\nsettlement_workers = $WORKERS/" "$dir/dn/chains.toml"; fi
    if [ -n "${BATCH_WINDOW_MS:-}" ]; then sed -i "s/^\[service\]$/[service]\nsettlement_batch_window_ms = $BATCH_WINDOW_MS/" "$dir/dn/chains.toml"; fi
    if [ -n "${ADAPTERS_DIR:-}" ]; then sed -i "s|^adapters_dir = .*|adapters_dir = \"$ADAPTERS_DIR\"|" "$dir/dn/chains.toml"; fi
    url=http://127.0.0.1:$((port + 50))
    RUST_LOG=${SERVE_LOG:-warn} taskset -c "$SERVICE_CPU" "$bin" serve --config "$dir/dn/chains.toml" \
        --database "sqlite://$dir/dn/stablerail.db" --listen "127.0.0.1:$((port + 50))" >"$dir/serve.log" 2>&1 &
    server=$!
    wait_up "$url/api/health" || exit 1
}
unserve() {
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    # The last row's service log stays beside the results.
    [ -f "$dir/serve.log" ] && cp "$dir/serve.log" "$out/serve.log"
}
# One JSON row: {"what":…, "concurrency":…, …the generator's report}.
row() {
    local what=$1 c=$2 report=$3
    node -e 'const [w,c,r,k,b]=process.argv.slice(1);const j=JSON.parse(r);console.log(JSON.stringify({what:w,concurrency:+c,block_seconds:+b,commit:k,...j}))' \
        "$what" "$c" "$report" "$commit" "$blocks" | tee -a "$results"
}
load() { taskset -c "$LOAD_CPU" node "$@"; }

# One Rust peer (binary $2, named $1) on a fresh devnet, driven like /settle.
peer_row() {
    local name=$1 exe=$2
    devnet base
    rpc=$(node -e 'console.log(require(process.argv[1]).chains.base.rpc)' "$dir/dn/devnet.json")
    HOST=127.0.0.1 PORT=$((port + 60)) RPC_URL_BASE=$rpc SIGNER_TYPE=private-key \
        EVM_PRIVATE_KEY=0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80 RUST_LOG=warn \
        X402RS_PEER_POLL_MS=${X402RS_PEER_POLL_MS:-250} \
        taskset -c "$SERVICE_CPU" "$exe" >"$dir/peer.log" 2>&1 &
    server=$!
    wait_up "http://127.0.0.1:$((port + 60))/supported" || exit 1
    row "$name" "$c" "$(FAC=http://127.0.0.1:$((port + 60)) DIR=$dir/dn N=$n C=$c load devnet/bench/bench-x402.mjs)"
    unserve
    undevnet
}

for blocks in ${BLOCKS:-0}; do
for c in ${CONC:-1 32 200}; do
    echo "== blocks every ${blocks}s (0: instant), concurrency $c, $n payments per row"
    if [[ $rows == *" x402 "* ]]; then
    devnet base
    serve
    row stablerail-x402-settle "$c" "$(FAC=$url/x402 DIR=$dir/dn N=$n C=$c load devnet/bench/bench-x402.mjs)"
    unserve
    undevnet
    fi

    if [[ $rows == *" intents "* ]]; then
    devnet base,arbitrum
    serve
    report=$(load devnet/bench/bench.mjs --dir "$dir/dn" --url "$url" --n "$n" --c "$c" --skip-reference)
    row stablerail-intents "$c" "$(node -e 'const j=JSON.parse(process.argv[1]);const s=j.stablerail;console.log(JSON.stringify({n:j.n,per_second:s.source_leg.per_second,completion_ms:s.source_leg.completion_ms,latency_ms:s.source_leg.latency_ms,proof_to_target_settled_per_second:s.proof_to_target_settled.per_second}))' "$report")"
    unserve
    undevnet
    fi

    if [[ $rows == *" peer "* ]]; then
        if command -v "$fork" >/dev/null; then peer_row x402-facilitator-fork "$fork"; fi
        if [ -n "$x402rs" ] && [ -x "$x402rs" ]; then peer_row x402-rs-2.0.2 "$x402rs"; fi
    fi
    node -e '
        const [file, c, b] = process.argv.slice(1);
        const rows = require("fs").readFileSync(file, "utf8").trim().split("\n").map(JSON.parse).filter((r) => r.concurrency == c && (r.block_seconds ?? 0) == b);
        const get = (w) => rows.find((r) => r.what === w);
        const peers = ["x402-facilitator-fork", "x402-rs-2.0.2"].map(get).filter(Boolean);
        const best = peers.sort((a, b) => b.per_second - a.per_second)[0];
        for (const w of ["stablerail-x402-settle", "stablerail-intents"].filter(get)) {
            const r = get(w);
            const speed = best ? `${(r.per_second / best.per_second).toFixed(2)}× ${best.what}` : "n/a (no peer installed)";
            const gas = best && r.gas_per_payment && best.gas_per_payment ? `, gas ${(r.gas_per_payment / best.gas_per_payment).toFixed(2)}×` : "";
            console.log(`blocks ${b}s, c=${c}: ${w} ${r.per_second}/s (p50 ${r.latency_ms?.p50} ms, p99 ${r.latency_ms?.p99} ms${r.gas_per_payment ? ", " + r.gas_per_payment + " gas/payment" : ""}) ÷ the faster peer = ${speed}${gas}`);
        }
    ' "$results" "$c" "$blocks"
done
done

if [[ $rows == *" reference "* ]]; then
echo "== the TypeScript reference (@x402/evm), sequential"
blocks=0
devnet base,arbitrum
serve
report=$(load devnet/bench/bench.mjs --dir "$dir/dn" --url "$url" --n "$n" --c 1)
row typescript-reference 1 "$(node -e 'const j=JSON.parse(process.argv[1]);console.log(JSON.stringify({n:j.n,per_second:j.reference_facilitator.per_second}))' "$report")"
unserve
undevnet
fi

node devnet/bench/bench-plot.mjs "$results" >"$out/benchmarks.svg"
for b in ${BLOCKS:-0}; do
    if [ "$b" != 0 ]; then BLOCK_SECONDS=$b node devnet/bench/bench-plot.mjs "$results" >"$out/benchmarks-${b}s.svg"; fi
done
echo "rows: $results; pictures: $out/benchmarks*.svg"
