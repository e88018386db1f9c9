//! `GET /api/swap/approval` (EVM): whether the signer's allowance to the
//! route's spender covers the amount, read on chain, and the approve (and,
//! for tokens that refuse to change a non-zero allowance, the reset to 0)
//! to sign.

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};

use super::erc20::{self, Spend};
use super::quote::{account, token, wallet};
use super::route::RouteRequest;
use super::Amount;
use super::{amount, given, SwapError, Swaps};

/// Gas for an approve when the node cannot estimate it.
const APPROVE_GAS: u64 = 100_000;

#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalResponse {
    pub request_id: String,
    pub needs_approval: bool,
    /// Wei, decimal string (with `include_gas_info`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gas_fee: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_gas_fee: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalTx>,
    /// The reset to 0 that must land first (tokens such as USDT on ethereum).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<ApprovalTx>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalTx {
    pub to: String,
    pub from: String,
    /// Hex calldata.
    pub data: String,
    pub value: String,
    pub chain_id: u64,
    /// Hex.
    pub gas_limit: String,
}

/// `GET /api/swap/approval`'s parameters, read as text and checked in
/// `approval` in the spec's order.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApprovalQuery {
    /// Source chain (EVM)
    #[param(value_type = String, required = true)]
    pub chain: Option<String>,
    /// Token to approve
    #[param(value_type = String, required = true)]
    pub token: Option<String>,
    /// Output token, to find the route's spender
    #[param(value_type = String, required = true)]
    pub token_out: Option<String>,
    /// Smallest units to be spent
    #[param(value_type = u64, required = true)]
    pub amount: Option<String>,
    /// Signer
    pub user_address: Option<String>,
    /// Accepted and not resolved on the public API (it would reveal the
    /// email's wallet): send `user_address`.
    pub email: Option<String>,
    /// Destination chain
    pub to_chain: Option<String>,
    /// Recipient
    pub to_user_address: Option<String>,
    /// Accepted and not resolved on the public API: send `to_user_address`.
    pub to_user_email: Option<String>,
    /// Add gas_fee and cancel_gas_fee (wei)
    #[param(value_type = Option<bool>)]
    pub include_gas_info: Option<String>,
}

pub async fn approval(swaps: &Swaps, q: &ApprovalQuery) -> Result<ApprovalResponse, SwapError> {
    let chain_name = given(&q.chain).ok_or(SwapError::ParamRequired("chain"))?;
    let token_in = given(&q.token).ok_or(SwapError::ParamRequired("token"))?;
    let token_out = given(&q.token_out).ok_or(SwapError::ParamRequired("token_out"))?;
    let spend = amount(given(&q.amount).ok_or(SwapError::ParamRequired("amount"))?)?;
    let from = swaps.chain(chain_name)?;
    // Approvals here are ERC-20 approvals on an EVM chain (one with a chain id).
    if from.chain_id.is_none() {
        return Err(SwapError::UnsupportedChain(chain_name.to_string()));
    }
    let (_, to) = swaps.pair(chain_name, given(&q.to_chain))?;
    let token_in = token(&from, token_in, "token")?;
    let token_out = token(&to, token_out, "token_out")?;
    let user = account(&from, wallet(given(&q.user_address)), "user_address")?.ok_or(SwapError::ParamRequired("user_address"))?;
    let to_user = account(&to, wallet(given(&q.to_user_address)), "to_user_address")?;
    let gas_info = given(&q.include_gas_info).is_some_and(|v| v == "true" || v == "1");
    let request_id = ulid::Ulid::new().to_string();
    let (token_addr, owner): (Address, Address) =
        (token_in.parse().map_err(|_| SwapError::Invalid("token"))?, user.parse().map_err(|_| SwapError::Invalid("user_address"))?);
    if from.family.facts().is_native(&token_addr) {
        return Ok(ApprovalResponse {
            request_id,
            needs_approval: false,
            gas_fee: None,
            cancel_gas_fee: None,
            approval: None,
            cancel: None,
        });
    }
    // The spender is the route's: ask for the quote the swap will use.
    let route = swaps
        .best_route(&RouteRequest {
            from: &from,
            to: &to,
            from_token: &token_in,
            to_token: &token_out,
            from_address: Some(&user),
            to_address: to_user.as_deref(),
            amount: Amount::From(spend),
            slippage_bps: super::DEFAULT_SLIPPAGE_BPS,
        })
        .await?;
    let spender_text =
        route.approval_address.as_deref().ok_or_else(|| SwapError::Unavailable("quote without an approval address".into()))?;
    // Never ask a user to approve a contract the service would not approve itself.
    super::guard::check_spender(swaps, &from, spender_text)?;
    let spender: Address = spender_text.parse().map_err(|_| SwapError::Unavailable("unreadable approval address".into()))?;
    let client = swaps.client(&from.name)?;
    let wanted = Spend { chain: &from.name, family: from.family, token: token_addr, owner, spender };
    let allowance = erc20::allowance(swaps, &wanted).await?;
    if allowance >= U256::from(spend) {
        return Ok(ApprovalResponse {
            request_id,
            needs_approval: false,
            gas_fee: None,
            cancel_gas_fee: None,
            approval: None,
            cancel: None,
        });
    }
    let chain_id = from.chain_id.unwrap_or_default();
    let resets = erc20::resets_first(swaps, &wanted);
    let gas_price = if gas_info {
        client
            .rpc("eth_gasPrice", json!([]))
            .await
            .ok()
            .and_then(|v| v.as_str().and_then(|h| u128::from_str_radix(h.trim_start_matches("0x"), 16).ok()))
    } else {
        None
    };
    let tx = |value: U256| {
        let data = alloy_primitives::hex::encode_prefixed(erc20::approve_data(spender, value));
        let client = client.clone();
        let user = user.clone();
        let token_in = token_in.clone();
        async move {
            let estimate = client.rpc("eth_estimateGas", json!([{ "from": user, "to": token_in, "data": data }])).await.ok();
            let gas = estimate
                .and_then(|v| v.as_str().and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok()))
                .unwrap_or(APPROVE_GAS);
            (ApprovalTx { to: token_in, from: user, data, value: "0x0".into(), chain_id, gas_limit: format!("{gas:#x}") }, gas)
        }
    };
    let (approve, gas) = tx(U256::from(spend)).await;
    let cancel = if resets && !allowance.is_zero() { Some(tx(U256::ZERO).await) } else { None };
    let fee = |gas: u64| gas_price.map(|p| (p * u128::from(gas)).to_string());
    Ok(ApprovalResponse {
        request_id,
        needs_approval: true,
        gas_fee: fee(gas),
        cancel_gas_fee: cancel.as_ref().and_then(|(_, g)| fee(*g)),
        approval: Some(approve),
        cancel: cancel.map(|(t, _)| t),
    })
}
