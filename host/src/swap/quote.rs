//! `GET /api/swap/quote`: the request's rules, in the spec's order, then
//! the provider's quote mapped to the spec's fields.

use std::collections::HashMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::route::{RouteRequest, RouteTx};
use super::Amount;
use super::{amount, slippage, valid_address, SwapChain, SwapError, Swaps};
use crate::db::Db;

/// How long a Solana swap transaction may be sent: its blockhash lives
/// 150 blocks (about 60 s at 400 ms).
pub const SOLANA_TTL_SECONDS: i64 = 60;

#[derive(Debug, Serialize, ToSchema)]
pub struct QuoteResponse {
    pub quote: QuoteBody,
    /// Present only when the signer is known (`user_address` or `email`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_transaction: Option<SwapTransaction>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct QuoteBody {
    pub input_token: String,
    pub output_token: String,
    /// Smallest units, decimal string.
    pub input_amount: String,
    pub output_amount: String,
    /// The least that arrives within the slippage.
    pub min_output_amount: String,
    /// Percent, e.g. `"0.31"`.
    pub price_impact_pct: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SwapTransaction {
    /// EVM: hex calldata. Solana: base64 versioned transaction.
    pub transaction: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Hex wei (native-input swaps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gas_limit: Option<String>,
    /// Unix seconds; never broadcast after it.
    pub expires_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_valid_block_height: Option<u64>,
}

/// A query parameter, empty counted as absent.
pub fn param<'a>(q: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    q.get(key).map(|s| s.trim()).filter(|s| !s.is_empty())
}

/// `email` resolved to the wallet registered for it on `chain`, unless an
/// address is given (which wins).
pub async fn wallet(
    db: &Db,
    address: Option<&str>,
    email: Option<&str>,
    chain: &SwapChain,
    which: &'static str,
) -> Result<Option<String>, SwapError> {
    if let Some(a) = address {
        return Ok(Some(a.to_string()));
    }
    let Some(email) = email else { return Ok(None) };
    crate::store::agents::recipient(db, email, &chain.name)
        .await
        .map_err(|e| SwapError::Internal(e.to_string()))?
        .map(Some)
        .ok_or(SwapError::UnknownEmail(which))
}

pub fn token(chain: &SwapChain, text: &str, which: &'static str) -> Result<String, SwapError> {
    valid_address(chain.family, text).then(|| text.to_string()).ok_or(SwapError::Invalid(which))
}

pub fn account(chain: &SwapChain, text: Option<String>, which: &'static str) -> Result<Option<String>, SwapError> {
    match text {
        Some(t) if !valid_address(chain.family, &t) => Err(SwapError::Invalid(which)),
        other => Ok(other),
    }
}

pub async fn quote(swaps: &Swaps, db: &Db, q: &HashMap<String, String>, now_s: i64) -> Result<QuoteResponse, SwapError> {
    let chain_name = param(q, "chain").ok_or(SwapError::ParamRequired("chain"))?;
    let input = param(q, "input_token").ok_or(SwapError::ParamRequired("input_token"))?;
    let output = param(q, "output_token").ok_or(SwapError::ParamRequired("output_token"))?;
    let (from_amount, to_amount, alias) = (param(q, "from_amount"), param(q, "to_amount"), param(q, "amount"));
    let wanted = match (from_amount, to_amount, alias) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => return Err(SwapError::AmountsExclusive),
        (Some(a), None, None) | (None, None, Some(a)) => Amount::From(amount(a)?),
        (None, Some(a), None) => Amount::To(amount(a)?),
        (None, None, None) => return Err(SwapError::AmountRequired),
    };
    let slippage_bps = slippage(param(q, "slippage_bps"))?;
    let from = swaps.chain(chain_name)?;
    let to = match param(q, "to_chain") {
        Some(t) => swaps.chain(t)?,
        None => from.clone(),
    };
    let input = token(&from, input, "input_token")?;
    let output = token(&to, output, "output_token")?;
    let user = account(&from, wallet(db, param(q, "user_address"), param(q, "email"), &from, "email").await?, "user_address")?;
    let to_user =
        account(&to, wallet(db, param(q, "to_user_address"), param(q, "to_user_email"), &to, "to_user_email").await?, "to_user_address")?;
    if user.is_some() && from.family != to.family && to_user.is_none() {
        return Err(SwapError::RecipientRequired);
    }
    let route = swaps
        .best_route(&RouteRequest {
            from: &from,
            to: &to,
            from_token: &input,
            to_token: &output,
            from_address: user.as_deref(),
            to_address: to_user.as_deref(),
            amount: wanted,
            slippage_bps,
        })
        .await?;
    let body = QuoteBody {
        input_token: input,
        output_token: output,
        input_amount: route.input_amount,
        output_amount: route.output_amount,
        min_output_amount: route.min_output_amount,
        price_impact_pct: route.price_impact_pct,
    };
    let ttl = swaps.config.swap.quote_ttl_seconds as i64;
    let swap_transaction = route.transaction.map(|tx| match tx {
        RouteTx::Evm { to, data, value, gas_limit } => SwapTransaction {
            transaction: data,
            to: Some(to),
            value: value.or(Some("0x0".into())),
            gas_limit,
            expires_at: now_s + ttl,
            last_valid_block_height: None,
        },
        // A Solana transaction dies with its blockhash (150 blocks, about a
        // minute): never promise more.
        RouteTx::Solana { transaction, last_valid_block_height } => SwapTransaction {
            transaction,
            to: None,
            value: None,
            gas_limit: None,
            expires_at: now_s + ttl.min(SOLANA_TTL_SECONDS),
            last_valid_block_height,
        },
        // A TRON transaction carries its own expiration.
        RouteTx::Tron { to, raw_data, fee_limit } => {
            let expires = tron_wire::raw::single_call(&raw_data).map_or(now_s + ttl, |(raw, _)| raw.expiration / 1000);
            SwapTransaction {
                transaction: alloy_primitives::hex::encode_prefixed(&raw_data),
                to: Some(to),
                value: None,
                gas_limit: fee_limit,
                expires_at: expires.min(now_s + ttl),
                last_valid_block_height: None,
            }
        }
    });
    Ok(QuoteResponse { quote: body, swap_transaction })
}
