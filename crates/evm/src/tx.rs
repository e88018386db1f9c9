//! EVM transactions the service signs, built and signed with alloy: EIP-1559,
//! or legacy (type 0) where a chain takes nothing else; one nonce sequence
//! per (chain, signer).

use crate::crypto::Secp256k1Key;
use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope, TxLegacy};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{keccak256, Address, Bytes, TxKind, U256};
use serde_json::{json, Value};

use crate::config::TxType;
use crate::family::chain::{ChainClient, ChainError};
use crate::family::{Receipt, SendError};
use crate::store::settlement as repo;

/// Which chain a transaction is for and what type it must be.
#[derive(Debug, Clone, Copy)]
pub struct Net {
    pub chain_id: u64,
    pub kind: TxType,
}

/// A transaction before its nonce and signature.
#[derive(Clone)]
pub enum Unsigned {
    Eip1559(TxEip1559),
    Legacy(TxLegacy),
}

impl Unsigned {
    /// A call of `kind` at the current fees; `headroom` multiplies the gas
    /// price so the transaction still gets in after fees rose a little.
    fn new(
        Net { chain_id, kind }: Net,
        (price, tip): (u128, u128),
        headroom: u128,
        gas_limit: u64,
        to: Address,
        value: U256,
        input: Bytes,
    ) -> Unsigned {
        match kind {
            TxType::Eip1559 => Unsigned::Eip1559(TxEip1559 {
                chain_id,
                nonce: 0,
                gas_limit,
                max_fee_per_gas: price * headroom + tip,
                max_priority_fee_per_gas: tip,
                to: TxKind::Call(to),
                value,
                access_list: Default::default(),
                input,
            }),
            // A legacy price is paid in full, so less headroom: a fifth per step.
            TxType::Legacy => Unsigned::Legacy(TxLegacy {
                chain_id: Some(chain_id),
                nonce: 0,
                gas_price: price + price * (headroom - 1) / 5 + tip,
                gas_limit,
                to: TxKind::Call(to),
                value,
                input,
            }),
        }
    }

    /// Sign with `nonce`: the raw bytes and the transaction hash.
    fn sign(&self, signer: &Secp256k1Key, nonce: u64) -> Result<(Vec<u8>, String), String> {
        let signed = |hash: &alloy_primitives::B256| crate::crypto::secp256k1_sign(signer, hash).map_err(|e| format!("{e:#}"));
        let raw = match self.clone() {
            Unsigned::Eip1559(tx) => {
                let tx = TxEip1559 { nonce, ..tx };
                let sig = signed(&tx.signature_hash())?;
                TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
            }
            Unsigned::Legacy(tx) => {
                let tx = TxLegacy { nonce, ..tx };
                let sig = signed(&tx.signature_hash())?;
                TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
            }
        };
        let hash = format!("{:#x}", keccak256(&raw));
        Ok((raw, hash))
    }
}

/// What a node's error answer means. The one place that reads nodes'
/// error texts: everything downstream gets these types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSays {
    Reverts,
    /// This exact transaction is in the node already.
    Known,
    NonceTaken,
    /// Another transaction holds this nonce in the node's pool.
    Occupied,
    Unfunded,
    Other,
}

pub fn node_says(code: i64, message: &str) -> NodeSays {
    let m = message.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| m.contains(n));
    if has(&["already known", "already imported", "alreadyknown", "known transaction", "already in the pool"]) {
        NodeSays::Known
    } else if has(&["nonce too low", "noncetoolow", "nonce has already been used", "old nonce", "oldnonce"]) {
        NodeSays::NonceTaken
    } else if has(&["replacement transaction underpriced", "replacement fee too low", "already exists with same nonce"]) {
        NodeSays::Occupied
    } else if has(&["insufficient funds", "insufficientfunds"]) {
        NodeSays::Unfunded
    } else if code == 3 || has(&["revert"]) {
        NodeSays::Reverts
    } else {
        NodeSays::Other
    }
}

/// A failed call that simulates or estimates a transaction.
fn call_error(e: ChainError) -> SendError {
    match &e {
        ChainError::Node { code, message, .. } => match node_says(*code, message) {
            NodeSays::Unfunded => SendError::Unfunded(e.to_string()),
            NodeSays::Reverts => SendError::WouldRevert(e.to_string()),
            _ => SendError::Unavailable(e.to_string()),
        },
        _ => SendError::Unavailable(e.to_string()),
    }
}

pub struct Signed {
    pub raw: Vec<u8>,
    pub hash: String,
    pub nonce: u64,
}

/// Nonces per (chain, sender), allocated from the database in the same
/// database transaction that stores the transaction signed with it, so
/// workers and replicas sharing a sender never collide and a crash can
/// never lose a nonce. The counter never goes below the node's pending
/// count, which is read on a sender's first use in this process and after
/// a nonce turned out taken.
pub struct Nonces {
    db: crate::db::Db,
    synced: std::sync::Mutex<std::collections::HashSet<(String, Address)>>,
}

impl Nonces {
    pub fn new(db: crate::db::Db) -> Nonces {
        Nonces { db, synced: Default::default() }
    }

    /// Sign `tx` with the sender's next nonce and store it under `rows`,
    /// atomically.
    async fn sign_and_store(
        &self,
        chain: &ChainClient,
        signer: &Secp256k1Key,
        resync: bool,
        tx: Unsigned,
        rows: &[repo::TxRow],
    ) -> Result<Signed, SendError> {
        let from = signer.address();
        let sender = from.to_checksum(None);
        let key = (chain.chain.clone(), from);
        let fresh = resync || !self.synced.lock().unwrap().contains(&key);
        let mut floor = if fresh { Some(pending_nonce(chain, from).await?) } else { None };
        loop {
            let sign = |nonce: u64| tx.sign(signer, nonce);
            let taken = repo::sign_with_next_nonce(&self.db, &chain.chain, &sender, floor, rows, sign, crate::clock::now_ms())
                .await
                .map_err(|e| SendError::Unavailable(format!("storing the signed transaction: {e}")))?;
            match taken {
                repo::Taken::Stored { nonce, raw, hash } => {
                    self.synced.lock().unwrap().insert(key);
                    return Ok(Signed { raw, hash, nonce });
                }
                repo::Taken::NeedsFloor if floor.is_none() => floor = Some(pending_nonce(chain, from).await?),
                repo::Taken::NeedsFloor => return Err(SendError::Unavailable("nonce row vanished".into())),
                repo::Taken::SignFailed(why) => return Err(SendError::Unavailable(format!("signing: {why}"))),
            }
        }
    }
}

/// The sender's next nonce counting the node's pool.
pub async fn pending_nonce(chain: &ChainClient, from: Address) -> Result<u64, SendError> {
    hex_u64(&rpc(chain, "eth_getTransactionCount", json!([from, "pending"])).await?)
        .ok_or_else(|| SendError::Unavailable("bad eth_getTransactionCount answer".into()))
}

/// The sender's transactions mined so far.
pub async fn mined_nonce(chain: &ChainClient, from: Address) -> Result<u64, SendError> {
    hex_u64(&rpc(chain, "eth_getTransactionCount", json!([from, "latest"])).await?)
        .ok_or_else(|| SendError::Unavailable("bad eth_getTransactionCount answer".into()))
}

/// Gas price and priority fee per chain, re-read at most once a second.
#[derive(Default)]
pub struct FeeCache {
    seen: tokio::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, u128, u128)>>,
}

impl FeeCache {
    async fn get(&self, chain: &ChainClient) -> Result<(u128, u128), SendError> {
        if let Some((at, price, tip)) = self.seen.lock().await.get(&chain.chain) {
            if at.elapsed() < std::time::Duration::from_secs(1) {
                return Ok((*price, *tip));
            }
        }
        let price = hex_u128(&rpc(chain, "eth_gasPrice", json!([])).await?).unwrap_or(1_000_000_000);
        let tip = hex_u128(&rpc(chain, "eth_maxPriorityFeePerGas", json!([])).await.unwrap_or(json!("0x0"))).unwrap_or(0);
        self.seen.lock().await.insert(chain.chain.clone(), (std::time::Instant::now(), price, tip));
        Ok((price, tip))
    }
}

/// A JSON-RPC call whose failure means "try later".
pub async fn rpc(chain: &ChainClient, method: &str, params: Value) -> Result<Value, SendError> {
    chain.rpc(method, params).await.map_err(|e| SendError::Unavailable(e.to_string()))
}

fn hex_u64(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

fn hex_u128(v: &Value) -> Option<u128> {
    u128::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

/// What a relayer transaction calls.
pub struct TxCall {
    pub to: Address,
    pub data: Vec<u8>,
    pub value: U256,
    pub gas: GasLimit,
}

/// How a transaction's gas limit is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GasLimit {
    /// `eth_estimateGas`, plus a fifth. Nodes find it by running the call
    /// over and over (a binary search): for calls of unknown shape (a
    /// wallet's own transactions).
    Estimate,
    /// One run of the call (`eth_createAccessList` reports its gas used),
    /// plus half. For the relayer's settlement calls, alone or in a
    /// Multicall3 batch: estimating 64 transfers cost a devnet node ~130 ms
    /// against ~15 ms for one run, and even one transfer's binary search
    /// was a third of a lone settle's time. Half covers refunds (at most a fifth of the gas spent)
    /// and the 63/64 rule for the batch's subcalls; a batch that still ran
    /// short reverts whole and is retried, it never pays twice. Nodes
    /// without the method fall back to `Estimate`.
    OneRun,
    /// Found already (`gas_limit` with `OneRun`, run beside the batch's
    /// simulation).
    Known(u64),
}

/// The gas limit of `call` from `from`, found `how`.
pub async fn gas_for(chain: &ChainClient, from: Address, to: Address, data: &[u8], how: GasLimit) -> Result<u64, SendError> {
    let call = json!({ "from": from, "to": to, "data": Bytes::copy_from_slice(data), "value": "0x0" });
    gas_limit(chain, &call, how).await
}

async fn gas_limit(chain: &ChainClient, call: &Value, how: GasLimit) -> Result<u64, SendError> {
    if let GasLimit::Known(gas) = how {
        return Ok(gas);
    }
    if how == GasLimit::OneRun {
        match chain.rpc("eth_createAccessList", json!([call, "latest"])).await {
            Ok(v) => {
                if let Some(e) = v.get("error").and_then(Value::as_str) {
                    return Err(SendError::WouldRevert(e.to_string()));
                }
                if let Some(used) = v.get("gasUsed").and_then(hex_u64) {
                    return Ok(used + used / 2);
                }
            }
            Err(e) => match call_error(e) {
                SendError::Unavailable(_) => {} // not offered here: estimate instead
                refusal => return Err(refusal),
            },
        }
    }
    let gas = chain.rpc("eth_estimateGas", json!([call])).await.map_err(call_error)?;
    let gas = hex_u64(&gas).ok_or_else(|| SendError::Unavailable("bad eth_estimateGas answer".into()))?;
    Ok(gas + gas / 5)
}

/// Sign a call from `signer` with its next nonce, store it under `rows`
/// (nonce and bytes in one database transaction), and only then broadcast.
#[allow(clippy::too_many_arguments)]
pub async fn sign_store_send(
    chain: &ChainClient,
    net: Net,
    nonces: &Nonces,
    fees: &FeeCache,
    resync: bool,
    signer: &Secp256k1Key,
    call: TxCall,
    rows: &[repo::TxRow],
) -> Result<Signed, SendError> {
    let from = signer.address();
    let TxCall { to, data, value, gas } = call;
    let json_call = json!({ "from": from, "to": to, "data": Bytes::from(data.clone()), "value": format!("{value:#x}") });
    let gas_limit = gas_limit(chain, &json_call, gas).await?;
    let tx = Unsigned::new(net, fees.get(chain).await?, HEADROOM, gas_limit, to, value, Bytes::from(data));
    let stored = nonces.sign_and_store(chain, signer, resync, tx, rows).await?;
    match broadcast(chain, &stored.raw).await? {
        Broadcast::Accepted | Broadcast::Known | Broadcast::Occupied => Ok(stored),
        Broadcast::NonceTaken => Err(SendError::Superseded),
    }
}

/// The gas price multiple a call is signed with (`sign_store_send`).
const HEADROOM: u128 = 2;

/// The most a call of `gas_limit` signed now may cost its sender, priced
/// as `sign_store_send` prices it (what the node wants it to hold).
pub async fn most_it_costs(chain: &ChainClient, net: Net, fees: &FeeCache, gas_limit: u64) -> Result<U256, SendError> {
    let per_gas = match Unsigned::new(net, fees.get(chain).await?, HEADROOM, gas_limit, Address::ZERO, U256::ZERO, Bytes::new()) {
        Unsigned::Eip1559(tx) => tx.max_fee_per_gas,
        Unsigned::Legacy(tx) => tx.gas_price,
    };
    Ok(U256::from(gas_limit) * U256::from(per_gas))
}

/// Fill `nonce` of `signer` with a zero-value transfer to itself: the
/// transaction that unblocks a sender when no stored transaction can use
/// the nonce any more. Stored before it is broadcast; a nonce filled
/// already (by another replica) is left as it is.
pub async fn fill_nonce(
    db: &crate::db::Db,
    chain: &ChainClient,
    net: Net,
    fees: &FeeCache,
    signer: &Secp256k1Key,
    nonce: u64,
) -> Result<Option<String>, SendError> {
    let me = signer.address();
    // Generous: a filler must get in even after fees rose.
    let tx = Unsigned::new(net, fees.get(chain).await?, 3, 21_000, me, U256::ZERO, Bytes::new());
    let (raw, hash) = tx.sign(signer, nonce).map_err(|why| SendError::Unavailable(format!("signing: {why}")))?;
    let fresh = repo::insert_filler(db, &chain.chain, &me.to_checksum(None), nonce, &raw, &hash, crate::clock::now_ms())
        .await
        .map_err(|e| SendError::Unavailable(format!("storing the filler: {e}")))?;
    if !fresh {
        return Ok(None);
    }
    match broadcast(chain, &raw).await? {
        Broadcast::NonceTaken => Ok(None),
        _ => Ok(Some(hash)),
    }
}

/// How a node took signed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broadcast {
    /// Accepted now.
    Accepted,
    /// The node has this exact transaction already (an earlier send got
    /// through): wait for its receipt.
    Known,
    /// Another transaction holds this nonce in the node's pool; whichever
    /// is mined decides.
    Occupied,
    /// Its nonce is used by another transaction: unless this one was mined,
    /// it never will be.
    NonceTaken,
}

/// Send signed bytes, and say what the node's answer means.
pub async fn broadcast(chain: &ChainClient, raw: &[u8]) -> Result<Broadcast, SendError> {
    match chain.rpc("eth_sendRawTransaction", json!([Bytes::copy_from_slice(raw)])).await {
        Ok(_) => Ok(Broadcast::Accepted),
        Err(e @ ChainError::Node { .. }) => {
            let ChainError::Node { code, message, .. } = &e else { unreachable!() };
            match node_says(*code, message) {
                NodeSays::Known => Ok(Broadcast::Known),
                NodeSays::NonceTaken => Ok(Broadcast::NonceTaken),
                NodeSays::Occupied => Ok(Broadcast::Occupied),
                NodeSays::Unfunded => Err(SendError::Unfunded(e.to_string())),
                NodeSays::Reverts | NodeSays::Other => Err(SendError::Refused(e.to_string())),
            }
        }
        Err(e) => Err(SendError::Unavailable(e.to_string())),
    }
}

/// The address a signed transaction calls.
pub fn sent_to(raw: &[u8]) -> Option<Address> {
    use alloy_consensus::Transaction;
    use alloy_eips::eip2718::Decodable2718;
    TxEnvelope::decode_2718(&mut &raw[..]).ok()?.to()
}

/// What is known of one transaction's receipt, and the lock its waiters
/// share: the receipt once found, or when the node last said "not yet".
#[derive(Default)]
struct Known {
    receipt: Option<std::sync::Arc<Receipt>>,
    not_yet_at: Option<std::time::Instant>,
}

type Slot = std::sync::Arc<tokio::sync::Mutex<Known>>;

/// Receipts shared by the workers that wait on one transaction (a batch is
/// many intents' one transaction): one of them asks the node at a time, and
/// the others reuse its answer, a receipt or a "not yet" asked after they
/// began to wait, so a batch costs the node one lookup per round, not one
/// per intent.
#[derive(Default)]
pub struct Receipts {
    slots: std::sync::Mutex<std::collections::HashMap<String, Slot>>,
}

impl Receipts {
    pub async fn get(&self, chain: &ChainClient, hash: &str) -> Result<Option<std::sync::Arc<Receipt>>, SendError> {
        let asked = std::time::Instant::now();
        let slot = {
            let mut slots = self.slots.lock().unwrap();
            if slots.len() > 64 {
                // Forget receipts nobody is waiting on: a receipt is shared
                // only by the steps waiting on its transaction right now (a
                // batch's receipt is large; keeping them grew memory with
                // every batch).
                slots.retain(|_, s| std::sync::Arc::strong_count(s) > 1);
            }
            slots.entry(format!("{}:{hash}", chain.chain)).or_default().clone()
        };
        let mut held = slot.lock().await;
        if let Some(r) = &held.receipt {
            return Ok(Some(r.clone()));
        }
        if held.not_yet_at.is_some_and(|at| at >= asked) {
            return Ok(None);
        }
        let at = std::time::Instant::now();
        let found = receipt(chain, hash).await?.map(|json| std::sync::Arc::new(Receipt { text: json.to_string(), json }));
        match &found {
            Some(r) => held.receipt = Some(r.clone()),
            None => held.not_yet_at = Some(at),
        }
        Ok(found)
    }
}

/// The receipt JSON, or `None` while not mined. A receipt of another
/// transaction (a provider's mix-up, or a lie) is no answer.
pub async fn receipt(chain: &ChainClient, hash: &str) -> Result<Option<Value>, SendError> {
    let r = rpc(chain, "eth_getTransactionReceipt", json!([hash])).await?;
    if r.is_null() {
        return Ok(None);
    }
    if !is_receipt_of(&r, hash) {
        return Err(SendError::Unavailable(format!("a receipt for {hash} names another transaction")));
    }
    Ok(Some(r))
}

/// Is `receipt` the receipt of transaction `hash`?
pub fn is_receipt_of(receipt: &Value, hash: &str) -> bool {
    receipt.get("transactionHash").and_then(Value::as_str).is_some_and(|h| h.eq_ignore_ascii_case(hash))
}
