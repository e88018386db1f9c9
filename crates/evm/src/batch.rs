//! Relayer calls that are ready at the same moment go out together as one
//! Multicall3 `aggregate3` transaction per chain.
//!
//! Natural batching (no rhythm known, see `rhythm.rs`): a batch is whatever
//! queued while the previous one was being signed and sent, so a lone call
//! waits for nothing. On a chain that does not mine at each send (blocks a
//! second or more apart, with no steady rhythm yet: a node just started,
//! an Ethereum slot missed), once a batch is out under a head the next
//! waits for the next head (`hold_for_head`), so the calls of one block go
//! out as one transaction instead of one each (a flood of one-call
//! transactions filled the blocks and raised the base fee past what they
//! had signed); a full batch goes at once. An instant chain, seen mining
//! many blocks a second, keeps sending at once with no read. With
//! `settlement_batch_window_ms`, a batch waits that long for more after its
//! first call instead. The batch is run
//! once with every call required to pass (`allowFailure = false`): when that
//! passes, every call passes and the run's gas is the batch's. Otherwise each
//! call is simulated inside the batch (`allowFailure = true`, `eth_call`):
//! one that would revert is answered on its own and left out. What is sent
//! allows each call to fail (`allowFailure = true`): a call that fails
//! between its simulation and the block (a front-run authorization, a spent
//! balance) fails alone and every other call of the batch still lands. Each
//! owner then reads its own outcome from the receipt (its transfer's logs
//! are there or not). Every intent in the batch gets its own `chain_transactions` row
//! holding the same signed bytes, written in one database transaction before
//! the broadcast: recovery is per intent, exactly as for a lone transaction.
//! Where no Multicall3 is deployed (no code at its address, or a simulation
//! that does not decode), calls go out one by one. A batch holds calls of
//! one group with no key in common (`Share::Apart`: payments' transfers;
//! batch-settlement steps of different channels): each group present
//! goes out in a batch of its own, and a call whose key its batch holds
//! waits for the next round.

use std::collections::HashMap;
use std::sync::Arc;

use crate::crypto::Secp256k1Key;
use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::{sol, SolCall};
use serde_json::json;
use tokio::sync::{mpsc, oneshot, Mutex};

use super::tx::{self, gas_for, FeeCache, GasLimit, Net, Nonces, Signed, TxCall};
use crate::db::Db;
use crate::family::chain::ChainClient;
use crate::family::SendError;
use crate::store::settlement as repo;

sol! {
    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result3 {
        bool success;
        bytes returnData;
    }

    function aggregate3(Call3[] calls) external payable returns (Result3[] returnData);
}

/// Where Multicall3 lives on every chain that has it.
pub const MULTICALL3: Address = alloy_primitives::address!("cA11bde05977b3631167028862bE2a173976CA11");

pub use repo::TxRow as Row;

/// One relayer call of one intent's leg, and where its row goes.
pub struct Call {
    pub row: Row,
    pub to: Address,
    pub data: Vec<u8>,
    /// The most gas this call may take, measured from the relayer, when a
    /// payer's contract can make it costly (`Submit::payer_caused`).
    pub limit: Option<u64>,
    /// It shares a batch only with calls of this group holding none of
    /// its keys (`Share::Apart`).
    pub group: &'static str,
    pub keys: Vec<[u8; 32]>,
    pub reply: oneshot::Sender<Result<String, SendError>>,
    /// The span of the pass that queued it.
    pub span: tracing::Span,
}

/// The span a batch is sent in: its one call's (the payment's trace), or
/// for several a span of its own linked to each (in no payment's trace:
/// one payment's would show the others to whoever reads it).
fn span_of(calls: &[Call]) -> tracing::Span {
    match calls {
        [one] => one.span.clone(),
        many => {
            let span = tracing::info_span!("relayer batch", calls = many.len());
            for c in many {
                crate::traces::link(&span, &c.span);
            }
            span
        }
    }
}

/// What a batch needs to sign, store and send for one chain.
pub struct Lane {
    pub chain: Arc<ChainClient>,
    pub net: Net,
    pub relayer: Secp256k1Key,
    pub multicall: Address,
    pub max: usize,
    /// How long a batch waits for more calls after its first.
    pub window: std::time::Duration,
    /// Whether `multicall` has code, once the chain said.
    pub deployed: std::sync::Mutex<Option<bool>>,
    /// The chain's block rhythm: one batch per block where it has one.
    pub clock: Arc<super::rhythm::BlockClock>,
}

impl Lane {
    /// Whether Multicall3 is deployed here: asked once; `None` while the
    /// chain does not answer.
    async fn deployed(&self) -> Option<bool> {
        if let Some(known) = *self.deployed.lock().unwrap() {
            return Some(known);
        }
        let code = self.chain.rpc("eth_getCode", json!([self.multicall, "latest"])).await.ok()?;
        let known = code.as_str().is_some_and(|c| c.len() > 2);
        *self.deployed.lock().unwrap() = Some(known);
        Some(known)
    }
}

/// One batching queue per chain, started on first use.
#[derive(Default)]
pub struct Batchers {
    lanes: Mutex<HashMap<String, mpsc::UnboundedSender<Call>>>,
}

impl Batchers {
    /// Queue `call` on `chain`'s lane, starting the lane with `lane()` if new.
    pub async fn submit(&self, chain: &str, lane: impl FnOnce() -> Lane, relay: &Relay, call: Call) {
        let mut lanes = self.lanes.lock().await;
        let tx = lanes.entry(chain.to_string()).or_insert_with(|| {
            let relay = relay.clone();
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(run(lane(), relay, rx));
            tx
        });
        if let Err(mpsc::error::SendError(call)) = tx.send(call) {
            let _ = call.reply.send(Err(SendError::Unavailable("settlement batcher stopped".into())));
        }
    }
}

/// What signing, storing and sending a transaction needs.
#[derive(Clone)]
pub struct Relay {
    pub db: Db,
    pub nonces: Arc<Nonces>,
    pub fees: Arc<FeeCache>,
}

impl Relay {
    /// Sign a call from `signer` with its next nonce, store it under every
    /// row (one database transaction), and only then broadcast it.
    pub async fn send(
        &self,
        chain: &ChainClient,
        net: Net,
        signer: &Secp256k1Key,
        resync: bool,
        call: TxCall,
        rows: &[Row],
    ) -> Result<Signed, SendError> {
        tx::sign_store_send(chain, net, &self.nonces, &self.fees, resync, signer, call, rows).await
    }
}

/// Natural batching holds a batch for the next head at most this long
/// after the last one went out, reading the head this often meanwhile
/// (reads shared with the follower's; at most 20 a second per lane).
const NEXT_HEAD: std::time::Duration = std::time::Duration::from_secs(1);
const HEAD_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Sort `calls` into batches that may each go out as one transaction: one
/// per group, in the order the groups first come, each of at most `max`
/// calls and holding no key twice. The others (a call whose key its
/// group's batch holds already, or past `max`) wait for the next round,
/// returned second in their order. Every group present has its batch each
/// round and each batch is chosen from all the calls waiting, so one
/// channel's calls, however many, hold up no other channel's, nor
/// transfers.
pub fn together(calls: Vec<Call>, max: usize) -> (Vec<Vec<Call>>, Vec<Call>) {
    let mut batches: Vec<(std::collections::HashSet<[u8; 32]>, Vec<Call>)> = Vec::new();
    let mut later = Vec::new();
    for c in calls {
        let at = match batches.iter().position(|(_, b)| b[0].group == c.group) {
            Some(at) => at,
            None => {
                batches.push((Default::default(), Vec::new()));
                batches.len() - 1
            }
        };
        let (held, batch) = &mut batches[at];
        if batch.len() >= max.max(1) || c.keys.iter().any(|k| held.contains(k)) {
            later.push(c);
        } else {
            held.extend(c.keys.iter().copied());
            batch.push(c);
        }
    }
    (batches.into_iter().map(|(_, b)| b).collect(), later)
}

async fn run(lane: Lane, relay: Relay, mut rx: mpsc::UnboundedReceiver<Call>) {
    let mut resync = false;
    // The head read before the last natural send, and when it went.
    let mut sent_under: Option<(u64, tokio::time::Instant)> = None;
    // Calls that could not share the last batch: first in the next.
    let mut waiting: Vec<Call> = Vec::new();
    loop {
        let first = match waiting.is_empty() {
            true => match rx.recv().await {
                Some(c) => c,
                None => break,
            },
            false => waiting.remove(0),
        };
        let mut calls = vec![first];
        calls.append(&mut waiting);
        // Blocks at a steady pace: everything that queues until the
        // block's middle goes out then, in batches of `max`, and lands in
        // the next block together (an operator's window overrides).
        if let Some(at) = lane.clock.send_at().filter(|_| lane.window.is_zero()) {
            let at = tokio::time::Instant::from_std(at);
            while let Ok(Some(c)) = tokio::time::timeout_at(at, rx.recv()).await {
                calls.push(c);
            }
            while let Ok(c) = rx.try_recv() {
                calls.push(c);
            }
            // Calls that cannot share a batch go in the next one, sent
            // in this block too: only a transaction's own events are read.
            while !calls.is_empty() {
                let (batches, later) = together(calls, lane.max);
                for batch in batches {
                    let span = span_of(&batch);
                    resync = tracing::Instrument::instrument(dispatch(&lane, &relay, batch, resync, false), span).await;
                }
                calls = later;
            }
            continue;
        }
        let until = tokio::time::Instant::now() + lane.window;
        while calls.len() < lane.max.max(1) {
            match rx.try_recv() {
                Ok(c) => calls.push(c),
                Err(_) if lane.window.is_zero() => break,
                // Within the window, wait for the next call.
                Err(_) => match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(c)) => calls.push(c),
                    Ok(None) | Err(_) => break,
                },
            }
        }
        if lane.window.is_zero() && lane.clock.fast() != Some(true) {
            if let Some((head, at)) = sent_under {
                hold_for_head(&lane, &mut rx, &mut calls, head, at + NEXT_HEAD).await;
            }
            // The head this batch goes under (shared with the follower's reads;
            // a node that does not answer in time holds nothing).
            let head = tokio::time::timeout(NEXT_HEAD, lane.chain.head(HEAD_POLL)).await;
            sent_under = head.ok().and_then(Result::ok).map(|h| (h, tokio::time::Instant::now()));
        }
        // Whatever else queued meanwhile is chosen from too: calls waiting
        // on a key never keep new ones out.
        while let Ok(c) = rx.try_recv() {
            calls.push(c);
        }
        let (batches, later) = together(calls, lane.max);
        waiting = later;
        for batch in batches {
            let span = span_of(&batch);
            resync = tracing::Instrument::instrument(dispatch(&lane, &relay, batch, resync, false), span).await;
        }
    }
}

/// Gather calls until the head passes `head` (the last batch's block is
/// out), a batch is full, or `until`. A head that cannot be read holds
/// nothing.
async fn hold_for_head(lane: &Lane, rx: &mut mpsc::UnboundedReceiver<Call>, calls: &mut Vec<Call>, head: u64, until: tokio::time::Instant) {
    let full = lane.max.max(1);
    while calls.len() < full && tokio::time::Instant::now() < until {
        match tokio::time::timeout_at(until, lane.chain.head(HEAD_POLL)).await {
            Ok(Ok(now)) if now <= head => {}
            _ => return,
        }
        let poll = (tokio::time::Instant::now() + HEAD_POLL).min(until);
        while calls.len() < full {
            match tokio::time::timeout_at(poll, rx.recv()).await {
                Ok(Some(c)) => calls.push(c),
                Ok(None) => return,
                Err(_) => break,
            }
        }
    }
}

/// Send `calls` (batched when more than one can go together). Returns
/// whether the next send should re-read the relayer's nonce from the node.
/// `measured`: the payer-caused calls were each measured already (a
/// batch that costs more than usual goes on with what passed).
async fn dispatch(lane: &Lane, relay: &Relay, calls: Vec<Call>, resync: bool, measured: bool) -> bool {
    // One run of the whole batch finds its gas and, when it passes, that
    // every call passes (the usual case): one run on the node, not two.
    // Only a batch that fails it is simulated call by call, and its gas is
    // found again for what is left.
    let (calls, gas) = if calls.len() > 1 {
        let whole = aggregate3Call { calls: calls.iter().map(|c| call3(c, false)).collect() }.abi_encode();
        match lane.deployed().await {
            Some(false) => (Err(calls), GasLimit::OneRun),
            Some(true) => match gas_for(&lane.chain, lane.relayer.address(), lane.multicall, &whole, GasLimit::OneRun).await {
                Ok(gas) => (Ok(calls), GasLimit::Known(gas)),
                Err(_) => (simulate(lane, calls).await, GasLimit::OneRun),
            },
            // The chain does not answer: the simulation decides (and fails
            // over to one by one, whose sends report the outage).
            None => (simulate(lane, calls).await, GasLimit::OneRun),
        }
    } else {
        (Ok(calls), GasLimit::OneRun)
    };
    let calls = match calls {
        // A batch that costs more than its calls usually do may carry a
        // payer contract that burns gas: each such call is measured alone.
        Ok(c)
            if !measured
                && c.len() > 1
                // (`gas_for` answers the run's gas and half again.) A batch
                // whose whole run failed has no known gas: measured too.
                && match gas {
                    GasLimit::Known(g) => g * 2 / 3 > USUAL_CALL_GAS * c.len() as u64,
                    _ => true,
                }
                && c.iter().any(|c| c.limit.is_some()) =>
        {
            let kept = within_limits(lane, c).await.into_iter().map(|(c, _)| c).collect();
            return Box::pin(dispatch(lane, relay, kept, resync, true)).await;
        }
        Ok(c) => c,
        Err(calls) => {
            // No Multicall3 here: one transaction each.
            let mut again = resync;
            for c in calls {
                again = Box::pin(dispatch(lane, relay, vec![c], again, measured)).await;
            }
            return again;
        }
    };
    if calls.is_empty() {
        return resync;
    }
    // A lone payer-caused call is measured once, and refused above its limit.
    let (calls, lone_gas) = match calls.as_slice() {
        [one] if one.limit.is_some() && !measured => {
            let mut kept = within_limits(lane, calls).await;
            let gas = kept.first().and_then(|(_, g)| *g);
            (kept.drain(..).map(|(c, _)| c).collect::<Vec<_>>(), gas)
        }
        _ => (calls, None),
    };
    if calls.is_empty() {
        return resync;
    }
    let call = match calls.as_slice() {
        [one] => {
            let gas = lone_gas.map_or(GasLimit::OneRun, |g| GasLimit::Known(g + g / 2));
            TxCall { to: one.to, data: one.data.clone(), value: U256::ZERO, gas }
        }
        many => {
            let batch = many.iter().map(|c| call3(c, true)).collect();
            TxCall { to: lane.multicall, data: aggregate3Call { calls: batch }.abi_encode(), value: U256::ZERO, gas }
        }
    };
    tracing::debug!(chain = %lane.chain.chain, calls = calls.len(), "sending settlement calls");
    let (rows, replies): (Vec<Row>, Vec<_>) = calls.into_iter().map(|c| (c.row, c.reply)).unzip();
    let many = rows.len() > 1;
    let sent = relay.send(&lane.chain, lane.net, &lane.relayer, resync, call, &rows).await;
    // Each call may fail alone, so a batch that would revert as a whole
    // (gas, the relayer's funds) says nothing about any one call: every
    // call is retried rather than failed.
    let sent = match sent {
        Err(SendError::WouldRevert(m)) if many => Err(SendError::Unavailable(format!("batch would revert: {m}"))),
        other => other,
    };
    let taken = matches!(&sent, Err(SendError::Superseded));
    for reply in replies {
        let _ = reply.send(sent.as_ref().map(|s| s.hash.clone()).map_err(Clone::clone));
    }
    taken
}

/// What a payment's call usually costs in a batch (an EIP-3009 or Permit2
/// transfer with warm accounts is 40,000-90,000): a batch over this much a
/// call is looked at call by call.
pub const USUAL_CALL_GAS: u64 = crate::family::USUAL_SETTLEMENT_GAS;

/// Each call with a limit, run alone from the relayer: one over its limit
/// is answered `OverGasCap` now and never sent; the others come back, with
/// the gas their run used (`None` for a call without a limit, or whose run
/// failed: the batch's own simulation judges it).
async fn within_limits(lane: &Lane, calls: Vec<Call>) -> Vec<(Call, Option<u64>)> {
    let mut kept = Vec::with_capacity(calls.len());
    for c in calls {
        let Some(limit) = c.limit else {
            kept.push((c, None));
            continue;
        };
        // `gas_for` answers the run's gas and half again.
        match gas_for(&lane.chain, lane.relayer.address(), c.to, &c.data, GasLimit::OneRun).await.map(|g| g * 2 / 3) {
            Ok(used) if used > limit => {
                tracing::warn!(chain = %lane.chain.chain, used, limit, "a payer-caused call needs more gas than the cap; refused");
                let _ = c.reply.send(Err(SendError::OverGasCap(format!("{used} gas against a limit of {limit}"))));
            }
            Ok(used) => kept.push((c, Some(used))),
            Err(_) => kept.push((c, None)),
        }
    }
    kept
}

fn call3(c: &Call, allow_failure: bool) -> Call3 {
    Call3 { target: c.to, allowFailure: allow_failure, callData: Bytes::from(c.data.clone()) }
}

/// Run the calls together with failures allowed. Calls that would revert are
/// answered now; the rest come back. `Err` gives every call back when the
/// chain has no working Multicall3.
async fn simulate(lane: &Lane, calls: Vec<Call>) -> Result<Vec<Call>, Vec<Call>> {
    let batch: Vec<Call3> = calls.iter().map(|c| call3(c, true)).collect();
    let data = Bytes::from(aggregate3Call { calls: batch }.abi_encode());
    let from = lane.relayer.address();
    let answer = lane.chain.rpc("eth_call", json!([{ "from": from, "to": lane.multicall, "data": data }, "latest"])).await;
    let results = answer
        .ok()
        .and_then(|v| alloy_primitives::hex::decode(v.as_str()?).ok())
        .and_then(|out| aggregate3Call::abi_decode_returns(&out).ok())
        .filter(|r| r.len() == calls.len());
    let Some(results) = results else { return Err(calls) };
    let mut ok = Vec::with_capacity(calls.len());
    for (c, r) in calls.into_iter().zip(results) {
        if r.success {
            ok.push(c);
        } else {
            let why = alloy_sol_types::decode_revert_reason(&r.returnData).unwrap_or_else(|| "execution reverted".into());
            let _ = c.reply.send(Err(SendError::WouldRevert(why)));
        }
    }
    Ok(ok)
}
