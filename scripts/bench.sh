#!/usr/bin/env bash
# The one entry to the benchmarks (outside CI; each prints its report):
#   scripts/bench.sh peers        stablerail beside x402-rs and the TypeScript reference
#   scripts/bench.sh settlement   intents through both legs on a fresh devnet
#   scripts/bench.sh create       intent creation
#   scripts/bench.sh swap         swap quotes and registrations
#   scripts/bench.sh abuse        a legit client's latency under a flood and slow sockets
#   scripts/bench.sh soak-memory  resident memory over rounds of payments
#   scripts/bench.sh in-flight    resident memory with 20,000 payments in flight on 12-s blocks
#   scripts/bench.sh events       settlement with and without a webhook receiver; delivery latency
#   scripts/bench.sh traces       /settle with tracing off, on at 1 % and at 100 %
#   scripts/bench.sh batch        batch-settlement: vouchers verified per second, gas per request beside exact
#   scripts/bench.sh adapter      the adapter host's criterion benches
# Each takes its settings from the environment (see the head of its script
# in devnet/bench/). Everything a benchmark runs lives in devnet/bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-}
case "$name" in
  adapter) shift; exec cargo bench -p stablerail --bench adapter "$@" ;;
  peers|settlement|create|swap|abuse|soak-memory|in-flight|events|traces|batch) shift; exec devnet/bench/"$name".sh "$@" ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
