#!/usr/bin/env bash
# Longer fault runs than CI's, outside CI: SIGKILL the server at random
# moments in ROUNDS rounds of N paid intents across three devnet routes,
# then check every balance on chain and every relayer nonce.
#
#   scripts/chaos.sh [ROUNDS=10] [N=40] [OUTAGE_SECS=300] [BLOCK_SECONDS=0]
#
# BLOCK_SECONDS > 0 mines the kill run's chains at that pace (anvil's
# interval mining) instead of at once.
#
# The outage run (target chain down OUTAGE_SECS mid-payout) runs beside it;
# then ROUNDS × 3 kills between a sponsored swap's steps.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-10}" N="${2:-40}" OUTAGE="${3:-300}" BLOCKS="${4:-0}"
scripts/setup.sh
scripts/build-adapters.sh
echo "==> chaos: $ROUNDS rounds of $N intents; outage: $OUTAGE s; blocks: every ${BLOCKS}s (0: at once)"
cargo build --release --workspace --all-targets
CHAOS_ROUNDS="$ROUNDS" CHAOS_INTENTS="$N" OUTAGE_SECS="$OUTAGE" CHAOS_BLOCK_SECONDS="$BLOCKS" \
    cargo test --release --test suite faults:: -- --nocapture 2>&1 | grep -E "^chaos|^test |test result|panicked|assert"
echo "==> chaos: sponsored swaps, $((ROUNDS * 3)) kills"
SPONSORED_KILL_ROUNDS=$((ROUNDS * 3)) \
    cargo test --release --test suite sponsored_swaps::kill_nine -- --nocapture 2>&1 | grep -E "^sponsored swap round|^test |test result|panicked|assert"
