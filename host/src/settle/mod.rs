//! The settlement engine: takes intents from `settlement_queue` and moves
//! them PENDING → SOURCE_SETTLED → TARGET_SETTLING → TARGET_SETTLED.
//!
//! Exactly once: every signed transaction is stored before it is broadcast
//! and a retry re-sends the stored bytes; `(intent, leg, step)` is a primary
//! key; and each payout is an EIP-3009 authorization whose nonce is derived
//! from the intent id, so the token itself refuses a second payout.

pub mod batch;
pub mod evm;

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde_json::Value;

use crate::adapter::bindings::types::{
    AdapterError, PaymentRequirements, ProofError, ReceiptStatus, SettleStep, SigningRequest, Submission, Terms, Transfer,
    VerifiedPayment,
};
use crate::adapter::AssetAdapter;
use crate::api::Shared;
use crate::chain::ChainClient;
use crate::intent::{now_ms, requirements, Intent, Status};
use crate::keys::{self, Keystore};
use crate::store::{intents, settlement as repo};
use evm::{Nonces, SendError};

const LEASE_MS: i64 = 60_000;
/// Most queue entries taken by one claim.
const CLAIM_MAX: usize = 64;
/// How long a payout authorization stays valid.
const PAYOUT_VALIDITY_SECS: u64 = 24 * 60 * 60;

pub struct Engine {
    state: Shared,
    keys: Arc<Keystore>,
    relay: batch::Relay,
    batchers: batch::Batchers,
    receipts: evm::Receipts,
    setup_locks: tokio::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// What to do with a queue entry after one pass.
enum Next {
    /// Terminal: drop it from the queue.
    Done,
    /// Come back after this long; `failed` counts against the retry budget.
    Later(Duration, bool),
    /// The source leg settled: the payout is next, behind due source legs.
    Payout,
}

#[derive(Debug)]
enum StepError {
    Unavailable(String),
    WouldRevert(String),
    Reverted(String),
}

impl From<SendError> for StepError {
    fn from(e: SendError) -> Self {
        match e {
            SendError::Unavailable(m) => StepError::Unavailable(m),
            SendError::WouldRevert(m) => StepError::WouldRevert(m),
        }
    }
}

/// The transfer a receipt must show: `amount` of the requirements' asset
/// from `payer` to `payTo`.
fn expected(payer: &str, req: &PaymentRequirements) -> VerifiedPayment {
    VerifiedPayment {
        payer: payer.to_string(),
        pay_to: req.pay_to.clone(),
        amount: req.amount.clone(),
        valid_after: 0,
        valid_before: 0,
        replay_key: String::new(),
    }
}

/// The same words the API uses for this refusal.
fn proof_message(e: ProofError) -> String {
    crate::api::ApiError::from(e).to_string()
}

fn backoff(attempts: i64) -> Duration {
    Duration::from_millis((250u64 << attempts.clamp(0, 8) as u64).min(30_000))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> anyhow::Result<T> {
    Ok(tokio::task::spawn_blocking(f).await?)
}

impl Engine {
    pub fn new(state: Shared, keys: Arc<Keystore>) -> Arc<Engine> {
        let relay = batch::Relay { db: state.db.clone(), nonces: Arc::new(Nonces::new(state.db.clone())), fees: Default::default() };
        Arc::new(Engine {
            state,
            keys,
            relay,
            batchers: Default::default(),
            receipts: Default::default(),
            setup_locks: Default::default(),
        })
    }

    /// Settle queued intents until the process ends, at most `workers` at
    /// once. One loop per replica claims work, as much as there are free
    /// workers, so idle workers cost the database nothing.
    pub fn spawn(self: &Arc<Self>, workers: usize) {
        let me = self.clone();
        tokio::spawn(async move { me.dispatch(workers.max(1)).await });
    }

    async fn dispatch(self: Arc<Self>, workers: usize) {
        let holder = ulid::Ulid::new().to_string();
        let free = Arc::new(tokio::sync::Semaphore::new(workers));
        loop {
            let Ok(first) = free.clone().acquire_owned().await else { return };
            let mut permits = vec![first];
            while permits.len() < CLAIM_MAX {
                match free.clone().try_acquire_owned() {
                    Ok(p) => permits.push(p),
                    Err(_) => break,
                }
            }
            match repo::claim(&self.state.db, &holder, now_ms(), LEASE_MS, permits.len()).await {
                Ok(ids) if !ids.is_empty() => {
                    for (id, permit) in ids.into_iter().zip(permits) {
                        let me = self.clone();
                        tokio::spawn(async move {
                            me.step(&id).await;
                            drop(permit);
                            // The pass may have queued more work due now (a payout).
                            me.state.work.notify_one();
                        });
                    }
                }
                // Idle: wake on new work from this replica (API or a finished
                // pass), or poll now and then for work other replicas queued.
                Ok(_) => {
                    drop(permits);
                    let _ = tokio::time::timeout(Duration::from_millis(250), self.state.work.notified()).await;
                }
                Err(e) => {
                    drop(permits);
                    tracing::warn!(error = %e, "claiming settlement work failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// One pass over one claimed intent.
    pub async fn step(&self, id: &str) {
        let next = match self.process(id).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(intent = id, error = %format!("{e:#}"), "settlement pass failed; will retry");
                Next::Later(Duration::from_secs(1), false)
            }
        };
        let db = &self.state.db;
        let res = match next {
            Next::Done => repo::dequeue(db, id).await,
            Next::Later(after, failed) => repo::reschedule(db, id, now_ms() + after.as_millis() as i64, failed).await.map(|_| ()),
            Next::Payout => repo::queue_payout(db, id, now_ms()).await,
        };
        if let Err(e) = res {
            tracing::warn!(intent = id, error = %e, "could not update the settlement queue");
        }
    }

    async fn process(&self, id: &str) -> anyhow::Result<Next> {
        let Some(i) = intents::get(&self.state.db, id).await? else { return Ok(Next::Done) };
        match i.status {
            Status::Pending => self.source_leg(i).await,
            Status::SourceSettled | Status::TargetSettling => self.target_leg(i).await,
            _ => Ok(Next::Done),
        }
    }

    fn adapter(&self, chain: &str, asset: &str) -> anyhow::Result<Arc<AssetAdapter>> {
        self.state.registry.asset(chain, asset).ok_or_else(|| anyhow::anyhow!("{chain}/{asset} is not served"))
    }

    async fn fail(&self, i: &Intent, to: Status, message: &str) -> anyhow::Result<Next> {
        tracing::info!(intent = %i.id, status = %to, message, "settlement ended");
        repo::transition(&self.state.db, &i.id, i.status, to, Some(message), now_ms()).await?;
        Ok(Next::Done)
    }

    /// Sign an authorization from a host-held wallet and return its proof.
    async fn authorize(
        &self,
        adapter: &Arc<AssetAdapter>,
        signer: &PrivateKeySigner,
        req: &PaymentRequirements,
        transfer: Transfer,
    ) -> anyhow::Result<String> {
        let (a, signer, r) = (adapter.clone(), signer.clone(), req.clone());
        // One trip to a blocking thread: describe, sign, assemble.
        blocking(move || -> anyhow::Result<String> {
            let request = a.authorize(&transfer)?.map_err(|e| anyhow::anyhow!("authorize: {e:?}"))?;
            let SigningRequest::Eip712Digest(digest) = request else {
                anyhow::bail!("this engine signs EIP-712 digests only so far");
            };
            let sig = signer.sign_hash_sync(&B256::from_slice(&digest))?;
            a.assemble(&r, &transfer, &sig.as_bytes())?.map_err(|e| anyhow::anyhow!("assemble: {e:?}"))
        })
        .await?
    }

    async fn source_leg(&self, mut i: Intent) -> anyhow::Result<Next> {
        let db = &self.state.db;
        let adapter = self.adapter(&i.payer_chain, &i.payer_asset)?;
        let req = requirements::from_json(&serde_json::from_str(&i.payment_requirements)?)
            .ok_or_else(|| anyhow::anyhow!("stored requirements are incomplete"))?;
        if i.settle_proof.is_none() {
            // `/v2` execute: the agent's hosted wallet authorizes the payment.
            let Some(agent) = i.agent_id.clone() else { return self.fail(&i, Status::VerificationFailed, "no proof").await };
            let signer = self.keys.signer(&keys::agent_key(&agent)).await?;
            let now = (now_ms() / 1000) as u64;
            let transfer = Transfer {
                sender: signer.address().to_checksum(None),
                recipient: req.pay_to.clone(),
                amount: req.amount.clone(),
                valid_after: now.saturating_sub(60),
                valid_before: now + 600,
                nonce: keccak256(format!("{}:source", i.id)).to_vec(),
            };
            match self.prepare_wallet(&i, "source", &adapter, &signer, &req.amount).await {
                Ok(()) => {}
                Err(StepError::Unavailable(m)) => return Ok(self.later_unavailable(&i, &m)),
                Err(StepError::WouldRevert(m)) | Err(StepError::Reverted(m)) => {
                    return self.fail(&i, Status::VerificationFailed, &format!("agent wallet could not approve its token spender: {m}")).await
                }
            }
            let proof = self.authorize(&adapter, &signer, &req, transfer).await?;
            let (a, r, p) = (adapter.clone(), req.clone(), proof.clone());
            let paid = blocking(move || a.verify(&r, &p)).await??.map_err(|e| anyhow::anyhow!("own proof: {e:?}"))?;
            repo::set_source_proof(db, &i.id, &proof, &paid.replay_key, &paid.payer).await?;
            i = intents::get(db, &i.id).await?.ok_or_else(|| anyhow::anyhow!("intent vanished"))?;
        }
        let proof = i.settle_proof.clone().unwrap_or_default();
        let stored = repo::list_txs(db, &i.id, "source").await?;
        let sent_before = !stored.is_empty();

        // Verify, and while on the blocking thread, ask for the settlement too.
        let (a, r, p) = (adapter.clone(), req.clone(), proof.clone());
        let (verified, planned) = blocking(move || -> anyhow::Result<_> {
            let verified = a.verify(&r, &p)?;
            let planned = match &verified {
                Ok(_) if !sent_before => Some(a.settle(&r, &p)?),
                _ => None,
            };
            Ok((verified, planned))
        })
        .await??;
        let payment = match verified {
            Ok(p) => p,
            Err(ProofError::ChainUnavailable(m)) => return Ok(self.later_unavailable(&i, &m)),
            // A transaction already went out for it: its receipt decides.
            Err(_) if sent_before => return self.resume_source(i, adapter, req, proof, None, None, stored).await,
            Err(e) => return self.fail(&i, Status::VerificationFailed, &proof_message(e)).await,
        };
        if self.state.sanctions.is_listed(&payment.payer) {
            return self.fail(&i, Status::Blocked, "payment declined by the compliance screen").await;
        }
        self.resume_source(i, adapter, req, proof, (!sent_before).then_some(payment), planned, stored).await
    }

    /// The adapter's chain-state check of a payment not yet sent: `Some`
    /// says how the pass ends when the payment cannot settle.
    async fn preflight(&self, i: &Intent, adapter: &Arc<AssetAdapter>, payment: &VerifiedPayment) -> anyhow::Result<Option<Next>> {
        let (a, p) = (adapter.clone(), payment.clone());
        Ok(match blocking(move || a.preflight(&p)).await?? {
            Ok(()) => None,
            Err(ProofError::ChainUnavailable(m)) => Some(self.later_unavailable(i, &m)),
            Err(ProofError::InsufficientFunds(m)) if i.agent_id.is_some() => {
                let why = format!("agent wallet has insufficient balance on payer chain ({m})");
                Some(self.fail(i, Status::VerificationFailed, &why).await?)
            }
            Err(e) => Some(self.fail(i, Status::VerificationFailed, &proof_message(e)).await?),
        })
    }

    /// Settle the source leg. `fresh` is the verified payment when nothing
    /// was sent for it yet. A settlement that is one relayer call is
    /// simulated before it is sent, which checks what `preflight` checks, so
    /// `preflight` then only runs to explain a failed simulation; anything
    /// longer (a payer's approve goes first) is preflighted up front.
    async fn resume_source(
        &self,
        i: Intent,
        adapter: Arc<AssetAdapter>,
        req: PaymentRequirements,
        proof: String,
        fresh: Option<VerifiedPayment>,
        planned: Option<Result<Vec<SettleStep>, ProofError>>,
        stored: Vec<repo::StoredTx>,
    ) -> anyhow::Result<Next> {
        let planned = match planned {
            Some(p) => p,
            None => {
                let (a, r, p) = (adapter.clone(), req.clone(), proof.clone());
                blocking(move || a.settle(&r, &p)).await??
            }
        };
        let steps = match planned {
            Ok(s) => s,
            Err(ProofError::ChainUnavailable(m)) => return Ok(self.later_unavailable(&i, &m)),
            Err(e) if stored.is_empty() => {
                return self.fail(&i, Status::VerificationFailed, &proof_message(e)).await
            }
            Err(_) => vec![], // signed before: only its receipt is left to read
        };
        let one_call = matches!(steps.as_slice(), [SettleStep { submission: Submission::EvmCall(_), .. }]);
        if let Some(payment) = fresh.as_ref().filter(|_| !one_call) {
            if let Some(next) = self.preflight(&i, &adapter, payment).await? {
                return Ok(next);
            }
        }
        let chain = adapter.chain.clone();
        let relayer = self.keys.signer(keys::RELAYER).await?;
        match self.run_steps(&i, "source", &chain, &relayer, &steps, stored).await {
            Ok((hash, receipt)) => {
                let payer = i.payer.clone().unwrap_or_default();
                let outcome = self.read_receipt(&adapter, expected(&payer, &req), receipt).await?;
                match outcome {
                    ReceiptStatus::Settled(_) => {
                        repo::source_settled(&self.state.db, &i.id, &hash, now_ms()).await?;
                        // The payout goes back in line behind source legs
                        // already waiting: those hold payer authorizations
                        // that expire, a payout has no deadline.
                        Ok(Next::Payout)
                    }
                    ReceiptStatus::Failed(m) => self.fail(&i, Status::VerificationFailed, &format!("source settlement failed: {m}")).await,
                    ReceiptStatus::Pending => Ok(Next::Later(Duration::from_secs(1), false)),
                }
            }
            Err(StepError::Unavailable(m)) => Ok(self.later_unavailable(&i, &m)),
            Err(StepError::WouldRevert(m)) => {
                // Nothing went out. Let the adapter say why, if it can.
                if let Some(payment) = fresh.as_ref().filter(|_| one_call) {
                    if let Some(next) = self.preflight(&i, &adapter, payment).await? {
                        return Ok(next);
                    }
                }
                self.fail(&i, Status::VerificationFailed, &format!("source settlement failed: {m}")).await
            }
            Err(StepError::Reverted(m)) => self.fail(&i, Status::VerificationFailed, &format!("source settlement failed: {m}")).await,
        }
    }

    async fn read_receipt(&self, adapter: &Arc<AssetAdapter>, payment: VerifiedPayment, receipt: Arc<evm::Receipt>) -> anyhow::Result<ReceiptStatus> {
        let a = adapter.clone();
        blocking(move || a.read_receipt(&payment, &receipt.text)).await??.map_err(|e| anyhow::anyhow!("receipt: {e:?}"))
    }

    fn later_unavailable(&self, i: &Intent, why: &str) -> Next {
        tracing::info!(intent = %i.id, why, "chain unavailable; retrying");
        Next::Later(Duration::from_secs(1), false)
    }

    async fn target_leg(&self, i: Intent) -> anyhow::Result<Next> {
        let db = &self.state.db;
        let adapter = self.adapter(&i.target_chain, &i.target_asset)?;
        let signer = match &i.agent_id {
            Some(agent) => self.keys.signer(&keys::agent_key(agent)).await?,
            None => self.keys.signer(keys::PROXY).await?,
        };
        let (a, amount, pay_to) = (adapter.clone(), i.receiving_amount.clone(), i.merchant_recipient.clone());
        let (units, req) = blocking(move || -> anyhow::Result<(String, PaymentRequirements)> {
            let units = a.to_base_units(&amount)?.map_err(|e| anyhow::anyhow!("amount: {e:?}"))?;
            let terms = Terms { amount: units.clone(), pay_to, max_timeout_seconds: PAYOUT_VALIDITY_SECS };
            Ok((units, a.requirements(&terms)?.map_err(|e| anyhow::anyhow!("requirements: {e:?}"))?))
        })
        .await??;

        let fresh = match &i.target_settle_proof {
            Some(_) => None,
            None => {
                let transfer = Transfer {
                    sender: signer.address().to_checksum(None),
                    recipient: i.merchant_recipient.clone(),
                    amount: units,
                    valid_after: 0,
                    valid_before: (now_ms() / 1000) as u64 + PAYOUT_VALIDITY_SECS,
                    nonce: keccak256(format!("{}:target", i.id)).to_vec(),
                };
                Some(self.authorize(&adapter, &signer, &req, transfer).await?)
            }
        };
        // The first payout authorization ever stored is the one used.
        let Some(proof) = repo::start_payout(db, &i.id, fresh.as_deref(), now_ms()).await? else {
            return Ok(Next::Later(Duration::ZERO, false));
        };
        let stored = repo::list_txs(db, &i.id, "target").await?;
        if let Err(e) = self.prepare_wallet(&i, "target", &adapter, &signer, &req.amount).await {
            return self.payout_failed(&i, &format!("payout wallet not ready: {e:?}")).await;
        }
        let (a, r, p) = (adapter.clone(), req.clone(), proof.clone());
        let steps = match blocking(move || a.settle(&r, &p)).await?? {
            Ok(s) => s,
            Err(e) if stored.is_empty() => {
                return self.payout_failed(&i, &format!("payout not dispatchable: {e:?}")).await
            }
            Err(_) => vec![],
        };
        let relayer = self.keys.signer(keys::RELAYER).await?;
        match self.run_steps(&i, "target", &adapter.chain, &relayer, &steps, stored).await {
            Ok((hash, receipt)) => {
                let payer = signer.address().to_checksum(None);
                match self.read_receipt(&adapter, expected(&payer, &req), receipt).await? {
                    ReceiptStatus::Settled(_) => {
                        repo::target_settled(db, &i.id, &hash, now_ms()).await?;
                        tracing::info!(intent = %i.id, tx = %hash, "payment settled");
                        Ok(Next::Done)
                    }
                    ReceiptStatus::Failed(m) => self.payout_failed(&i, &m).await,
                    ReceiptStatus::Pending => Ok(Next::Later(Duration::from_secs(1), false)),
                }
            }
            Err(StepError::Unavailable(m)) | Err(StepError::WouldRevert(m)) | Err(StepError::Reverted(m)) => {
                self.payout_failed(&i, &m).await
            }
        }
    }

    /// The payout could not be dispatched: back to SOURCE_SETTLED and retry
    /// with backoff, or PARTIAL_SETTLEMENT once the budget is spent.
    async fn payout_failed(&self, i: &Intent, why: &str) -> anyhow::Result<Next> {
        let db = &self.state.db;
        let attempts = repo::attempts(db, &i.id).await? + 1;
        if attempts >= i64::from(self.state.config.service.payout_retry_budget) {
            let msg = format!("payout failed {attempts} times; payer funds were collected and need reconciliation: {why}");
            repo::transition(db, &i.id, Status::TargetSettling, Status::PartialSettlement, Some(&msg), now_ms()).await?;
            repo::transition(db, &i.id, Status::SourceSettled, Status::PartialSettlement, Some(&msg), now_ms()).await?;
            tracing::error!(intent = %i.id, "{msg}");
            return Ok(Next::Done);
        }
        repo::transition(db, &i.id, Status::TargetSettling, Status::SourceSettled, Some(why), now_ms()).await?;
        tracing::warn!(intent = %i.id, attempts, why, "payout not dispatched; will retry");
        Ok(Next::Later(backoff(attempts), true))
    }

    /// Get every step on chain, in order: re-send what was stored, sign and
    /// store (then send) what was not. A step is known by its label, so a
    /// retry whose adapter no longer needs an earlier step (an approval that
    /// landed) still finds the steps it stored. With no steps given, the
    /// stored ones are followed. Returns the last step's hash and receipt.
    async fn run_steps(
        &self,
        i: &Intent,
        leg: &str,
        chain: &Arc<ChainClient>,
        signer: &PrivateKeySigner,
        steps: &[SettleStep],
        stored: Vec<repo::StoredTx>,
    ) -> Result<(String, Arc<evm::Receipt>), StepError> {
        let db = &self.state.db;
        let unavailable = |e: sqlx::Error| StepError::Unavailable(format!("database: {e}"));
        let mut free = stored.iter().map(|t| t.step + 1).max().unwrap_or(0);
        let plan: Vec<(i32, Option<&SettleStep>, Option<&repo::StoredTx>)> = if steps.is_empty() {
            stored.iter().map(|t| (t.step, None, Some(t))).collect()
        } else {
            steps
                .iter()
                .map(|s| match stored.iter().find(|t| t.label == s.label) {
                    Some(t) => (t.step, Some(s), Some(t)),
                    None => {
                        free += 1;
                        (free - 1, Some(s), None)
                    }
                })
                .collect()
        };
        let mut last = None;
        for (n, step, row) in plan {
            let tx = match row {
                Some(t) => {
                    let taken = t.status != "confirmed"
                        && matches!(evm::broadcast(chain, &t.raw).await?, evm::Broadcast::NonceTaken)
                        && evm::receipt(chain, &t.tx_hash).await?.is_none();
                    if taken {
                        // Its nonce went to another transaction: this one can
                        // never be mined. Re-sign the step; the authorization
                        // inside is the same, so it still moves money once.
                        repo::drop_tx(db, &i.id, leg, n).await.map_err(unavailable)?;
                        let Some(step) = step else { return Err(StepError::Unavailable("stale transaction".into())) };
                        self.send_step(i, leg, n, chain, signer, step, true).await?
                    } else {
                        t.tx_hash.clone()
                    }
                }
                None => {
                    let Some(step) = step else { return Err(StepError::Unavailable("no step to send".into())) };
                    self.send_step(i, leg, n, chain, signer, step, false).await?
                }
            };
            let receipt = self.wait_receipt(chain, &tx).await?;
            let ok = receipt.json.get("status").and_then(Value::as_str) == Some("0x1");
            if !ok {
                let batched = repo::get_tx(db, &i.id, leg, n)
                    .await
                    .map_err(unavailable)?
                    .is_some_and(|t| evm::sent_to(&t.raw) == Some(self.multicall(chain)));
                repo::drop_tx(db, &i.id, leg, n).await.map_err(unavailable)?;
                if batched {
                    // Its simulation passed moments before: someone else's
                    // call, or changed state, sank the batch. Try again.
                    return Err(StepError::Unavailable(format!("batch transaction {tx} reverted")));
                }
                return Err(StepError::Reverted(format!("transaction {tx} reverted")));
            }
            repo::set_tx_status(db, &i.id, leg, n, "confirmed", now_ms()).await.map_err(unavailable)?;
            last = Some((tx, receipt));
        }
        last.ok_or_else(|| StepError::Unavailable("nothing was sent".into()))
    }

    /// One-time calls a host-held wallet must make before its transfers can
    /// settle (e.g. approving Permit2 on a Permit2-only chain), sent from that
    /// wallet and recorded under `<leg>-setup`. One at a time per (chain,
    /// asset, wallet) in this replica, so concurrent payouts approve once.
    async fn prepare_wallet(&self, i: &Intent, leg: &str, adapter: &Arc<AssetAdapter>, wallet: &PrivateKeySigner, amount: &str) -> Result<(), StepError> {
        let key = format!("{}/{}/{}", adapter.ctx.chain, adapter.ctx.asset, wallet.address());
        let lock = self.setup_locks.lock().await.entry(key).or_default().clone();
        let _held = lock.lock().await;
        let (a, sender, amount) = (adapter.clone(), wallet.address().to_checksum(None), amount.to_string());
        let calls = blocking(move || a.prepare_sender(&sender, &amount))
            .await
            .and_then(|r| Ok(r?))
            .map_err(|e| StepError::Unavailable(format!("{e:#}")))?
            .map_err(|e| match e {
                AdapterError::ChainUnavailable(m) => StepError::Unavailable(m),
                other => StepError::WouldRevert(format!("wallet preparation: {other:?}")),
            })?;
        if calls.is_empty() {
            return Ok(());
        }
        let steps: Vec<SettleStep> = calls
            .into_iter()
            .map(|c| SettleStep {
                label: format!("setup:{}", &alloy_primitives::hex::encode(keccak256(&c.data))[..16]),
                submission: Submission::EvmCall(c),
            })
            .collect();
        tracing::info!(intent = %i.id, chain = %adapter.ctx.chain, asset = %adapter.ctx.asset, wallet = %wallet.address(), calls = steps.len(), "preparing a sending wallet");
        let leg = format!("{leg}-setup");
        let stored = repo::list_txs(&self.state.db, &i.id, &leg).await.map_err(|e| StepError::Unavailable(format!("database: {e}")))?;
        self.run_steps(i, &leg, &adapter.chain, wallet, &steps, stored).await.map(|_| ())
    }

    async fn send_step(
        &self,
        i: &Intent,
        leg: &str,
        n: i32,
        chain: &Arc<ChainClient>,
        signer: &PrivateKeySigner,
        step: &SettleStep,
        resync: bool,
    ) -> Result<String, StepError> {
        let db = &self.state.db;
        let chain_id = self.state.config.chains.get(&chain.chain).and_then(|c| c.chain_id).unwrap_or(0);
        let row = batch::Row { intent_id: i.id.clone(), leg: leg.into(), step: n, label: step.label.clone() };
        match &step.submission {
            Submission::EvmCall(call) => {
                let to: Address = call.to.parse().map_err(|_| StepError::WouldRevert(format!("bad address {}", call.to)))?;
                if !self.batches(leg, call) {
                    let value = U256::from_str_radix(&call.value, 10).unwrap_or_default();
                    let call = evm::TxCall { to, data: call.data.clone(), value, gas: evm::GasLimit::Estimate };
                    let sent = self.relay.send(chain, chain_id, signer, resync, call, &[&row]).await?;
                    return Ok(sent.hash);
                }
                let (reply, answer) = tokio::sync::oneshot::channel();
                let c = batch::Call { row, to, data: call.data.clone(), reply };
                let lane = || batch::Lane {
                    chain: chain.clone(),
                    chain_id,
                    relayer: signer.clone(),
                    multicall: self.multicall(chain),
                    max: self.state.config.service.settlement_batch_max,
                };
                self.batchers.submit(&chain.chain, lane, &self.relay, c).await;
                Ok(answer.await.map_err(|_| StepError::Unavailable("settlement batcher stopped".into()))??)
            }
            Submission::EvmRaw(raw) => {
                let hash = format!("{:#x}", keccak256(raw));
                let row = repo::NewTx {
                    intent_id: &i.id, leg, step: n, label: &step.label, chain: &chain.chain, sender: "external",
                    nonce: -1, raw, tx_hash: &hash,
                };
                repo::insert_tx(db, &row, now_ms()).await.map_err(|e| StepError::Unavailable(e.to_string()))?;
                match evm::broadcast(chain, raw).await? {
                    evm::Broadcast::Accepted => Ok(hash),
                    evm::Broadcast::NonceTaken => Err(StepError::Reverted(format!("{} was superseded", step.label))),
                }
            }
            other => Err(StepError::WouldRevert(format!("this engine cannot submit {other:?} yet"))),
        }
    }

    /// Relayer calls of the settlement legs (not wallet preparation, nothing
    /// that carries value) may share a transaction.
    fn batches(&self, leg: &str, call: &crate::adapter::bindings::types::EvmCall) -> bool {
        (leg == "source" || leg == "target") && call.value == "0" && self.state.config.service.settlement_batch_max > 1
    }

    fn multicall(&self, chain: &ChainClient) -> Address {
        self.state
            .config
            .chains
            .get(&chain.chain)
            .and_then(|c| c.multicall3_address.as_deref())
            .and_then(|a| a.parse().ok())
            .unwrap_or(batch::MULTICALL3)
    }

    async fn wait_receipt(&self, chain: &ChainClient, hash: &str) -> Result<Arc<evm::Receipt>, StepError> {
        let deadline = std::time::Instant::now() + Duration::from_secs(self.state.config.service.receipt_timeout_seconds);
        let mut pause = Duration::from_millis(5);
        let confirmations = self.state.config.chains.get(&chain.chain).map_or(1, |c| c.confirmations.max(1));
        loop {
            if let Some(r) = self.receipts.get(chain, hash).await? {
                let mined = r.json.get("blockNumber").and_then(|b| u64::from_str_radix(b.as_str()?.trim_start_matches("0x"), 16).ok());
                let head = match confirmations {
                    1 => mined,
                    _ => evm::rpc(chain, "eth_blockNumber", serde_json::json!([]))
                        .await?
                        .as_str()
                        .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok()),
                };
                if let (Some(mined), Some(head)) = (mined, head) {
                    if head + 1 >= mined + confirmations {
                        return Ok(r);
                    }
                }
            }
            if std::time::Instant::now() > deadline {
                return Err(StepError::Unavailable(format!("no receipt for {hash} yet")));
            }
            // Fast chains answer within milliseconds; slow ones get polled gently.
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }
}
