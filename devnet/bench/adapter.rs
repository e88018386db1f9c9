//! Adapter overhead, measured against native baselines in the same run.
//!
//! - `call/describe cold`: what every adapter call costs: a fresh store, an
//!   instance from the `InstancePre` in a recycled pool slot, one call.
//!   `call/describe warm`: the call alone, on an instance kept from before
//!   (what reuse would save; the host never reuses one, see
//!   `sandbox::a_call_never_sees_what_an_earlier_call_wrote`).
//! - `verify/adapter` vs `verify/native`: the EIP-3009 proof check through the
//!   sandboxed adapter and the same check written natively with alloy (both
//!   read the payer's code through one client that answers from memory),
//!   recovering with the same libsecp256k1 as the adapter's host import.
//!   Both go round the same ring of proofs, more than the host's cache of
//!   recent recoveries holds, so every check recovers (as a payment's first
//!   check does).
//! - `recover/host` vs `recover/k256`: the host's secp256k1 recovery import
//!   (libsecp256k1) against k256's.
//!
//! Run: `cargo bench --bench adapter` (it builds the adapters first;
//! `ADAPTERS_DIR=…` runs another build's .wasm files instead).

use std::path::{Path, PathBuf};

use alloy_primitives::{hex, Address, Signature, B256, U256};
use alloy_signer_local::PrivateKeySigner;
use alloy_sol_types::SolStruct;
use criterion::{criterion_group, criterion_main, Criterion};
use serde::Deserialize;
use stablerail::adapter::wit::types as wit;
use stablerail::adapter::{system_clock, Registry};
use stablerail::config::{Config, Family};
use stablerail::family::chain::{ChainClient, Recorded, RecordedAnswer};
use stablerail::payment::{PaymentRequirements, Terms};
use std::sync::Arc;

#[path = "../../tests/common/eip3009.rs"]
mod eip3009;
use eip3009::{usdc_domain, TransferWithAuthorization, COLLECTOR, USDC};

/// Distinct proofs the verify benches go round: twice the host's cache of
/// recent recoveries (`crypto::secp256k1_recover`), so none is a hit.
const RING: usize = 2 * stablerail::crypto::RECENT_RECOVERIES;

fn domain() -> alloy_sol_types::Eip712Domain {
    usdc_domain(Some(8453), None)
}

/// The adapters' build, or `ADAPTERS_DIR` (another build's .wasm files, to
/// compare two builds of an adapter on one host).
fn adapters_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ADAPTERS_DIR") {
        return dir.into();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let status = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root.join("adapters"))
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .status()
        .expect("cargo runs");
    assert!(status.success());
    root.join("adapters/target/wasm32-wasip2/release")
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Payload {
    accepted: Accepted,
    payload: Inner,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Accepted {
    network: String,
    amount: String,
    asset: String,
    pay_to: String,
}
#[derive(Deserialize)]
struct Inner {
    signature: String,
    authorization: Auth,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Auth {
    from: Address,
    to: Address,
    value: U256,
    valid_after: U256,
    valid_before: U256,
    nonce: B256,
}

/// The adapter's checks, natively: decode, compare with the requirements,
/// window, EIP-712 digest, ask the chain whether the payer has code (as the
/// adapter does, through the same client), recover, compare signer.
fn verify_native(req: &PaymentRequirements, proof: &str, now: u64, chain: &ChainClient) -> Result<Address, String> {
    let p: Payload = serde_json::from_str(proof).map_err(|e| e.to_string())?;
    let a = &p.payload.authorization;
    if p.accepted.network != req.network
        || p.accepted.amount != req.amount
        || !p.accepted.asset.eq_ignore_ascii_case(&req.asset)
        || !p.accepted.pay_to.eq_ignore_ascii_case(&req.pay_to)
    {
        return Err("mismatch".into());
    }
    if a.to != req.pay_to.parse::<Address>().unwrap() || a.value != req.amount.parse::<U256>().unwrap() {
        return Err("terms".into());
    }
    if a.valid_after > U256::from(now) || a.valid_before < U256::from(now + 6) {
        return Err("window".into());
    }
    let digest = TransferWithAuthorization {
        from: a.from,
        to: a.to,
        value: a.value,
        validAfter: a.valid_after,
        validBefore: a.valid_before,
        nonce: a.nonce,
    }
    .eip712_signing_hash(&domain());
    let sig = hex::decode(&p.payload.signature).map_err(|e| e.to_string())?;
    let code = chain
        .query_blocking("eth_getCode", &serde_json::json!([a.from.to_checksum(None), "latest"]).to_string())
        .map_err(|e| e.to_string())?;
    if serde_json::from_str::<String>(&code).map_err(|e| e.to_string())? != "0x" {
        return Err("a contract payer (ERC-1271) is not this bench's case".into());
    }
    let key = stablerail::crypto::secp256k1_recover(digest.as_slice(), &sig)?;
    let signer = Address::from_raw_public_key(&key[1..]);
    if signer != a.from {
        return Err("signer".into());
    }
    Ok(signer)
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[service]\nadapters_dir = {:?}\ncache_dir = {:?}\n[adapters]\neip3009 = \"eip3009.wasm\"\n[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\", \"target\"]\n[chains.base.assets.usdc]\nstate = \"live\"\nscheme = \"eip3009\"\ntoken = \"{USDC}\"\ndecimals = 6\neip712_name = \"USD Coin\"\neip712_version = \"2\"\n",
        adapters_dir().display().to_string(),
        dir.path().join("cache").display().to_string(),
    );
    let cfg = Config::parse(&config).unwrap();
    let reg = Registry::from_config(
        &cfg,
        stablerail::server::runtime_for(&cfg, system_clock()).unwrap(),
        &stablerail::family::chain::Chains::from_config(&cfg),
    )
    .unwrap();
    let usdc = reg.asset("base", "usdc").unwrap();
    eprintln!("allocator: {}", reg.runtime.allocator);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let terms = Terms { amount: "1000000".into(), pay_to: COLLECTOR.to_string(), max_timeout_seconds: 600 };
    let req = rt.block_on(usdc.requirements(&terms)).unwrap().unwrap();
    let payer = PrivateKeySigner::random();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let authorization = |nonce: u64| TransferWithAuthorization {
        from: payer.address(),
        to: COLLECTOR,
        value: U256::from(1_000_000),
        validAfter: U256::from(now - 60),
        validBefore: U256::from(now + 3600),
        nonce: B256::from(U256::from(nonce)),
    };
    let proofs: Vec<String> = (0..RING as u64)
        .map(|n| {
            let auth = authorization(n);
            eip3009::proof(&req, &auth, &eip3009::sign(&payer, &auth, &domain())).to_string()
        })
        .collect();
    // The adapter asks the chain whether the payer has code (WIT 0.5.0):
    // a recorded answer, in memory, so no network is measured.
    let no_code = RecordedAnswer {
        method: "eth_getCode".into(),
        params: serde_json::json!([payer.address().to_checksum(None), "latest"]),
        answer: Ok(serde_json::json!("0x")),
    };
    let chain = Arc::new(ChainClient::recorded("base", Family::Evm, Recorded(vec![no_code])));
    // Chain queries are answered on the runtime's handle.
    let _entered = rt.enter();
    let proof = &proofs[0];
    assert_eq!(verify_native(&req, proof, now, &chain).unwrap(), payer.address());
    let next = std::cell::Cell::new(0usize);
    let next_proof = || {
        let i = next.get();
        next.set((i + 1) % RING);
        &proofs[i]
    };

    let adapter = usdc.adapter.clone();
    let mut g = c.benchmark_group("call/describe");
    g.bench_function("cold (instantiate + call)", |b| b.iter(|| adapter.call(None, |g, s| g.describe(s)).unwrap()));
    // One instance for the whole batch of iterations, its fuel topped up:
    // the instantiation is spread over them.
    g.bench_function("warm (call on a kept instance)", |b| {
        b.iter_custom(|iters| {
            adapter
                .call(None, |g, s| {
                    let started = std::time::Instant::now();
                    for _ in 0..iters {
                        s.set_fuel(1 << 30)?;
                        g.describe(s)?;
                    }
                    Ok(started.elapsed())
                })
                .unwrap()
        })
    });
    g.finish();
    let mut g = c.benchmark_group("verify");
    g.bench_function("native", |b| b.iter(|| verify_native(&req, next_proof(), now, &chain).unwrap()));
    // The sandboxed call itself (a fresh instance per call), as the engine
    // makes it on its blocking thread.
    let wit_req = wit::PaymentRequirements {
        scheme: req.scheme.clone(),
        network: req.network.clone(),
        amount: req.amount.clone(),
        asset: req.asset.clone(),
        pay_to: req.pay_to.clone(),
        max_timeout_seconds: req.max_timeout_seconds,
        extra: req.extra.clone(),
    };
    let verify_in_sandbox = || {
        let proof = next_proof();
        adapter.call(Some(chain.clone()), |g, s| g.verify(s, usdc.context(), &wit_req, proof)).unwrap().unwrap()
    };
    assert_eq!(verify_in_sandbox().payer, payer.address().to_checksum(None), "the adapter accepts the proof");
    g.bench_function("adapter", |b| b.iter(verify_in_sandbox));
    g.finish();

    // The recovery every proof check makes: the host import (libsecp256k1)
    // against k256, which alloy uses by default. The host's import goes
    // round distinct signatures too, past its cache.
    let signed: Vec<(B256, Vec<u8>)> = (0..RING as u64)
        .map(|n| {
            let auth = authorization(n);
            let sig = eip3009::sign(&payer, &auth, &domain());
            (auth.eip712_signing_hash(&domain()), hex::decode(sig.trim_start_matches("0x")).unwrap())
        })
        .collect();
    let (digest, raw) = &signed[0];
    let parsed = Signature::from_raw(raw).unwrap();
    let mut g = c.benchmark_group("recover");
    g.bench_function("k256", |b| b.iter(|| parsed.recover_from_prehash(digest).unwrap()));
    let mut i = 0;
    g.bench_function("host (libsecp256k1)", |b| {
        b.iter(|| {
            i = (i + 1) % RING;
            let (digest, raw) = &signed[i];
            stablerail::crypto::secp256k1_recover(digest.as_slice(), raw).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
