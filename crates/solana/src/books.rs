//! What the books' reconciler reads of a Solana wallet: the finalized
//! transactions that touched its token account of a mint
//! (`getSignaturesForAddress`, newest first), each read whole, and the net
//! change of the wallet's balance of that mint in it: one movement per
//! transaction (index 0, as a payment's credit is keyed), its counterparty
//! the other owner whose balance moved most the other way. A node keeps no
//! older state: a balance "at" a slot is today's less what moved since.

use alloy_primitives::U256;
use serde_json::{json, Value};

use super::{ata, rpc};
use crate::family::chain::ChainClient;
use crate::family::SendError;
use crate::payment::Movement;

/// Signatures read per page.
const PAGE: usize = 1000;

fn key(text: &str) -> Result<solana_pubkey::Pubkey, SendError> {
    text.parse().map_err(|_| SendError::Unsupported(format!("{text} is not a Solana address")))
}

/// The wallet's token account of `mint` (its associated one).
async fn token_account(client: &ChainClient, mint: &str, owner: &str) -> Result<String, SendError> {
    let info = rpc(client, "getAccountInfo", json!([mint, { "encoding": "base64" }])).await?;
    let program =
        info.pointer("/value/owner").and_then(Value::as_str).ok_or_else(|| SendError::Unavailable(format!("mint {mint} not found")))?;
    Ok(ata::address(&key(owner)?, &key(mint)?, &key(program)?).to_string())
}

/// The finalized slot: what the books read up to.
pub async fn finalized_slot(client: &ChainClient) -> Result<u64, SendError> {
    rpc(client, "getSlot", json!([{ "commitment": "finalized" }]))
        .await?
        .as_u64()
        .ok_or_else(|| SendError::Unavailable("getSlot: not a number".into()))
}

/// Each owner's change of `mint` in transaction `tx` (post minus pre).
fn changes(tx: &Value, mint: &str) -> Vec<(String, i128)> {
    let rows = |k: &str| -> Vec<(u64, String, i128)> {
        tx.pointer(&format!("/meta/{k}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("mint").and_then(Value::as_str) == Some(mint))
            .filter_map(|b| {
                Some((
                    b.get("accountIndex")?.as_u64()?,
                    b.get("owner")?.as_str()?.to_string(),
                    b.pointer("/uiTokenAmount/amount")?.as_str()?.parse().ok()?,
                ))
            })
            .collect()
    };
    let (pre, post) = (rows("preTokenBalances"), rows("postTokenBalances"));
    let mut by_owner: Vec<(String, i128)> = vec![];
    let mut add = |owner: &str, d: i128| match by_owner.iter_mut().find(|(o, _)| o == owner) {
        Some((_, n)) => *n += d,
        None => by_owner.push((owner.to_string(), d)),
    };
    for (index, owner, after) in &post {
        let before = pre.iter().find(|(i, _, _)| i == index).map_or(0, |(_, _, a)| *a);
        add(owner, after - before);
    }
    for (index, owner, before) in &pre {
        if !post.iter().any(|(i, _, _)| i == index) {
            add(owner, -before);
        }
    }
    by_owner
}

/// The movements of `mint` into or out of `owner` in slots `from..=to`,
/// oldest first. `finalized`: only what is final (the books); otherwise
/// what is confirmed too (to take back from a balance read now).
pub async fn movements(
    client: &ChainClient,
    mint: &str,
    owner: &str,
    from: u64,
    to: u64,
    finalized: bool,
) -> Result<Vec<Movement>, SendError> {
    let account = token_account(client, mint, owner).await?;
    let commitment = if finalized { "finalized" } else { "confirmed" };
    let mut out = vec![];
    let mut before: Option<String> = None;
    'pages: loop {
        let mut config = json!({ "limit": PAGE, "commitment": commitment });
        if let Some(b) = &before {
            config["before"] = json!(b);
        }
        let page = rpc(client, "getSignaturesForAddress", json!([account, config])).await?;
        let page = page.as_array().cloned().unwrap_or_default();
        for row in &page {
            let (Some(sig), Some(slot)) = (row.get("signature").and_then(Value::as_str), row.get("slot").and_then(Value::as_u64)) else {
                continue;
            };
            before = Some(sig.to_string());
            if slot < from {
                break 'pages;
            }
            if slot > to || !row.get("err").is_none_or(Value::is_null) {
                continue;
            }
            let tx = rpc(
                client,
                "getTransaction",
                json!([sig, { "encoding": "json", "commitment": commitment, "maxSupportedTransactionVersion": 0 }]),
            )
            .await?;
            let moved = changes(&tx, mint);
            let mine: i128 = moved.iter().filter(|(o, _)| o == owner).map(|(_, d)| d).sum();
            if mine == 0 {
                continue;
            }
            // The other side: whoever moved most the other way.
            let other = moved.iter().filter(|(o, d)| o != owner && d.signum() == -mine.signum()).max_by_key(|(_, d)| d.abs());
            let other = other.map_or_else(|| "unknown".to_string(), |(o, _)| o.clone());
            let (from_owner, to_owner) = if mine > 0 { (other, owner.to_string()) } else { (owner.to_string(), other) };
            out.push(Movement {
                tx: sig.to_string(),
                index: 0,
                token: mint.to_string(),
                from: from_owner,
                to: to_owner,
                amount: mine.unsigned_abs().to_string(),
                block: slot as i64,
                fee: tx.pointer("/meta/fee").and_then(Value::as_u64).map(|f| f.to_string()),
            });
        }
        if page.len() < PAGE {
            break;
        }
    }
    out.reverse();
    Ok(out)
}

/// `owner`'s balance of `mint` as of slot `at`: the balance now, less what
/// moved in since and plus what moved out.
pub async fn balance_at(client: &ChainClient, mint: &str, owner: &str, at: u64) -> Result<U256, SendError> {
    let account = token_account(client, mint, owner).await?;
    let found = rpc(client, "getAccountInfo", json!([account, { "encoding": "base64", "commitment": "confirmed" }])).await?;
    let (now, slot) = if found.get("value").is_some_and(|v| !v.is_null()) {
        let v = rpc(client, "getTokenAccountBalance", json!([account, { "commitment": "confirmed" }])).await?;
        let amount = v.pointer("/value/amount").and_then(Value::as_str).and_then(|a| a.parse::<i128>().ok());
        let amount = amount.ok_or_else(|| SendError::Unavailable(format!("getTokenAccountBalance answered {v}")))?;
        (amount, v.pointer("/context/slot").and_then(Value::as_u64).unwrap_or(0))
    } else {
        // No token account yet: nothing held, then or now.
        (0, found.pointer("/context/slot").and_then(Value::as_u64).unwrap_or(at).max(at))
    };
    if slot < at {
        return Err(SendError::Unavailable(format!("the node answered for slot {slot}, before {at}")));
    }
    let mut held = now;
    if slot > at {
        for m in movements(client, mint, owner, at + 1, slot, false).await? {
            let amount: i128 = m.amount.parse().unwrap_or(0);
            if m.to == owner {
                held -= amount;
            } else {
                held += amount;
            }
        }
    }
    Ok(U256::from(held.max(0) as u128))
}
