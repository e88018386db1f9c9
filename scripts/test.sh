#!/usr/bin/env bash
# The whole test suite. Everything builds in the release profile, so wasmtime
# is compiled once for tests, benches and the service.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build-adapters.sh

echo "==> guest-side unit tests (adapter kit, solana-spl, tron-permit2, natively)"
(cd adapters && cargo test --release --target x86_64-unknown-linux-gnu -p adapter-kit -p x402-wire -p solana-spl -p tron-wire -p tron-permit2 --lib)

echo "==> host tests (SQLite and Postgres), benches run once as smoke tests"
cargo test --release --workspace --all-targets
