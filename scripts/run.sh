#!/usr/bin/env bash
# Run stablerail on embedded defaults against a local devnet: SQLite and the
# keystore under .stablerail/devnet, one anvil per EVM chain with devnet USDC,
# the service's wallets funded. It prints how to make a real payment.
# Extra arguments go to `stablerail serve` (e.g. --listen 0.0.0.0:8402).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/shared-target.sh
bin=target/release/stablerail
# Build only when a source is newer than the binary (or there is none).
if [ ! -x "$bin" ] || [ ! -d adapters/target/wasm32-wasip2/release ] \
   || [ -n "$(find host adapters wit migrations Cargo.toml Cargo.lock -newer "$bin" -type f \
                -not -path 'adapters/target/*' -print -quit)" ]; then
    scripts/build.sh
else
    scripts/setup.sh
fi
dir=.stablerail/devnet
"$bin" devnet up --dir "$dir" --output table
# The dashboard's mail: a local SMTP sink that prints each sign-in code.
node devnet/mail/sink.mjs --port 2525 --out "$dir/mail.jsonl" &
mail=$!
# The service replaces this shell (exec), so Ctrl-C or SIGTERM reaches it
# directly; this watcher ignores both, waits for it to stop, then stops
# the devnet.
service=$$
( trap '' INT TERM
  while kill -0 "$service" 2>/dev/null; do sleep 0.5; done
  kill "$mail" 2>/dev/null || true
  "$bin" devnet down --dir "$dir" >/dev/null 2>&1 || true ) &
echo
echo "==> serving on http://127.0.0.1:8402 (Ctrl-C stops the service, then the devnet)"
echo "    in another shell: node devnet/clients/demo.mjs"
echo "    API contract: http://127.0.0.1:8402/api/openapi.json"
echo "    dashboard: http://127.0.0.1:8402/dashboard (sign-in codes are printed here as [mail] lines)"
exec "$bin" serve --config "$dir/chains.toml" --database "sqlite://$PWD/$dir/stablerail.db" "$@"
