//! A settled transaction, read from `getTransaction` (JSON encoding): it
//! succeeded, and the recipient's token account gained exactly the amount.
//! The balance change is the chain's own record, not the instruction's claim.

use serde_json::Value;

use crate::accounts::{self, Key, Parse};
use crate::stablerail::adapter0_1_0::types::{AdapterError, ReceiptStatus, SettledTransfer};

pub fn read(receipt: &str, pay_to: &Key, mint: &Key, amount: u64) -> Result<ReceiptStatus, AdapterError> {
    let bad = |m: &str| AdapterError::Malformed(format!("receipt: {m}"));
    let v: Value = serde_json::from_str(receipt).map_err(|_| bad("not JSON"))?;
    if v.is_null() {
        return Ok(ReceiptStatus::Pending);
    }
    let meta = v.get("meta").ok_or_else(|| bad("no meta"))?;
    let signature = v.pointer("/transaction/signatures/0").and_then(Value::as_str).ok_or_else(|| bad("no signature"))?;
    if let Some(err) = meta.get("err").filter(|e| !e.is_null()) {
        return Ok(ReceiptStatus::Failed(format!("transaction failed on chain: {err}")));
    }
    let keys: Vec<&str> = v
        .pointer("/transaction/message/accountKeys")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no account keys"))?
        .iter()
        .map(|k| k.as_str().unwrap_or(""))
        .collect();
    let balance = |list: &str| -> Option<(u64, Key)> {
        let rows = meta.get(list)?.as_array()?;
        rows.iter().find_map(|r| {
            let index = usize::try_from(r.get("accountIndex")?.as_u64()?).ok()?;
            let program = r.get("programId").and_then(Value::as_str).and_then(Key::parse)?;
            let at = Key::parse(keys.get(index)?)?;
            let mint_ok = r.get("mint").and_then(Value::as_str) == Some(mint.to_string().as_str());
            (mint_ok && at == accounts::ata(pay_to, mint, &program))
                .then(|| r.pointer("/uiTokenAmount/amount")?.as_str()?.parse().ok().map(|a| (a, program)))
                .flatten()
        })
    };
    let Some((after, _)) = balance("postTokenBalances") else {
        return Ok(ReceiptStatus::Failed(format!("{pay_to}'s token account holds no {mint} after the transaction")));
    };
    // Created by this very transaction: it held nothing before.
    let before = balance("preTokenBalances").map_or(0, |(b, _)| b);
    let received = after.saturating_sub(before);
    if received != amount {
        return Ok(ReceiptStatus::Failed(format!("{pay_to} received {received}, expected {amount}")));
    }
    let slot = v.get("slot").and_then(Value::as_u64).ok_or_else(|| bad("no slot"))?;
    Ok(ReceiptStatus::Settled(SettledTransfer {
        tx_hash: signature.to_string(),
        to: pay_to.to_string(),
        amount: amount.to_string(),
        block: slot,
    }))
}
