#!/usr/bin/env bash
# Webhooks under load: N agent intents (default 10,000) settling base →
# arbitrum, twice on fresh devnets in one run: without an endpoint, then
# with one whose receiver verifies every delivery with the npm
# `standardwebhooks` library. Prints both settlement reports, their ratio
# (with ÷ without; the goal is ≥ 0.9), and the deliveries: how many, how
# many verified, and the latency from each change to its delivery (p50, p99,
# max). Rows go to $OUT/events.jsonl.
#   N=10000 C=64 scripts/bench.sh events
set -euo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
# BIN: a build to measure as it is (no build step).
[ -n "${BIN:-}" ] || scripts/build.sh >/dev/null
bin=${BIN:-$PWD/target/release/stablerail}
command -v sqlite3 >/dev/null || { apt-get update -qq && apt-get install -y -qq sqlite3; } >/dev/null
n=${N:-10000}
c=${C:-64}
out=${OUT:-$PWD/.stablerail/bench-events}
mkdir -p "$out"
rows=$out/events.jsonl
: >"$rows"
dir=$out/dn
port=${PORT:-19645}
url=http://127.0.0.1:$((port + 50))
hooks=http://127.0.0.1:$((port + 60))
cleanup() {
    # Killed and waited for: a server still shutting down writes into the
    # folder the next run removes (the suite once saw "Directory not empty").
    [ -n "${server:-}" ] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; }
    [ -n "${receiver:-}" ] && { kill "$receiver" 2>/dev/null; wait "$receiver" 2>/dev/null || true; }
    server= receiver=
    $bin devnet down --dir "$dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

run() { # $1: without | with
    cleanup
    rm -rf "$dir" 2>/dev/null || { sleep 1; rm -rf "$dir"; }
    $bin devnet up --dir "$dir" --port "$port" --chains base,arbitrum >/dev/null
    sed -i 's/^requests_per_minute = 100000$/requests_per_minute = 1000000000/' "$dir/chains.toml"
    local db="sqlite://$dir/stablerail.db"
    local account agent bearer
    account=$($bin account create --name bench --config "$dir/chains.toml" --database "$db" | node -pe 'JSON.parse(require("fs").readFileSync(0)).account_id')
    agent=$($bin agent create --name bench --account "$account" --config "$dir/chains.toml" --database "$db")
    bearer=$(node -pe 'const a = JSON.parse(process.argv[1]); a.authorization ?? `Bearer ${Buffer.from(`${a.api_key}:${a.secret_key}`).toString("base64")}`' "$agent")
    RUST_LOG=${RUST_LOG:-warn} $bin serve --config "$dir/chains.toml" --database "$db" --listen "127.0.0.1:$((port + 50))" >"$out/serve-$1.log" 2>&1 &
    server=$!
    wait_up "$url/api/health" || exit 1
    if [ "$1" = with ]; then
        : >"$out/received.jsonl"
        node devnet/clients/webhook-receiver.mjs --port "$((port + 60))" --secrets "$out/secrets.json" --out "$out/received.jsonl" &
        receiver=$!
        wait_up "$hooks/" any || exit 1
        curl -sf -X POST $url/v2/webhook_endpoints -H "authorization: $bearer" -H 'content-type: application/json' \
            -d "{\"url\":\"$hooks/hooks\"}" | node -pe 'JSON.stringify([JSON.parse(require("fs").readFileSync(0)).secret])' >"$out/secrets.json"
    fi
    node devnet/bench/bench.mjs --dir "$dir" --url $url --n "$n" --c "$c" --skip-reference --bearer "$bearer" >"$out/report-$1.json"
    if [ "$1" = with ]; then
        # Every change of every intent delivered: wait for the outbox to drain.
        local want
        want=$(sqlite3 "$dir/stablerail.db" "SELECT COUNT(*) FROM events WHERE subject_kind = 'intent'" 2>/dev/null || echo 0)
        for _ in $(seq 1 600); do
            [ "$(sqlite3 "$dir/stablerail.db" "SELECT (SELECT COUNT(*) FROM events WHERE fanned_out = 0) + (SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending')")" = 0 ] && break
            sleep 1
        done
        node -e '
          const fs = require("fs");
          const lines = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse).filter((l) => l.id);
          const ok = lines.filter((l) => l.verified.length);
          const firsts = new Map();
          for (const l of ok) if (!firsts.has(l.id)) firsts.set(l.id, l);
          const lat = [...firsts.values()].map((l) => l.at - Date.parse(l.created_at)).sort((a, b) => a - b);
          const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))];
          console.log(JSON.stringify({ events_recorded: Number(process.argv[2]), requests: lines.length, delivered_ids: firsts.size,
            verified_share: ok.length / lines.length, latency_ms: { p50: pct(0.5), p99: pct(0.99), max: lat[lat.length - 1] } }));
        ' "$out/received.jsonl" "$want" >"$out/deliveries.json"
    fi
}

run without
run with
node -e '
  const fs = require("fs");
  const [a, b, d] = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
  const row = { n: a.n, concurrency: a.concurrency,
    without: { source_per_second: a.stablerail.source_leg.per_second, target_per_second: a.stablerail.proof_to_target_settled.per_second },
    with: { source_per_second: b.stablerail.source_leg.per_second, target_per_second: b.stablerail.proof_to_target_settled.per_second },
    ratio_source: +(b.stablerail.source_leg.per_second / a.stablerail.source_leg.per_second).toFixed(3),
    ratio_target: +(b.stablerail.proof_to_target_settled.per_second / a.stablerail.proof_to_target_settled.per_second).toFixed(3),
    deliveries: d };
  console.log(JSON.stringify(row, null, 2));
  fs.appendFileSync(process.argv[3].replace(/deliveries\.json$/, "events.jsonl"), JSON.stringify(row) + "\n");
' "$out/report-without.json" "$out/report-with.json" "$out/deliveries.json"
