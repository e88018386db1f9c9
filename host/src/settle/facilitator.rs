//! The engine's side of the x402 facilitator: queued settlements are
//! leased like intents and sent through the same steps (stored before
//! broadcast, a retry re-sends the stored bytes, relayer calls batched), and
//! end `settled` or `failed` only when the chain says so.

use std::sync::Arc;
use std::time::Duration;

use super::{expected, Engine, StepError};
use crate::adapter::Answer;
use crate::clock::now_ms;
use crate::keys::Role;
use crate::payment::{PaymentRequirements, ProofError, ReceiptStatus};
use crate::store::facilitator::{self as ledger, Settlement, SettlementStatus};
use crate::store::settlement as repo;
use crate::x402::reason::Reason;

/// What to do with a settlement after one pass.
enum Pass {
    Done,
    Later(Duration),
}

impl Engine {
    /// Lease due facilitator settlements and run them, at most `workers` at
    /// once; woken by `/x402/settle`, polling now and then for other replicas'.
    pub(super) async fn dispatch_x402(self: Arc<Self>, workers: usize) {
        let holder = ulid::Ulid::new().to_string();
        let free = Arc::new(tokio::sync::Semaphore::new(workers));
        let lease = self.deps.config.service.claim_lease_seconds as i64 * 1000;
        loop {
            let available = free.available_permits();
            if available == 0 {
                let Ok(p) = free.clone().acquire_owned().await else { return };
                drop(p);
                continue;
            }
            match ledger::claim(&self.deps.db, &holder, now_ms(), lease, available).await {
                Ok(ids) if !ids.is_empty() => {
                    for id in ids {
                        let Ok(permit) = free.clone().acquire_owned().await else { return };
                        let me = self.clone();
                        tokio::spawn(async move {
                            me.x402_step(&id).await;
                            drop(permit);
                        });
                    }
                }
                Ok(_) => {
                    let _ = tokio::time::timeout(Duration::from_millis(250), self.deps.x402_work.notified()).await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming facilitator settlements failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    async fn x402_step(&self, id: &str) {
        let pass = match self.x402_pass(id).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(settlement = id, error = %format!("{e:#}"), "facilitator settlement pass failed; will retry");
                Pass::Later(Duration::from_secs(1))
            }
        };
        if let Pass::Later(after) = pass {
            if let Err(e) = ledger::reschedule(&self.deps.db, id, now_ms() + after.as_millis() as i64, true).await {
                tracing::warn!(settlement = id, error = %e, "could not reschedule a facilitator settlement");
            }
        }
    }

    async fn x402_finish(&self, rec: &Settlement, to: SettlementStatus, tx: Option<&str>, why: Option<Reason>) -> anyhow::Result<Pass> {
        tracing::info!(settlement = %rec.id, status = to.as_str(), tx = ?tx, reason = ?why.map(Reason::code), "facilitator settlement ended");
        ledger::finish(&self.deps.db, &rec.id, to, tx, why.map(Reason::code), now_ms()).await?;
        self.deps.x402_done.finish(&rec.id);
        Ok(Pass::Done)
    }

    async fn x402_pass(&self, id: &str) -> anyhow::Result<Pass> {
        let db = &self.deps.db;
        let Some(rec) = ledger::get(db, id).await? else { return Ok(Pass::Done) };
        if rec.status != SettlementStatus::Queued {
            return Ok(Pass::Done);
        }
        let adapter = self.adapter(&rec.chain, &rec.asset)?;
        let family = self.deps.config.chains.get(&rec.chain).map(|c| c.family).unwrap_or(crate::config::Family::Evm);
        let refusal = |e: &ProofError| Reason::refusal(family, e);
        let req: PaymentRequirements = serde_json::from_str(&rec.requirements)?;
        let stored = repo::list_txs(db, id, "x402").await?;
        let unavailable = |m: &str| {
            tracing::info!(settlement = id, detail = m, "chain unavailable; retrying");
            Ok(Pass::Later(Duration::from_secs(1)))
        };
        // The adapter's `settle` checks the payload as `verify` does (window,
        // signature, amount) before it builds anything, so a payload that went
        // stale while queued is refused here, and the send's simulation
        // catches what the chain changed (nonce used, balance spent).
        let steps = match adapter.settle(&req, &rec.payload).await? {
            Ok(s) => s,
            Err(ProofError::ChainUnavailable(m)) => return unavailable(&m),
            Err(e) if stored.is_empty() => return self.x402_finish(&rec, SettlementStatus::Failed, None, Some(refusal(&e))).await,
            Err(_) => vec![],
        };
        match self.run_steps(id, "x402", &rec.chain, &Role::Relayer, &steps, stored).await {
            Ok((hash, receipt)) => match self.read_receipt(&adapter, expected(&rec.payer, &req), receipt).await? {
                ReceiptStatus::Settled(_) => {
                    crate::telemetry::settlement_leg(&rec.chain, "x402", "settled", Some(super::elapsed_since(rec.created_at)));
                    self.x402_finish(&rec, SettlementStatus::Settled, Some(&hash), None).await
                }
                ReceiptStatus::Failed(m) => {
                    tracing::info!(settlement = id, detail = %m, "facilitator transaction mined without the transfer");
                    self.x402_finish(&rec, SettlementStatus::Failed, Some(&hash), Some(Reason::TransactionState)).await
                }
                ReceiptStatus::Pending => Ok(Pass::Later(Duration::from_secs(1))),
            },
            Err(StepError::NotSent(code, m)) => {
                tracing::info!(settlement = id, code = code.code(), detail = %m, "facilitator settlement not sent; retrying");
                Ok(Pass::Later(Duration::from_secs(1)))
            }
            Err(StepError::Pending(m)) => unavailable(&m),
            Err(StepError::WouldRevert(m)) => {
                // Nothing went out: say why if the adapter can.
                tracing::info!(settlement = id, detail = %m, "facilitator settlement would revert");
                let payment = adapter.verify(&req, &rec.payload).await.or_refused("verify").ok();
                let why = match payment {
                    Some(p) => match adapter.preflight(&p).await? {
                        Err(e) => refusal(&e),
                        Ok(()) => Reason::TransactionState,
                    },
                    None => Reason::TransactionState,
                };
                self.x402_finish(&rec, SettlementStatus::Failed, None, Some(why)).await
            }
            Err(StepError::Reverted(m)) => {
                tracing::info!(settlement = id, detail = %m, "facilitator transaction reverted");
                self.x402_finish(&rec, SettlementStatus::Failed, None, Some(Reason::TransactionState)).await
            }
        }
    }
}
