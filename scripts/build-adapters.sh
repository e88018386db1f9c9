#!/usr/bin/env bash
# Build every adapter (and the test fixtures) into adapters/target/wasm32-wasip2/release.
set -euo pipefail
cd "$(dirname "$0")/../adapters"
cargo build --release --target wasm32-wasip2
ls -1 target/wasm32-wasip2/release/*.wasm
