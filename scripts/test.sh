#!/usr/bin/env bash
# The whole test suite. Everything builds in the release profile, so wasmtime
# is compiled once for tests, benches and the service.
set -euo pipefail
cd "$(dirname "$0")/.."

# The host's build (most of the time on a fresh clone) starts first, in the
# background: installing packages waits on the network and the adapters'
# LTO runs on one core, so both leave a core the build can use.
command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)" >&2; exit 1; }
. scripts/shared-target.sh
host_log=$(mktemp)
# One invocation for every target, the service's binary included (the suite
# drives it): one feature resolution, so nothing is built twice.
cargo build --release --workspace --all-targets >"$host_log" 2>&1 &
host_build=$!
trap 'kill $host_build 2>/dev/null || true' EXIT

scripts/setup.sh
# The dashboard's tests drive Debian's Chromium (puppeteer-core, from npm).
if ! command -v chromium >/dev/null; then
    echo "==> installing Chromium"
    apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
fi

# The hardware-module tests use Debian's SoftHSM2 through PKCS#11.
if [ ! -e /usr/lib/softhsm/libsofthsm2.so ]; then
    echo "==> installing SoftHSM2"
    apt-get install -y -qq softhsm2 >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq softhsm2 >/dev/null; }
fi

echo "==> formatting (rustfmt.toml) [${SECONDS}s]"
cargo fmt --all --check
(cd adapters && cargo fmt --all --check)

scripts/build-adapters.sh

# The dev profile: the adapters' release profile (LTO, one codegen unit)
# is for the shipped .wasm files, not for a few native unit tests.
echo "==> guest-side unit and doc tests (adapter kit, batch-wire, solana-spl, tron-permit2, natively) [${SECONDS}s]"
(cd adapters && cargo test --target x86_64-unknown-linux-gnu -p stablerail-adapter-kit -p x402-wire -p batch-wire -p solana-spl -p tron-wire -p tron-permit2 --lib)
# The kit's documented examples are tests too, and its docs build clean.
(cd adapters && cargo test --target x86_64-unknown-linux-gnu -p stablerail-adapter-kit --doc)
(cd adapters && RUSTDOCFLAGS="-D warnings" cargo doc --target x86_64-unknown-linux-gnu -p stablerail-adapter-kit --no-deps --quiet)

echo "==> waiting for the host's build [${SECONDS}s]"
status=0
wait $host_build || status=$?
trap - EXIT
cat "$host_log"
rm -f "$host_log"
[ "$status" -eq 0 ] || exit "$status"

# What an author sees: `adapter check`'s table for every shipped adapter
# against its vectors (the suite asserts each row; this shows them),
# with the binary the tests' build made.
echo "==> adapter check on every shipped adapter [${SECONDS}s]"
for crate in eip3009 permit2 upto solana-spl tron-permit2 batch-settlement; do
    target/release/stablerail --output table adapter check "adapters/target/wasm32-wasip2/release/${crate//-/_}.wasm" \
        --vectors "adapters/$crate/vectors.json" --config /nonexistent.toml
done

# One test binary (tests/, a package of its own, with the host's unit tests
# in tests/units), and the benches once as smoke tests. --no-fail-fast: a red run names every failure.
# The suite's tests mostly wait on local chains, so eight run at a time on
# two cores (RUST_TEST_THREADS overrides). No backtraces: a failure's
# message, not sixty lines of frames, is what the end of a CI log shows.
echo "==> host tests (SQLite and Postgres), benches run once as smoke tests [${SECONDS}s]"
RUST_BACKTRACE=${RUST_BACKTRACE_IN_TESTS:-0} RUST_TEST_THREADS=${RUST_TEST_THREADS:-8} cargo test --release --workspace --tests --benches --no-fail-fast
echo "==> done [${SECONDS}s]"
