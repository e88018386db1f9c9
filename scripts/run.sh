#!/usr/bin/env bash
# Run stablerail on embedded defaults: chains.toml, SQLite in .stablerail/.
# Extra arguments go to `stablerail serve` (e.g. --listen 0.0.0.0:8402).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build-adapters.sh
cargo build --release --bin stablerail
exec target/release/stablerail serve --config chains.toml "$@"
