//! EVM transactions the service signs: EIP-1559, built and signed with
//! alloy, one nonce sequence per (chain, signer).

use std::collections::HashMap;
use std::sync::Arc;

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{keccak256, Address, Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::chain::ChainClient;

#[derive(Debug, thiserror::Error)]
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

/// Next nonce per (chain, sender), read from the node once and then counted
/// locally; forgotten after a failed broadcast so the next use re-reads it.
#[derive(Default)]
pub struct Nonces {
    next: Mutex<HashMap<(String, Address), Arc<Mutex<Option<u64>>>>>,
}

impl Nonces {
    async fn slot(&self, chain: &str, who: Address) -> Arc<Mutex<Option<u64>>> {
        self.next.lock().await.entry((chain.to_string(), who)).or_default().clone()
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
pub async fn sign_store_send<F, Fut>(
    chain: &ChainClient,
    chain_id: u64,
    nonces: &Nonces,
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
    let gas_price = hex_u128(&rpc(chain, "eth_gasPrice", json!([])).await?).unwrap_or(1_000_000_000);
    let tip = hex_u128(&rpc(chain, "eth_maxPriorityFeePerGas", json!([])).await.unwrap_or(json!("0x0"))).unwrap_or(0);

    let slot = nonces.slot(&chain.chain, from).await;
    let mut next = slot.lock().await;
    let nonce = match *next {
        Some(n) => n,
        None => hex_u64(&rpc(chain, "eth_getTransactionCount", json!([from, "pending"])).await?)
            .ok_or_else(|| SendError::Unavailable("bad eth_getTransactionCount answer".into()))?,
    };
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
    *next = Some(stored.nonce.max(nonce) + 1);
    match broadcast(chain, &stored.raw).await {
        Ok(()) => Ok(stored),
        Err(e) => {
            *next = None;
            Err(e)
        }
    }
}

/// Send signed bytes. "Already known" means an earlier send got through.
pub async fn broadcast(chain: &ChainClient, raw: &[u8]) -> Result<(), SendError> {
    match chain.rpc("eth_sendRawTransaction", json!([Bytes::copy_from_slice(raw)])).await {
        Ok(_) => Ok(()),
        Err(e) if e.contains("already known") || e.contains("nonce too low") || e.contains("AlreadyKnown") => Ok(()),
        Err(e) => Err(SendError::Unavailable(e)),
    }
}

/// The receipt JSON, or `None` while not mined.
pub async fn receipt(chain: &ChainClient, hash: &str) -> Result<Option<Value>, SendError> {
    let r = rpc(chain, "eth_getTransactionReceipt", json!([hash])).await?;
    Ok((!r.is_null()).then_some(r))
}
