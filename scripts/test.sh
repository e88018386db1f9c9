#!/usr/bin/env bash
# The whole test suite. Everything builds in the release profile, so wasmtime
# is compiled once for tests, benches and the service.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "==> formatting (rustfmt.toml) [${SECONDS}s]"
cargo fmt --all --check
(cd adapters && cargo fmt --all --check)

scripts/build-adapters.sh

# The dev profile: the adapters' release profile (LTO, one codegen unit)
# is for the shipped .wasm files, not for a few native unit tests.
echo "==> guest-side unit tests (adapter kit, solana-spl, tron-permit2, natively) [${SECONDS}s]"
(cd adapters && cargo test --target x86_64-unknown-linux-gnu -p adapter-kit -p x402-wire -p solana-spl -p tron-wire -p tron-permit2 --lib)

# One integration binary (tests/suite.rs), the host's unit tests, and the
# benches once as smoke tests. --no-fail-fast: a red run names every failure.
echo "==> host tests (SQLite and Postgres), benches run once as smoke tests [${SECONDS}s]"
cargo test --release --workspace --lib --tests --benches --no-fail-fast --no-run
echo "==> built [${SECONDS}s]"
cargo test --release --workspace --lib --tests --benches --no-fail-fast
echo "==> done [${SECONDS}s]"
