//! The x402 facilitator (`/x402`): verify, settle and supported for
//! resource servers, on the same adapters, ledger and settlement engine as
//! intents, for every family the deployment serves (EVM, Solana, TRON) and
//! both x402 versions (v1 is rewritten at the edge, `x402::v1`). A
//! settlement is a row of its own (`store::facilitator`), keyed by its
//! authorization's replay key, so it settles once whichever replica or
//! request asks; the engine's x402 worker sends it (stored before
//! broadcast, batched with every other relayer call on that chain).

pub mod delegate;
mod once;
mod resolve;
mod supported;

pub use delegate::{Authorizer, KEY_NAME as AUTHORIZER_KEY};

pub use supported::supported;

use crate::db::Db;
use crate::payment::VerifiedPayment;
use crate::store::facilitator::{self as ledger, SettlementStatus};
use crate::x402::reason::{Fault, Reason};
use crate::x402::wire::{FacilitatorRequest, SettleResponse, SettlementView, VerifyResponse};
use resolve::{resolve, Request, Target};

/// What the facilitator's operations work with: the service's shared parts
/// and the x402 wing's own (its worker and its signals). Built once with the
/// service's state, which holds it; the operations never see the HTTP layer.
pub struct Facilitator {
    pub config: std::sync::Arc<crate::config::Config>,
    pub registry: std::sync::Arc<crate::adapter::Registry>,
    pub db: Db,
    pub drivers: std::sync::Arc<crate::family::Drivers>,
    pub sanctions: std::sync::Arc<crate::sanctions::SanctionsList>,
    pub watch: std::sync::Arc<crate::watch::Watch>,
    /// Keyless settlements, per payer and per payTo: rotating IPs does not
    /// buy one payer or one shop more of the relayer's gas.
    pub public_budget: crate::ratelimit::Limiter,
    /// Keyless settlements' relayer gas per hour, per payer and per payTo
    /// on each chain, and each chain's in all.
    pub public_gas: crate::ratelimit::Budget,
    pub public_chain_gas: crate::ratelimit::Budget,
    /// Wakes this replica's x402 workers when a settlement is queued.
    pub work: std::sync::Arc<tokio::sync::Notify>,
    /// Wakes requests waiting on a settlement when it ends.
    pub done: std::sync::Arc<crate::x402::finished::Finished>,
    /// This replica's running x402 worker, once started: a settle runs its
    /// first pass on it at once when a worker is free.
    pub worker: std::sync::OnceLock<std::sync::Arc<crate::x402::worker::Worker>>,
    /// The receiver authorizer servers may delegate `batch-settlement`
    /// claims and refunds to (`[facilitator] receiver_authorizer`).
    pub authorizer: Option<Authorizer>,
}

/// The client name of keyless settlements (no key may take it).
pub const PUBLIC_CLIENT: &str = "public";

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
            Caller::Public => PUBLIC_CLIENT,
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
            extra: None,
        },
    )
}

fn failed(reason: Reason, payer: Option<String>, transaction: String, network: &str) -> SettleResponse {
    SettleResponse {
        success: false,
        error_reason: Some(reason.code().into()),
        error_message: Some(reason.message().into()),
        payer,
        transaction,
        network: network.into(),
        amount: None,
        extra: None,
    }
}

/// The payment checked against the caller's requirements and the chain:
/// signature, amount, recipient, window (adapter `verify`), then balance
/// and allowance (`preflight`), so that a transfer that would revert is
/// invalid here, not a surprise at settle.
async fn check(s: &Facilitator, t: &Target, caller: &Caller, preflight: bool) -> Result<VerifiedPayment, (Reason, Option<String>)> {
    let paid = match t.adapter.verify(&t.req, &t.payload).await {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            tracing::info!(chain = %t.adapter.ctx.chain, refusal = ?e, "x402 payload refused");
            return Err((Reason::refusal(t.family, &e), None));
        }
        Err(e) => {
            tracing::warn!(chain = %t.adapter.ctx.chain, error = %e, "adapter verify call failed");
            return Err((Reason::InvalidPayload, None));
        }
    };
    let payer = Some(paid.payer.clone());
    // One that would expire before it can be mined costs the relayer a
    // reverted transaction: refused while nothing is spent.
    let margin = s.config.chains.get(&t.adapter.ctx.chain).map_or(6, |c| c.min_validity_seconds());
    if paid.valid_before != 0 && paid.valid_before < (crate::clock::now_ms() / 1000) as u64 + margin {
        return Err((Reason::refusal(t.family, &crate::payment::ProofError::Expired), payer));
    }
    if s.sanctions.is_listed(&paid.payer) || s.sanctions.is_listed(&paid.pay_to) {
        crate::telemetry::sanctions_hit("facilitator");
        return Err((Reason::NotAllowed, payer));
    }
    if *caller == Caller::Public && (!crate::x402::scheme::rules(t.scheme).keyless || !publicly_allowed(s, t, &paid)) {
        return Err((Reason::NotAllowed, payer));
    }
    // The service's own wallets are paid only through intents: a settlement
    // into one would compete with an intent for the same movement in the
    // books (and pays nobody outside).
    if s.drivers.is_service_wallet(&t.adapter.ctx.chain, &paid.pay_to).await {
        return Err((Reason::NotAllowed, payer));
    }
    // A payTo that cannot receive the asset (a Solana owner without its
    // token account) makes a transfer that fails on chain, and the fee
    // payer pays for the failure: refused as the reference facilitator does.
    if let Some(driver) = s.drivers.for_chain(&t.adapter.ctx.chain) {
        match driver.can_receive(&t.adapter.ctx.chain, &t.adapter.ctx.token, &paid.pay_to).await {
            Ok(true) => {}
            Ok(false) => return Err((Reason::Payload(t.family, Fault::ReceiverAccountMissing), payer)),
            Err(e) => {
                tracing::warn!(chain = %t.adapter.ctx.chain, error = %e, "could not read payTo's token account");
                return Err((Reason::ChainUnavailable, payer));
            }
        }
    }
    if t.answers_once() {
        // Recorded already (settled, or on its way for another request).
        match ledger::by_replay_key(&s.db, &once::replay_key(t, &paid)).await {
            Ok(None) => {}
            Ok(Some(_)) => return Err((Reason::DuplicateSettlement, payer)),
            Err(e) => {
                tracing::warn!(error = %e, "facilitator ledger unavailable");
                return Err((Reason::ChainUnavailable, payer));
            }
        }
    }
    if preflight {
        match t.adapter.preflight(&paid).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err((Reason::refusal(t.family, &e), payer)),
            Err(e) => {
                tracing::warn!(chain = %t.adapter.ctx.chain, error = %e, "adapter preflight call failed");
                return Err((Reason::ChainUnavailable, payer));
            }
        }
    }
    Ok(paid)
}

/// The scheme's `extra` for a yes (after a valid verify, `transaction`
/// None; after a settlement, its transaction), where the scheme has one.
/// The adapter's failure leaves it out: the answer itself stands.
async fn answer_extra(t: &Target, transaction: Option<&str>) -> Option<serde_json::Map<String, serde_json::Value>> {
    if !crate::x402::scheme::rules(t.scheme).answers_extra {
        return None;
    }
    match t.adapter.answer_extra(&t.req, &t.payload, transaction).await {
        Ok(Ok(extra)) => extra,
        Ok(Err(e)) => {
            tracing::warn!(chain = %t.adapter.ctx.chain, error = ?e, "the adapter gave no answer extra");
            None
        }
        Err(e) => {
            tracing::warn!(chain = %t.adapter.ctx.chain, error = %e, "adapter answer-extra call failed");
            None
        }
    }
}

/// Keyless callers spend the operator's gas: a minimum amount and,
/// optionally, an allowlist of payTo addresses.
fn publicly_allowed(s: &Facilitator, t: &Target, paid: &VerifiedPayment) -> bool {
    let f = &s.config.facilitator;
    let min = crate::decimal::parse(&f.public_min_amount).unwrap_or_default();
    let amount = crate::decimal::parse(&paid.amount).unwrap_or_default();
    let scale = rust_decimal::Decimal::from_i128_with_scale(1, u32::from(t.decimals));
    // Paying oneself moves nothing anyone sold: the relayer's gas for nothing.
    if amount * scale < min || t.same_address(&paid.payer, &paid.pay_to) {
        return false;
    }
    f.public_pay_to.is_empty() || f.public_pay_to.iter().any(|a| t.same_address(a, &paid.pay_to))
}

/// Metric labels only from what is configured: a caller's strings never
/// become series.
fn labels(t: &Result<Target, Reason>) -> (&'static str, String) {
    match t {
        Ok(t) => (t.scheme.as_str(), t.req.network.clone()),
        Err(_) => ("other", "other".into()),
    }
}

/// The target with what the server delegated to this facilitator signed.
async fn completed(s: &Facilitator, mut t: Target, caller: &Caller) -> Result<Target, Reason> {
    delegate::complete(s, &mut t, caller).await?;
    Ok(t)
}

/// `POST /x402/verify`.
pub async fn verify(s: &Facilitator, body: &FacilitatorRequest, caller: &Caller) -> (Status, VerifyResponse) {
    let target = match Request::of(body).map_err(|(r, _)| r).and_then(|r| resolve(s, &r)) {
        Ok(t) => completed(s, t, caller).await,
        Err(r) => Err(r),
    };
    let (scheme, network) = labels(&target);
    let answer = match target {
        Ok(t) => match check(s, &t, caller, true).await {
            Ok(paid) => {
                let extra = answer_extra(&t, None).await;
                (Status::Ok, VerifyResponse { is_valid: true, invalid_reason: None, invalid_message: None, payer: Some(paid.payer), extra })
            }
            Err((r, payer)) => invalid(r, payer),
        },
        Err(r) => invalid(r, None),
    };
    crate::telemetry::facilitator("verify", scheme, &network, answer.1.invalid_reason.as_deref().unwrap_or("valid"));
    answer
}

/// `POST /x402/settle`: at most once per authorization; waits for the
/// transfer to be final up to `settle_wait_seconds`, then answers
/// `settlement_pending` with the broadcast transaction. Answers name the
/// network as the request did (a v1 name for v1).
pub async fn settle(s: &Facilitator, body: &FacilitatorRequest, caller: &Caller) -> (Status, SettleResponse) {
    let request = Request::of(body);
    let target = match request.as_ref().map_err(|(r, _)| *r).and_then(|r| resolve(s, r)) {
        Ok(t) => completed(s, t, caller).await,
        Err(r) => Err(r),
    };
    let (scheme, label) = labels(&target);
    let (status, answer) = match (request, target) {
        (Ok(r), Ok(t)) => once::settle(s, &r, &t, caller).await,
        (Ok(r), Err(reason)) => (Status::Ok, failed(reason, None, String::new(), &r.network)),
        (Err((reason, network)), _) => (Status::Ok, failed(reason, None, String::new(), &network)),
    };
    let outcome = if answer.success { "settled" } else { answer.error_reason.as_deref().unwrap_or("failed") };
    crate::telemetry::facilitator("settle", scheme, &label, outcome);
    (status, answer)
}

/// A lookup, newest first: an operator's (`client` None) sees every
/// settlement, a facilitator key only its own.
pub async fn lookup(db: &Db, by: ledger::Lookup<'_>, page: ledger::Page<'_>) -> Result<Vec<SettlementView>, crate::store::StoreError> {
    let mut out = vec![];
    for rec in ledger::find(db, by, page).await? {
        let transaction = match rec.status {
            SettlementStatus::Queued => Some(once::sent_transaction(db, &rec).await).filter(|t| !t.is_empty()),
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
