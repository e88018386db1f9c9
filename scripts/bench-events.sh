#!/usr/bin/env bash
# Webhooks under load (devnet/bench/events.sh): N=10000 by default.
exec "$(dirname "$0")/bench.sh" events "$@"
