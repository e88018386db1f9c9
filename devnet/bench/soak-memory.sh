#!/usr/bin/env bash
# Resident memory of one `serve` while it settles ROUNDS × N intents
# (devnet/bench/bench.mjs --n N, base → arbitrum): VmRSS after each round, to
# $OUT/memory.jsonl, then the growth from the 2nd round to the last. Flat
# after warm-up means nothing is kept per intent beyond caches of a fixed
# size. Each reading is taken once the service has rested REST seconds
# (default 12: past one `heap_trim_seconds` period, so it reads what the
# service holds, not what the last burst left in malloc's arenas).
# Not in CI (minutes of load).
#   N=1000 ROUNDS=5 scripts/bench.sh soak-memory     (BIN: another build to soak)
set -euo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh >/dev/null; fi
bin=${BIN:-$PWD/target/release/stablerail}
out=${OUT:-$PWD/.stablerail/soak}
mkdir -p "$out"
: >"$out/memory.jsonl"
dir=$(mktemp -d)
port=${PORT:-$((21000 + RANDOM % 8000))}
"$bin" devnet up --dir "$dir/dn" --port "$port" --chains base,arbitrum >/dev/null
url=http://127.0.0.1:$((port + 50))
RUST_LOG=warn "$bin" serve --config "$dir/dn/chains.toml" --database "sqlite://$dir/dn/stablerail.db" \
    --listen "127.0.0.1:$((port + 50))" >"$dir/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; "$bin" devnet down --dir "$dir/dn" >/dev/null 2>&1; rm -rf "$dir"' EXIT
wait_up "$url/api/health" || exit 1
rss() { awk '/VmRSS/ {print $2}' "/proc/$server/status"; }
echo "{\"round\":0,\"intents\":0,\"rss_kib\":$(rss)}" | tee -a "$out/memory.jsonl"
for r in $(seq 1 "${ROUNDS:-5}"); do
    node devnet/bench/bench.mjs --dir "$dir/dn" --url "$url" --n "${N:-1000}" --skip-reference >/dev/null
    sleep "${REST:-12}"
    echo "{\"round\":$r,\"intents\":$((r * ${N:-1000})),\"rss_kib\":$(rss)}" | tee -a "$out/memory.jsonl"
done
node -e '
    const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
    const [second, last] = [rows[2], rows[rows.length - 1]];
    const kept = (last.rss_kib - second.rss_kib) * 1024 / (last.intents - second.intents);
    console.log(`from round 2 to ${last.round}: ${((last.rss_kib - second.rss_kib) / 1024).toFixed(1)} MiB, ${kept.toFixed(0)} bytes per intent`);
' "$out/memory.jsonl"
