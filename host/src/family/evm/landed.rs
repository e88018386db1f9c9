//! Finding the transaction that used a payer's authorization when it was
//! not ours: anyone may submit a signed EIP-3009 or Permit2 authorization,
//! so a front-runner can land it first. The money then moved all the same,
//! and the chain's record of that transfer is what the engine settles with.
//!
//! A candidate is a `Transfer(payer → payTo)` of the token, of exactly the
//! amount, mined since `since_ms`, in a transaction whose input carries the
//! authorization's signature (`r ‖ s`, the same words whether the call
//! takes `bytes signature` or `v, r, s`): money that moved under this
//! authorization, not another payment of the same size.

use alloy_primitives::{Address, U256};
use serde_json::{json, Value};

use super::tx;
use crate::family::chain::ChainClient;
use crate::family::{carries, SendError, Sought};

/// keccak256("Transfer(address,address,uint256)")
const TRANSFER: &str = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const TRANSFER_TOPIC: alloy_primitives::B256 = alloy_primitives::b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
/// At most this many blocks are searched back (providers cap log ranges).
const MAX_BLOCKS: u64 = 50_000;
/// Block timestamps are whole seconds, and a node's clock is not ours.
const CLOCK_SKEW_MS: i64 = 30_000;

fn topic(a: &Address) -> String {
    format!("0x{:0>64}", alloy_primitives::hex::encode(a.as_slice()))
}

fn hex_u64(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

/// Transactions that moved what is `sought`, mined at or after its
/// `since_ms`, oldest first.
pub async fn transfers(chain: &ChainClient, block_time_ms: u64, sought: &Sought<'_>) -> Result<Vec<String>, SendError> {
    let Sought { token, from, to, amount, evidence, since_ms } = *sought;
    let head = hex_u64(&tx::rpc(chain, "eth_blockNumber", json!([])).await?)
        .ok_or_else(|| SendError::Unavailable("eth_blockNumber: bad answer".into()))?;
    let elapsed = (crate::clock::now_ms() - since_ms).max(0) as u64;
    let back = (elapsed / block_time_ms.max(1) + 64).min(MAX_BLOCKS);
    let filter = json!({
        "address": token,
        "fromBlock": format!("{:#x}", head.saturating_sub(back)),
        "toBlock": format!("{head:#x}"),
        "topics": [TRANSFER, topic(&from), topic(&to)],
    });
    let logs = tx::rpc(chain, "eth_getLogs", json!([filter])).await?;
    let mut out: Vec<String> = vec![];
    for log in logs.as_array().into_iter().flatten() {
        let value = log.get("data").and_then(Value::as_str).and_then(|d| U256::from_str_radix(d.trim_start_matches("0x"), 16).ok());
        let Some(hash) = log.get("transactionHash").and_then(Value::as_str) else { continue };
        if value != Some(amount) || out.iter().any(|h| h == hash) {
            continue;
        }
        let Some(number) = log.get("blockNumber").cloned() else { continue };
        let block = tx::rpc(chain, "eth_getBlockByNumber", json!([number, false])).await?;
        let mined_ms = block.get("timestamp").and_then(hex_u64).map(|t| t as i64 * 1000);
        if mined_ms.is_none_or(|t| t + CLOCK_SKEW_MS < since_ms) {
            continue;
        }
        let sent = tx::rpc(chain, "eth_getTransactionByHash", json!([hash])).await?;
        let input = sent.get("input").and_then(Value::as_str).and_then(|i| alloy_primitives::hex::decode(i).ok()).unwrap_or_default();
        if carries(&input, evidence) {
            out.push(hash.to_string());
        }
    }
    Ok(out)
}

/// What a receipt's Transfer logs of `token` paid `to`, summed.
pub fn credited(receipt: &Value, token: &str, to: &str) -> Option<U256> {
    let (token, to): (Address, Address) = (token.parse().ok()?, to.parse().ok()?);
    let logs = receipt.get("logs")?.as_array()?;
    let mut total = U256::ZERO;
    for log in logs {
        let emitter = log.get("address").and_then(Value::as_str).and_then(|a| a.parse::<Address>().ok());
        let topics: Vec<alloy_primitives::B256> = log
            .get("topics")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(|x| x.as_str()?.parse().ok()).collect())
            .unwrap_or_default();
        if emitter == Some(token) && topics.first() == Some(&TRANSFER_TOPIC) && topics.get(2) == Some(&to.into_word()) {
            total += log
                .get("data")
                .and_then(Value::as_str)
                .and_then(|d| U256::from_str_radix(d.trim_start_matches("0x"), 16).ok())
                .unwrap_or_default();
        }
    }
    Some(total)
}
