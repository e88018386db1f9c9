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
    /// nonce turned out to be taken); otherwise the database alone decides.
    async fn allocate(&self, chain: &ChainClient, from: Address, resync: bool) -> Result<u64, SendError> {
        let sender = from.to_checksum(None);
        let known = sqlx::query("SELECT 1 AS one FROM relayer_nonces WHERE chain = $1 AND sender = $2")
            .bind(&chain.chain)
            .bind(&sender)
            .fetch_optional(&self.db.pool)
            .await
            .map_err(|e| SendError::Unavailable(format!("nonce store: {e}")))?
            .is_some();
        let on_chain = if resync || !known {
            hex_u64(&rpc(chain, "eth_getTransactionCount", json!([from, "pending"])).await?)
                .ok_or_else(|| SendError::Unavailable("bad eth_getTransactionCount answer".into()))? as i64
        } else {
            0
        };
        let db_err = |e: sqlx::Error| SendError::Unavailable(format!("nonce store: {e}"));
        for _ in 0..16 {
            let current: Option<i64> = sqlx::query("SELECT next_nonce FROM relayer_nonces WHERE chain = $1 AND sender = $2")
                .bind(&chain.chain)
                .bind(&sender)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(db_err)?
                .map(|r| sqlx::Row::get(&r, "next_nonce"));
            let won = match current {
                None => sqlx::query("INSERT INTO relayer_nonces (chain, sender, next_nonce) VALUES ($1, $2, $3)")
                    .bind(&chain.chain)
                    .bind(&sender)
                    .bind(on_chain + 1)
                    .execute(&self.db.pool)
                    .await
                    .map(|_| Some(on_chain))
                    .or_else(|e| if crate::store::is_unique_violation(&e) { Ok(None) } else { Err(e) })
                    .map_err(db_err)?,
                Some(next) => {
                    let take = next.max(on_chain);
                    let moved = sqlx::query("UPDATE relayer_nonces SET next_nonce = $1 WHERE chain = $2 AND sender = $3 AND next_nonce = $4")
                        .bind(take + 1)
                        .bind(&chain.chain)
                        .bind(&sender)
                        .bind(next)
                        .execute(&self.db.pool)
                        .await
                        .map_err(db_err)?
                        .rows_affected();
                    (moved == 1).then_some(take)
                }
            };
            if let Some(n) = won {
                return Ok(n as u64);
            }
        }
        Err(SendError::Unavailable("nonce allocation kept losing races".into()))
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
    to: Address,
    data: Vec<u8>,
    value: U256,
    store: F,
) -> Result<Signed, SendError>
where
    F: FnOnce(Signed) -> Fut,
    Fut: std::future::Future<Output = Result<Signed, SendError>>,
{
    let from = signer.address();
    let call = json!({ "from": from, "to": to, "data": Bytes::from(data.clone()), "value": format!("{value:#x}") });
    let gas = match chain.rpc("eth_estimateGas", json!([call])).await {
        Ok(v) => hex_u64(&v).ok_or_else(|| SendError::Unavailable("bad eth_estimateGas answer".into()))?,
        Err(e) if e.contains("revert") || e.contains("execution") => return Err(SendError::WouldRevert(e)),
        Err(e) => return Err(SendError::Unavailable(e)),
    };
    let (gas_price, tip) = fees.get(chain).await?;

    let nonce = nonces.allocate(chain, from, resync).await?;
    let tx = TxEip1559 {
        chain_id,
        nonce,
        gas_limit: gas + gas / 5,
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
    slots: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::Mutex<Option<std::sync::Arc<Value>>>>>>,
}

impl Receipts {
    pub async fn get(&self, chain: &ChainClient, hash: &str) -> Result<Option<std::sync::Arc<Value>>, SendError> {
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
        let found = receipt(chain, hash).await?.map(std::sync::Arc::new);
        held.clone_from(&found);
        Ok(found)
    }
}

/// The receipt JSON, or `None` while not mined.
pub async fn receipt(chain: &ChainClient, hash: &str) -> Result<Option<Value>, SendError> {
    let r = rpc(chain, "eth_getTransactionReceipt", json!([hash])).await?;
    Ok((!r.is_null()).then_some(r))
}
