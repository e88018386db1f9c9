//! Read-only questions to the adapter's own Solana node, through the host.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::accounts::{is_token_program, Key, Parse};
use crate::stablerail::adapter0_1_0::chain::{self, QueryError};
use crate::stablerail::adapter0_1_0::types::{AdapterError, ProofError};

/// The node could not answer, or answered what no node would.
pub struct Unavailable(String);

impl From<Unavailable> for ProofError {
    fn from(e: Unavailable) -> Self {
        ProofError::ChainUnavailable(e.0)
    }
}

impl From<Unavailable> for AdapterError {
    fn from(e: Unavailable) -> Self {
        AdapterError::ChainUnavailable(e.0)
    }
}

fn query(method: &str, params: Value) -> Result<Value, Unavailable> {
    let text = chain::query(method, &params.to_string()).map_err(|e| {
        Unavailable(match e {
            QueryError::Denied(m) => format!("{method} denied: {m}"),
            QueryError::Unavailable(m) => format!("{method}: node unavailable: {m}"),
            QueryError::Rpc(m) => format!("{method}: {m}"),
        })
    })?;
    serde_json::from_str(&text).map_err(|_| Unavailable(format!("{method}: the answer is not JSON")))
}

const CONFIRMED: &str = "confirmed";

/// An account's owner program and data, or `None` when it does not exist.
fn account(key: &Key) -> Result<Option<(Key, Vec<u8>)>, Unavailable> {
    let v = query("getAccountInfo", json!([key.to_string(), { "encoding": "base64", "commitment": CONFIRMED }]))?;
    let info = v.get("value").ok_or_else(|| Unavailable("getAccountInfo: no value".into()))?;
    if info.is_null() {
        return Ok(None);
    }
    let owner = info.get("owner").and_then(Value::as_str).and_then(Key::parse);
    let data = info.pointer("/data/0").and_then(Value::as_str).and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok());
    match (owner, data) {
        (Some(o), Some(d)) => Ok(Some((o, d))),
        _ => Err(Unavailable("getAccountInfo: unreadable account".into())),
    }
}

pub fn exists(key: &Key) -> Result<bool, Unavailable> {
    Ok(account(key)?.is_some())
}

/// The token program that owns `mint`.
pub fn token_program(mint: &Key) -> Result<Key, Unavailable> {
    match account(mint)? {
        Some((owner, _)) if is_token_program(&owner) => Ok(owner),
        Some((owner, _)) => Err(Unavailable(format!("mint {mint} is owned by {owner}, not a token program"))),
        None => Err(Unavailable(format!("mint {mint} does not exist on this chain"))),
    }
}

/// A token account's balance, or `None` when the account does not exist.
pub fn token_balance(account_key: &Key) -> Result<Option<u64>, Unavailable> {
    let Some((owner, data)) = account(account_key)? else { return Ok(None) };
    // SPL token account layout: mint, owner, then the amount (u64 LE) at 64.
    match data.get(64..72) {
        Some(amount) if is_token_program(&owner) => Ok(Some(u64::from_le_bytes(amount.try_into().expect("8 bytes")))),
        _ => Ok(None),
    }
}

pub fn blockhash_valid(hash: &[u8; 32]) -> Result<bool, Unavailable> {
    let v = query("isBlockhashValid", json!([bs58::encode(hash).into_string(), { "commitment": CONFIRMED }]))?;
    v.get("value").and_then(Value::as_bool).ok_or_else(|| Unavailable("isBlockhashValid: no value".into()))
}

pub fn latest_blockhash() -> Result<[u8; 32], Unavailable> {
    let v = query("getLatestBlockhash", json!([{ "commitment": CONFIRMED }]))?;
    v.pointer("/value/blockhash")
        .and_then(Value::as_str)
        .and_then(|h| bs58::decode(h).into_vec().ok())
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Unavailable("getLatestBlockhash: no blockhash".into()))
}
