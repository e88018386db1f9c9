#!/usr/bin/env bash
# Clippy on the host and the adapters, warnings as errors. Not part of the
# test command: clippy builds every dependency again in check mode (about
# four minutes on 2 cores), which the 15-minute CI cannot spare; run it
# before a commit (the suite checks formatting).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/shared-target.sh
rustup component add clippy >/dev/null 2>&1 || true
cargo clippy --release --workspace --lib --tests --benches -- -D warnings
(cd adapters && cargo clippy --target x86_64-unknown-linux-gnu --workspace -- -D warnings)
