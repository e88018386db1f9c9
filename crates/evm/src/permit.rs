//! A hosted wallet with no native coin paying a Permit2 asset: instead of
//! sending its own `approve(Permit2)` (which needs gas), it signs an
//! EIP-2612 permit to Permit2 off chain, and the payment carries it as the
//! x402 `eip2612GasSponsoring` extension, which the relayer submits with
//! the settlement (`settleWithPermit`). A wallet that can pay for its
//! approval keeps approving once, which later payments then need nothing for.

use crate::crypto::Secp256k1Key;
use alloy_primitives::{Address, U256};
use alloy_sol_types::{sol, SolStruct};
use serde_json::{json, Value};

use super::token_facts::{call, domain, PERMIT2};
use crate::config::{Asset, DomainKind};
use crate::family::chain::ChainClient;

sol! {
    struct Permit {
        address owner;
        address spender;
        uint256 value;
        uint256 nonce;
        uint256 deadline;
    }
    function nonces(address owner) external view returns (uint256);
    function allowance(address owner, address spender) external view returns (uint256);
}

/// The extension's name in the payload and in `extra.extensions`.
pub const EXTENSION: &str = "eip2612GasSponsoring";
/// How long a permit stays usable: the payment settles well within it.
const LIFETIME_SECS: u64 = 600;
/// Gas an approval takes, with margin: a wallet holding this much at the
/// node's price approves itself.
const APPROVE_GAS: u64 = 100_000;

/// The extension `owner` (`signer`) attaches to pay `amount` of `asset`,
/// or `None` when none is needed or possible: the scheme is not Permit2,
/// the token has no EIP-2612 domain, Permit2 may already take the amount,
/// or the wallet can pay for its own approval.
pub async fn sponsored(
    client: &ChainClient,
    chain_id: u64,
    asset: &Asset,
    signer: &Secp256k1Key,
    amount: U256,
    now_secs: u64,
) -> anyhow::Result<Option<Value>> {
    let (Some(name), Some(version)) = (&asset.eip712_name, &asset.eip712_version) else { return Ok(None) };
    if asset.scheme != "permit2" || asset.domain == DomainKind::None {
        return Ok(None);
    }
    let Ok(token) = asset.token.parse::<Address>() else { return Ok(None) };
    let permit2 = asset.params.get("permit2-address").and_then(|a| a.parse().ok()).unwrap_or(PERMIT2);
    let owner = signer.address();
    let allowed = call(client, token, allowanceCall { owner, spender: permit2 }).await?.unwrap_or_default();
    if allowed >= amount {
        return Ok(None);
    }
    let hex = |v: Value| v.as_str().and_then(|h| U256::from_str_radix(h.trim_start_matches("0x"), 16).ok()).unwrap_or_default();
    let balance = hex(client.rpc("eth_getBalance", json!([owner, "latest"])).await?);
    let price = hex(client.rpc("eth_gasPrice", json!([])).await?);
    if balance >= price.saturating_mul(U256::from(APPROVE_GAS)) && !balance.is_zero() {
        return Ok(None);
    }
    let Some(nonce) = call(client, token, noncesCall { owner }).await? else { return Ok(None) };
    let deadline = U256::from(now_secs + LIFETIME_SECS);
    let permit = Permit { owner, spender: permit2, value: amount, nonce, deadline };
    let digest = permit.eip712_signing_hash(&domain(name, version, chain_id, token, asset.domain == DomainKind::Salted));
    let signature = crate::crypto::secp256k1_sign(signer, &digest).map_err(|e| e.context("signing"))?.as_bytes();
    Ok(Some(json!({
        "info": {
            "from": owner.to_checksum(None),
            "asset": token.to_checksum(None),
            "spender": permit2.to_checksum(None),
            "amount": amount.to_string(),
            "nonce": nonce.to_string(),
            "deadline": deadline.to_string(),
            "signature": format!("0x{}", alloy_primitives::hex::encode(signature)),
            "version": "1",
        }
    })))
}
