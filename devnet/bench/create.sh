#!/usr/bin/env bash
# Creating intents (`POST /api/intents`, public flow, base → arbitrum) with
# wrk, on SQLite and on Postgres, for this build and, with BASE_BIN, for
# another build of stablerail back to back in the same run (the ratio is
# this ÷ that). The service runs alone on CPU 0, wrk on CPU 1; the rate
# limit is lifted. Rows go to $OUT/create.jsonl.
#   BASE_BIN=/tmp/stablerail-before scripts/bench.sh create
# Postgres: PG (default postgres://postgres@127.0.0.1:5432), a fresh
# database per row.
set -uo pipefail
cd "$(dirname "$0")/../.."
. devnet/bench/wait-up.sh
if [ -z "${BIN:-}" ]; then scripts/build.sh >/dev/null; fi
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; } >/dev/null
out=${OUT:-$PWD/.stablerail/bench-create}
mkdir -p "$out"
rows=$out/create.jsonl
: >"$rows"
pg=${PG:-postgres://postgres@127.0.0.1:5432}
secs=${SECONDS_PER_ROW:-8}
cat >"$out/create.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"recipient":"0x000000000000000000000000000000000000bEEF","amount":"1","payer_chain":"base","target_chain":"arbitrum"}'
done = function(summary, latency, requests)
  io.write(string.format('{"requests":%d,"seconds":%.3f,"non_2xx":%d,"p50_ms":%.2f,"p99_ms":%.2f}\n',
    summary.requests, summary.duration / 1e6, summary.errors.status, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
EOF
builds=("this=${BIN:-$PWD/target/release/stablerail}")
[ -n "${BASE_BIN:-}" ] && builds=("before=$BASE_BIN" "${builds[@]}")
for database in sqlite postgres; do
    for build in "${builds[@]}"; do
        name=${build%%=*} bin=${build#*=}
        dir=$(mktemp -d)
        port=${PORT:-$((21000 + RANDOM % 8000))}
        taskset -c 1 "$bin" devnet up --dir "$dir/dn" --port "$port" --chains base,arbitrum >/dev/null || exit 1
        # The devnet's limit (100,000 a minute) is below what a row sends.
        sed -i 's/^requests_per_minute = 100000$/requests_per_minute = 1000000000/' "$dir/dn/chains.toml"
        db="sqlite://$dir/dn/stablerail.db"
        if [ "$database" = postgres ]; then
            name_db="bench_$RANDOM$RANDOM"
            psql "$pg/postgres" -qc "CREATE DATABASE $name_db" >/dev/null
            db="$pg/$name_db"
            "$bin" keys init --config "$dir/dn/chains.toml" --database "$db" >/dev/null
        fi
        RUST_LOG=warn taskset -c 0 "$bin" serve --config "$dir/dn/chains.toml" --database "$db" \
            --listen "127.0.0.1:$((port + 50))" >"$dir/serve.log" 2>&1 &
        server=$!
        url=http://127.0.0.1:$((port + 50))
        wait_up "$url/api/health" || exit 1
        taskset -c 1 wrk -t1 -c32 -d2s -s "$out/create.lua" "$url/api/intents" >/dev/null # warm-up
        report=$(taskset -c 1 wrk -t1 -c32 -d"${secs}s" --latency -s "$out/create.lua" "$url/api/intents" | grep '^{')
        kill "$server"
        wait "$server" 2>/dev/null
        "$bin" devnet down --dir "$dir/dn" >/dev/null 2>&1
        rm -rf "$dir"
        [ "$database" = postgres ] && psql "$pg/postgres" -qc "DROP DATABASE $name_db" >/dev/null
        node -e 'const [b,d,r]=process.argv.slice(1);const j=JSON.parse(r);console.log(JSON.stringify({what:"create",build:b,database:d,per_second:+(j.requests/j.seconds).toFixed(1),...j}))' \
            "$name" "$database" "$report" | tee -a "$rows"
    done
done
node -e '
    const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
    for (const d of ["sqlite", "postgres"]) {
        const of = (b) => rows.find((r) => r.database === d && r.build === b);
        if (of("before")) console.log(`${d}: ${of("this").per_second}/s ÷ ${of("before").per_second}/s = ${(of("this").per_second / of("before").per_second).toFixed(2)}×, p99 ${of("this").p99_ms} ms (before ${of("before").p99_ms} ms)`);
    }
' "$rows"
