#!/usr/bin/env bash
# Machine setup, the adapters, and the service binary (release).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build-adapters.sh
cargo build --release --bin stablerail
