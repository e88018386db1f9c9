//! The x402 worker: queued facilitator settlements are leased like
//! intents and sent through the same step runner as intents (`settle::Steps`) (stored before
//! broadcast, a retry re-sends the stored bytes, relayer calls batched), and
//! end `settled` or `failed` only when the chain says so.
//!
//! A `/settle` that finds a free worker here records its settlement already
//! leased to this replica and runs the first pass itself (`settle_now`): no
//! claim, no re-read of the row it holds, and the answer comes from the pass.
//! Its lease is the same as a claimed one's: a crash leaves a row another
//! worker takes over when the lease runs out, and a pass that must wait
//! releases the row to the claim loop like any other.

use std::sync::Arc;
use std::time::Duration;

use super::finished::Finished;
use crate::adapter::AssetAdapter;
use crate::clock::now_ms;
use crate::family::keys::Role;
use crate::family::Share;
use crate::payment::{PaymentRequirements, ProofError, ReceiptStatus};
use crate::settle::{checked_on_send, elapsed_since, Deps, StepError, Steps};
use crate::store::books::{Credit, Purpose};
use crate::store::facilitator::{self as ledger, Settlement, SettlementStatus};
use crate::store::settlement as repo;
use crate::x402::reason::Reason;
use crate::x402::scheme::{self, Batching};

/// What to do with a settlement after one pass.
enum Pass {
    Done(Ended),
    Later(Duration),
    /// Its transaction waits on a block: the row stays leased and the
    /// follower wakes the settlement (`Worker::park`).
    Parked,
}

/// How a settlement ended: its final status, transaction and reason.
#[derive(Debug, Clone)]
pub struct Ended {
    pub status: SettlementStatus,
    pub tx_hash: Option<String>,
    pub reason: Option<Reason>,
}

/// A facilitator worker of this replica, held by a request that settles at once.
pub struct Slot {
    permit: tokio::sync::OwnedSemaphorePermit,
    /// When its lease runs out, counted from before it was written, and
    /// the holder name it is written under.
    until: std::time::Instant,
    token: String,
}

/// This replica's facilitator workers.
pub struct Worker {
    deps: Deps,
    /// The step runner, shared with the intents engine.
    steps: Arc<Steps>,
    /// Free workers (none until `spawn`), shared by the claim loop and
    /// requests that settle at once, and the name leases are held under.
    free: Arc<tokio::sync::Semaphore>,
    holder: String,
    /// Settlements ending together are written together.
    finishes: crate::store::group::Group<crate::store::transition::settlements::Finish>,
    /// Wakes the claim loop when a settlement is queued.
    work: Arc<tokio::sync::Notify>,
    /// Wakes requests waiting on a settlement when it ends.
    done: Arc<Finished>,
    /// This worker, for the follower's wake-ups.
    me: std::sync::Weak<Worker>,
    /// The rows this replica holds.
    holds: crate::settle::hold::Holds,
}

impl Worker {
    pub fn new(steps: Arc<Steps>, work: Arc<tokio::sync::Notify>, done: Arc<Finished>) -> Arc<Worker> {
        Arc::new_cyclic(|me| Worker {
            deps: steps.deps.clone(),
            steps,
            free: Arc::new(tokio::sync::Semaphore::new(0)),
            holder: ulid::Ulid::new().to_string(),
            finishes: Default::default(),
            work,
            done,
            me: me.clone(),
            holds: Default::default(),
        })
    }

    /// Settle queued facilitator settlements until the process ends, at
    /// most `facilitator.workers` at once.
    pub fn spawn(self: &Arc<Self>) {
        let workers = self.deps.config.facilitator.workers;
        let me = self.clone();
        tokio::spawn(async move { me.dispatch(workers.max(1)).await });
    }

    /// Lease due facilitator settlements and run them, at most `workers` at
    /// once; woken by `/x402/settle`, polling now and then for other replicas'.
    async fn dispatch(self: Arc<Self>, workers: usize) {
        let holder = self.holder.clone();
        let free = self.free.clone();
        free.add_permits(workers);
        let lease = self.lease_ms();
        loop {
            let available = free.available_permits().min(self.holds.room());
            if available == 0 {
                if self.holds.room() == 0 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                let Ok(p) = free.clone().acquire_owned().await else { return };
                drop(p);
                continue;
            }
            let until = std::time::Instant::now() + Duration::from_millis(lease as u64);
            let token = self.holds.token(&holder);
            match ledger::claim(&self.deps.db, &token, now_ms(), lease, available).await {
                Ok(ids) if !ids.is_empty() => {
                    self.holds.taken(&ids, until, &token);
                    for id in ids {
                        let Ok(permit) = free.clone().acquire_owned().await else { return };
                        let me = self.clone();
                        tokio::spawn(crate::settle::slot::holding(permit, async move {
                            match ledger::get(&me.deps.db, &id).await {
                                Ok(Some(rec)) => drop(me.step(&rec, None).await),
                                Ok(None) => me.holds.done(&id),
                                Err(e) => {
                                    me.holds.done(&id);
                                    tracing::warn!(settlement = %id, error = %e, "reading a claimed facilitator settlement failed")
                                }
                            }
                        }));
                    }
                }
                Ok(_) => {
                    let _ = tokio::time::timeout(Duration::from_millis(250), self.work.notified()).await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming facilitator settlements failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// The lease a request's own settlement is recorded with (`locked_by`,
    /// `locked_until`), and a free worker for it: `None` when every worker is
    /// busy (the settlement is then queued for the claim loop).
    pub fn slot(&self) -> Option<(Slot, String, i64)> {
        if self.holds.room() == 0 {
            return None;
        }
        let permit = self.free.clone().try_acquire_owned().ok()?;
        let until = std::time::Instant::now() + Duration::from_millis(self.lease_ms() as u64);
        let token = self.holds.token(&self.holder);
        Some((Slot { permit, until, token: token.clone() }, token, now_ms() + self.lease_ms()))
    }

    /// A transaction of `rec` is out and not final: the settlement keeps
    /// its leased row and waits on its chain's follower, its worker free;
    /// woken when the transaction is final (its next pass), or when the
    /// park runs out, before the lease does (the row released).
    fn park(&self, rec: &Settlement, tx: String) -> Pass {
        let receipt_wait = Duration::from_secs(self.deps.config.service.receipt_timeout_seconds.max(1));
        let (Some((until, generation)), Some(me)) = (self.holds.park(&rec.id, receipt_wait), self.me.upgrade()) else {
            return Pass::Later(Duration::from_secs(1));
        };
        let id = rec.id.clone();
        let wake = Box::new(move |why| {
            tokio::spawn(async move { me.woken(id, generation, why).await });
        });
        self.steps.follower.park(&rec.chain, crate::settle::follow::Park { tx, until, wake });
        Pass::Parked
    }

    /// Only the claim it parked under acts, and only while the row is
    /// still this replica's (its lease renewed by compare-and-set on the
    /// holder first), as for intents (`settle::Engine::woken`).
    async fn woken(self: Arc<Self>, id: String, generation: u64, why: crate::settle::follow::Woken) {
        let Some(token) = self.holds.current(&id, generation) else { return };
        if why == crate::settle::follow::Woken::TimedOut {
            self.holds.end(&id, generation);
            if let Err(e) = ledger::release(&self.deps.db, &id, &token, now_ms()).await {
                tracing::warn!(settlement = %id, error = %e, "could not release a parked settlement; its lease runs out");
            }
            self.work.notify_one();
            return;
        }
        let Ok(permit) = self.free.clone().acquire_owned().await else { return };
        let until = std::time::Instant::now() + Duration::from_millis(self.lease_ms() as u64);
        let renewed = self.holds.current(&id, generation).is_some()
            && matches!(ledger::renew(&self.deps.db, &id, &token, now_ms() + self.lease_ms()).await, Ok(true));
        if !renewed {
            tracing::info!(settlement = %id, "a parked settlement's row is no longer this replica's; its holder goes on");
            self.holds.end(&id, generation);
            return;
        }
        self.holds.renewed(&id, generation, until);
        crate::settle::slot::holding(permit, async {
            match ledger::get(&self.deps.db, &id).await {
                Ok(Some(rec)) => drop(self.step(&rec, None).await),
                Ok(None) => self.holds.done(&id),
                Err(e) => {
                    self.holds.done(&id);
                    tracing::warn!(settlement = %id, error = %e, "reading a woken facilitator settlement failed; its lease runs out");
                }
            }
        })
        .await;
    }

    /// Run the first pass of a settlement just recorded under `slot`'s lease
    /// (nothing is stored for it yet). `Some` when it ended in this pass;
    /// `None` when it waits for the claim loop (released, due later). Runs
    /// in a task of its own, so a caller that goes away cancels nothing.
    pub async fn settle_now(self: &Arc<Self>, rec: Settlement, slot: Slot) -> Option<Ended> {
        let me = self.clone();
        self.holds.taken(std::slice::from_ref(&rec.id), slot.until, &slot.token);
        // In the request's trace.
        let span = tracing::Span::current();
        let pass = async move { crate::settle::slot::holding(slot.permit, me.step(&rec, Some(vec![]))).await };
        tokio::spawn(tracing::Instrument::instrument(pass, span)).await.ok().flatten()
    }

    fn lease_ms(&self) -> i64 {
        self.deps.config.service.claim_lease_seconds as i64 * 1000
    }

    async fn step(&self, rec: &Settlement, stored: Option<Vec<repo::StoredTx>>) -> Option<Ended> {
        let id = rec.id.as_str();
        let span = tracing::info_span!("settlement pass", settlement = id);
        let pass = match tracing::Instrument::instrument(self.pass(rec, stored), span).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(settlement = id, error = %format!("{e:#}"), "facilitator settlement pass failed; will retry");
                Pass::Later(Duration::from_secs(1))
            }
        };
        if !matches!(pass, Pass::Parked) {
            self.holds.done(id);
        }
        match pass {
            Pass::Done(ended) => Some(ended),
            Pass::Parked => None,
            Pass::Later(after) => {
                if let Err(e) = ledger::reschedule(&self.deps.db, id, now_ms() + after.as_millis() as i64, true).await {
                    tracing::warn!(settlement = id, error = %e, "could not reschedule a facilitator settlement");
                }
                None
            }
        }
    }

    async fn finish(&self, rec: &Settlement, to: SettlementStatus, tx: Option<&str>, why: Option<Reason>) -> anyhow::Result<Pass> {
        self.end(rec, to, tx, why, false, None).await
    }

    /// Settled by `tx`, credited its movement in the books as it is
    /// recorded; failed instead when the books give it to another payment.
    async fn settled(&self, rec: &Settlement, tx: &str, credit: Credit) -> anyhow::Result<Pass> {
        self.end(rec, SettlementStatus::Settled, Some(tx), None, false, Some(credit)).await
    }

    /// The books claim of a settlement settled by someone else's
    /// transaction: its movements, its fee not the relayer's.
    fn foreign(&self, rec: &Settlement, movements: Vec<crate::payment::Movement>) -> Credit {
        Credit { chain: rec.chain.clone(), purpose: Purpose::X402, owner: rec.id.clone(), candidates: movements, relayer_paid: false }
    }

    /// Failed with nothing sent for it: the authorization is free again.
    async fn refuse(&self, rec: &Settlement, why: Reason) -> anyhow::Result<Pass> {
        self.end(rec, SettlementStatus::Failed, None, Some(why), true, None).await
    }

    async fn end(
        &self,
        rec: &Settlement,
        to: SettlementStatus,
        tx: Option<&str>,
        why: Option<Reason>,
        refused: bool,
        credit: Option<Credit>,
    ) -> anyhow::Result<Pass> {
        let outcome =
            ledger::Outcome { status: to, tx_hash: tx.map(str::to_string), error_reason: why.map(|r| r.code().to_string()), refused };
        let finish = crate::store::transition::settlements::Finish { id: rec.id.clone(), outcome, credit };
        let written = self.finishes.write(&self.deps.db, finish).await?;
        self.done.finish(&rec.id);
        if written == Some(false) {
            tracing::warn!(settlement = %rec.id, tx = ?tx, "the transfer is credited to another payment in the books; settlement failed");
            crate::telemetry::books_refused(&rec.chain, "x402");
            return Ok(Pass::Done(Ended { status: SettlementStatus::Failed, tx_hash: None, reason: Some(Reason::TransactionState) }));
        }
        tracing::info!(settlement = %rec.id, status = to.as_str(), tx = ?tx, reason = ?why.map(Reason::code), "facilitator settlement ended");
        Ok(Pass::Done(Ended { status: to, tx_hash: tx.map(str::to_string), reason: why }))
    }

    /// The adapter's chain-state check of a settlement's payment (balance,
    /// authorization unused). `Ok` also when the adapter's `verify` call
    /// itself fails: then nothing more is known, and the chain's own check
    /// as each step is sent stands.
    async fn preflight(
        &self,
        adapter: &Arc<AssetAdapter>,
        req: &PaymentRequirements,
        rec: &Settlement,
    ) -> anyhow::Result<Result<(), ProofError>> {
        match adapter.verify(req, &rec.payload).await {
            Ok(Ok(p)) => Ok(adapter.preflight(&p).await?),
            Ok(Err(e)) => Ok(Err(e)),
            Err(e) => {
                tracing::warn!(settlement = %rec.id, error = %e, "adapter verify call failed");
                Ok(Ok(()))
            }
        }
    }

    /// One pass over a queued settlement this replica holds. `stored`: its
    /// transactions stored so far, when known (none for a row just
    /// recorded); read here otherwise.
    async fn pass(&self, rec: &Settlement, stored: Option<Vec<repo::StoredTx>>) -> anyhow::Result<Pass> {
        let db = &self.deps.db;
        let id = rec.id.as_str();
        if rec.status != SettlementStatus::Queued {
            return Ok(Pass::Done(Ended { status: rec.status, tx_hash: rec.tx_hash.clone(), reason: None }));
        }
        let adapter = self.steps.adapter(&rec.chain, &rec.asset)?;
        let family =
            self.deps.config.chains.get(&rec.chain).map(|c| c.family).ok_or_else(|| anyhow::anyhow!("{} is not configured", rec.chain))?;
        let refusal = |e: &ProofError| Reason::refusal(family, e);
        let req: PaymentRequirements = serde_json::from_str(&rec.requirements)?;
        // Given: the first pass of a row just recorded.
        let fresh = stored.is_some();
        let stored = match stored {
            Some(s) => s,
            None => repo::list_txs(db, id, "x402").await?,
        };
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
            Err(e) if stored.is_empty() => {
                return match self.moved(rec, &adapter, &req).await {
                    Ok(Some((tx, moved))) => self.settled(rec, &tx, self.foreign(rec, moved)).await,
                    Ok(None) => self.refuse(rec, refusal(&e)).await,
                    Err(e) => unavailable(&format!("{e:#}")),
                };
            }
            Err(_) => vec![],
        };
        // A settlement the chain checks as it is sent (one simulated relayer
        // call) is preflighted only to explain a refusal; a longer one (an
        // approval goes first) before anything is sent.
        if stored.is_empty() && !checked_on_send(&steps) {
            match self.preflight(&adapter, &req, rec).await? {
                Ok(()) => {}
                Err(ProofError::ChainUnavailable(m)) => return unavailable(&m),
                Err(e) => return self.refuse(rec, refusal(&e)).await,
            }
        }
        // Which other calls this one may share a relayer transaction with,
        // by its scheme (the upto proxy checks its caller: alone).
        let share = match scheme::named(&rec.scheme).map(|r| r.batching) {
            Some(Batching::Transfers) => Share::TRANSFERS,
            Some(Batching::Channels) => {
                crate::settle::batch_share(&rec.payload, self.deps.config.chains.get(&rec.chain).and_then(|c| c.chain_id))
            }
            Some(Batching::Alone) | None => Share::Alone,
        };
        let share = match self.steps.share_now(id, "x402", share, fresh).await {
            Ok(share) => share,
            Err(e) => return unavailable(&format!("{e:?}")),
        };
        match self.steps.run_steps(id, "x402", &rec.chain, &Role::Relayer, &steps, stored, &share, true).await {
            Ok((hash, receipt)) => {
                let claim =
                    self.steps.claim(&rec.chain, &adapter, &hash, &receipt, &recorded(rec, &req), &rec.payload, Purpose::X402, id)?;
                // A receipt without this payment's own movement did not
                // settle it, whatever else the transaction did (a shared
                // batch's other calls, the contract's other events).
                let status = match self.steps.read_receipt(&adapter, recorded(rec, &req), receipt).await? {
                    ReceiptStatus::Settled(_) if claim.candidates.is_empty() => {
                        ReceiptStatus::Failed(format!("{hash} holds no movement of this payment"))
                    }
                    status => status,
                };
                match status {
                    ReceiptStatus::Settled(_) => {
                        crate::telemetry::settlement_leg(&rec.chain, "x402", "settled", Some(elapsed_since(rec.created_at)));
                        self.settled(rec, &hash, claim).await
                    }
                    ReceiptStatus::Failed(m) => {
                        tracing::info!(settlement = id, detail = %m, "facilitator transaction mined without the transfer");
                        if self.steps.failed_call_retryable(id, "x402", &rec.chain, &hash, &adapter, &req, &rec.payload).await? {
                            return Ok(Pass::Later(Duration::from_secs(1)));
                        }
                        match self.moved(rec, &adapter, &req).await {
                            Ok(Some((tx, moved))) => self.settled(rec, &tx, self.foreign(rec, moved)).await,
                            Ok(None) => self.finish(rec, SettlementStatus::Failed, None, Some(Reason::TransactionState)).await,
                            Err(e) => unavailable(&format!("{e:#}")),
                        }
                    }
                    ReceiptStatus::Pending => Ok(Pass::Later(Duration::from_secs(1))),
                }
            }
            Err(StepError::NotSent(code, m)) => {
                tracing::info!(settlement = id, code = code.code(), detail = %m, "facilitator settlement not sent; retrying");
                Ok(Pass::Later(Duration::from_secs(1)))
            }
            Err(StepError::Pending(m)) => unavailable(&m),
            Err(StepError::Parked(tx)) => Ok(self.park(rec, tx)),
            Err(StepError::WouldRevert(m)) => {
                // This step did not go out: say why if the adapter can.
                tracing::info!(settlement = id, detail = %m, "facilitator settlement would revert");
                match self.moved(rec, &adapter, &req).await {
                    Ok(Some((tx, moved))) => return self.settled(rec, &tx, self.foreign(rec, moved)).await,
                    Ok(None) => {}
                    Err(e) => return unavailable(&format!("{e:#}")),
                }
                let why = match self.preflight(&adapter, &req, rec).await? {
                    Err(e) => refusal(&e),
                    Ok(()) => Reason::TransactionState,
                };
                if repo::list_txs(db, id, "x402").await?.is_empty() {
                    self.refuse(rec, why).await
                } else {
                    self.finish(rec, SettlementStatus::Failed, None, Some(why)).await
                }
            }
            Err(StepError::OverGasCap(m)) => {
                tracing::warn!(settlement = id, detail = %m, "the payer's contract makes its settlement too costly; nothing sent");
                if repo::list_txs(db, id, "x402").await?.is_empty() {
                    self.refuse(rec, Reason::GasCapExceeded).await
                } else {
                    self.finish(rec, SettlementStatus::Failed, None, Some(Reason::GasCapExceeded)).await
                }
            }
            Err(StepError::Reverted(m)) => {
                tracing::info!(settlement = id, detail = %m, "facilitator transaction reverted");
                match self.moved(rec, &adapter, &req).await {
                    Ok(Some((tx, moved))) => self.settled(rec, &tx, self.foreign(rec, moved)).await,
                    Ok(None) => self.finish(rec, SettlementStatus::Failed, None, Some(Reason::TransactionState)).await,
                    Err(e) => unavailable(&format!("{e:#}")),
                }
            }
        }
    }

    /// Did this settlement's authorization move the money by someone
    /// else's transaction (a front-runner of the payload)? Looked for from
    /// a minute before the settlement was recorded: a payload reaches its
    /// resource server moments before it reaches us, and one used longer
    /// ago is a replay, not a front-run.
    async fn moved(
        &self,
        rec: &Settlement,
        adapter: &Arc<AssetAdapter>,
        req: &PaymentRequirements,
    ) -> anyhow::Result<Option<(String, Vec<crate::payment::Movement>)>> {
        const FRONT_RUN_SLACK_MS: i64 = 60_000;
        self.steps.moved_anyway(&rec.chain, adapter, recorded(rec, req), &rec.payload, rec.created_at - FRONT_RUN_SLACK_MS).await
    }
}

/// The payment a settlement moves: the requirements' payTo and amount
/// (`exact`, `upto`), or, for a scheme whose steps are its own (a
/// batch-settlement deposit's amount, a sweep's receiver), the payment its
/// adapter verified and the row recorded.
fn recorded(rec: &Settlement, req: &PaymentRequirements) -> crate::payment::VerifiedPayment {
    match scheme::named(&rec.scheme) {
        Some(r) if r.answers_extra => crate::settle::transfer_of(&rec.payer, &rec.pay_to, &rec.amount),
        _ => crate::settle::expected(&rec.payer, req),
    }
}
