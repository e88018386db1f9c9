//! The settlement engine: takes intents from `settlement_queue` and moves
//! them PENDING → SOURCE_SETTLED → TARGET_SETTLING → TARGET_SETTLED.
//!
//! Exactly once: every signed transaction is stored before it is broadcast
//! and a retry re-sends the stored bytes; `(intent, leg, step)` is a primary
//! key; and each payout is an EIP-3009 authorization whose nonce is derived
//! from the intent id, so the token itself refuses a second payout.

pub mod batch;
pub mod evm;
pub mod keeper;

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
use crate::adapter::Registry;
use crate::config::Config;
use crate::db::Db;
use crate::sanctions::SanctionsList;
use crate::chain::ChainClient;
use crate::failure::{Failure, Reason};
use crate::intent::{now_ms, requirements, Intent, Status};
use crate::keys::{self, Keystore};
use crate::store::{intents, settlement as repo};
use evm::{Nonces, SendError};

const LEASE_MS: i64 = 60_000;
/// Most queue entries taken by one claim.
const CLAIM_MAX: usize = 64;
/// How long a payout authorization stays valid.
const PAYOUT_VALIDITY_SECS: u64 = 24 * 60 * 60;

/// What the engine works with. The HTTP layer builds it from its own
/// state; the engine never sees the HTTP layer.
#[derive(Clone)]
pub struct Deps {
    pub config: Arc<Config>,
    pub registry: Arc<Registry>,
    pub db: Db,
    pub keys: Arc<Keystore>,
    pub sanctions: Arc<SanctionsList>,
    /// Wakes this replica's workers when work is queued.
    pub work: Arc<tokio::sync::Notify>,
}

pub struct Engine {
    deps: Deps,
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

/// Why a leg's transactions did not all land this pass. The strings are
/// for the logs only.
#[derive(Debug)]
enum StepError {
    /// Nothing new is on its way: try again later; the code says why.
    NotSent(Failure, String),
    /// A transaction is out and has no receipt yet: wait, it may still land.
    Pending(String),
    /// Simulation says the call would revert; nothing was sent.
    WouldRevert(String),
    /// A transaction was mined and reverted.
    Reverted(String),
}

impl From<SendError> for StepError {
    fn from(e: SendError) -> Self {
        let detail = e.to_string();
        match e {
            SendError::WouldRevert(m) => StepError::WouldRevert(m),
            SendError::Unfunded(_) => StepError::NotSent(Failure::RelayerUnfunded, detail),
            SendError::Unavailable(_) => StepError::NotSent(Failure::ChainUnavailable, detail),
            SendError::NonceTaken | SendError::Refused(_) => StepError::NotSent(Failure::PayoutNotDispatched, detail),
        }
    }
}

/// The transfer a receipt must show: `amount` of the requirements' asset
/// from `payer` to `payTo`.
fn expected(payer: &str, req: &PaymentRequirements) -> VerifiedPayment {
    transfer_of(payer, &req.pay_to, &req.amount)
}

fn transfer_of(payer: &str, pay_to: &str, amount: &str) -> VerifiedPayment {
    VerifiedPayment {
        payer: payer.to_string(),
        pay_to: pay_to.to_string(),
        amount: amount.to_string(),
        valid_after: 0,
        valid_before: 0,
        replay_key: String::new(),
    }
}

/// Time since `at_ms`: a leg's start for its latency metric (the proof's
/// acceptance is the intent's last update on a source leg's way).
fn elapsed_since(at_ms: i64) -> Duration {
    Duration::from_millis((now_ms() - at_ms).max(0) as u64)
}

/// Exponential backoff from half a second up to `cap`, with ±20 % jitter
/// so that intents failing together do not retry together.
fn backoff(attempts: i64, cap: Duration) -> Duration {
    use rand::Rng;
    let base = Duration::from_millis(500u64.saturating_mul(1 << attempts.clamp(0, 20) as u64)).min(cap);
    base.mul_f64(rand::thread_rng().gen_range(0.8..1.2))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> anyhow::Result<T> {
    Ok(tokio::task::spawn_blocking(f).await?)
}

impl Engine {
    pub fn new(deps: Deps) -> Arc<Engine> {
        let relay = batch::Relay { db: deps.db.clone(), nonces: Arc::new(Nonces::new(deps.db.clone())), fees: Default::default() };
        Arc::new(Engine {
            keys: deps.keys.clone(),
            deps,
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
        self.spawn_keeper();
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
            match repo::claim(&self.deps.db, &holder, now_ms(), LEASE_MS, permits.len()).await {
                Ok(ids) if !ids.is_empty() => {
                    for (id, permit) in ids.into_iter().zip(permits) {
                        let me = self.clone();
                        tokio::spawn(async move {
                            me.step(&id).await;
                            drop(permit);
                            // The pass may have queued more work due now (a payout).
                            me.deps.work.notify_one();
                        });
                    }
                }
                // Idle: wake on new work from this replica (API or a finished
                // pass), or poll now and then for work other replicas queued.
                Ok(_) => {
                    drop(permits);
                    let _ = tokio::time::timeout(Duration::from_millis(250), self.deps.work.notified()).await;
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
        let db = &self.deps.db;
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
        let Some(i) = intents::get(&self.deps.db, id).await? else { return Ok(Next::Done) };
        match i.status {
            Status::Pending => self.source_leg(i).await,
            Status::SourceSettled | Status::TargetSettling => self.target_leg(i).await,
            _ => Ok(Next::Done),
        }
    }

    fn adapter(&self, chain: &str, asset: &str) -> anyhow::Result<Arc<AssetAdapter>> {
        self.deps.registry.asset(chain, asset).ok_or_else(|| anyhow::anyhow!("{chain}/{asset} is not served"))
    }

    async fn fail(&self, i: &Intent, to: Status, why: Reason) -> anyhow::Result<Next> {
        tracing::info!(intent = %i.id, status = %to, code = why.code.code(), message = %why.message, "settlement ended");
        let outcome = if to == Status::Blocked { "blocked" } else { "failed" };
        crate::telemetry::settlement_leg(&i.payer_chain, "source", outcome, Some(elapsed_since(i.updated_at)));
        repo::transition(&self.deps.db, &i.id, i.status, to, Some(&why), now_ms()).await?;
        Ok(Next::Done)
    }

    fn max_backoff(&self) -> Duration {
        Duration::from_secs(self.deps.config.service.retry_max_backoff_seconds.max(1))
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
        let db = &self.deps.db;
        let adapter = self.adapter(&i.payer_chain, &i.payer_asset)?;
        let req = requirements::from_json(&serde_json::from_str(&i.payment_requirements)?)
            .ok_or_else(|| anyhow::anyhow!("stored requirements are incomplete"))?;
        if i.settle_proof.is_none() {
            // `/v2` execute: the agent's hosted wallet authorizes the payment.
            let Some(agent) = i.agent_id.clone() else {
                return self.fail(&i, Status::VerificationFailed, Failure::ProofInvalid.into()).await;
            };
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
                Err(StepError::NotSent(code, m)) => return self.later_waiting(&i, code, &m).await,
                Err(StepError::Pending(m)) => return Ok(self.later_unavailable(&i, &m)),
                Err(StepError::WouldRevert(m)) | Err(StepError::Reverted(m)) => {
                    tracing::warn!(intent = %i.id, detail = %m, "agent wallet could not approve its token spender");
                    return self.fail(&i, Status::VerificationFailed, Failure::AgentWalletNotReady.into()).await;
                }
            }
            let proof = self.authorize(&adapter, &signer, &req, transfer).await?;
            let (a, r, p) = (adapter.clone(), req.clone(), proof.clone());
            let (paid, ready) = blocking(move || -> anyhow::Result<_> {
                let paid = a.verify(&r, &p)?.map_err(|e| anyhow::anyhow!("own proof: {e:?}"))?;
                let ready = a.preflight(&paid)?;
                Ok((paid, ready))
            })
            .await??;
            match ready {
                Ok(()) => {}
                Err(ProofError::ChainUnavailable(m)) => return Ok(self.later_unavailable(&i, &m)),
                // The agent can fund its wallet and execute again.
                Err(ProofError::InsufficientFunds(m)) => {
                    tracing::info!(intent = %i.id, detail = %m, "agent wallet is short; the intent awaits payment again");
                    repo::back_to_awaiting(db, &i.id, &Failure::AgentWalletShort.into(), now_ms()).await?;
                    return Ok(Next::Done);
                }
                Err(e) => return self.fail(&i, Status::VerificationFailed, Reason::proof(&e)).await,
            }
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
            Err(e) => return self.fail(&i, Status::VerificationFailed, Reason::proof(&e)).await,
        };
        if self.deps.sanctions.is_listed(&payment.payer) {
            return self.fail(&i, Status::Blocked, Failure::Declined.into()).await;
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
            Err(e) => Some(self.fail(i, Status::VerificationFailed, Reason::proof(&e)).await?),
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
            Err(e) if stored.is_empty() => return self.fail(&i, Status::VerificationFailed, Reason::proof(&e)).await,
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
                        repo::source_settled(&self.deps.db, &i.id, &hash, now_ms()).await?;
                        crate::telemetry::settlement_leg(&i.payer_chain, "source", "settled", Some(elapsed_since(i.updated_at)));
                        // The payout goes back in line behind source legs
                        // already waiting: those hold payer authorizations
                        // that expire, a payout has no deadline.
                        Ok(Next::Payout)
                    }
                    ReceiptStatus::Failed(m) => {
                        tracing::info!(intent = %i.id, detail = %m, "source transaction mined without the transfer");
                        self.fail(&i, Status::VerificationFailed, Failure::SourceReverted.into()).await
                    }
                    ReceiptStatus::Pending => Ok(Next::Later(Duration::from_secs(1), false)),
                }
            }
            Err(StepError::NotSent(code, m)) => self.later_waiting(&i, code, &m).await,
            Err(StepError::Pending(m)) => Ok(self.later_unavailable(&i, &m)),
            Err(StepError::WouldRevert(m)) => {
                // Nothing went out. Let the adapter say why, if it can.
                if let Some(payment) = fresh.as_ref().filter(|_| one_call) {
                    if let Some(next) = self.preflight(&i, &adapter, payment).await? {
                        return Ok(next);
                    }
                }
                tracing::info!(intent = %i.id, detail = %m, "source settlement would revert");
                self.fail(&i, Status::VerificationFailed, Reason { code: Failure::SourceReverted, message: "source settlement failed: the transaction would revert; no funds moved".into() }).await
            }
            Err(StepError::Reverted(m)) => {
                tracing::info!(intent = %i.id, detail = %m, "source transaction reverted");
                self.fail(&i, Status::VerificationFailed, Failure::SourceReverted.into()).await
            }
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

    /// Nothing went out on the source leg: the intent keeps its status and
    /// shows why it waits (an unfunded relayer is an operator's problem, so
    /// it is a WARN and `/readyz` shows it); it completes once the cause is
    /// gone, which clears the code.
    async fn later_waiting(&self, i: &Intent, code: Failure, why: &str) -> anyhow::Result<Next> {
        if code == Failure::RelayerUnfunded {
            tracing::warn!(intent = %i.id, chain = %i.payer_chain, detail = why, "the relayer cannot pay gas; waiting for funds");
        } else {
            tracing::info!(intent = %i.id, code = code.code(), detail = why, "source leg not sent; retrying");
        }
        repo::transition(&self.deps.db, &i.id, i.status, i.status, Some(&code.into()), now_ms()).await?;
        Ok(Next::Later(Duration::from_secs(if code == Failure::RelayerUnfunded { 2 } else { 1 }), false))
    }

    async fn target_leg(&self, i: Intent) -> anyhow::Result<Next> {
        let db = &self.deps.db;
        let adapter = self.adapter(&i.target_chain, &i.target_asset)?;
        // The merchant is paid by the service's proxy wallet on both flows: a
        // `/v2` agent pays once, on the payer chain.
        let signer = self.keys.signer(keys::PROXY).await?;
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
            let code = match e {
                StepError::NotSent(Failure::ChainUnavailable, _) => Failure::ChainUnavailable,
                StepError::NotSent(Failure::RelayerUnfunded, _) => Failure::PayoutWalletShort,
                _ => Failure::PayoutNotDispatched,
            };
            return self.payout_failed(&i, code, &format!("payout wallet not ready: {e:?}")).await;
        }
        let (a, r, p) = (adapter.clone(), req.clone(), proof.clone());
        let steps = match blocking(move || a.settle(&r, &p)).await?? {
            Ok(s) => s,
            Err(e) if stored.is_empty() => {
                let code = match e {
                    ProofError::ChainUnavailable(_) => Failure::ChainUnavailable,
                    ProofError::InsufficientFunds(_) => Failure::PayoutWalletShort,
                    _ => Failure::PayoutNotDispatched,
                };
                return self.payout_failed(&i, code, &format!("payout not dispatchable: {e:?}")).await;
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
                        crate::telemetry::settlement_leg(&i.target_chain, "target", "settled", i.source_settled_at.map(elapsed_since));
                        tracing::info!(intent = %i.id, tx = %hash, "payment settled");
                        Ok(Next::Done)
                    }
                    ReceiptStatus::Failed(m) => self.payout_failed(&i, Failure::PayoutNotDispatched, &m).await,
                    ReceiptStatus::Pending => Ok(Next::Later(Duration::from_secs(1), false)),
                }
            }
            // Out and unconfirmed: the intent stays TARGET_SETTLING.
            Err(StepError::Pending(m)) => {
                tracing::info!(intent = %i.id, detail = %m, "payout sent; waiting for its receipt");
                Ok(Next::Later(Duration::from_secs(2), false))
            }
            Err(StepError::NotSent(code, m)) => self.payout_failed(&i, code, &m).await,
            Err(StepError::WouldRevert(m)) => {
                // The payout wallet short is the usual reason a payout would
                // revert: let the adapter check the stored authorization.
                let (a, r, p) = (adapter.clone(), req.clone(), proof.clone());
                let short = blocking(move || -> anyhow::Result<bool> {
                    let Ok(paid) = a.verify(&r, &p)? else { return Ok(false) };
                    Ok(matches!(a.preflight(&paid)?, Err(ProofError::InsufficientFunds(_))))
                })
                .await??;
                let code = if short { Failure::PayoutWalletShort } else { Failure::PayoutNotDispatched };
                self.payout_failed(&i, code, &m).await
            }
            Err(StepError::Reverted(m)) => self.payout_failed(&i, Failure::PayoutNotDispatched, &m).await,
        }
    }

    /// The payout could not be dispatched: back to SOURCE_SETTLED and retry
    /// with backoff. PARTIAL_SETTLEMENT only once the retry budget is spent
    /// and no stored payout transaction can still land.
    async fn payout_failed(&self, i: &Intent, code: Failure, detail: &str) -> anyhow::Result<Next> {
        let db = &self.deps.db;
        let (attempts, since) = repo::attempts(db, &i.id).await?;
        let budget = Duration::from_secs(self.deps.config.service.payout_retry_hours * 3600);
        let spent = Duration::from_millis((now_ms() - since).max(0) as u64) >= budget;
        tracing::warn!(intent = %i.id, attempts, code = code.code(), detail, "payout not dispatched; will retry");
        if spent && !self.payout_can_land(i).await {
            let why = Reason::from(Failure::NeedsReconciliation);
            let from = [Status::TargetSettling, Status::SourceSettled];
            repo::transition_from(db, &i.id, &from, Status::PartialSettlement, Some(&why), now_ms()).await?;
            tracing::error!(intent = %i.id, "payout retry budget spent and no stored payout can land: needs reconciliation");
            crate::telemetry::settlement_leg(&i.target_chain, "target", "partial", i.source_settled_at.map(elapsed_since));
            return Ok(Next::Done);
        }
        // The current reason is recorded even when it was SOURCE_SETTLED already.
        let from = [Status::TargetSettling, Status::SourceSettled];
        repo::transition_from(db, &i.id, &from, Status::SourceSettled, Some(&code.into()), now_ms()).await?;
        crate::telemetry::settlement_leg(&i.target_chain, "target", "retried", None);
        Ok(Next::Later(backoff(attempts, self.max_backoff()), true))
    }

    /// Could a stored payout transaction of `i` still be mined? A stored
    /// transaction is done with once it was mined (a payout that landed is
    /// recorded, or reconciled, as TARGET_SETTLED) or once the chain shows
    /// its nonce used by another transaction. When the chain cannot be
    /// asked, it may still land.
    async fn payout_can_land(&self, i: &Intent) -> bool {
        let Ok(stored) = repo::list_txs(&self.deps.db, &i.id, "target").await else { return true };
        let Some(chain) = self.deps.registry.chain(&i.target_chain) else { return true };
        for t in stored {
            let Ok(sender) = t.sender.parse() else { return true };
            match evm::receipt(&chain, &t.tx_hash).await {
                Ok(Some(_)) => continue,
                Ok(None) => match evm::mined_nonce(&chain, sender).await {
                    Ok(mined) if mined > t.nonce as u64 => continue,
                    _ => return true,
                },
                Err(_) => return true,
            }
        }
        false
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
        let db = &self.deps.db;
        let unavailable = |e: sqlx::Error| StepError::NotSent(Failure::ChainUnavailable, format!("database: {e}"));
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
                    // A stored transaction is sent again, as it is; only a
                    // node that says its nonce is used, by a transaction that
                    // is not this one, makes the step be signed again.
                    let taken = t.status != "confirmed"
                        && evm::receipt(chain, &t.tx_hash).await?.is_none()
                        && match evm::broadcast(chain, &t.raw).await {
                            Ok(evm::Broadcast::NonceTaken) => evm::receipt(chain, &t.tx_hash).await?.is_none(),
                            Ok(_) => false,
                            // Refused as it is (e.g. fees): the keeper fills
                            // its nonce if the chain stalls on it.
                            Err(e) => return Err(e.into()),
                        };
                    if taken {
                        // The authorization inside is the same, so the step
                        // still moves money once.
                        repo::drop_tx(db, &i.id, leg, n, now_ms()).await.map_err(unavailable)?;
                        let Some(step) = step else {
                            return Err(StepError::NotSent(Failure::PayoutNotDispatched, "stale transaction".into()));
                        };
                        self.send_step(i, leg, n, chain, signer, step, true).await?
                    } else {
                        t.tx_hash.clone()
                    }
                }
                None => {
                    let Some(step) = step else {
                        return Err(StepError::NotSent(Failure::PayoutNotDispatched, "no step to send".into()));
                    };
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
                repo::drop_tx(db, &i.id, leg, n, now_ms()).await.map_err(unavailable)?;
                if batched {
                    // Its simulation passed moments before: someone else's
                    // call, or changed state, sank the batch. Try again.
                    return Err(StepError::NotSent(Failure::PayoutNotDispatched, format!("batch transaction {tx} reverted")));
                }
                return Err(StepError::Reverted(format!("transaction {tx} reverted")));
            }
            repo::set_tx_status(db, &i.id, leg, n, "confirmed", now_ms()).await.map_err(unavailable)?;
            last = Some((tx, receipt));
        }
        last.ok_or_else(|| StepError::NotSent(Failure::PayoutNotDispatched, "nothing was sent".into()))
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
            .map_err(|e| StepError::NotSent(Failure::PayoutNotDispatched, format!("{e:#}")))?
            .map_err(|e| match e {
                AdapterError::ChainUnavailable(m) => StepError::NotSent(Failure::ChainUnavailable, m),
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
        let stored = repo::list_txs(&self.deps.db, &i.id, &leg)
            .await
            .map_err(|e| StepError::NotSent(Failure::ChainUnavailable, format!("database: {e}")))?;
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
        let db = &self.deps.db;
        let chain_id = self.deps.config.chains.get(&chain.chain).and_then(|c| c.chain_id).unwrap_or(0);
        let row = batch::Row { intent_id: i.id.clone(), leg: leg.into(), step: n, label: step.label.clone() };
        match &step.submission {
            Submission::EvmCall(call) => {
                let to: Address = call.to.parse().map_err(|_| StepError::WouldRevert(format!("bad address {}", call.to)))?;
                if !self.batches(leg, call) {
                    let value = U256::from_str_radix(&call.value, 10).unwrap_or_default();
                    let call = evm::TxCall { to, data: call.data.clone(), value, gas: evm::GasLimit::Estimate };
                    let sent = self.relay.send(chain, chain_id, signer, resync, call, std::slice::from_ref(&row)).await?;
                    return Ok(sent.hash);
                }
                let (reply, answer) = tokio::sync::oneshot::channel();
                let c = batch::Call { row, to, data: call.data.clone(), reply };
                let lane = || batch::Lane {
                    chain: chain.clone(),
                    chain_id,
                    relayer: signer.clone(),
                    multicall: self.multicall(chain),
                    max: self.deps.config.service.settlement_batch_max,
                };
                self.batchers.submit(&chain.chain, lane, &self.relay, c).await;
                Ok(answer.await.map_err(|_| StepError::NotSent(Failure::PayoutNotDispatched, "settlement batcher stopped".into()))??)
            }
            Submission::EvmRaw(raw) => {
                let hash = format!("{:#x}", keccak256(raw));
                let row = repo::NewTx {
                    intent_id: &i.id, leg, step: n, label: &step.label, chain: &chain.chain, sender: "external",
                    nonce: -1, raw, tx_hash: &hash,
                };
                repo::insert_tx(db, &row, now_ms())
                    .await
                    .map_err(|e| StepError::NotSent(Failure::ChainUnavailable, format!("database: {e}")))?;
                match evm::broadcast(chain, raw).await? {
                    evm::Broadcast::NonceTaken => Err(StepError::Reverted(format!("{} was superseded", step.label))),
                    _ => Ok(hash),
                }
            }
            other => Err(StepError::WouldRevert(format!("this engine cannot submit {other:?} yet"))),
        }
    }

    /// Relayer calls of the settlement legs (not wallet preparation, nothing
    /// that carries value) may share a transaction.
    fn batches(&self, leg: &str, call: &crate::adapter::bindings::types::EvmCall) -> bool {
        (leg == "source" || leg == "target") && call.value == "0" && self.deps.config.service.settlement_batch_max > 1
    }

    fn multicall(&self, chain: &ChainClient) -> Address {
        self.deps
            .config
            .chains
            .get(&chain.chain)
            .and_then(|c| c.multicall3_address.as_deref())
            .and_then(|a| a.parse().ok())
            .unwrap_or(batch::MULTICALL3)
    }

    async fn wait_receipt(&self, chain: &ChainClient, hash: &str) -> Result<Arc<evm::Receipt>, StepError> {
        let deadline = std::time::Instant::now() + Duration::from_secs(self.deps.config.service.receipt_timeout_seconds);
        let mut pause = Duration::from_millis(5);
        let confirmations = self.deps.config.chains.get(&chain.chain).map_or(1, |c| c.confirmations.max(1));
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
                return Err(StepError::Pending(format!("no receipt for {hash} yet")));
            }
            // Fast chains answer within milliseconds; slow ones get polled gently.
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }
}
