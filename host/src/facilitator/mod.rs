//! The x402 facilitator (`/x402`): verify, settle and supported for
//! resource servers, on the same adapters, ledger and settlement engine as
//! intents. A settlement is a row of its own (`store::facilitator`), keyed
//! by its authorization's replay key, so it settles once whichever replica
//! or request asks; the engine's x402 worker sends it (stored before
//! broadcast, batched with every other relayer call on that chain).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::adapter::AssetAdapter;
use crate::clock::now_ms;
use crate::config::{Availability, Family};
use crate::db::Db;
use crate::keys::Role;
use crate::payment::{PaymentRequirements, VerifiedPayment};
use crate::state::AppState;
use crate::store::facilitator::{self as ledger, Settlement, SettlementStatus};
use crate::x402::reason::{self, Reason};
use crate::x402::wire::{FacilitatorRequest, SettleResponse, SettlementView, SupportedKind, SupportedResponse, VerifyResponse};

pub const X402_VERSION: u64 = 2;
const PAYMENT_IDENTIFIER: &str = "payment-identifier";

/// Who is calling: a resource server with a facilitator key, or anyone
/// (when `[facilitator] public = true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Key(String),
    Public,
}

impl Caller {
    fn name(&self) -> &str {
        match self {
            Caller::Key(n) => n,
            Caller::Public => "public",
        }
    }
}

/// How an answer travels besides its body: x402 answers are bodies with a
/// verdict; only these differ in HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// payment-identifier reused with another payload (409).
    Conflict,
    /// The chain could not be asked (503): nothing happened.
    Unavailable,
    /// An adapter or the database failed (500).
    Internal,
}

/// The served (chain, asset) a request's requirements name.
struct Target {
    adapter: Arc<AssetAdapter>,
    decimals: u8,
    req: PaymentRequirements,
    payload: String,
}

/// Match the caller's requirements to a served asset: exact scheme, a
/// network this deployment exposes, a token it serves (not withheld).
fn resolve(s: &AppState, body: &FacilitatorRequest) -> Result<Target, Reason> {
    if body.x402_version != X402_VERSION {
        return Err(Reason::InvalidX402Version);
    }
    let req: PaymentRequirements =
        serde_json::from_value(body.payment_requirements.clone()).map_err(|_| Reason::InvalidPaymentRequirements)?;
    let cfg = &s.config;
    let (chain_id, chain) = cfg
        .chains
        .iter()
        .find(|(id, c)| {
            c.family == Family::Evm && c.network().as_deref() == Some(&req.network) && cfg.chain_exposed(c) && s.watch.exposed(id)
        })
        .ok_or(Reason::InvalidNetwork)?;
    if req.scheme != "exact" {
        return Err(Reason::UnsupportedScheme);
    }
    let (key, asset) = chain
        .assets
        .iter()
        .filter(|(k, a)| cfg.availability(a) == Availability::Available && !s.watch.asset_withheld(chain_id, k))
        .find(|(_, a)| a.token.eq_ignore_ascii_case(&req.asset))
        .ok_or(Reason::InvalidPaymentRequirements)?;
    if req.amount.is_empty() || !req.amount.bytes().all(|b| b.is_ascii_digit()) || req.amount.trim_start_matches('0').is_empty() {
        return Err(Reason::InvalidPaymentRequirements);
    }
    let adapter = s.registry.asset(chain_id, key).ok_or(Reason::InvalidPaymentRequirements)?;
    Ok(Target { adapter, decimals: asset.decimals, req, payload: body.payment_payload.to_string() })
}

/// A refusal as a verify answer.
fn invalid(reason: Reason, payer: Option<String>) -> (Status, VerifyResponse) {
    let status = if reason == Reason::ChainUnavailable { Status::Unavailable } else { Status::Ok };
    (
        status,
        VerifyResponse {
            is_valid: false,
            invalid_reason: Some(reason.code().into()),
            invalid_message: Some(reason.message().into()),
            payer,
        },
    )
}

fn network_of(body: &FacilitatorRequest) -> String {
    body.payment_requirements.get("network").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The payment checked against the caller's requirements and the chain:
/// signature, amount, recipient, window (adapter `verify`), then balance
/// and allowance (`preflight`), so that a transfer that would revert is
/// invalid here, not a surprise at settle.
async fn check(s: &AppState, t: &Target, caller: &Caller, preflight: bool) -> Result<VerifiedPayment, (Reason, Option<String>)> {
    let paid = match t.adapter.verify(&t.req, &t.payload).await {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            tracing::info!(chain = %t.adapter.ctx.chain, refusal = ?e, "x402 payload refused");
            return Err((Reason::from(&e), None));
        }
        Err(e) => {
            tracing::warn!(chain = %t.adapter.ctx.chain, error = %e, "adapter verify call failed");
            return Err((Reason::InvalidPayload, None));
        }
    };
    let payer = Some(paid.payer.clone());
    if s.sanctions.is_listed(&paid.payer) {
        crate::telemetry::sanctions_hit("facilitator");
        return Err((Reason::NotAllowed, payer));
    }
    if *caller == Caller::Public && !publicly_allowed(s, t, &paid) {
        return Err((Reason::NotAllowed, payer));
    }
    if preflight {
        match t.adapter.preflight(&paid).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err((Reason::from(&e), payer)),
            Err(e) => {
                tracing::warn!(chain = %t.adapter.ctx.chain, error = %e, "adapter preflight call failed");
                return Err((Reason::ChainUnavailable, payer));
            }
        }
    }
    Ok(paid)
}

/// Keyless callers spend the operator's gas: a minimum amount and,
/// optionally, an allowlist of payTo addresses.
fn publicly_allowed(s: &AppState, t: &Target, paid: &VerifiedPayment) -> bool {
    let f = &s.config.facilitator;
    let min = crate::decimal::parse(&f.public_min_amount).unwrap_or_default();
    let amount = crate::decimal::parse(&paid.amount).unwrap_or_default();
    let scale = rust_decimal::Decimal::from_i128_with_scale(1, u32::from(t.decimals));
    if amount * scale < min {
        return false;
    }
    f.public_pay_to.is_empty() || f.public_pay_to.iter().any(|a| a.eq_ignore_ascii_case(&paid.pay_to))
}

/// `POST /x402/verify`.
pub async fn verify(s: &AppState, body: &FacilitatorRequest, caller: &Caller) -> (Status, VerifyResponse) {
    let t = match resolve(s, body) {
        Ok(t) => t,
        Err(r) => {
            crate::telemetry::facilitator("verify", "other", "other", r.code());
            return invalid(r, None);
        }
    };
    let answer = match check(s, &t, caller, true).await {
        Ok(paid) => (Status::Ok, VerifyResponse { is_valid: true, invalid_reason: None, invalid_message: None, payer: Some(paid.payer) }),
        Err((r, payer)) => invalid(r, payer),
    };
    crate::telemetry::facilitator("verify", "exact", &t.req.network, answer.1.invalid_reason.as_deref().unwrap_or("valid"));
    answer
}

fn failed(reason: Reason, payer: Option<String>, transaction: String, network: String) -> SettleResponse {
    SettleResponse {
        success: false,
        error_reason: Some(reason.code().into()),
        error_message: Some(reason.message().into()),
        payer,
        transaction,
        network,
    }
}

/// `POST /x402/settle`: at most once per authorization; waits for the
/// transfer to be final up to `settle_wait_seconds`, then answers
/// `settlement_pending` with the broadcast transaction.
pub async fn settle(s: &AppState, body: &FacilitatorRequest, caller: &Caller) -> (Status, SettleResponse) {
    let network = network_of(body);
    let target = resolve(s, body);
    // Labels only from what is configured: a caller's strings never become series.
    let (scheme, label) = if target.is_ok() { ("exact", network.clone()) } else { ("other", "other".into()) };
    let (status, answer) = match target {
        Ok(t) => settle_once(s, body, &t, caller, &network).await,
        Err(r) => (Status::Ok, failed(r, None, String::new(), network)),
    };
    let outcome = if answer.success { "settled" } else { answer.error_reason.as_deref().unwrap_or("failed") };
    crate::telemetry::facilitator("settle", scheme, &label, outcome);
    (status, answer)
}

async fn settle_once(s: &AppState, body: &FacilitatorRequest, t: &Target, caller: &Caller, network: &str) -> (Status, SettleResponse) {
    let f = &s.config.facilitator;
    let (first_wait, repeat_wait) = (Duration::from_secs(f.settle_wait_seconds), Duration::from_secs(f.settle_retry_wait_seconds));
    let hash = payload_hash(&body.payment_payload);
    let internal = |e: crate::store::StoreError| {
        tracing::warn!(error = %e, "facilitator ledger unavailable");
        (Status::Internal, failed(Reason::ChainUnavailable, None, String::new(), network.into()))
    };
    // Asked before: the ledger answers (waiting if it is still on its way),
    // whether or not the chain would still take the authorization.
    let known = ledger::by_payload_hash(&s.db, &hash).await.map_err(internal);
    match known {
        Err(e) => return e,
        Ok(Some(rec)) => return wait(s, &rec.id, repeat_wait).await,
        Ok(None) => {}
    }
    let paid = match check(s, t, caller, true).await {
        Ok(p) => p,
        Err((r, payer)) => {
            let status = if r == Reason::ChainUnavailable { Status::Unavailable } else { Status::Ok };
            return (status, failed(r, payer, String::new(), network.into()));
        }
    };
    let payment_id = payment_identifier(&body.payment_payload);
    let now = now_ms();
    let rec = Settlement {
        id: format!("xs_{}", ulid::Ulid::new()),
        replay_key: format!("{}:{}", t.adapter.ctx.chain, paid.replay_key),
        payload_hash: hash.clone(),
        payment_id: payment_id.clone(),
        client: caller.name().into(),
        chain: t.adapter.ctx.chain.clone(),
        asset: t.adapter.ctx.asset.clone(),
        network: t.req.network.clone(),
        scheme: t.req.scheme.clone(),
        payer: paid.payer.clone(),
        pay_to: paid.pay_to.clone(),
        amount: paid.amount.clone(),
        requirements: serde_json::to_string(&t.req).expect("requirements serialize"),
        payload: t.payload.clone(),
        status: SettlementStatus::Queued,
        error_reason: None,
        tx_hash: None,
        created_at: now,
        updated_at: now,
    };
    match ledger::insert(&s.db, &rec).await {
        Ok(()) => {
            s.x402_work.notify_one();
            wait(s, &rec.id, first_wait).await
        }
        // The same authorization or payment id, recorded by a concurrent
        // request or replica: the same payload waits for that settlement;
        // another payload is refused.
        Err(e) if e.is_duplicate() => {
            let by_key = ledger::by_replay_key(&s.db, &rec.replay_key).await;
            let by_id = match &payment_id {
                Some(id) => ledger::by_payment_id(&s.db, &paid.payer, id).await,
                None => Ok(None),
            };
            match (by_key, by_id) {
                (Ok(Some(other)), _) | (_, Ok(Some(other))) if other.payload_hash == hash => wait(s, &other.id, repeat_wait).await,
                (_, Ok(Some(_))) => {
                    (Status::Conflict, failed(Reason::PaymentIdentifierConflict, Some(paid.payer), String::new(), network.into()))
                }
                (Ok(Some(other)), _) => {
                    let tx = other.tx_hash.unwrap_or_default();
                    (Status::Ok, failed(Reason::DuplicateSettlement, Some(paid.payer), tx, network.into()))
                }
                (Err(e), _) | (_, Err(e)) => internal(e),
                _ => internal(e),
            }
        }
        Err(e) => internal(e),
    }
}

/// Follow a settlement until it is final or `bound` passes: then
/// `settlement_pending` with the transaction that is out (x402 clients
/// settle the same payload again, which waits here again without sending
/// anything new). Never "failed" for a transfer that may still land.
async fn wait(s: &AppState, id: &str, bound: Duration) -> (Status, SettleResponse) {
    let started = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        let rec = match ledger::get(&s.db, id).await {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => {
                tracing::warn!(settlement = id, "facilitator ledger unavailable while waiting");
                return (Status::Internal, failed(Reason::ChainUnavailable, None, String::new(), String::new()));
            }
        };
        match rec.status {
            SettlementStatus::Settled => {
                return (
                    Status::Ok,
                    SettleResponse {
                        success: true,
                        error_reason: None,
                        error_message: None,
                        payer: Some(rec.payer),
                        transaction: rec.tx_hash.unwrap_or_default(),
                        network: rec.network,
                    },
                );
            }
            SettlementStatus::Failed => {
                let reason = rec.error_reason.as_deref().and_then(reason::parse).unwrap_or(Reason::TransactionState);
                return (Status::Ok, failed(reason, Some(rec.payer), rec.tx_hash.unwrap_or_default(), rec.network));
            }
            SettlementStatus::Queued if started.elapsed() >= bound => {
                let sent = sent_transaction(&s.db, &rec).await;
                return (Status::Ok, failed(Reason::SettlementPending, Some(rec.payer), sent, rec.network));
            }
            SettlementStatus::Queued => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// The transaction a queued settlement has out, if any.
async fn sent_transaction(db: &Db, rec: &Settlement) -> String {
    let txs = crate::store::settlement::list_txs(db, &rec.id, "x402").await.unwrap_or_default();
    txs.last().map(|t| t.tx_hash.clone()).or(rec.tx_hash.clone()).unwrap_or_default()
}

/// `GET /x402/supported`: every exposed EVM network with a served exact
/// asset, the extensions that apply, and the relayer that signs.
pub async fn supported(s: &AppState) -> SupportedResponse {
    let cfg = &s.config;
    let mut kinds: Vec<SupportedKind> = vec![];
    let mut permit2 = false;
    for (chain, c, key, asset) in cfg.served_assets() {
        if c.family != Family::Evm || !s.watch.exposed(chain) || s.watch.asset_withheld(chain, key) {
            continue;
        }
        permit2 |= asset.scheme == "permit2";
        let Some(network) = c.network() else { continue };
        if !kinds.iter().any(|k| k.network == network) {
            kinds.push(SupportedKind { x402_version: X402_VERSION, scheme: "exact".into(), network, extra: None });
        }
    }
    let mut extensions = vec![];
    if permit2 {
        extensions.extend(["eip2612GasSponsoring".to_string(), "erc20ApprovalGasSponsoring".to_string()]);
    }
    extensions.push(PAYMENT_IDENTIFIER.into());
    let mut signers = std::collections::BTreeMap::new();
    if !kinds.is_empty() {
        if let Some(driver) = s.drivers.of(Family::Evm) {
            if let Ok(relayer) = driver.address(&Role::Relayer).await {
                signers.insert("eip155:*".to_string(), vec![relayer]);
            }
        }
    }
    SupportedResponse { kinds, extensions, signers }
}

/// A lookup, newest first: an operator's (`client` None) sees every
/// settlement, a facilitator key only its own.
pub async fn lookup(db: &Db, by: ledger::Lookup<'_>, client: Option<&str>) -> Result<Vec<SettlementView>, crate::store::StoreError> {
    let mut out = vec![];
    for rec in ledger::find(db, by, 50).await?.into_iter().filter(|r| client.is_none_or(|c| r.client == c)) {
        let transaction = match rec.status {
            SettlementStatus::Queued => Some(sent_transaction(db, &rec).await).filter(|t| !t.is_empty()),
            _ => rec.tx_hash.clone(),
        };
        out.push(SettlementView {
            id: rec.id,
            status: rec.status.as_str().into(),
            network: rec.network,
            scheme: rec.scheme,
            asset: rec.asset,
            payer: rec.payer,
            pay_to: rec.pay_to,
            amount: rec.amount,
            transaction,
            error_reason: rec.error_reason,
            payment_id: rec.payment_id,
            client: rec.client,
            created_at: rec.created_at,
            updated_at: rec.updated_at,
        });
    }
    Ok(out)
}

/// sha256 of the payload with its object keys sorted: the same payment
/// whatever order a client's JSON writer chose.
fn payload_hash(payload: &Value) -> String {
    fn canonical(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<_> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    // Only what the payer signed and chose decides: `accepted` and `payload`
    // (a resource server may add `resource` or its own extensions).
    let signed = serde_json::json!({ "accepted": payload.get("accepted"), "payload": payload.get("payload") });
    hex::encode(Sha256::digest(canonical(&signed).to_string()))
}

/// The payment-identifier extension's id (16–128 of `[A-Za-z0-9_-]`).
fn payment_identifier(payload: &Value) -> Option<String> {
    let id = payload.pointer("/extensions/payment-identifier/info/id")?.as_str()?;
    let ok = (16..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then(|| id.to_string())
}
