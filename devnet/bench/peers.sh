#!/usr/bin/env bash
# stablerail beside its peers, in one run, each row on a fresh devnet (anvil
# slows as its chain grows):
#   - stablerail /x402/settle and x402-rs (`x402-facilitator` 0.11), driven
#     by one generator with x402 v1 bodies (devnet/bench/bench-x402.mjs, the
#     bodies of ../shared/bench/x402rs_bench.mjs), at each concurrency;
#   - stablerail's intents at the same concurrency (devnet/bench/bench.mjs --c:
#     C payers, each posting a proof and waiting for its source leg);
#   - the TypeScript reference facilitator (@x402/evm), sequential, once.
# Fair measurement on 2 cores: the service under test (stablerail or
# x402-rs) runs alone on CPU 0; the load generator and anvil on CPU 1.
# Every row goes to $OUT/results.jsonl, each concurrency's ratios are
# printed, and $OUT/benchmarks.svg is drawn from the rows.
#   N=200 CONC="1 32 200" scripts/bench.sh peers
# x402-rs runs when its binary is installed (`cargo install
# x402-facilitator --locked`, or X402RS_BIN). BIN= measures another build
# of stablerail; ROWS= picks rows (default "x402 intents peer reference");
# SERVE_LOG= is the service's RUST_LOG (warn), e.g. sqlx::query=debug.
set -uo pipefail
cd "$(dirname "$0")/../.."
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
peer=${X402RS_BIN:-x402-facilitator}
commit=$(git rev-parse --short HEAD)

# A fresh devnet (anvil pinned with the load) in $dir/dn on a random port.
devnet() {
    dir=$(mktemp -d)
    port=$((21000 + RANDOM % 8000))
    taskset -c "$LOAD_CPU" "$bin" devnet up --dir "$dir/dn" --port "$port" --chains "$1" >/dev/null || exit 1
    ln -s "$PWD/devnet/node_modules" "$dir/node_modules"
}
undevnet() {
    "$bin" devnet down --dir "$dir/dn" >/dev/null 2>&1
    rm -rf "$dir"
}
# stablerail on the devnet, keyless facilitator on with its limits lifted.
serve() {
    printf '\n[facilitator]\npublic = true\npublic_requests_per_minute = 100000000\npublic_settlements_per_minute = 100000000\n' >>"$dir/dn/chains.toml"
    if [ -n "${WORKERS:-}" ]; then sed -i "s/^\[service\]$/[service]\nsettlement_workers = $WORKERS/" "$dir/dn/chains.toml"; fi
    url=http://127.0.0.1:$((port + 800))
    RUST_LOG=${SERVE_LOG:-warn} taskset -c "$SERVICE_CPU" "$bin" serve --config "$dir/dn/chains.toml" \
        --database "sqlite://$dir/dn/stablerail.db" --listen "127.0.0.1:$((port + 800))" >"$dir/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 1 100); do curl -sf "$url/api/health" >/dev/null && break; sleep 0.1; done
}
unserve() {
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
}
# One JSON row: {"what":…, "concurrency":…, …the generator's report}.
row() {
    local what=$1 c=$2 report=$3
    node -e 'const [w,c,r,k]=process.argv.slice(1);const j=JSON.parse(r);console.log(JSON.stringify({what:w,concurrency:+c,commit:k,...j}))' \
        "$what" "$c" "$report" "$commit" | tee -a "$results"
}
load() { taskset -c "$LOAD_CPU" node "$@"; }

for c in ${CONC:-1 32 200}; do
    echo "== concurrency $c, $n payments per row"
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

    if [[ $rows == *" peer "* ]] && command -v "$peer" >/dev/null; then
        devnet base
        rpc=$(node -e 'console.log(require(process.argv[1]).chains.base.rpc)' "$dir/dn/devnet.json")
        HOST=127.0.0.1 PORT=$((port + 900)) RPC_URL_BASE=$rpc SIGNER_TYPE=private-key \
            EVM_PRIVATE_KEY=0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80 RUST_LOG=warn \
            taskset -c "$SERVICE_CPU" "$peer" >"$dir/peer.log" 2>&1 &
        server=$!
        for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$((port + 900))/supported" >/dev/null && break; sleep 0.1; done
        row x402-rs "$c" "$(FAC=http://127.0.0.1:$((port + 900)) DIR=$dir/dn N=$n C=$c load devnet/bench/bench-x402.mjs)"
        unserve
        undevnet
    fi
    node -e '
        const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse).filter((r) => r.concurrency == process.argv[2]);
        const of = (w) => rows.find((r) => r.what === w)?.per_second;
        const peer = of("x402-rs");
        for (const w of ["stablerail-x402-settle", "stablerail-intents"].filter(of))
            console.log(`ratio at ${process.argv[2]}: ${w} ÷ x402-rs = ${peer ? (of(w) / peer).toFixed(2) + "×" : "n/a (x402-rs not installed)"}`);
    ' "$results" "$c"
done

if [[ $rows == *" reference "* ]]; then
echo "== the TypeScript reference (@x402/evm), sequential"
devnet base,arbitrum
serve
report=$(load devnet/bench/bench.mjs --dir "$dir/dn" --url "$url" --n "$n" --c 1)
row typescript-reference 1 "$(node -e 'const j=JSON.parse(process.argv[1]);console.log(JSON.stringify({n:j.n,per_second:j.reference_facilitator.per_second}))' "$report")"
unserve
undevnet
fi

node devnet/bench/bench-plot.mjs "$results" >"$out/benchmarks.svg"
echo "rows: $results; picture: $out/benchmarks.svg"
