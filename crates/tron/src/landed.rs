//! What a TRON node proves about a payer's Permit2 authorization: the
//! transaction that used it when it was not ours (anyone may call the x402
//! Permit2 proxy's `settle` with a signed permit, so a front-runner can
//! land it first), and the one TRC-20 movement a transaction made under it
//! (as `family/evm/landed.rs` does on EVM chains).
//!
//! A full node has no log filter: blocks since the intent are read one by
//! one (`gettransactioninfobyblocknum`). A candidate moved the amount from
//! payer to payTo; it counts only if its `raw_data` (whose sha256 is its id)
//! is one TriggerSmartContract of the configured proxy whose calldata
//! settles exactly this permit (`family::permit2::settles`), and it
//! succeeded. Bytes elsewhere in a transaction prove nothing.

use alloy_primitives::{Address, U256};
use serde_json::{json, Value};

use super::call;
use crate::family::chain::ChainClient;
use crate::family::{permit2, SendError};
use crate::payment::{Authorization, Movement, VerifiedPayment};

/// keccak256("Transfer(address,address,uint256)"), as a node shows topics.
const TRANSFER: &str = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/// At most this many blocks are read back (one request each).
const MAX_BLOCKS: u64 = 2_000;
/// Block timestamps are a producer's clock, not ours.
const CLOCK_SKEW_MS: i64 = 30_000;

fn word(a: &Address) -> String {
    format!("{:0>64}", hex::encode(a.as_slice()))
}

/// The addresses a search compares, parsed once.
pub struct Parties {
    pub token: Address,
    pub from: Address,
    pub to: Address,
    pub amount: U256,
}

impl Parties {
    pub fn of(token: &str, payment: &VerifiedPayment) -> Result<Parties, SendError> {
        let address = |a: &str| tron_wire::address::parse(a).ok_or_else(|| SendError::Unsupported(format!("{a} is not a TRON address")));
        let amount = U256::from_str_radix(&payment.amount, 10).map_err(|_| SendError::Unsupported("bad amount".into()))?;
        Ok(Parties { token: address(token)?, from: address(&payment.payer)?, to: address(&payment.pay_to)?, amount })
    }
}

/// A log's amount if it is a TRC-20 Transfer of `p`'s token from payer to payTo.
fn transfer_value(log: &Value, p: &Parties) -> Option<U256> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| s.trim_start_matches("0x").to_ascii_lowercase());
    let topics: Vec<String> = log.get("topics").and_then(Value::as_array).into_iter().flatten().filter_map(|t| text(Some(t))).collect();
    let emitter = text(log.get("address")).map(|a| a.strip_prefix("41").filter(|r| r.len() == 40).map(str::to_string).unwrap_or(a));
    let ok = emitter.as_deref() == Some(hex::encode(p.token.as_slice()).as_str())
        && topics.len() == 3
        && topics[0] == TRANSFER
        && topics[1] == word(&p.from)
        && topics[2] == word(&p.to);
    ok.then(|| text(log.get("data")).and_then(|d| U256::from_str_radix(&d, 16).ok())).flatten()
}

/// Transactions executed since `since_ms` that used `auth` to move `p`
/// through `proxy`, oldest first, whoever sent them.
pub async fn transfers(
    client: &ChainClient,
    block_time_ms: u64,
    p: &Parties,
    auth: &Authorization,
    proxy: Address,
    since_ms: i64,
) -> Result<Vec<String>, SendError> {
    let Authorization::Permit2(permit) = auth else { return Ok(vec![]) };
    let head = call(client, "/wallet/getnowblock", json!({})).await?;
    let head = head
        .pointer("/block_header/raw_data/number")
        .and_then(Value::as_u64)
        .ok_or_else(|| SendError::Unavailable("getnowblock: no block number".into()))?;
    let elapsed = (crate::clock::now_ms() - since_ms).max(0) as u64;
    let back = (elapsed / block_time_ms.max(1) + 64).min(MAX_BLOCKS);
    let mut out: Vec<String> = vec![];
    for num in head.saturating_sub(back)..=head {
        let infos = call(client, "/wallet/gettransactioninfobyblocknum", json!({ "num": num })).await?;
        for info in infos.as_array().into_iter().flatten() {
            let Some(id) = info.get("id").and_then(Value::as_str) else { continue };
            let recent = info.get("blockTimeStamp").and_then(Value::as_i64).is_some_and(|t| t + CLOCK_SKEW_MS >= since_ms);
            let succeeded = info.pointer("/receipt/result").and_then(Value::as_str) == Some("SUCCESS");
            let moved = info.get("log").and_then(Value::as_array).into_iter().flatten().any(|l| transfer_value(l, p) == Some(p.amount));
            if !recent || !succeeded || !moved || out.iter().any(|h| h == id) {
                continue;
            }
            let tx = call(client, "/wallet/gettransactionbyid", json!({ "value": id })).await?;
            let raw = tx.get("raw_data_hex").and_then(Value::as_str).and_then(|h| hex::decode(h).ok()).unwrap_or_default();
            // The node's id is not trusted: the bytes must hash to it.
            if hex::encode(tron_wire::raw::tx_id(&raw)) != id.trim_start_matches("0x").to_ascii_lowercase() {
                continue;
            }
            let Ok((_, trigger)) = tron_wire::raw::single_call(&raw) else { continue };
            let target = trigger.contract_address.strip_prefix(&[0x41u8][..]).and_then(|a| <[u8; 20]>::try_from(a).ok()).map(Address::from);
            if target == Some(proxy) && permit2::settles(&trigger.data, permit, tron_wire::address::parse_signed) {
                out.push(id.to_string());
            }
        }
    }
    Ok(out)
}

/// The movements a transaction's info may credit to `p`: each TRC-20
/// Transfer of the amount from payer to payTo, by its place in the log,
/// for the books to give the first one no other payment holds.
pub fn movements(info: &Value, p: &Parties) -> Vec<Movement> {
    let Some(id) = info.get("id").and_then(Value::as_str) else { return vec![] };
    let block = info.get("blockNumber").and_then(Value::as_i64).unwrap_or(0);
    let fee = info.get("fee").and_then(Value::as_u64).map(|f| f.to_string());
    let show = tron_wire::address::show;
    info.get("log")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, l)| transfer_value(l, p) == Some(p.amount))
        .map(|(k, _)| Movement {
            tx: id.trim_start_matches("0x").to_ascii_lowercase(),
            index: k as i64,
            token: show(&p.token),
            from: show(&p.from),
            to: show(&p.to),
            amount: p.amount.to_string(),
            block,
            fee: fee.clone(),
        })
        .collect()
}

/// The solidified head: what the books read up to (a TRON block is final
/// once solidified; no confirmations to count on top).
pub async fn solid_head(client: &ChainClient) -> Result<u64, SendError> {
    let head = call(client, "/walletsolidity/getnowblock", json!({})).await?;
    head.pointer("/block_header/raw_data/number")
        .and_then(Value::as_u64)
        .ok_or_else(|| SendError::Unavailable("getnowblock: no block number".into()))
}

/// `wallet`'s TRC-20 balance in the solidified state, and the solidified
/// block it is of. A node has no older state, so the head is read on both
/// sides of the balance: an answer between two blocks is not given.
pub async fn solid_balance(client: &ChainClient, token: &Address, wallet: &Address) -> Result<(U256, u64), SendError> {
    let show = tron_wire::address::show;
    for _ in 0..5 {
        let before = solid_head(client).await?;
        let v = call(
            client,
            "/walletsolidity/triggerconstantcontract",
            json!({
                "owner_address": show(wallet), "contract_address": show(token), "visible": true,
                "function_selector": "balanceOf(address)", "parameter": word(wallet),
            }),
        )
        .await?;
        let raw = v.pointer("/constant_result/0").and_then(Value::as_str).and_then(|h| U256::from_str_radix(h, 16).ok());
        let raw = raw.ok_or_else(|| SendError::Unavailable(format!("balanceOf answered {v}")))?;
        if solid_head(client).await? == before {
            return Ok((raw, before));
        }
    }
    Err(SendError::Unavailable("the solidified head kept moving while the balance was read".into()))
}

/// Every TRC-20 Transfer of `token` into or out of `wallet` in blocks
/// `from..=to` that executed successfully, whoever sent it, indexed by its
/// place in its transaction's log (as `movements` credits them).
pub async fn wallet_movements(
    client: &ChainClient,
    token: &Address,
    wallet: &Address,
    from: u64,
    to: u64,
) -> Result<Vec<Movement>, SendError> {
    let (token_hex, wallet_word) = (hex::encode(token.as_slice()), word(wallet));
    let show = tron_wire::address::show;
    let mut out = vec![];
    for num in from..=to {
        let infos = call(client, "/walletsolidity/gettransactioninfobyblocknum", json!({ "num": num })).await?;
        for info in infos.as_array().into_iter().flatten() {
            let Some(id) = info.get("id").and_then(Value::as_str) else { continue };
            if info.pointer("/receipt/result").and_then(Value::as_str) != Some("SUCCESS") {
                continue;
            }
            let fee = info.get("fee").and_then(Value::as_u64).map(|f| f.to_string());
            for (k, log) in info.get("log").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let text = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| s.trim_start_matches("0x").to_ascii_lowercase());
                let topics: Vec<String> =
                    log.get("topics").and_then(Value::as_array).into_iter().flatten().filter_map(|t| text(Some(t))).collect();
                let emitter =
                    text(log.get("address")).map(|a| a.strip_prefix("41").filter(|r| r.len() == 40).map(str::to_string).unwrap_or(a));
                if emitter.as_deref() != Some(token_hex.as_str()) || topics.len() != 3 || topics[0] != TRANSFER {
                    continue;
                }
                if topics[1] != wallet_word && topics[2] != wallet_word {
                    continue;
                }
                let Some(amount) = text(log.get("data")).and_then(|d| U256::from_str_radix(&d, 16).ok()) else { continue };
                if amount.is_zero() {
                    continue;
                }
                let party =
                    |t: &str| t.get(24..).and_then(|h| hex::decode(h).ok()).filter(|b| b.len() == 20).map(|b| Address::from_slice(&b));
                let (Some(sender), Some(receiver)) = (party(&topics[1]), party(&topics[2])) else { continue };
                out.push(Movement {
                    tx: id.trim_start_matches("0x").to_ascii_lowercase(),
                    index: k as i64,
                    token: show(token),
                    from: show(&sender),
                    to: show(&receiver),
                    amount: amount.to_string(),
                    block: num as i64,
                    fee: fee.clone(),
                });
            }
        }
    }
    Ok(out)
}
