#!/usr/bin/env bash
# What tracing costs on the /x402/settle path (issue 67): N payments (default
# 400) at concurrency C (32) through one `serve` on one devnet, with tracing
# off, on at 1 % and on at 100 %, each ROUNDS times (2) interleaved, so the
# modes share the chain's growth. The spans go to a collector that answers
# OTLP over HTTP and counts what it was sent (devnet/bench/otlp-sink.mjs).
# Prints each mode's median throughput and p50/p99, and its ratio to
# tracing off in the same run; rows go to $OUT/traces.jsonl.
#   N=400 C=32 ROUNDS=2 scripts/bench.sh traces      (BIN: another build)
set -uo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh >/dev/null; fi
bin=${BIN:-$PWD/target/release/stablerail}
out=${OUT:-$PWD/.stablerail/bench-traces}
mkdir -p "$out"
rows=$out/traces.jsonl
: >"$rows"
dir=$(mktemp -d)
port=${PORT:-$((21000 + RANDOM % 8000))}
url=http://127.0.0.1:$((port + 50))
sink=$((port + 60))
taskset -c 1 "$bin" devnet up --dir "$dir/dn" --port "$port" --chains base >/dev/null || exit 1
ln -s "$PWD/devnet/node_modules" "$dir/node_modules"
sed -i 's/^\[facilitator\]$/[facilitator]\npublic = true\npublic_requests_per_minute = 100000000\npublic_settlements_per_minute = 100000000\npublic_gas_per_hour = 1000000000000000\npublic_chain_gas_per_hour = 1000000000000000/' "$dir/dn/chains.toml"
cp "$dir/dn/chains.toml" "$dir/base.toml"
server=
taskset -c 1 node devnet/bench/otlp-sink.mjs "$sink" "$out/sink.json" &
collector=$!
unserve() { [ -n "$server" ] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }; server=; }
trap 'unserve; kill $collector 2>/dev/null; "$bin" devnet down --dir "$dir/dn" >/dev/null 2>&1; rm -rf "$dir"' EXIT
wait_up "http://127.0.0.1:$sink/" any || exit 1

run() { # $1: off | a ratio
    unserve
    cp "$dir/base.toml" "$dir/dn/chains.toml"
    [ "$1" = off ] || printf '\n[telemetry]\notlp_endpoint = "http://127.0.0.1:%s/v1/traces"\nsample_ratio = %s\n' "$sink" "$1" >>"$dir/dn/chains.toml"
    RUST_LOG=warn taskset -c 0 "$bin" serve --config "$dir/dn/chains.toml" --database "sqlite://$dir/dn/stablerail.db" \
        --listen "127.0.0.1:$((port + 50))" >>"$out/serve.log" 2>&1 &
    server=$!
    wait_up "$url/api/health" || exit 1
    local report
    report=$(FAC=$url/x402 DIR=$dir/dn N=${N:-400} C=${C:-32} taskset -c 1 node devnet/bench/bench-x402.mjs)
    echo "{\"mode\":\"$1\",\"report\":$report}" >>"$rows"
}

for _ in $(seq 1 "${ROUNDS:-2}"); do
    for mode in off 0.01 1; do run "$mode"; done
done
unserve
sleep 1
node -e '
  const fs = require("fs");
  const rows = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
  const modes = {};
  for (const mode of ["off", "0.01", "1"]) {
    const rs = rows.filter((r) => r.mode === mode).map((r) => r.report);
    modes[mode] = { per_second: median(rs.map((r) => r.per_second)), p50_ms: median(rs.map((r) => r.latency_ms.p50)),
      p99_ms: median(rs.map((r) => r.latency_ms.p99)), ok: rs.reduce((a, r) => a + r.ok, 0), bad: rs.reduce((a, r) => a + r.bad, 0) };
  }
  const off = modes.off;
  for (const m of Object.values(modes)) m.throughput_vs_off = +(m.per_second / off.per_second).toFixed(3);
  const sink = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  console.log(JSON.stringify({ n: rows[0].report.ok + rows[0].report.bad, modes, collector: sink }, null, 2));
' "$rows" "$out/sink.json" | tee "$out/summary.json"
