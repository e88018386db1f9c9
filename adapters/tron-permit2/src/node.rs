//! Read-only questions to the adapter's TRON node (its HTTP API, through the
//! host), and what a settlement's transaction info says.

use alloy_primitives::{hex, Address, B256, U256};
use serde_json::{json, Value};

use crate::stablerail::adapter0_1_0::chain::{self, QueryError};
use crate::stablerail::adapter0_1_0::types::{AdapterError, ReceiptStatus, SettledTransfer};
use crate::stablerail::adapter0_7_0::types::ProofError;
use tron_wire::address;
use tron_wire::raw::Reference;

/// keccak256("Transfer(address,address,uint256)").
const TRANSFER: B256 = alloy_primitives::b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

fn query(path: &str, body: Value) -> Result<Value, ProofError> {
    let text = chain::query(path, &body.to_string()).map_err(|e| {
        ProofError::ChainUnavailable(match e {
            QueryError::Denied(m) => format!("{path} denied: {m}"),
            QueryError::Unavailable(m) => format!("{path}: node unavailable: {m}"),
            QueryError::Rpc(m) => format!("{path}: {m}"),
        })
    })?;
    let v: Value = serde_json::from_str(&text).map_err(|_| ProofError::ChainUnavailable(format!("{path}: the answer is not JSON")))?;
    match v.get("Error") {
        Some(e) => Err(ProofError::ChainUnavailable(format!("{path}: {e}"))),
        None => Ok(v),
    }
}

/// The head block, as the reference of a new transaction.
pub fn now_block() -> Result<Reference, ProofError> {
    let v = query("/wallet/getnowblock", json!({}))?;
    let bad = || ProofError::ChainUnavailable("getnowblock: unreadable block".into());
    let id: [u8; 32] =
        v.get("blockID").and_then(Value::as_str).and_then(|h| hex::decode(h).ok()).and_then(|b| b.try_into().ok()).ok_or_else(bad)?;
    let header = v.pointer("/block_header/raw_data").ok_or_else(bad)?;
    Ok(Reference {
        number: header.get("number").and_then(Value::as_u64).ok_or_else(bad)?,
        block_id: id,
        timestamp_ms: header.get("timestamp").and_then(Value::as_i64).ok_or_else(bad)?,
    })
}

/// A view call's single uint256 answer.
fn read_uint(contract: &Address, signature: &str, args: &[&Address]) -> Result<U256, ProofError> {
    let parameter: String = args.iter().map(|a| format!("{:0>64}", hex::encode(a.as_slice()))).collect();
    let v = query(
        "/wallet/triggerconstantcontract",
        json!({
            "owner_address": hex::encode(address::raw(args[0])),
            "contract_address": hex::encode(address::raw(contract)),
            "function_selector": signature,
            "parameter": parameter,
        }),
    )?;
    if v.pointer("/result/result") != Some(&Value::Bool(true)) {
        return Err(ProofError::ChainUnavailable(format!("{signature} failed on {}", address::show(contract))));
    }
    v.pointer("/constant_result/0")
        .and_then(Value::as_str)
        .and_then(|h| U256::from_str_radix(h, 16).ok())
        .ok_or_else(|| ProofError::ChainUnavailable(format!("{signature}: no result")))
}

pub fn balance_of(token: &Address, owner: &Address) -> Result<U256, ProofError> {
    read_uint(token, "balanceOf(address)", &[owner])
}

pub fn allowance(token: &Address, owner: &Address, spender: &Address) -> Result<U256, ProofError> {
    read_uint(token, "allowance(address,address)", &[owner, spender])
}

/// `/wallet/gettransactioninfobyid`'s answer: executed with SUCCESS, and a
/// Transfer log of `token` paying exactly `amount` to `to`.
pub fn read_receipt(info: &str, token: &Address, to: &Address, amount: U256) -> Result<ReceiptStatus, AdapterError> {
    let bad = |m: &str| AdapterError::Malformed(format!("transaction info: {m}"));
    let v: Value = serde_json::from_str(info).map_err(|_| bad("not JSON"))?;
    let Some(id) = v.get("id").and_then(Value::as_str) else { return Ok(ReceiptStatus::Pending) };
    match v.pointer("/receipt/result").and_then(Value::as_str) {
        Some("SUCCESS") => {}
        other => return Ok(ReceiptStatus::Failed(format!("executed with {}", other.unwrap_or("no result")))),
    }
    let paid = v.get("log").and_then(Value::as_array).into_iter().flatten().any(|log| {
        let word = |t: &Value| t.as_str().and_then(|h| hex::decode(h).ok()).filter(|b| b.len() == 32).map(|b| B256::from_slice(&b));
        let topics: Vec<Option<B256>> =
            log.get("topics").and_then(Value::as_array).map(|t| t.iter().map(word).collect()).unwrap_or_default();
        let emitter = log.get("address").and_then(Value::as_str).and_then(|h| hex::decode(h).ok());
        let value = log.get("data").and_then(Value::as_str).and_then(|h| U256::from_str_radix(h, 16).ok());
        emitter.as_deref() == Some(token.as_slice())
            && topics.first() == Some(&Some(TRANSFER))
            && topics.get(2) == Some(&Some(to.into_word()))
            && value == Some(amount)
    });
    if !paid {
        return Ok(ReceiptStatus::Failed(format!("no Transfer of {amount} to {}", address::show(to))));
    }
    let block = v.get("blockNumber").and_then(Value::as_u64).ok_or_else(|| bad("no block number"))?;
    Ok(ReceiptStatus::Settled(SettledTransfer { tx_hash: id.to_string(), to: address::show(to), amount: amount.to_string(), block }))
}
