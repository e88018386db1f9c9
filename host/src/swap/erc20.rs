//! What swapping from an EVM wallet asks of the input token: whether it is
//! the native coin, the wallet's allowance to the route's spender (read on
//! chain), whether the token must be reset to 0 before a new allowance, and
//! the approve call itself. Shared by `approval` and `execute`.

use alloy_primitives::{Address, U256};
use alloy_sol_types::{sol, SolCall};
use serde_json::json;

use super::{SwapError, Swaps};

sol! {
    function approve(address spender, uint256 value) returns (bool);
    function allowance(address owner, address spender) returns (uint256);
}

/// The native coin as routers name it (zero or 0xEeee…): never approved.
pub fn native(token: &Address) -> bool {
    *token == Address::ZERO || *token == Address::repeat_byte(0xee)
}

pub async fn allowance(swaps: &Swaps, chain: &str, token: Address, owner: Address, spender: Address) -> Result<U256, SwapError> {
    let client = swaps.client(chain)?;
    let data = alloy_primitives::hex::encode_prefixed(allowanceCall { owner, spender }.abi_encode());
    let answer = client.rpc("eth_call", json!([{ "to": token, "data": data }, "latest"])).await.map_err(|e| SwapError::Unavailable(format!("{chain}: {e}")))?;
    answer.as_str().and_then(|h| U256::from_str_radix(h.trim_start_matches("0x"), 16).ok()).ok_or_else(|| SwapError::Unavailable("allowance unreadable".into()))
}

/// Whether `token` is configured on `chain` with `reset-allowance-first`
/// (ethereum USDT: a non-zero allowance cannot be changed but to 0).
pub fn resets_first(swaps: &Swaps, chain: &str, token: Address) -> bool {
    swaps.config.chains.get(chain).is_some_and(|c| {
        c.assets.values().any(|a| a.token.parse::<Address>().ok() == Some(token) && a.params.get("reset-allowance-first").is_some_and(|v| v == "true"))
    })
}

pub fn approve_data(spender: Address, value: U256) -> Vec<u8> {
    approveCall { spender, value }.abi_encode()
}
