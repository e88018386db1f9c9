//! `stablerail adapter check`: what an adapter author runs before shipping.
//! Static checks read the component (does it load, which interface, which
//! imports, what it serves); dynamic checks call it in the host's own
//! sandbox, against a chain that answers from the author's vectors file
//! (no node, no network), with the vectors' valid proofs and the tamperings
//! derived from each. Every check is a row: pass, fail or skip, and why.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::wit::{self as interface, types as wit};
use crate::adapter::{family_name, wit_family, AssetAdapter, CallError, Limits, Runtime};
use crate::config::Family;
use crate::family::chain::{ChainClient, Recorded, RecordedAnswer};
use crate::family::keys::KeyKind;
use crate::payment::{PaymentRequirements, ProofError, ReceiptStatus, SigningRequest, Terms, Transfer, VerifiedPayment};

/// An author's vectors: one (chain, asset) the adapter serves, the terms
/// of a payment, proofs signed for the requirements the adapter makes of
/// those terms, and the chain's answers. The format is documented in
/// docs/adapters.md.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vectors {
    /// The scheme the adapter serves for the context's family (`describe`).
    pub scheme: String,
    /// The asset context the host would hand the adapter.
    pub context: Context,
    /// The host's relayer on the chain, where the family needs one.
    #[serde(default)]
    pub relayer: Option<String>,
    /// The emulated clock, Unix seconds.
    pub now: u64,
    pub terms: Terms,
    /// A valid recipient other than `terms.pay_to`, for the recipient tampering.
    pub other_pay_to: String,
    /// What the requirements must say beyond the terms.
    pub requirements: Expected,
    /// For a scheme that refuses by its spec's own codes
    /// (`proof-error::scheme`): per tampering (`amount`, `recipient`,
    /// `window`, `signer`, `malformed`), the codes that are the right
    /// refusal besides the interface's own case. An empty list: that
    /// tampering does not apply to the scheme (the row says so, skipped).
    #[serde(default)]
    pub scheme_refusals: BTreeMap<String, Vec<String>>,
    pub proofs: Vec<Proof>,
    /// Proofs from payers that are contracts (ERC-1271, EIP-7702, ERC-6492),
    /// each checked for `verify`'s answer alone under the chain's answers.
    #[serde(default)]
    pub contract_payers: Vec<ContractPayer>,
    /// The chain, as (method, params) → answer.
    #[serde(default)]
    pub chain: Vec<Answer>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    pub chain: String,
    pub network: String,
    pub family: Family,
    #[serde(default)]
    pub chain_id: Option<u64>,
    pub asset: String,
    pub token: String,
    pub decimals: u8,
    #[serde(default)]
    pub eip712_name: Option<String>,
    #[serde(default)]
    pub eip712_version: Option<String>,
    #[serde(default)]
    pub domain: crate::config::DomainKind,
    #[serde(default)]
    pub params: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The x402 scheme the requirements name, e.g. `exact`.
    pub scheme: String,
    /// Members `extra` must carry; a non-null value must match exactly.
    #[serde(default)]
    pub extra: BTreeMap<String, Value>,
    /// The requirements whole, for a scheme whose requirements the resource
    /// server writes (the adapter's `requirements` answers `unsupported`,
    /// as batch-settlement's): the proofs are checked under these.
    #[serde(default)]
    pub given: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    pub name: String,
    /// The payload as the payer sends it (x402 JSON).
    pub proof: Value,
    /// Who signed it, as the adapter should report.
    pub payer: String,
    /// The amount `verify` must report when it is not the requirements'
    /// (a channel's deposit reports what it deposits, a voucher 0).
    #[serde(default)]
    pub amount: Option<String>,
    /// JSON pointer to the signature inside `proof`.
    #[serde(default = "signature_at")]
    pub signature: String,
    /// Where the string at `signature` is base64 of a larger whole (a
    /// Solana transaction), the signature's bytes in it: `[start, end)`.
    #[serde(default)]
    pub signature_bytes: Option<[usize; 2]>,
    /// Chain answers (taking precedence) under which this proof was already used.
    #[serde(default)]
    pub replay: Vec<Answer>,
    /// Receipts of this payment's settlement as the chain gives them
    /// (`eth_getTransactionReceipt`, TRON's `gettransactioninfobyid`, …).
    #[serde(default)]
    pub receipts: Option<Receipts>,
    /// Chain answers (taking precedence) under which this proof's lifetime
    /// has passed, for a proof that lives by the chain rather than the clock
    /// (a Solana blockhash): `settle` must refuse it as expired. Without
    /// them the window is tampered by moving the clock.
    #[serde(default)]
    pub expired: Vec<Answer>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContractPayer {
    pub name: String,
    /// The payload as the payer sends it (x402 JSON).
    pub proof: Value,
    /// The wallet, as the adapter should report it when it accepts.
    pub payer: String,
    /// The refusal `verify` must answer, by its WIT name
    /// (`invalid-signature`, `factory-not-allowed`, …); absent: accepted.
    #[serde(default)]
    pub refusal: Option<String>,
}

/// A receipt that shows the payment, and ones that do not (reverted, another
/// amount or recipient): `read-receipt` must tell them apart.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipts {
    pub settled: Value,
    #[serde(default)]
    pub failed: Vec<Value>,
}

fn signature_at() -> String {
    "/payload/signature".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub method: String,
    pub params: Value,
    #[serde(default)]
    pub result: Option<Value>,
    /// A node's error answer: `{code, message}`.
    #[serde(default)]
    pub error: Option<NodeError>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct NodeError {
    pub code: i64,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub check: String,
    pub result: Outcome,
    pub detail: String,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub file: String,
    pub adapter: String,
    pub interface: String,
    pub passed: bool,
    pub checks: Vec<Row>,
}

/// Calls slower than this fail the limits check: a payment's verification
/// runs on the request path. Generous, as wall time depends on the machine;
/// fuel is the exact measure.
const SLOW_CALL: Duration = Duration::from_secs(1);

/// The share of the per-call fuel and memory budgets a call may use on the
/// vectors' inputs: larger inputs in production must still fit.
const HEADROOM: u64 = 10;

/// Run every check on `file`; `vectors` adds the dynamic ones.
pub async fn run(file: &Path, vectors: Option<&Vectors>, limits: Limits, cache_dir: std::path::PathBuf) -> Report {
    let (fuel_budget, memory_budget) = (limits.fuel, limits.memory_bytes);
    let now = Arc::new(AtomicU64::new(vectors.map_or(0, |v| v.now)));
    let clock = {
        let now = now.clone();
        Arc::new(move || now.load(Ordering::SeqCst)) as crate::adapter::Clock
    };
    let mut c = Checks { rows: vec![], slowest: Duration::ZERO };
    let runtime = match Runtime::new(limits, cache_dir, clock) {
        Ok(r) => r,
        Err(e) => {
            c.fail("loads", format!("the host's runtime did not start: {e:#}"));
            return c.report(file, "-", "-");
        }
    };
    // Static: what the file is, before anything of it runs.
    let inspection = match runtime.inspect(file) {
        Ok(i) => i,
        Err(e) => {
            c.fail("loads", e.to_string());
            return c.report(file, "-", "-");
        }
    };
    c.pass("loads", format!("a valid WebAssembly component ({} imports, {} exports)", inspection.imports.len(), inspection.exports.len()));
    let links = interface::versions().collect::<Vec<_>>().join(", ");
    let newest = interface::versions().last().unwrap_or_default();
    let version = inspection.interface;
    match version {
        Some(v) => c.pass(
            "interface",
            format!("stablerail:adapter@{v}{}; this host links {links}", if v == newest { " (the newest)" } else { "" }),
        ),
        None => {
            let named: Vec<&String> = inspection.exports.iter().filter(|e| e.starts_with("stablerail:")).collect();
            c.fail("interface", format!("exports no stablerail:adapter/scheme this host links ({links}); it exports {named:?}"));
        }
    }
    let foreign: Vec<String> = inspection.imports.iter().filter(|i| !crate::adapter::of_the_world(i)).cloned().collect();
    if foreign.is_empty() {
        c.pass("imports", format!("{} imports, all of the world (stablerail:adapter, wasi)", inspection.imports.len()));
    } else {
        c.fail("imports", format!("imports outside the world (the host would refuse to load it): {}", foreign.join(", ")));
    }
    if version.is_none() {
        c.skip("serves", "not linked: no interface this host links".into());
        return c.report(file, "-", "-");
    }
    // Linked with any foreign import trapping, so the rest still runs.
    let adapter = match runtime.link(file, inspection, crate::adapter::Foreign::Trap) {
        Ok(a) => Arc::new(a),
        Err(e @ crate::adapter::LoadError::ImportMismatch { .. }) => {
            c.fail("imports", e.to_string());
            return c.report(file, "-", "-");
        }
        Err(e @ crate::adapter::LoadError::ExportMismatch { .. }) => {
            c.fail("interface", e.to_string());
            return c.report(file, "-", "-");
        }
        Err(e) => {
            c.fail("serves", e.to_string());
            return c.report(file, "-", "-");
        }
    };
    let d = &adapter.description;
    if d.serves.is_empty() {
        c.fail("serves", format!("{} {}: describe names no (family, scheme)", d.name, d.version));
    } else {
        c.pass("serves", format!("{} {}: {}", d.name, d.version, crate::adapter::describe_serves(d)));
    }
    match vectors {
        Some(_) if d.serves.is_empty() => c.skip("vectors", "the adapter serves nothing to check the vectors against".into()),
        Some(v) => {
            dynamic(&mut c, &adapter, v, &now).await;
            limits_row(&mut c, &adapter, fuel_budget, memory_budget);
        }
        None => c.skip("vectors", "no --vectors file: the dynamic checks did not run".into()),
    }
    let interface = format!("stablerail:adapter@{}", adapter.interface);
    c.report(file, &d.name, &interface)
}

struct Checks {
    rows: Vec<Row>,
    slowest: Duration,
}

impl Checks {
    fn push(&mut self, check: &str, result: Outcome, detail: String) {
        self.rows.push(Row { check: check.into(), result, detail });
    }
    fn pass(&mut self, check: &str, detail: String) {
        self.push(check, Outcome::Pass, detail)
    }
    fn fail(&mut self, check: &str, detail: String) {
        self.push(check, Outcome::Fail, detail)
    }
    fn skip(&mut self, check: &str, detail: String) {
        self.push(check, Outcome::Skip, detail)
    }
    fn report(self, file: &Path, adapter: &str, interface: &str) -> Report {
        Report {
            file: file.display().to_string(),
            adapter: adapter.into(),
            interface: interface.into(),
            passed: self.rows.iter().all(|r| r.result != Outcome::Fail),
            checks: self.rows,
        }
    }

    /// A call's answer, or a failed row naming the call's own failure.
    async fn call<T>(&mut self, check: &str, call: impl std::future::Future<Output = Result<T, CallError>>) -> Option<T> {
        let started = Instant::now();
        let answer = call.await;
        self.slowest = self.slowest.max(started.elapsed());
        answer.map_err(|e| self.fail(check, format!("the call failed: {e}"))).ok()
    }
}

async fn dynamic(c: &mut Checks, adapter: &Arc<crate::adapter::Adapter>, v: &Vectors, now: &AtomicU64) {
    let family = wit_family(v.context.family);
    if !adapter.serves(family, &v.scheme) {
        c.fail("vectors", format!("the adapter does not serve {}/{}", family_name(family), v.scheme));
        return;
    }
    let asset = |answers: Vec<Answer>| {
        let mut a = AssetAdapter::new(adapter.clone(), context(&v.context), chain(&v.context, answers));
        if let Some(r) = &v.relayer {
            a = a.with_relayer(r);
        }
        Arc::new(a)
    };
    let a = asset(v.chain.clone());

    // Requirements: the terms carried over, `extra` as the spec names it.
    let Some(req) = c.call("requirements", a.requirements(&v.terms)).await else { return };
    let req = match (req, &v.requirements.given) {
        (Ok(r), _) => r,
        // The resource server's to write: checked as the vectors give them.
        (Err(crate::payment::AdapterError::Unsupported(m)), Some(given)) => match given_requirements(given) {
            Ok(r) => {
                c.skip("requirements", format!("the resource server writes them ({m}); the vectors give them"));
                r
            }
            Err(e) => return c.fail("requirements", format!("the vectors' requirements do not read: {e}")),
        },
        (Err(e), _) => return c.fail("requirements", format!("refused the vectors' terms: {e:?}")),
    };
    match requirements_misfit(&req, v) {
        None if v.requirements.given.is_some() => {}
        None => c.pass("requirements", format!("{} {} to {}, extra {}", req.scheme, req.amount, req.pay_to, req.extra)),
        Some(m) => c.fail("requirements", m),
    }
    if let Some(Ok(again)) = c.call("determinism", a.requirements(&v.terms)).await {
        if again != req {
            c.fail("determinism", "requirements answered differently for the same terms".into());
        }
    }
    let base_now = v.now;
    for p in &v.proofs {
        now.store(base_now, Ordering::SeqCst);
        let text = p.proof.to_string();
        let check = format!("verify {}", p.name);
        let Some(first) = c.call(&check, a.verify(&req, &text)).await else { continue };
        let paid = match first {
            Ok(paid) => paid,
            Err(e) => {
                c.fail(&check, format!("refused a valid proof: {e:?}"));
                continue;
            }
        };
        match paid_misfit(&paid, &req, p) {
            None => c.pass(&check, format!("payer {}, {} to {}", paid.payer, paid.amount, paid.pay_to)),
            Some(m) => c.fail(&check, m),
        }
        if let Some(again) = c.call("determinism", a.verify(&req, &text)).await {
            if again.as_ref().ok() != Some(&paid) {
                c.fail("determinism", format!("verify answered differently for the same proof ({})", p.name));
            }
        }
        let expired = (!p.expired.is_empty()).then(|| asset(p.expired.iter().chain(&v.chain).cloned().collect()));
        tamperings(c, &a, expired.as_ref(), &req, p, &paid, v, now).await;
        now.store(base_now, Ordering::SeqCst);

        // The chain's view: fresh under the vectors' answers, used under the replay ones.
        let check = format!("preflight {}", p.name);
        match c.call(&check, a.preflight(&paid)).await {
            Some(Ok(())) => c.pass(&check, "the chain's answers let it settle".into()),
            Some(Err(e)) => c.fail(&check, format!("refused under the vectors' chain: {e:?}")),
            None => {}
        }
        let check = format!("replay {}", p.name);
        if p.replay.is_empty() {
            c.skip(&check, "the vectors give no replay answers".into());
        } else {
            // Refused by preflight, or by verify where that reads the
            // chain itself (a channel's deposit).
            let used = asset(p.replay.iter().chain(&v.chain).cloned().collect());
            let answer = match c.call(&check, used.preflight(&paid)).await {
                Some(Ok(())) => c.call(&check, used.verify(&req, &text)).await.map(|r| r.map(|_| ())),
                other => other,
            };
            match answer {
                Some(Err(ProofError::AlreadyUsed)) => c.pass(&check, "already-used".into()),
                Some(other) => c.fail(&check, format!("expected already-used, got {other:?}")),
                None => {}
            }
        }
    }
    now.store(base_now, Ordering::SeqCst);
    for p in &v.contract_payers {
        contract_payer(c, &a, &req, p).await;
    }
    for p in &v.proofs {
        receipts(c, &a, &req, p).await;
    }
    round_trip(c, &a, &req, v).await;
    if !c.rows.iter().any(|r| r.check == "determinism") {
        c.pass("determinism", "the same question twice, the same answer".into());
    }
}

/// `read-receipt` of the proof's payment on its recorded receipts: the
/// settling one reads settled, to payTo for the amount; each other one
/// reads failed (never settled, never pending).
async fn receipts(c: &mut Checks, a: &Arc<AssetAdapter>, req: &PaymentRequirements, p: &Proof) {
    let check = format!("read-receipt {}", p.name);
    let Some(r) = &p.receipts else {
        return c.skip(&check, "the vectors give no receipts".into());
    };
    // The payment as the host expects it on chain: the required payTo and
    // amount, verify's payer, window and replay key (the vectors' payer when
    // verify refuses), so a fault of verify's is not also reported here.
    let verified = match a.verify(req, &p.proof.to_string()).await {
        Ok(Ok(paid)) => Some(paid),
        _ => None,
    };
    let paid = VerifiedPayment {
        payer: verified.as_ref().map_or_else(|| p.payer.clone(), |v| v.payer.clone()),
        pay_to: req.pay_to.clone(),
        amount: req.amount.clone(),
        valid_after: verified.as_ref().map_or(0, |v| v.valid_after),
        valid_before: verified.as_ref().map_or(u64::MAX, |v| v.valid_before),
        replay_key: verified.map_or_else(String::new, |v| v.replay_key),
    };
    let settled = match c.call(&check, a.read_receipt(&paid, &r.settled.to_string())).await {
        Some(Ok(ReceiptStatus::Settled(t))) if t.amount == paid.amount && t.to.eq_ignore_ascii_case(&paid.pay_to) => t,
        Some(other) => return c.fail(&check, format!("the settling receipt reads {other:?}")),
        None => return,
    };
    for (n, bad) in r.failed.iter().enumerate() {
        match c.call(&check, a.read_receipt(&paid, &bad.to_string())).await {
            Some(Ok(ReceiptStatus::Failed(_))) => {}
            Some(other) => return c.fail(&check, format!("failed receipt #{n} reads {other:?}")),
            None => return,
        }
    }
    c.pass(&check, format!("settled in {} (block {}); {} other receipt(s) read failed", settled.tx_hash, settled.block, r.failed.len()));
}

/// The secp256k1 key of the round trip's host-held wallet: fixed, so a
/// vectors file can record what the chain says of its address (an EVM
/// payer's code, read before its signature is checked).
/// keccak256("stablerail adapter check wallet"); address
/// 0x18820040E13957645300D6ADf6994449012c3965.
pub const ROUND_TRIP_KEY: [u8; 32] = alloy_primitives::hex!("30025954976c56a882062225ea3bc2a537f27a54a39883010c2d279cb8723675");

/// A host-held wallet's payment, end to end: what `authorize` asks to be
/// signed, signed by the round trip's key as the host would (an EVM digest as it is;
/// a TRON `raw_data` by its txID, sha256 of the bytes; a Solana message by
/// ed25519), `assemble`d, and
/// accepted by `verify` as that key's payment.
async fn round_trip(c: &mut Checks, a: &Arc<AssetAdapter>, req: &PaymentRequirements, v: &Vectors) {
    use alloy_signer::SignerSync;
    const CHECK: &str = "authorize/assemble";
    let key = alloy_signer_local::PrivateKeySigner::from_bytes(&ROUND_TRIP_KEY.into()).expect("a valid secp256k1 key");
    // A Solana wallet: a fresh ed25519 key.
    let ed = ed25519_dalek::SigningKey::from_bytes(&rand::random::<[u8; 32]>());
    let facts = v.context.family.facts();
    let sender = match facts.key_kind {
        KeyKind::Secp256k1 => facts.show_address(key.address().as_slice()),
        KeyKind::Ed25519 => facts.show_address(ed.verifying_key().as_bytes()),
    };
    let transfer = Transfer {
        sender: sender.clone(),
        recipient: req.pay_to.clone(),
        amount: req.amount.clone(),
        valid_after: v.now.saturating_sub(60),
        valid_before: v.now + 600,
        nonce: alloy_primitives::keccak256(b"stablerail adapter check").to_vec(),
    };
    let Some(asked) = c.call(CHECK, a.authorize(&transfer)).await else { return };
    let request = match asked {
        Ok(r) => r,
        // A scheme host-held wallets never pay with (x402 `upto`) says so.
        Err(crate::payment::AdapterError::Unsupported(m)) => return c.skip(CHECK, format!("host-held wallets do not pay this way: {m}")),
        Err(e) => return c.fail(CHECK, format!("authorize refused: {e:?}")),
    };
    let digest = match &request {
        _ if !facts.signs(&request) => {
            return c.fail(CHECK, format!("asks a {:?} wallet to sign {request:?}", v.context.family));
        }
        SigningRequest::Eip712Digest(d) => d.clone(),
        SigningRequest::TronRawData(raw) => tron_wire::raw::tx_id(raw).to_vec(),
        // ed25519 signs the message itself.
        SigningRequest::SolanaMessage(_) => vec![],
        other => return c.fail(CHECK, format!("asks a {:?} wallet to sign {other:?}", v.context.family)),
    };
    let signature = match &request {
        SigningRequest::SolanaMessage(message) => {
            use ed25519_dalek::Signer;
            ed.sign(message).to_bytes().to_vec()
        }
        _ => match <[u8; 32]>::try_from(digest.as_slice()).map(|d| key.sign_hash_sync(&d.into())) {
            Ok(Ok(s)) => s.as_bytes().to_vec(),
            _ => return c.fail(CHECK, format!("the digest is {} bytes, not a signable 32", digest.len())),
        },
    };
    let Some(assembled) = c.call(CHECK, a.assemble(req, &transfer, &request, signature)).await else { return };
    let proof = match assembled {
        Ok(p) => p,
        Err(e) => return c.fail(CHECK, format!("assemble refused: {e:?}")),
    };
    match c.call(CHECK, a.verify(req, &proof)).await {
        // What verify reports beyond the payer is the `verify` check's.
        Some(Ok(p)) if p.payer.eq_ignore_ascii_case(&sender) => {
            c.pass(CHECK, format!("the check's key's authorization verifies as its payment ({})", p.payer))
        }
        Some(Ok(p)) => c.fail(CHECK, format!("verifies as payer {} (expected {sender})", p.payer)),
        Some(Err(e)) => c.fail(CHECK, format!("the assembled proof is refused: {}", refusal(&e))),
        None => {}
    }
}

/// Fuel and memory by the adapter's own high-water marks (exact, whatever
/// the machine), and wall time as a backstop.
fn limits_row(c: &mut Checks, adapter: &crate::adapter::Adapter, fuel_budget: u64, memory_budget: usize) {
    let fuel = adapter.usage.fuel.load(Ordering::Relaxed);
    let memory = adapter.usage.memory.load(Ordering::Relaxed) as u64;
    let slowest = c.slowest;
    let said = format!(
        "most fuel {fuel} of {fuel_budget}, most memory {} KiB of {} MiB, slowest call {:.1} ms",
        memory >> 10,
        memory_budget >> 20,
        slowest.as_secs_f64() * 1e3
    );
    if fuel > fuel_budget / HEADROOM || memory > memory_budget as u64 / HEADROOM || slowest > SLOW_CALL {
        c.fail("limits", format!("{said}: over a tenth of a budget, or over {} ms", SLOW_CALL.as_millis()));
    } else {
        c.pass("limits", said);
    }
}

/// The derived tamperings of one valid proof, each with the refusal it must get.
#[allow(clippy::too_many_arguments)]
async fn tamperings(
    c: &mut Checks,
    a: &Arc<AssetAdapter>,
    expired: Option<&Arc<AssetAdapter>>,
    req: &PaymentRequirements,
    p: &Proof,
    paid: &VerifiedPayment,
    v: &Vectors,
    now: &AtomicU64,
) {
    let text = p.proof.to_string();
    let codes = |tampering: &str| v.scheme_refusals.get(tampering);
    // Other terms, echoed by the payload as a payer would (x402 v2's
    // `accepted`), so what is refused is the signed transfer itself.
    let more = PaymentRequirements { amount: plus_one(&req.amount), ..req.clone() };
    expect_or_scheme(c, "tamper amount", &p.name, codes("amount"), a.verify(&more, &echoing(&p.proof, &more)), |e| {
        matches!(e, ProofError::WrongAmount(_))
    })
    .await;
    let elsewhere = PaymentRequirements { pay_to: v.other_pay_to.clone(), ..req.clone() };
    expect_or_scheme(c, "tamper recipient", &p.name, codes("recipient"), a.verify(&elsewhere, &echoing(&p.proof, &elsewhere)), |e| {
        matches!(e, ProofError::WrongRecipient(_))
    })
    .await;

    if let Some(gone) = expired {
        // Its lifetime is on the chain: settling it once that has passed.
        let check = format!("tamper window (expired on chain) {}", p.name);
        match c.call(&check, gone.settle(req, &text)).await {
            Some(Err(ProofError::Expired)) => c.pass(&check, "expired".into()),
            Some(Err(e)) => c.fail(&check, format!("refused, but as {}", refusal(&e))),
            Some(Ok(steps)) => c.fail(&check, format!("settled a proof whose lifetime has passed ({} steps)", steps.len())),
            None => {}
        }
        return malformed_and_signer(c, a, req, p, &text, v).await;
    }
    if paid.valid_before == 0 {
        // Lives as long as its channel (a voucher): no clock to move.
        c.skip(&format!("tamper window {}", p.name), "no window: verify reports none".into());
        return malformed_and_signer(c, a, req, p, &text, v).await;
    }
    now.store(paid.valid_before.saturating_add(1), Ordering::SeqCst);
    expect_or_scheme(c, "tamper window (late)", &p.name, codes("window"), a.verify(req, &text), |e| matches!(e, ProofError::Expired)).await;
    if paid.valid_after > 0 {
        now.store(paid.valid_after - 1, Ordering::SeqCst);
        expect_or_scheme(c, "tamper window (early)", &p.name, codes("window"), a.verify(req, &text), |e| {
            matches!(e, ProofError::NotYetValid)
        })
        .await;
    } else {
        c.skip(&format!("tamper window (early) {}", p.name), "valid from the epoch".into());
    }
    now.store(v.now, Ordering::SeqCst);
    malformed_and_signer(c, a, req, p, &text, v).await;
}

/// Tamperings of the payload itself: a signature character, and three
/// malformed texts.
async fn malformed_and_signer(c: &mut Checks, a: &Arc<AssetAdapter>, req: &PaymentRequirements, p: &Proof, text: &str, v: &Vectors) {
    match flip_signature(&p.proof, &p.signature, p.signature_bytes) {
        Some(forged) => {
            expect_or_scheme(c, "tamper signer", &p.name, v.scheme_refusals.get("signer"), a.verify(req, &forged.to_string()), |e| {
                matches!(e, ProofError::InvalidSignature(_) | ProofError::SignerMismatch(_))
            })
            .await
        }
        None => c.fail(&format!("tamper signer {}", p.name), format!("no string at {} to alter", p.signature)),
    }
    for (what, bad) in
        [("not JSON", "not a payment".to_string()), ("an empty object", "{}".into()), ("a truncated payload", truncated(text))]
    {
        let check = format!("tamper malformed ({what})");
        expect_or_scheme(c, &check, &p.name, v.scheme_refusals.get("malformed"), a.verify(req, &bad), |e| {
            matches!(e, ProofError::Malformed(_))
        })
        .await;
    }
}

/// `expect`, where a scheme's own codes (the vectors' `scheme_refusals`)
/// also count; with an empty list the tampering does not apply and the row
/// is skipped, saying so.
async fn expect_or_scheme(
    c: &mut Checks,
    check: &str,
    proof: &str,
    codes: Option<&Vec<String>>,
    call: impl std::future::Future<Output = Result<Result<VerifiedPayment, ProofError>, CallError>>,
    wanted: impl Fn(&ProofError) -> bool,
) {
    match codes {
        Some(codes) if codes.is_empty() => c.skip(&format!("{check} {proof}"), "does not apply to this scheme (the vectors say so)".into()),
        Some(codes) => {
            expect(c, check, proof, call, |e| wanted(e) || matches!(e, ProofError::Scheme { code, .. } if codes.contains(code))).await
        }
        None => expect(c, check, proof, call, wanted).await,
    }
}

async fn expect(
    c: &mut Checks,
    check: &str,
    proof: &str,
    call: impl std::future::Future<Output = Result<Result<VerifiedPayment, ProofError>, CallError>>,
    wanted: impl Fn(&ProofError) -> bool,
) {
    let check = format!("{check} {proof}");
    match c.call(&check, call).await {
        Some(Err(e)) if wanted(&e) => c.pass(&check, refusal(&e)),
        Some(Err(e)) => c.fail(&check, format!("refused, but as {}", refusal(&e))),
        Some(Ok(p)) => c.fail(&check, format!("accepted (payer {}, {})", p.payer, p.amount)),
        None => {}
    }
}

/// A refusal's kebab-case variant and its text, as the WIT names it.
/// A contract payer's proof: accepted as the wallet's payment, or refused
/// with the refusal the vectors name.
async fn contract_payer(c: &mut Checks, a: &Arc<AssetAdapter>, req: &PaymentRequirements, p: &ContractPayer) {
    let check = format!("contract payer {}", p.name);
    let Some(answer) = c.call(&check, a.verify(req, &p.proof.to_string())).await else { return };
    match (answer, &p.refusal) {
        (Ok(paid), None) if paid.payer.eq_ignore_ascii_case(&p.payer) => c.pass(&check, format!("accepted: payer {}", paid.payer)),
        (Ok(paid), None) => c.fail(&check, format!("accepted as {}'s, not {}'s", paid.payer, p.payer)),
        (Ok(_), Some(want)) => c.fail(&check, format!("accepted; expected {want}")),
        (Err(e), None) => c.fail(&check, format!("refused: {}", refusal(&e))),
        (Err(e), Some(want)) => {
            let got = refusal(&e);
            // By its WIT name; a scheme's refusal by `scheme: <code>`.
            if got.split(':').next() == Some(want.as_str()) || got.starts_with(&format!("{want} ")) {
                c.pass(&check, got)
            } else {
                c.fail(&check, format!("expected {want}, got {got}"))
            }
        }
    }
}

pub fn refusal(e: &ProofError) -> String {
    if let ProofError::Scheme { code, detail } = e {
        return format!("scheme: {code} ({detail})");
    }
    let text = format!("{e:?}");
    let (name, rest) = text.split_once('(').unwrap_or((&text, ""));
    let mut kebab = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            kebab.push('-');
        }
        kebab.push(ch.to_ascii_lowercase());
    }
    match rest.trim_end_matches(')') {
        "" => kebab,
        detail => format!("{kebab}: {}", detail.trim_matches('"')),
    }
}

/// The vectors' requirements as x402 writes them (`payTo`, `extra` an object).
fn given_requirements(v: &Value) -> Result<PaymentRequirements, String> {
    serde_json::from_value(v.clone()).map_err(|e| e.to_string())
}

fn requirements_misfit(req: &PaymentRequirements, v: &Vectors) -> Option<String> {
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let t = &v.terms;
    let mut wrong = vec![];
    if req.scheme != v.requirements.scheme {
        wrong.push(format!("scheme {} (expected {})", req.scheme, v.requirements.scheme));
    }
    if req.network != v.context.network {
        wrong.push(format!("network {} (expected {})", req.network, v.context.network));
    }
    if req.amount != t.amount {
        wrong.push(format!("amount {} (expected {})", req.amount, t.amount));
    }
    if !same(&req.pay_to, &t.pay_to) {
        wrong.push(format!("payTo {} (expected {})", req.pay_to, t.pay_to));
    }
    if !same(&req.asset, &v.context.token) {
        wrong.push(format!("asset {} (expected {})", req.asset, v.context.token));
    }
    if req.max_timeout_seconds != t.max_timeout_seconds {
        wrong.push(format!("maxTimeoutSeconds {} (expected {})", req.max_timeout_seconds, t.max_timeout_seconds));
    }
    match serde_json::from_str::<Value>(&req.extra) {
        Ok(Value::Object(extra)) => {
            for (k, want) in &v.requirements.extra {
                match extra.get(k) {
                    None => wrong.push(format!("extra has no `{k}`")),
                    Some(got) if !want.is_null() && got != want => wrong.push(format!("extra.{k} is {got} (expected {want})")),
                    _ => {}
                }
            }
        }
        _ => wrong.push(format!("extra is not a JSON object: {}", req.extra)),
    }
    (!wrong.is_empty()).then(|| wrong.join("; "))
}

fn paid_misfit(paid: &VerifiedPayment, req: &PaymentRequirements, p: &Proof) -> Option<String> {
    let mut wrong = vec![];
    if !paid.payer.eq_ignore_ascii_case(&p.payer) {
        wrong.push(format!("payer {} (expected {})", paid.payer, p.payer));
    }
    let amount = p.amount.as_ref().unwrap_or(&req.amount);
    if &paid.amount != amount {
        wrong.push(format!("amount {} (expected {amount})", paid.amount));
    }
    if !paid.pay_to.eq_ignore_ascii_case(&req.pay_to) {
        wrong.push(format!("payTo {} (expected {})", paid.pay_to, req.pay_to));
    }
    if paid.replay_key.is_empty() {
        wrong.push("an empty replay key".into());
    }
    (!wrong.is_empty()).then(|| wrong.join("; "))
}

/// The proof with one character of its signature changed, in a way every
/// text encoding a signature uses (hex, base58, base64) still reads.
/// With `bytes`, the string is base64 and one byte of that range changes.
pub fn flip_signature(proof: &Value, pointer: &str, bytes: Option<[usize; 2]>) -> Option<Value> {
    use base64::Engine as _;
    let mut forged = proof.clone();
    let s = forged.pointer_mut(pointer)?;
    let text = s.as_str()?.to_string();
    if let Some([start, end]) = bytes {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut raw = b64.decode(&text).ok()?;
        let at = start + end.checked_sub(start)?.checked_sub(1)? / 2;
        *raw.get_mut(at)? ^= 1;
        *s = Value::String(b64.encode(raw));
        return Some(forged);
    }
    let mut chars: Vec<char> = text.chars().collect();
    let i = chars.len().checked_sub(1)? / 2;
    chars[i] = if chars[i] == 'a' { 'b' } else { 'a' };
    *s = Value::String(chars.into_iter().collect());
    Some(forged)
}

/// The proof text, its echo of the requirements (if it has one) made `req`.
fn echoing(proof: &Value, req: &PaymentRequirements) -> String {
    let mut p = proof.clone();
    if let (Some(accepted), Ok(echo)) = (p.get_mut("accepted"), serde_json::to_value(req)) {
        *accepted = echo;
    }
    p.to_string()
}

fn truncated(text: &str) -> String {
    text[..text.len() / 2].to_string()
}

/// One more base unit; the same text when it is not a decimal integer.
fn plus_one(amount: &str) -> String {
    amount.parse::<u128>().map(|a| (a + 1).to_string()).unwrap_or_else(|_| amount.to_string())
}

fn context(c: &Context) -> wit::AssetContext {
    wit::AssetContext {
        chain: c.chain.clone(),
        network: c.network.clone(),
        family: wit_family(c.family),
        chain_id: c.chain_id,
        asset: c.asset.clone(),
        token: c.token.clone(),
        decimals: c.decimals,
        eip712_name: c.eip712_name.clone(),
        eip712_version: c.eip712_version.clone(),
        domain: crate::adapter::domain_kind(c.domain),
        params: c.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    }
}

fn chain(c: &Context, answers: Vec<Answer>) -> Arc<ChainClient> {
    let answers = answers
        .into_iter()
        .map(|a| RecordedAnswer {
            method: a.method,
            params: a.params,
            answer: match (a.error, a.result) {
                (Some(e), _) => Err((e.code, e.message)),
                (None, r) => Ok(r.unwrap_or(Value::Null)),
            },
        })
        .collect();
    Arc::new(ChainClient::recorded(&c.chain, c.family, Recorded(answers)))
}
