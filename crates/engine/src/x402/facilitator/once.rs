//! Settling a payment once: the ledger row is the settlement's identity
//! (its authorization's replay key, unique), a repeat of the same payload
//! waits for that settlement, and an answer never says failed for a
//! transfer that may still land.

use std::time::{Duration, Instant};

use tokio::sync::Notify;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::resolve::{Request, Target};
use super::Facilitator;
use super::{answer_extra, check, failed, Caller, Status};
use crate::clock::now_ms;
use crate::db::Db;
use crate::payment::VerifiedPayment;
use crate::store::facilitator::{self as ledger, Settlement, SettlementStatus};
use crate::x402::reason::{self, Reason};
use crate::x402::scheme;
use crate::x402::wire::SettleResponse;
use crate::x402::worker::Ended;

/// How often a waiter reads the ledger without being woken (settlements
/// sent by another replica wake nobody here).
const POLL: Duration = Duration::from_millis(250);

/// The ledger's key of a payment: its chain and the adapter's replay key.
pub fn replay_key(t: &Target, paid: &VerifiedPayment) -> String {
    format!("{}:{}", t.adapter.ctx.chain, paid.replay_key)
}

pub async fn settle(s: &Facilitator, r: &Request, t: &Target, caller: &Caller) -> (Status, SettleResponse) {
    let f = &s.config.facilitator;
    let (first_wait, repeat_wait) = (Duration::from_secs(f.settle_wait_seconds), Duration::from_secs(f.settle_retry_wait_seconds));
    let network = r.network.as_str();
    let hash = answer_key(t, &r.payload);
    let internal = |e: crate::store::StoreError| {
        tracing::warn!(error = %e, "facilitator ledger unavailable");
        (Status::Internal, failed(Reason::ChainUnavailable, None, String::new(), network))
    };
    // No chain check here: the settlement's pass makes it (a relayer call's
    // simulation as it is sent, or the adapter's preflight before a longer
    // settlement), and one refused with nothing sent lets go of its row.
    let paid = match check(s, t, caller, false).await {
        Ok(p) => p,
        Err((r, payer)) => {
            // Asked before (the chain now refusing the spent authorization),
            // or recorded by a concurrent request: the ledger's outcome is the
            // answer. A payload that checks out is looked up by its insert.
            match ledger::by_payload_hash(&s.db, &hash).await {
                Ok(Some(rec)) => return wait(s, t, &rec.id, repeat_wait, network, false).await,
                Ok(None) => {}
                Err(e) => return internal(e),
            }
            let status = if r == Reason::ChainUnavailable { Status::Unavailable } else { Status::Ok };
            return (status, failed(r, payer, String::new(), network));
        }
    };
    // Nothing to send for it (a voucher is claimed later): refused before
    // anything is recorded.
    if let Some(reason) = scheme::rules(t.scheme).zero_settles {
        if paid.amount.trim_start_matches('0').is_empty() {
            return (Status::Ok, failed(reason, Some(paid.payer), String::new(), network));
        }
    }
    // A keyless caller spends the relayer's gas: a budget per payer and per
    // payTo on each chain, whatever addresses the requests come from.
    let mut budgeted: Option<(String, String, u64)> = None;
    if *caller == Caller::Public {
        let chain = &t.adapter.ctx.chain;
        let key = |a: &str| t.family.facts().canonical(a);
        let (payer, pay_to) = (format!("payer:{chain}:{}", key(&paid.payer)), format!("payto:{chain}:{}", key(&paid.pay_to)));
        let over = s.public_budget.check(payer.clone()).is_err() || s.public_budget.check(pay_to.clone()).is_err();
        if over {
            tracing::info!(payer = %paid.payer, pay_to = %paid.pay_to, "keyless settlement budget spent");
            return (Status::Ok, failed(Reason::NotAllowed, Some(paid.payer), String::new(), network));
        }
        // And the gas it may cost, counted before it is sent (a payer that
        // may run code counts the most its chain lets it burn).
        let most = match s.drivers.for_chain(chain) {
            Some(driver) => driver.most_settlement_gas(chain, &paid.payer, &t.payload).await,
            None => Err(crate::family::SendError::Unavailable(format!("{chain} has no driver"))),
        };
        let gas = match most {
            Ok(g) => g,
            Err(e) => {
                tracing::info!(chain = %chain, error = %e, "keyless settlement: the payer's code could not be read");
                return (Status::Unavailable, failed(Reason::ChainUnavailable, Some(paid.payer), String::new(), network));
            }
        };
        if !s.public_gas.take(&[&payer, &pay_to], gas) {
            tracing::info!(payer = %paid.payer, pay_to = %paid.pay_to, gas, "keyless gas budget spent");
            return (Status::Ok, failed(Reason::NotAllowed, Some(paid.payer), String::new(), network));
        }
        if !s.public_chain_gas.take(&[chain.as_str()], gas) {
            s.public_gas.give_back(&[&payer, &pay_to], gas);
            tracing::info!(chain = %chain, gas, "keyless gas budget of the chain spent");
            return (Status::Ok, failed(Reason::NotAllowed, Some(paid.payer), String::new(), network));
        }
        budgeted = Some((payer, pay_to, gas));
    }
    if t.charges_nothing() {
        // Nothing to move: the authorization stays unused, as the payer's.
        return (Status::Ok, settled(t, String::new(), &paid.payer, network, "0"));
    }
    let payment_id = payment_identifier(&r.payload);
    let now = now_ms();
    let rec = Settlement {
        id: format!("xs_{}", ulid::Ulid::new()),
        replay_key: replay_key(t, &paid),
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
    // A free worker here settles it at once, under the lease it is recorded with.
    let worker = s.worker.get();
    let slot = worker.and_then(|w| w.slot());
    let lease = slot.as_ref().map(|(_, holder, until)| (holder.as_str(), *until));
    match crate::store::transition::settlements::insert(&s.db, &rec, lease).await {
        Ok(()) => match (worker, slot) {
            (Some(worker), Some((slot, _, _))) => {
                let id = rec.id.clone();
                let deadline = Instant::now() + first_wait;
                // The pass goes on in its own task when the bound comes first.
                match tokio::time::timeout(first_wait, worker.settle_now(rec, slot)).await {
                    Ok(Some(ended)) => answer(s, t, &id, ended, &paid.payer, &paid.amount, network).await,
                    // Waiting for the chain or a retry: the claim loop has it now.
                    Ok(None) => wait(s, t, &id, deadline.saturating_duration_since(Instant::now()), network, false).await,
                    Err(_) => wait(s, t, &id, Duration::ZERO, network, false).await,
                }
            }
            _ => {
                s.work.notify_one();
                wait(s, t, &rec.id, first_wait, network, true).await
            }
        },
        // The same authorization or payment id, recorded by a concurrent
        // request or replica: the same payload waits for that settlement;
        // another payload is refused.
        Err(e) if e.is_duplicate() => {
            // Nothing new is sent for it: the gas it was counted goes back.
            if let Some((payer, pay_to, gas)) = &budgeted {
                s.public_gas.give_back(&[payer, pay_to], *gas);
                s.public_chain_gas.give_back(&[t.adapter.ctx.chain.as_str()], *gas);
            }
            let by_key = ledger::by_replay_key(&s.db, &rec.replay_key).await;
            let by_id = match &payment_id {
                Some(id) => ledger::by_payment_id(&s.db, &paid.payer, id).await,
                None => Ok(None),
            };
            match (by_key, by_id) {
                (Ok(Some(other)), _) | (_, Ok(Some(other))) if other.payload_hash == hash => {
                    wait(s, t, &other.id, repeat_wait, network, false).await
                }
                (_, Ok(Some(_))) => (Status::Conflict, failed(Reason::PaymentIdentifierConflict, Some(paid.payer), String::new(), network)),
                // Settled under other requirements: nothing of that settlement is told.
                (Ok(Some(_)), _) => (Status::Ok, failed(Reason::DuplicateSettlement, Some(paid.payer), String::new(), network)),
                (Err(e), _) | (_, Err(e)) => internal(e),
                _ => internal(e),
            }
        }
        Err(e) => internal(e),
    }
}

/// Follow a settlement until it is final or `bound` passes (`queued`: this
/// request has just queued it, so the first read waits for the worker): then
/// `settlement_pending` with the transaction that is out (x402 clients
/// settle the same payload again, which waits here again without sending
/// anything new). Never "failed" for a transfer that may still land.
async fn wait(s: &Facilitator, t: &Target, id: &str, bound: Duration, network: &str, queued: bool) -> (Status, SettleResponse) {
    let signal = s.done.signal(id);
    let answer = follow(s, t, id, bound, network, &signal, queued).await;
    s.done.leave(id, signal);
    answer
}

async fn follow(
    s: &Facilitator,
    t: &Target,
    id: &str,
    bound: Duration,
    network: &str,
    signal: &Notify,
    queued: bool,
) -> (Status, SettleResponse) {
    let deadline = Instant::now() + bound;
    let unavailable = || {
        tracing::warn!(settlement = id, "facilitator ledger unavailable while waiting");
        (Status::Internal, failed(Reason::ChainUnavailable, None, String::new(), network))
    };
    let mut known_queued = queued;
    loop {
        // Armed before the read: a finish in between still wakes us.
        let woken = signal.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if std::mem::take(&mut known_queued) {
            let _ = tokio::time::timeout(POLL.min(bound), woken).await;
            continue;
        }
        let rec = match ledger::get(&s.db, id).await {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => return unavailable(),
        };
        match rec.status {
            SettlementStatus::Settled | SettlementStatus::Failed => {
                let reason = rec.error_reason.as_deref().and_then(reason::parse);
                let ended = Ended { status: rec.status, tx_hash: rec.tx_hash, reason };
                return answer(s, t, id, ended, &rec.payer, &rec.amount, network).await;
            }
            SettlementStatus::Queued if Instant::now() >= deadline => {
                let sent = sent_transaction(&s.db, &rec).await;
                return (Status::Ok, failed(Reason::SettlementPending, Some(rec.payer), sent, network));
            }
            SettlementStatus::Queued => {}
        }
        // Woken by this replica's worker, or a read now and then for a
        // settlement another replica is sending.
        let _ = tokio::time::timeout(POLL.min(deadline.saturating_duration_since(Instant::now())), woken).await;
    }
}

/// The answer for a settlement that ended: a success is answered once
/// where the chain cannot refuse a spent payment (`answers_once`).
async fn answer(s: &Facilitator, t: &Target, id: &str, ended: Ended, payer: &str, amount: &str, network: &str) -> (Status, SettleResponse) {
    let tx = ended.tx_hash.unwrap_or_default();
    match ended.status {
        SettlementStatus::Settled => {
            if t.answers_once() {
                match ledger::claim_answer(&s.db, id).await {
                    Ok(true) => {}
                    Ok(false) => return (Status::Ok, failed(Reason::DuplicateSettlement, Some(payer.into()), tx, network)),
                    Err(_) => {
                        tracing::warn!(settlement = id, "facilitator ledger unavailable while answering");
                        return (Status::Internal, failed(Reason::ChainUnavailable, None, String::new(), network));
                    }
                }
            }
            let extra = answer_extra(t, Some(&tx)).await;
            let amount = moved(s, t, id, amount).await;
            (Status::Ok, SettleResponse { extra, ..settled(t, tx, payer, network, &amount) })
        }
        _ => (Status::Ok, failed(ended.reason.unwrap_or(Reason::TransactionState), Some(payer.into()), tx, network)),
    }
}

/// What a settled payment says moved: the recorded amount, or where the
/// scheme's steps are credited by their own events, the credited
/// movement's (the chain's). A batch-settlement claim moves no token: its
/// answer's amount is empty, as the scheme's spec answers it.
async fn moved(s: &Facilitator, t: &Target, id: &str, recorded: &str) -> String {
    if !scheme::rules(t.scheme).amount_from_books {
        return recorded.to_string();
    }
    let payload: Value = serde_json::from_str(&t.payload).unwrap_or_default();
    let inner = payload.get("payload").cloned().unwrap_or_default();
    if matches!(batch_wire::payload::parse(&inner), Ok(batch_wire::payload::Payload::Claim { .. })) {
        return String::new();
    }
    match crate::store::books::of(&s.db, crate::store::books::Purpose::X402, id).await {
        Ok(Some(entry)) => entry.amount,
        // Settled means credited; a ledger that cannot be read now keeps
        // the recorded amount rather than failing the answer.
        Ok(None) | Err(_) => {
            tracing::warn!(settlement = id, "no credited movement read for a settled step; answering the recorded amount");
            recorded.to_string()
        }
    }
}

/// A success; an `upto` one says what it charged.
fn settled(t: &Target, transaction: String, payer: &str, network: &str, amount: &str) -> SettleResponse {
    SettleResponse {
        success: true,
        error_reason: None,
        error_message: None,
        payer: Some(payer.into()),
        transaction,
        network: network.into(),
        amount: scheme::rules(t.scheme).reports_amount.then(|| amount.to_string()),
        extra: None,
    }
}

/// The transaction a queued settlement has out, if any.
pub async fn sent_transaction(db: &Db, rec: &Settlement) -> String {
    let txs = crate::store::settlement::list_txs(db, &rec.id, "x402").await.unwrap_or_default();
    txs.last().map(|t| t.tx_hash.clone()).or(rec.tx_hash.clone()).unwrap_or_default()
}

/// The ledger's key for an answer: sha256 of what the payer signed and of
/// the requirements the caller settles it under, object keys sorted (the
/// same payment whatever order a client's JSON writer chose). The same
/// payload under other requirements is another question: it is judged
/// against those, never answered with a settlement made under the first.
pub fn answer_key(t: &Target, payload: &Value) -> String {
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
    let r = &t.req;
    let address = |a: &str| t.family.facts().canonical(a);
    let under = serde_json::json!({
        "scheme": r.scheme, "network": r.network, "asset": address(&r.asset), "payTo": address(&r.pay_to), "amount": r.amount,
    });
    let signed = serde_json::json!({ "accepted": payload.get("accepted"), "payload": payload.get("payload"), "under": under });
    hex::encode(Sha256::digest(canonical(&signed).to_string()))
}

/// The payment-identifier extension's id (16–128 of `[A-Za-z0-9_-]`).
fn payment_identifier(payload: &Value) -> Option<String> {
    let id = payload.pointer("/extensions/payment-identifier/info/id")?.as_str()?;
    let ok = (16..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then(|| id.to_string())
}
