#!/usr/bin/env bash
# Idempotent machine setup shared by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup target list --installed | grep -qx wasm32-wasip2; then
    echo "==> installing the wasm32-wasip2 target"
    rustup target add wasm32-wasip2
fi
if ! rustup component list --installed | grep -q '^rustfmt'; then
    echo "==> installing rustfmt"
    rustup component add rustfmt
fi

# The devnet's tools and the real x402 client, from npm (pinned by the lock file).
if ! command -v node >/dev/null; then
    echo "==> installing Node.js"
    apt-get update -qq && apt-get install -y -qq nodejs npm
fi
if [ ! -d devnet/node_modules ] || [ devnet/package-lock.json -nt devnet/node_modules/.package-lock.json ]; then
    echo "==> installing devnet npm packages"
    (cd devnet && npm ci --no-audit --no-fund)
fi

# Canonical Permit2's bytecode for the devnet, from npm (cached, hash pinned),
# fetched once here rather than by devnets starting side by side.
node devnet/setup/canonical.mjs >/dev/null

# schemathesis (PyPI, pinned) fuzzes the served OpenAPI document in the tests.
SCHEMATHESIS_VERSION=4.32.5
if [ "$(.venv/bin/schemathesis --version 2>/dev/null)" != "schemathesis, version $SCHEMATHESIS_VERSION" ]; then
    echo "==> installing schemathesis $SCHEMATHESIS_VERSION"
    python3 -m venv .venv 2>/dev/null || { apt-get update -qq && apt-get install -y -qq python3-venv && python3 -m venv .venv; }
    .venv/bin/pip install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
