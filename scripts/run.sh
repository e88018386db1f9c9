#!/usr/bin/env bash
# Run stablerail on embedded defaults against a local devnet: SQLite and the
# keystore under .stablerail/devnet, one anvil per EVM chain with devnet USDC,
# the service's wallets funded. It prints how to make a real payment.
# Extra arguments go to `stablerail serve` (e.g. --listen 0.0.0.0:8402).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
dir=.stablerail/devnet
target/release/stablerail devnet up --dir "$dir"
trap 'target/release/stablerail devnet down --dir "$dir" >/dev/null 2>&1 || true' EXIT
echo
echo "==> serving on http://127.0.0.1:8402 (Ctrl-C stops the service and the devnet)"
echo "    in another shell: node devnet/demo.mjs"
target/release/stablerail serve --config "$dir/chains.toml" --database "sqlite://$PWD/$dir/stablerail.db" "$@"
