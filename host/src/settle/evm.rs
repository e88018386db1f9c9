//! EVM transactions the service signs: EIP-1559, built and signed with
//! alloy, one nonce sequence per (chain, signer).

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{keccak256, Address, Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde_json::{json, Value};

use crate::chain::ChainClient;

#[derive(Debug, Clone, thiserror::Error)]
pub enum SendError {
    /// The node is unreachable or answered with an error: try again later.
    #[error("chain unavailable: {0}")]
    Unavailable(String),
    /// The call would revert (gas estimation failed): sending it is pointless.
    #[error("transaction would revert: {0}")]
    WouldRevert(String),
}

pub struct Signed {
    pub raw: Vec<u8>,
    pub hash: String,
    pub nonce: u64,
}

/// Nonces per (chain, sender), allocated from the database so workers and
/// replicas sharing a relayer never collide. The counter never goes below
/// the node's pending count, so it recovers from transactions sent elsewhere
/// and from sends that never reached the node.
pub struct Nonces {
    db: crate::db::Db,
}

impl Nonces {
    pub fn new(db: crate::db::Db) -> Nonces {
        Nonces { db }
    }

    /// The next nonce. `resync` also consults the node (first use, or after a
    /// nonce turned out to be taken); otherwise the database alone decides,
    /// in one compare-free increment.
    async fn allocate(&self, chain: &ChainClient, from: Address, resync: bool) -> Result<u64, SendError> {
        let sender = from.to_checksum(None);
        let db_err = |e: sqlx::Error| SendError::Unavailable(format!("nonce store: {e}"));
        if !resync {
            if let Some(n) = self.take(&chain.chain, &sender, 0).await.map_err(db_err)? {
                return Ok(n);
            }
        }
        let on_chain = hex_u64(&rpc(chain, "eth_getTransactionCount", json!([from, "pending"])).await?)
            .ok_or_else(|| SendError::Unavailable("bad eth_getTransactionCount answer".into()))?;
        sqlx::query("INSERT INTO relayer_nonces (chain, sender, next_nonce) VALUES ($1, $2, $3) ON CONFLICT (chain, sender) DO NOTHING")
            .bind(&chain.chain)
            .bind(&sender)
            .bind(on_chain as i64)
            .execute(&self.db.pool)
            .await
            .map_err(db_err)?;
        self.take(&chain.chain, &sender, on_chain)
            .await
            .map_err(db_err)?
            .ok_or_else(|| SendError::Unavailable("nonce row vanished".into()))
    }

    /// Take the stored next nonce, but never one below `at_least`; `None` if
    /// this sender has no row yet. One statement, so concurrent takers (and
    /// replicas) each get their own.
    async fn take(&self, chain: &str, sender: &str, at_least: u64) -> Result<Option<u64>, sqlx::Error> {
        let max = match self.db.backend {
            crate::db::Backend::Postgres => "GREATEST",
            crate::db::Backend::Sqlite => "MAX",
        };
        let row = sqlx::query(&format!(
            "UPDATE relayer_nonces SET next_nonce = {max}(next_nonce, $1) + 1 WHERE chain = $2 AND sender = $3 \
             RETURNING next_nonce - 1 AS taken"
        ))
        .bind(at_least as i64)
        .bind(chain)
        .bind(sender)
        .fetch_optional(&self.db.pool)
        .await?;
        row.map(|r| sqlx::Row::try_get::<i64, _>(&r, "taken").map(|n| n as u64)).transpose()
    }
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

pub async fn rpc(chain: &ChainClient, method: &str, params: Value) -> Result<Value, SendError> {
    chain.rpc(method, params).await.map_err(SendError::Unavailable)
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
    /// over and over (a binary search), which is cheap for one transfer.
    Estimate,
    /// One run of the call (`eth_createAccessList` reports its gas used),
    /// plus half. For Multicall3 batches, whose calls were just simulated:
    /// estimating 64 transfers cost a devnet node ~130 ms against ~15 ms
    /// for one run. Half covers refunds (at most a fifth of the gas spent)
    /// and the 63/64 rule for the batch's subcalls; a batch that still ran
    /// short reverts whole and is retried, it never pays twice. Nodes
    /// without the method fall back to `Estimate`.
    OneRun,
}

async fn gas_limit(chain: &ChainClient, call: &Value, how: GasLimit) -> Result<u64, SendError> {
    let refused = |e: String| {
        if e.contains("revert") || e.contains("execution") {
            SendError::WouldRevert(e)
        } else {
            SendError::Unavailable(e)
        }
    };
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
            Err(e) => match refused(e) {
                revert @ SendError::WouldRevert(_) => return Err(revert),
                SendError::Unavailable(_) => {} // not offered here: estimate instead
            },
        }
    }
    let gas = chain.rpc("eth_estimateGas", json!([call])).await.map_err(refused)?;
    let gas = hex_u64(&gas).ok_or_else(|| SendError::Unavailable("bad eth_estimateGas answer".into()))?;
    Ok(gas + gas / 5)
}

/// Sign a call from `signer` and hand it to `store` (which must persist it)
/// before anything is broadcast; then broadcast. Holding the sender's nonce
/// lock across sign → store → send keeps its transactions in nonce order.
#[allow(clippy::too_many_arguments)]
pub async fn sign_store_send<F, Fut>(
    chain: &ChainClient,
    chain_id: u64,
    nonces: &Nonces,
    fees: &FeeCache,
    resync: bool,
    signer: &PrivateKeySigner,
    call: TxCall,
    store: F,
) -> Result<Signed, SendError>
where
    F: FnOnce(Signed) -> Fut,
    Fut: std::future::Future<Output = Result<Signed, SendError>>,
{
    let from = signer.address();
    let TxCall { to, data, value, gas } = call;
    let json_call = json!({ "from": from, "to": to, "data": Bytes::from(data.clone()), "value": format!("{value:#x}") });
    let gas_limit = gas_limit(chain, &json_call, gas).await?;
    let (gas_price, tip) = fees.get(chain).await?;

    let nonce = nonces.allocate(chain, from, resync).await?;
    let tx = TxEip1559 {
        chain_id,
        nonce,
        gas_limit,
        max_fee_per_gas: gas_price * 2 + tip,
        max_priority_fee_per_gas: tip,
        to: TxKind::Call(to),
        value,
        access_list: Default::default(),
        input: Bytes::from(data),
    };
    let sig = signer
        .sign_hash_sync(&tx.signature_hash())
        .map_err(|e| SendError::Unavailable(format!("signing failed: {e}")))?;
    let raw = TxEnvelope::from(tx.into_signed(sig)).encoded_2718();
    let hash = format!("{:#x}", keccak256(&raw));
    let stored = store(Signed { raw, hash, nonce }).await?;
    match broadcast(chain, &stored.raw).await? {
        Broadcast::Accepted => Ok(stored),
        Broadcast::NonceTaken => Err(SendError::Unavailable(format!("nonce {nonce} was taken; will re-sign"))),
    }
}

pub enum Broadcast {
    /// The node has it (now or from an earlier send).
    Accepted,
    /// Its nonce is used by another transaction: unless this one was mined,
    /// it never will be.
    NonceTaken,
}

/// Send signed bytes. "Already known" means an earlier send got through.
pub async fn broadcast(chain: &ChainClient, raw: &[u8]) -> Result<Broadcast, SendError> {
    match chain.rpc("eth_sendRawTransaction", json!([Bytes::copy_from_slice(raw)])).await {
        Ok(_) => Ok(Broadcast::Accepted),
        Err(e) if e.contains("already known") || e.contains("AlreadyKnown") => Ok(Broadcast::Accepted),
        Err(e) if e.to_lowercase().contains("nonce too low") => Ok(Broadcast::NonceTaken),
        Err(e) => Err(SendError::Unavailable(e)),
    }
}

/// The address a signed transaction calls.
pub fn sent_to(raw: &[u8]) -> Option<Address> {
    use alloy_consensus::Transaction;
    use alloy_eips::eip2718::Decodable2718;
    TxEnvelope::decode_2718(&mut &raw[..]).ok()?.to()
}

/// Receipts shared by the workers that wait on one transaction (a batch is
/// many intents' one transaction): one of them asks the node at a time, and
/// the others reuse a receipt it found.
#[derive(Default)]
pub struct Receipts {
    slots: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::Mutex<Option<std::sync::Arc<Receipt>>>>>>,
}

/// A mined transaction's receipt, and its JSON text for adapters (a batch's
/// receipt is read by every intent in it: serialized once).
pub struct Receipt {
    pub json: Value,
    pub text: String,
}

impl Receipts {
    pub async fn get(&self, chain: &ChainClient, hash: &str) -> Result<Option<std::sync::Arc<Receipt>>, SendError> {
        let slot = {
            let mut slots = self.slots.lock().unwrap();
            if slots.len() > 4096 {
                // Forget receipts nobody is waiting on.
                slots.retain(|_, s| std::sync::Arc::strong_count(s) > 1);
            }
            slots.entry(format!("{}:{hash}", chain.chain)).or_default().clone()
        };
        let mut held = slot.lock().await;
        if let Some(r) = &*held {
            return Ok(Some(r.clone()));
        }
        let found = receipt(chain, hash).await?.map(|json| std::sync::Arc::new(Receipt { text: json.to_string(), json }));
        held.clone_from(&found);
        Ok(found)
    }
}

/// The receipt JSON, or `None` while not mined.
pub async fn receipt(chain: &ChainClient, hash: &str) -> Result<Option<Value>, SendError> {
    let r = rpc(chain, "eth_getTransactionReceipt", json!([hash])).await?;
    Ok((!r.is_null()).then_some(r))
}
