//! What swapping from a wallet asks of the input token: whether it is the
//! native coin, the wallet's allowance to the route's spender (read on
//! chain), whether the token must be reset to 0 before a new allowance, and
//! the approve transaction. ERC-20 on EVM chains; TRC-20, the same ABI, on
//! TRON. Shared by `approval` and `execute`.

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolCall;
use serde_json::json;

use super::{SwapError, Swaps};
use crate::config::Family;
use crate::family::tron::calls::{self, allowanceCall};
use crate::payment::{EvmCall, Submission, TronTransaction};

pub use calls::approve_data;

/// How long an approve built for a hosted TRON wallet may wait to be sent.
const TRON_APPROVE_LIFETIME_MS: i64 = 60_000;
/// Its fee_limit: 50 TRX, as the approval helpers.
const TRON_APPROVE_FEE_LIMIT: i64 = 50_000_000;
/// One token spent from `owner` through `spender` on `chain`.
pub struct Spend<'a> {
    pub chain: &'a str,
    pub family: Family,
    pub token: Address,
    pub owner: Address,
    pub spender: Address,
}

pub async fn allowance(swaps: &Swaps, s: &Spend<'_>) -> Result<U256, SwapError> {
    let client = swaps.client(s.chain)?;
    if s.family == Family::Tron {
        return calls::allowance(&client, &s.token, &s.owner, &s.spender)
            .await
            .map_err(|e| SwapError::Unavailable(format!("{}: {e}", s.chain)));
    }
    let data = alloy_primitives::hex::encode_prefixed(allowanceCall { owner: s.owner, spender: s.spender }.abi_encode());
    let answer = client
        .rpc("eth_call", json!([{ "to": s.token, "data": data }, "latest"]))
        .await
        .map_err(|e| SwapError::Unavailable(format!("{}: {e}", s.chain)))?;
    answer
        .as_str()
        .and_then(|h| U256::from_str_radix(h.trim_start_matches("0x"), 16).ok())
        .ok_or_else(|| SwapError::Unavailable("allowance unreadable".into()))
}

/// Whether `token` is configured on `chain` with `reset-allowance-first`
/// (USDT on ethereum: a non-zero allowance cannot be changed but to 0).
pub fn resets_first(swaps: &Swaps, s: &Spend<'_>) -> bool {
    swaps.config.chains.get(s.chain).is_some_and(|c| {
        c.assets.values().any(|a| {
            s.family.facts().address20(&a.token) == Some(s.token) && a.params.get("reset-allowance-first").is_some_and(|v| v == "true")
        })
    })
}

/// The approve of `value` for the owner's wallet to sign and send.
pub async fn approve_submission(swaps: &Swaps, s: &Spend<'_>, value: U256) -> Result<Submission, SwapError> {
    if s.family != Family::Tron {
        return Ok(Submission::EvmCall(EvmCall {
            to: s.token.to_checksum(None),
            data: approve_data(s.spender, value),
            value: "0".into(),
            gas_limit: None,
        }));
    }
    let client = swaps.client(s.chain)?;
    let head = calls::head(&client).await.map_err(|e| SwapError::Unavailable(format!("{}: {e}", s.chain)))?;
    let now = crate::clock::now_ms();
    let raw_data =
        calls::approve_raw(&s.owner, &s.token, s.spender, value, &head, now, now + TRON_APPROVE_LIFETIME_MS, TRON_APPROVE_FEE_LIMIT);
    // No signature: the driver signs it as the wallet, its owner.
    Ok(Submission::TronSigned(TronTransaction { raw_data, signatures: vec![] }))
}
