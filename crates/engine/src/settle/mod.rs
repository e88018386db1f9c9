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

pub mod books;
pub mod follow;
pub mod hold;
pub mod keeper;
pub mod slot;
mod source;
pub mod steps;
mod target;

pub use steps::Steps;

use std::sync::Arc;
use std::time::Duration;

use crate::adapter::Registry;
use crate::clock::now_ms;
use crate::config::Config;
use crate::db::Db;
use crate::failure::{Failure, Reason};
use crate::family::keys::Keystore;
use crate::family::{Drivers, SendError};
use crate::intent::{Intent, Status};
use crate::payment::{PaymentRequirements, VerifiedPayment};
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
}

pub struct Engine {
    deps: Deps,
    /// The step runner, shared with the x402 worker.
    steps: Arc<Steps>,
    /// The intents' legs that settle together are written together (a batch's receipt).
    settled: crate::store::group::Group<transition::LegSettled>,
    /// And the payouts that start together.
    payouts: crate::store::group::Group<transition::StartPayout>,
    /// This engine, for the follower's wake-ups.
    me: std::sync::Weak<Engine>,
    /// Free workers (set by `spawn`), shared by claimed and woken passes.
    free: std::sync::OnceLock<Arc<tokio::sync::Semaphore>>,
    /// The rows this replica holds, and the name its leases are under.
    holds: hold::Holds,
    holder: String,
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
    /// Its transaction waits on a block: the entry stays leased, and the
    /// follower wakes the intent (`Engine::park`).
    Parked,
}

/// Why a leg's transactions did not all land this pass. The strings are
/// for the logs only.
#[derive(Debug)]
pub(crate) enum StepError {
    /// Nothing new is on its way: try again later; the code says why.
    NotSent(Failure, String),
    /// A transaction is out and not final yet: wait, it may still land.
    Pending(String),
    /// A transaction is out and not final at the first look: the pass
    /// ends and its owner parks on the follower (`run_steps`' `park`).
    Parked(String),
    /// The chain says the step would fail; nothing was sent.
    WouldRevert(String),
    /// A transaction was included and failed, or can never be included.
    Reverted(String),
    /// A payer-caused call needs more gas than the chain's cap: nothing was sent.
    OverGasCap(String),
}

impl From<SendError> for StepError {
    fn from(e: SendError) -> Self {
        let detail = e.to_string();
        match e {
            SendError::WouldRevert(m) => StepError::WouldRevert(m),
            SendError::Lost(m) => StepError::Reverted(m),
            SendError::OverGasCap(m) => StepError::OverGasCap(m),
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
/// A payment payload (x402 JSON) with one more `extensions` entry.
pub(crate) fn with_extension(proof: &str, name: &str, value: serde_json::Value) -> anyhow::Result<String> {
    let mut payload: serde_json::Value = serde_json::from_str(proof)?;
    let Some(fields) = payload.as_object_mut() else { anyhow::bail!("the assembled payload is not a JSON object") };
    let extensions = fields.entry("extensions").or_insert_with(|| serde_json::json!({}));
    let Some(extensions) = extensions.as_object_mut() else { anyhow::bail!("the assembled payload's extensions are not an object") };
    extensions.insert(name.to_string(), value);
    Ok(payload.to_string())
}

pub(crate) fn expected(payer: &str, req: &PaymentRequirements) -> VerifiedPayment {
    transfer_of(payer, &req.pay_to, &req.amount)
}

pub(crate) fn transfer_of(payer: &str, pay_to: &str, amount: &str) -> VerifiedPayment {
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
pub(crate) fn elapsed_since(at_ms: i64) -> Duration {
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
    /// An engine with a step runner of its own.
    pub fn new(deps: Deps) -> Arc<Engine> {
        Engine::with_steps(Steps::new(deps))
    }

    /// An engine sharing `steps` (with the x402 worker).
    pub fn with_steps(steps: Arc<Steps>) -> Arc<Engine> {
        Arc::new_cyclic(|me| Engine {
            deps: steps.deps.clone(),
            steps,
            settled: Default::default(),
            payouts: Default::default(),
            me: me.clone(),
            free: Default::default(),
            holds: Default::default(),
            holder: ulid::Ulid::new().to_string(),
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
        let free = self.free.get_or_init(|| Arc::new(tokio::sync::Semaphore::new(workers))).clone();
        let lease = self.lease();
        loop {
            // Rows parked or waiting for a batch hold no worker: at most
            // `MOST_HELD` of them, so a flood queues in the table.
            if self.holds.room() == 0 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            let Ok(first) = free.clone().acquire_owned().await else { return };
            // Passes of one batch end together: let the others end too, so
            // that one claim takes their places at once.
            tokio::task::yield_now().await;
            let mut permits = vec![first];
            while permits.len() < CLAIM_MAX.min(self.holds.room()) {
                match free.clone().try_acquire_owned() {
                    Ok(p) => permits.push(p),
                    Err(_) => break,
                }
            }
            let until = std::time::Instant::now() + lease;
            let token = self.holds.token(&self.holder);
            match repo::claim(&self.deps.db, &token, now_ms(), lease.as_millis() as i64, permits.len()).await {
                Ok(ids) if !ids.is_empty() => {
                    self.holds.taken(&ids, until, &token);
                    // Read every claimed intent at once; a pass whose read
                    // failed here reads its own.
                    let mut read = self.read_claimed(&ids).await;
                    for (id, permit) in ids.into_iter().zip(permits) {
                        let me = self.clone();
                        let claimed = read.remove(&id);
                        tokio::spawn(slot::holding(permit, async move {
                            me.step(&id, claimed).await;
                            // The pass may have queued more work due now (a payout).
                            me.deps.work.notify_one();
                        }));
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
        if !matches!(next, Next::Parked) {
            self.holds.done(id);
        }
        let res = match next {
            Next::Done => repo::dequeue(db, id).await,
            Next::Later(after, failed) => repo::reschedule(db, id, now_ms() + after.as_millis() as i64, failed).await.map(|_| ()),
            Next::Recorded | Next::Parked => Ok(()),
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
        // Every pass is a span of the trace of the request that made the
        // intent: its whole life is one trace.
        use tracing::Instrument as _;
        let span = tracing::info_span!("settlement pass", intent = %i.id, status = %i.status);
        crate::traces::set_parent(&span, i.trace.as_deref());
        async move {
            match i.status {
                Status::Pending => self.source_leg(i, txs).await,
                Status::SourceSettled | Status::TargetSettling => self.target_leg(i, txs).await,
                _ => Ok(Next::Done),
            }
        }
        .instrument(span)
        .await
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

    /// `tx` of intent `i` is out and not final: the intent keeps its
    /// leased entry and waits on `chain`'s follower, its worker free; it is
    /// woken when `tx` is final, or when the park runs out (before the
    /// lease does), then releases its entry the ordinary way.
    fn park(&self, i: &Intent, chain: &str, tx: String) -> Next {
        let receipt_wait = Duration::from_secs(self.deps.config.service.receipt_timeout_seconds.max(1));
        let (Some((until, generation)), Some(me)) = (self.holds.park(&i.id, receipt_wait), self.me.upgrade()) else {
            return self.later_unavailable(i, &format!("{tx} is not final yet"));
        };
        let id = i.id.clone();
        let wake = Box::new(move |why| {
            tokio::spawn(async move { me.woken(id, generation, why).await });
        });
        self.steps.follower.park(chain, follow::Park { tx, until, wake });
        Next::Parked
    }

    /// A parked intent woken by the follower: its next pass (on a free
    /// worker), or its entry released when the wait ran out.
    /// Only the claim it parked under acts, and only while the row is
    /// still this replica's: the lease is renewed by compare-and-set on the
    /// holder before the pass (after a wait for a worker), or the pass is
    /// dropped (another holder has the row, or it was released).
    async fn woken(self: Arc<Self>, id: String, generation: u64, why: follow::Woken) {
        let Some(token) = self.holds.current(&id, generation) else { return };
        if why == follow::Woken::TimedOut {
            self.holds.end(&id, generation);
            if let Err(e) = repo::release(&self.deps.db, &id, &token, now_ms()).await {
                tracing::warn!(intent = %id, error = %e, "could not release a parked intent; its lease runs out");
            }
            self.deps.work.notify_one();
            return;
        }
        let Some(free) = self.free.get().cloned() else { return };
        let Ok(permit) = free.acquire_owned().await else { return };
        let lease = self.lease();
        let until = std::time::Instant::now() + lease;
        let renewed = self.holds.current(&id, generation).is_some()
            && matches!(repo::renew(&self.deps.db, &id, &token, now_ms() + lease.as_millis() as i64).await, Ok(true));
        if !renewed {
            tracing::info!(intent = %id, "a parked intent's row is no longer this replica's; its holder goes on");
            self.holds.end(&id, generation);
            return;
        }
        self.holds.renewed(&id, generation, until);
        slot::holding(permit, self.step(&id, None)).await;
        self.deps.work.notify_one();
    }

    fn lease(&self) -> Duration {
        Duration::from_secs(self.deps.config.service.claim_lease_seconds)
    }

    fn later_unavailable(&self, i: &Intent, why: &str) -> Next {
        tracing::info!(intent = %i.id, why, "chain unavailable; retrying");
        Next::Later(Duration::from_secs(1), false)
    }
}

/// What a proof's authorization leaves on chain when it is used, read
/// from the x402 payload itself, by the asset's configured `scheme` (never
/// by what the payload chooses to carry): `eip3009` reads
/// `payload.authorization`, the Permit2 schemes `payload.permit2Authorization`.
/// The scheme's adapter reads that field and no other, so a payload that
/// also carries the other shape is read as the adapter read it (taking it
/// for `Own` would let a junk field loosen what the books accept). Any
/// other scheme is `Own`: only the service's own transaction can be
/// credited for it. The adapter verified the payload; this only says what
/// its use proves.
pub fn authorization(proof: &str, scheme: &str, chain_id: Option<u64>) -> crate::payment::Authorization {
    use crate::payment::{Authorization, Permit2Authorization};
    let Ok(v) = serde_json::from_str::<serde_json::Value>(proof) else { return Authorization::Own };
    if scheme == "batch-settlement" {
        return batch_step(&v, chain_id).map_or(Authorization::Own, Authorization::BatchSettlement);
    }
    let text = |p: &str| v.pointer(p).and_then(|s| s.as_str()).map(str::to_string);
    let number = |p: &str| match v.pointer(p) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    if scheme == "eip3009" {
        let (Some(from), Some(nonce)) = (text("/payload/authorization/from"), text("/payload/authorization/nonce")) else {
            return Authorization::Own;
        };
        let nonce = alloy_primitives::hex::decode(&nonce).ok().and_then(|n| <[u8; 32]>::try_from(n).ok());
        return match nonce {
            Some(nonce) => Authorization::Eip3009 { authorizer: from, nonce },
            None => Authorization::Own,
        };
    }
    if !matches!(scheme, "permit2" | "upto" | "tron-permit2") {
        return Authorization::Own;
    }
    let a = "/payload/permit2Authorization";
    let fields = (
        text(&format!("{a}/from")),
        text(&format!("{a}/spender")),
        text(&format!("{a}/permitted/token")),
        number(&format!("{a}/permitted/amount")),
        number(&format!("{a}/nonce")),
        number(&format!("{a}/deadline")),
        text(&format!("{a}/witness/to")),
        number(&format!("{a}/witness/validAfter")),
    );
    match fields {
        (Some(owner), Some(spender), Some(token), Some(amount), Some(nonce), Some(deadline), Some(to), Some(valid_after)) => {
            Authorization::Permit2(Permit2Authorization { owner, spender, token, amount, nonce, deadline, to, valid_after })
        }
        _ => Authorization::Own,
    }
}

/// A settlement of one step that the host signs is checked by the chain
/// (simulated) as it is sent, which covers what `preflight` checks.
pub(crate) fn checked_on_send(steps: &[crate::payment::SettleStep]) -> bool {
    use crate::payment::{SettleStep, Submission};
    matches!(steps, [SettleStep { submission: Submission::EvmCall(_) | Submission::SolanaCosign(_), .. }])
}

/// The contract event a batch-settlement step's transaction must hold, from
/// the payload the adapter verified (the channels of a claim by their
/// configs' ids on this chain, never an id the payload states).
fn batch_step(v: &serde_json::Value, chain_id: Option<u64>) -> Option<crate::payment::BatchStep> {
    use crate::payment::BatchStep;
    use batch_wire::payload::{parse, DepositAuthorization, Payload};
    let keccak = |d: &[u8]| alloy_primitives::keccak256(d).0;
    let id = |config: &batch_wire::ChannelConfig| chain_id.map(|c| batch_wire::channel_id(&keccak, config, c).0);
    Some(match parse(v.get("payload")?).ok()? {
        Payload::Deposit { config, deposit, .. } => {
            let channel = id(&config)?;
            let nonce = match deposit.authorization {
                DepositAuthorization::Erc3009 { salt, .. } => Some(batch_wire::erc3009_nonce(&keccak, channel.into(), salt).0),
                DepositAuthorization::Permit2 { .. } => None,
            };
            BatchStep::Deposit { channel, nonce }
        }
        Payload::Claim { claims, .. } => BatchStep::Claim {
            rows: claims.iter().map(|c| id(&c.voucher.channel).map(|i| (i, c.totalClaimed))).collect::<Option<Vec<_>>>()?,
        },
        Payload::Settle { .. } => BatchStep::Settle,
        Payload::Refund { config, .. } => BatchStep::Refund { channel: id(&config)? },
        Payload::Voucher { .. } => return None,
    })
}

/// With which other calls a batch-settlement step may share a relayer
/// transaction: other steps of the scheme (their events are read by the
/// contract's own, never another scheme's transfers) touching none of its
/// channels, nor its sweep's receiver and token. Two claims of one channel
/// in one transaction could take each other's `Claimed` (a row at or below
/// the total is a no-op without an event), two refunds each other's
/// `Refunded`, two sweeps each other's `Settled`; a refund's claim rows
/// are its channels too. An ERC-3009 deposit is told apart by its own
/// authorization's event as well (`BatchStep::Deposit`); a Permit2
/// deposit, which leaves none, and anything unread go alone. The signers
/// the contract checks (a deposit's payer, a claim row's payer where no
/// payer authorizer signs, the receiver authorizer of a claim or refund)
/// go with it: the driver sends it alone when one of them has code.
pub(crate) fn batch_share(proof: &str, chain_id: Option<u64>) -> crate::family::Share {
    use crate::family::Share;
    use batch_wire::payload::{parse, DepositAuthorization, Payload};
    let keccak = |d: &[u8]| alloy_primitives::keccak256(d).0;
    let Some(chain_id) = chain_id else { return Share::Alone };
    let id = |config: &batch_wire::ChannelConfig| batch_wire::channel_id(&keccak, config, chain_id).0;
    let Some(payload) = serde_json::from_str::<serde_json::Value>(proof).ok().and_then(|v| parse(v.get("payload")?).ok()) else {
        return Share::Alone;
    };
    // A claim row runs the payer's code for its voucher unless a payer
    // authorizer signs it (ECDSA only), and the receiver authorizer's.
    let rows = |claims: &[batch_wire::VoucherClaim]| {
        let payer = |c: &batch_wire::ChannelConfig| c.payerAuthorizer.is_zero().then_some(c.payer);
        claims.iter().flat_map(|c| payer(&c.voucher.channel).into_iter().chain([c.voucher.channel.receiverAuthorizer])).collect::<Vec<_>>()
    };
    let (keys, signers) = match payload {
        Payload::Deposit { config, deposit, .. } => match deposit.authorization {
            DepositAuthorization::Erc3009 { .. } => (vec![id(&config)], vec![config.payer]),
            DepositAuthorization::Permit2 { .. } => return Share::Alone,
        },
        Payload::Claim { claims, .. } => (claims.iter().map(|c| id(&c.voucher.channel)).collect(), rows(&claims)),
        Payload::Refund { config, completion, .. } => (
            std::iter::once(id(&config)).chain(completion.claims.iter().map(|c| id(&c.voucher.channel))).collect(),
            std::iter::once(config.receiverAuthorizer).chain(rows(&completion.claims)).collect(),
        ),
        Payload::Settle { receiver, token } => {
            (vec![keccak(&[b"sweep".as_slice(), receiver.as_slice(), token.as_slice()].concat())], vec![])
        }
        Payload::Voucher { .. } => return Share::Alone,
    };
    let mut signers: Vec<String> = signers.iter().map(|a| a.to_checksum(None)).collect();
    signers.sort();
    signers.dedup();
    Share::Apart { group: "batch-settlement", keys, signers }
}
