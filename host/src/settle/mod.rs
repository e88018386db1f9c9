//! The settlement engine: takes intents from `settlement_queue` and moves
//! them PENDING → SOURCE_SETTLED → TARGET_SETTLING → TARGET_SETTLED.
//!
//! One file per leg (`source`, `target`) reads like the state diagram;
//! `steps` gets a leg's transactions on chain. Everything chain-specific is
//! a family driver's (`crate::family`): this module holds no EVM code.
//!
//! Exactly once: every signed transaction is stored before it is broadcast
//! and a retry re-sends the stored bytes; `(intent, leg, step)` is a primary
//! key; and each payout authorization's nonce is derived from the intent
//! id, so the token itself refuses a second payout.

mod facilitator;
pub use facilitator::{Ended, Slot};
pub mod keeper;
mod source;
mod steps;
mod target;

use std::sync::Arc;
use std::time::Duration;

use crate::adapter::{AdapterFailure, Answer, AssetAdapter, Registry};
use crate::clock::now_ms;
use crate::config::Config;
use crate::db::Db;
use crate::failure::{Failure, Reason};
use crate::family::keys::{Keystore, Role};
use crate::family::{Driver, Drivers, Receipt, SendError};
use crate::intent::{Intent, Status};
use crate::payment::{PaymentRequirements, ReceiptStatus, Transfer, VerifiedPayment};
use crate::sanctions::SanctionsList;
use crate::store::transition::intents as transition;
use crate::store::{intents, settlement as repo};

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
    pub drivers: Arc<Drivers>,
    pub sanctions: Arc<SanctionsList>,
    /// Wakes this replica's workers when work is queued.
    pub work: Arc<tokio::sync::Notify>,
    /// Wakes this replica's facilitator workers when a settlement is queued.
    pub x402_work: Arc<tokio::sync::Notify>,
    /// Wakes requests waiting on a facilitator settlement when it ends.
    pub x402_done: Arc<crate::x402::finished::Finished>,
}

pub struct Engine {
    deps: Deps,
    setup_locks: tokio::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// This replica's free facilitator workers (none until `spawn`), shared
    /// by the claim loop and requests that settle at once, and the name its
    /// leases are held under.
    x402_free: Arc<tokio::sync::Semaphore>,
    x402_holder: String,
    /// Transactions recorded confirmed by this replica (see `confirmed`).
    confirmed: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::OnceCell<()>>>>,
    /// Facilitator settlements ending together are written together.
    x402_finishes: crate::store::group::Group<crate::store::transition::settlements::Finish>,
    /// So are the intents' legs that settle together (a batch's receipt).
    settled: crate::store::group::Group<transition::LegSettled>,
    /// And the payouts that start together.
    payouts: crate::store::group::Group<transition::StartPayout>,
}

/// A claimed intent as read with the others claimed at once, and every
/// transaction stored for it, by leg. Only the claim's holder changes
/// either until the pass ends.
struct Claimed {
    intent: Intent,
    txs: Vec<(String, repo::StoredTx)>,
}

/// A leg's stored transactions: from the claim's read when there is one.
async fn leg_txs(db: &Db, id: &str, leg: &str, read: Option<Vec<(String, repo::StoredTx)>>) -> anyhow::Result<Vec<repo::StoredTx>> {
    Ok(match read {
        Some(txs) => txs.into_iter().filter(|(l, _)| l == leg).map(|(_, t)| t).collect(),
        None => repo::list_txs(db, id, leg).await?,
    })
}

/// What to do with a queue entry after one pass.
enum Next {
    /// Terminal: drop it from the queue.
    Done,
    /// Come back after this long; `failed` counts against the retry budget.
    Later(Duration, bool),
    /// The pass wrote its queue entry with its last transition (a settled
    /// leg: the payout queued, or the entry dropped).
    Recorded,
}

/// Why a leg's transactions did not all land this pass. The strings are
/// for the logs only.
#[derive(Debug)]
enum StepError {
    /// Nothing new is on its way: try again later; the code says why.
    NotSent(Failure, String),
    /// A transaction is out and not final yet: wait, it may still land.
    Pending(String),
    /// The chain says the step would fail; nothing was sent.
    WouldRevert(String),
    /// A transaction was included and failed, or can never be included.
    Reverted(String),
}

impl From<SendError> for StepError {
    fn from(e: SendError) -> Self {
        let detail = e.to_string();
        match e {
            SendError::WouldRevert(m) => StepError::WouldRevert(m),
            SendError::Lost(m) => StepError::Reverted(m),
            SendError::Unfunded(_) => StepError::NotSent(Failure::RelayerUnfunded, detail),
            SendError::Unavailable(_) => StepError::NotSent(Failure::ChainUnavailable, detail),
            SendError::Superseded | SendError::Refused(_) | SendError::Unsupported(_) => {
                StepError::NotSent(Failure::PayoutNotDispatched, detail)
            }
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

impl Engine {
    pub fn new(deps: Deps) -> Arc<Engine> {
        Arc::new(Engine {
            deps,
            setup_locks: Default::default(),
            x402_free: Arc::new(tokio::sync::Semaphore::new(0)),
            x402_holder: ulid::Ulid::new().to_string(),
            confirmed: Default::default(),
            x402_finishes: Default::default(),
            settled: Default::default(),
            payouts: Default::default(),
        })
    }

    /// Settle queued intents until the process ends, at most `workers` at
    /// once, and facilitator settlements, at most `facilitator.workers`. One
    /// loop per replica claims work, as much as there are free workers, so
    /// idle workers cost the database nothing.
    pub fn spawn(self: &Arc<Self>, workers: usize) {
        let me = self.clone();
        tokio::spawn(async move { me.dispatch(workers.max(1)).await });
        let x402_workers = self.deps.config.facilitator.workers;
        let me = self.clone();
        tokio::spawn(async move { me.dispatch_x402(x402_workers.max(1)).await });
        self.spawn_keeper();
    }

    async fn dispatch(self: Arc<Self>, workers: usize) {
        let holder = ulid::Ulid::new().to_string();
        let free = Arc::new(tokio::sync::Semaphore::new(workers));
        loop {
            let Ok(first) = free.clone().acquire_owned().await else { return };
            // Passes of one batch end together: let the others end too, so
            // that one claim takes their places at once.
            tokio::task::yield_now().await;
            let mut permits = vec![first];
            while permits.len() < CLAIM_MAX {
                match free.clone().try_acquire_owned() {
                    Ok(p) => permits.push(p),
                    Err(_) => break,
                }
            }
            match repo::claim(&self.deps.db, &holder, now_ms(), self.deps.config.service.claim_lease_seconds as i64 * 1000, permits.len())
                .await
            {
                Ok(ids) if !ids.is_empty() => {
                    // Read every claimed intent at once; a pass whose read
                    // failed here reads its own.
                    let mut read = self.read_claimed(&ids).await;
                    for (id, permit) in ids.into_iter().zip(permits) {
                        let me = self.clone();
                        let claimed = read.remove(&id);
                        tokio::spawn(async move {
                            me.step(&id, claimed).await;
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

    /// The claimed intents and their stored transactions, two reads for
    /// all of them instead of a few each. An intent missing here (or a
    /// failed read) is read by its own pass.
    async fn read_claimed(&self, ids: &[String]) -> std::collections::HashMap<String, Claimed> {
        let db = &self.deps.db;
        let (Ok(all), Ok(txs)) = (intents::get_many(db, ids).await, repo::list_txs_of(db, ids).await) else { return Default::default() };
        let mut read: std::collections::HashMap<String, Claimed> =
            all.into_iter().map(|i| (i.id.clone(), Claimed { intent: i, txs: vec![] })).collect();
        for (id, leg, tx) in txs {
            if let Some(c) = read.get_mut(&id) {
                c.txs.push((leg, tx));
            }
        }
        read
    }

    /// One pass over one claimed intent, read after its claim (`None`:
    /// read it now).
    async fn step(&self, id: &str, read: Option<Claimed>) {
        let next = match self.process(id, read).await {
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
            Next::Recorded => Ok(()),
        };
        if let Err(e) = res {
            tracing::warn!(intent = id, error = %e, "could not update the settlement queue");
        }
    }

    async fn process(&self, id: &str, read: Option<Claimed>) -> anyhow::Result<Next> {
        let (i, txs) = match read {
            Some(c) => (c.intent, Some(c.txs)),
            None => match intents::get(&self.deps.db, id).await? {
                Some(i) => (i, None),
                None => return Ok(Next::Done),
            },
        };
        match i.status {
            Status::Pending => self.source_leg(i, txs).await,
            Status::SourceSettled | Status::TargetSettling => self.target_leg(i, txs).await,
            _ => Ok(Next::Done),
        }
    }

    fn adapter(&self, chain: &str, asset: &str) -> anyhow::Result<Arc<AssetAdapter>> {
        self.deps.registry.asset(chain, asset).ok_or_else(|| anyhow::anyhow!("{chain}/{asset} is not served"))
    }

    fn driver(&self, chain: &str) -> anyhow::Result<Arc<dyn Driver>> {
        self.deps.drivers.for_chain(chain).ok_or_else(|| anyhow::anyhow!("no driver for {chain}'s family in this build"))
    }

    async fn fail(&self, i: &Intent, to: Status, why: Reason) -> anyhow::Result<Next> {
        tracing::info!(intent = %i.id, status = %to, code = why.code.code(), message = %why.message, "settlement ended");
        let outcome = if to == Status::Blocked { "blocked" } else { "failed" };
        crate::telemetry::settlement_leg(&i.payer_chain, "source", outcome, Some(elapsed_since(i.updated_at)));
        transition::transition(&self.deps.db, &i.id, i.status, to, Some(&why), now_ms()).await?;
        Ok(Next::Done)
    }

    fn max_backoff(&self) -> Duration {
        Duration::from_secs(self.deps.config.service.retry_max_backoff_seconds.max(1))
    }

    /// Have a host-held wallet authorize `transfer`: the adapter says what
    /// to sign, the family's driver signs it, the adapter assembles the proof.
    async fn authorize(
        &self,
        adapter: &Arc<AssetAdapter>,
        driver: &dyn Driver,
        wallet: &Role,
        req: &PaymentRequirements,
        transfer: Transfer,
    ) -> anyhow::Result<String> {
        let request = adapter.authorize(&transfer).await.or_refused("authorize")?;
        let signature = driver.sign(wallet, &request).await?;
        Ok(adapter.assemble(req, &transfer, &request, signature).await.or_refused("assemble")?)
    }

    async fn read_receipt(
        &self,
        adapter: &Arc<AssetAdapter>,
        payment: VerifiedPayment,
        receipt: Arc<Receipt>,
    ) -> Result<ReceiptStatus, AdapterFailure> {
        adapter.read_receipt(&payment, &receipt.text).await.or_refused("read-receipt")
    }

    /// A payment the service could not land (its call would revert, or
    /// reverted, or its authorization is refused as used or expired): did
    /// the money move anyway, under the same authorization, by someone
    /// else's transaction? The final transaction that moved it, by the
    /// chain's record and the adapter's reading of its receipt. `Err` when
    /// the chain cannot say now: then nothing is concluded.
    async fn moved_anyway(
        &self,
        chain: &str,
        adapter: &Arc<AssetAdapter>,
        payment: VerifiedPayment,
        proof: &str,
        since_ms: i64,
    ) -> anyhow::Result<Option<String>> {
        let driver = self.driver(chain)?;
        let evidence = signature_words(proof);
        if evidence.is_empty() {
            return Ok(None);
        }
        let found = driver.landed(chain, &adapter.ctx.token, &payment, &evidence, since_ms).await?;
        let confirmations = self.deps.config.chains.get(chain).map_or(1, |c| c.confirmations.max(1));
        for tx in found {
            match driver.finality(chain, &tx, confirmations).await? {
                crate::family::Finality::Confirmed(receipt) => {
                    if let ReceiptStatus::Settled(_) = self.read_receipt(adapter, payment.clone(), receipt).await? {
                        tracing::warn!(chain, tx = %tx, payer = %payment.payer, "the authorization was landed by another sender; the money moved");
                        return Ok(Some(tx));
                    }
                }
                // Mined but not final yet: come back when it is.
                crate::family::Finality::Pending => anyhow::bail!("{tx} moved the payment and is not final yet"),
                crate::family::Finality::Failed => {}
            }
        }
        Ok(None)
    }

    fn later_unavailable(&self, i: &Intent, why: &str) -> Next {
        tracing::info!(intent = %i.id, why, "chain unavailable; retrying");
        Next::Later(Duration::from_secs(1), false)
    }
}

/// The words of a proof's signature that any transaction using it carries
/// in its input (`r ‖ s`: the first 64 bytes, whether the contract takes
/// the signature as bytes or as v, r, s). Empty when the proof has none.
pub fn signature_words(proof: &str) -> Vec<u8> {
    let sig = serde_json::from_str::<serde_json::Value>(proof)
        .ok()
        .and_then(|v| v.pointer("/payload/signature").and_then(|s| s.as_str()).map(str::to_string))
        .and_then(|s| alloy_primitives::hex::decode(s).ok())
        .unwrap_or_default();
    if sig.len() >= 64 {
        sig[..64].to_vec()
    } else {
        vec![]
    }
}

/// A settlement of one step that the host signs is checked by the chain
/// (simulated) as it is sent, which covers what `preflight` checks.
fn checked_on_send(steps: &[crate::payment::SettleStep]) -> bool {
    use crate::payment::{SettleStep, Submission};
    matches!(steps, [SettleStep { submission: Submission::EvmCall(_) | Submission::SolanaCosign(_), .. }])
}
