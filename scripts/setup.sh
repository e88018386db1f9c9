#!/usr/bin/env bash
# Idempotent machine setup shared by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup target list --installed | grep -qx wasm32-wasip2; then
    echo "==> installing the wasm32-wasip2 target"
    rustup target add wasm32-wasip2
fi
