#!/usr/bin/env bash
# Resident memory of one `serve` with many /x402/settle payments in flight
# on a chain with slow blocks (issue 70): N payments (default 20,000)
# offered at RATE a second (300) on blocks every BLOCKS seconds (12: the
# chain settles about 57 a second), each request answered
# `settlement_pending` after 1 s, so the payments wait as rows, not as
# open requests. The service's VmRSS, the settlements in flight and those
# settled are sampled every 5 s to $OUT/samples.jsonl, through the sending
# and AFTER seconds (90) past it; flat while thousands stay in flight
# means a payment in flight costs a row and a few kilobytes, not a task
# that grows.
#   scripts/bench.sh in-flight          (BIN: another build; PORT: the devnet's first port)
set -uo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh >/dev/null; fi
bin=${BIN:-$PWD/target/release/stablerail}
command -v sqlite3 >/dev/null || { apt-get update -qq && apt-get install -y -qq sqlite3; } >/dev/null
out=${OUT:-$PWD/.stablerail/bench-in-flight}
mkdir -p "$out"
: >"$out/samples.jsonl"
dir=$(mktemp -d)
port=${PORT:-$((21000 + RANDOM % 8000))}
DEVNET_BLOCK_TIME=${BLOCKS:-12} taskset -c 1 "$bin" devnet up --dir "$dir/dn" --port "$port" --chains base >/dev/null || exit 1
ln -s "$PWD/devnet/node_modules" "$dir/node_modules"
sed -i 's/^\[facilitator\]$/[facilitator]\npublic = true\nsettle_wait_seconds = 1\nsettle_retry_wait_seconds = 1\npublic_requests_per_minute = 100000000\npublic_settlements_per_minute = 100000000\npublic_gas_per_hour = 1000000000000000\npublic_chain_gas_per_hour = 1000000000000000/' "$dir/dn/chains.toml"
url=http://127.0.0.1:$((port + 50))
RUST_LOG=warn taskset -c 0 "$bin" serve --config "$dir/dn/chains.toml" --database "sqlite://$dir/dn/stablerail.db" \
    --listen "127.0.0.1:$((port + 50))" >"$out/serve.log" 2>&1 &
server=$! sampler=
# Under `set -u` an unset name would stop the trap before the devnet is down.
trap 'kill $server ${sampler:-} 2>/dev/null; "$bin" devnet down --dir "$dir/dn" >/dev/null 2>&1; rm -rf "$dir"' EXIT
wait_up "$url/api/health" || exit 1
t0=$(date +%s)
count() { sqlite3 -cmd ".timeout 2000" "$dir/dn/stablerail.db" "SELECT COUNT(*) FROM x402_settlements WHERE status = '$1'" 2>/dev/null || echo null; }
(while kill -0 "$server" 2>/dev/null; do
    echo "{\"t\":$(($(date +%s) - t0)),\"rss_kib\":$(awk '/VmRSS/ {print $2}' "/proc/$server/status"),\"in_flight\":$(count queued),\"settled\":$(count settled)}" >>"$out/samples.jsonl"
    sleep 5
done) &
sampler=$!
FAC=$url/x402 DIR=$dir/dn N=${N:-20000} C=${C:-1500} RATE=${RATE:-300} taskset -c 1 node devnet/bench/bench-x402.mjs >"$out/report.json"
sleep "${AFTER:-90}"
node -e '
    const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
    const peak = rows.reduce((a, r) => (r.in_flight > a.in_flight ? r : a), rows[0]);
    const after = rows.filter((r) => r.t >= peak.t);
    const mib = (k) => (k / 1024).toFixed(0);
    console.log(JSON.stringify({ start_mib: +mib(rows[0].rss_kib), peak_in_flight: peak.in_flight, at_s: peak.t,
      rss_mib_from_peak: { min: +mib(Math.min(...after.map((r) => r.rss_kib))), max: +mib(Math.max(...after.map((r) => r.rss_kib))) },
      last: rows[rows.length - 1] }));
' "$out/samples.jsonl" | tee "$out/summary.json"
