//! `GET /api/swap/quote`: the request's rules, in the spec's order, then
//! the provider's quote mapped to the spec's fields.

use std::collections::HashMap;

use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::lifi::{Amount, QuoteRequest};
use super::{amount, slippage, valid_address, SwapChain, SwapError, Swaps};
use crate::config::Family;
use crate::db::Db;

/// Where a quote is asked for when the caller named no wallet: LI.FI
/// requires some `fromAddress`; no transaction is returned for it.
const QUOTE_ONLY_FROM: &str = "0x0000000000000000000000000000000000000001";

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
pub async fn wallet(db: &Db, address: Option<&str>, email: Option<&str>, chain: &SwapChain, which: &'static str) -> Result<Option<String>, SwapError> {
    if let Some(a) = address {
        return Ok(Some(a.to_string()));
    }
    let Some(email) = email else { return Ok(None) };
    crate::store::agents::recipient(db, email, &chain.name).await.map_err(|e| SwapError::Internal(e.to_string()))?.map(Some).ok_or(SwapError::UnknownEmail(which))
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

/// A `0x…` hex quantity from LI.FI's hex or decimal string.
pub fn hex_quantity(v: Option<&Value>) -> Option<String> {
    let text = v?.as_str()?;
    if let Some(h) = text.strip_prefix("0x") {
        return u128::from_str_radix(h, 16).ok().map(|n| format!("{n:#x}"));
    }
    text.parse::<u128>().ok().map(|n| format!("{n:#x}"))
}

fn string(v: &Value, pointer: &str) -> Result<String, SwapError> {
    v.pointer(pointer).and_then(Value::as_str).map(str::to_string).ok_or_else(|| SwapError::Unavailable(format!("quote without {pointer}")))
}

/// How much worse the output is than the input, in USD terms, in percent.
fn price_impact(estimate: &Value) -> String {
    let usd = |k: &str| estimate.get(k).and_then(Value::as_str).and_then(|s| s.parse::<Decimal>().ok());
    match (usd("fromAmountUSD"), usd("toAmountUSD")) {
        (Some(from), Some(to)) if from > Decimal::ZERO => ((from - to) / from * Decimal::from(100)).round_dp(4).normalize().to_string(),
        _ => "0".into(),
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
    let to_user = account(&to, wallet(db, param(q, "to_user_address"), param(q, "to_user_email"), &to, "to_user_email").await?, "to_user_address")?;
    if user.is_some() && from.family != to.family && to_user.is_none() {
        return Err(SwapError::RecipientRequired);
    }
    let request = QuoteRequest {
        from_chain: from.lifi_id,
        to_chain: to.lifi_id,
        from_token: &input,
        to_token: &output,
        from_address: user.as_deref().unwrap_or(QUOTE_ONLY_FROM),
        to_address: to_user.as_deref(),
        amount: wanted,
        slippage_bps,
    };
    let step = swaps.lifi.quote(&request).await?;
    let estimate = step.get("estimate").cloned().unwrap_or_default();
    let body = QuoteBody {
        input_token: input,
        output_token: output,
        input_amount: string(&step, "/estimate/fromAmount")?,
        output_amount: string(&step, "/estimate/toAmount")?,
        min_output_amount: string(&step, "/estimate/toAmountMin")?,
        price_impact_pct: price_impact(&estimate),
    };
    let swap_transaction = match user {
        None => None,
        Some(_) => {
            let tx = step.get("transactionRequest").ok_or_else(|| SwapError::Unavailable("quote without transactionRequest".into()))?;
            let data = string(tx, "/data")?;
            let expires_at = now_s + swaps.config.swap.quote_ttl_seconds as i64;
            Some(match from.family {
                Family::Solana => SwapTransaction { transaction: data, to: None, value: None, gas_limit: None, expires_at, last_valid_block_height: tx.get("lastValidBlockHeight").and_then(Value::as_u64) },
                _ => SwapTransaction {
                    transaction: data,
                    to: Some(string(tx, "/to")?),
                    value: hex_quantity(tx.get("value")).or(Some("0x0".into())),
                    gas_limit: hex_quantity(tx.get("gasLimit")),
                    expires_at,
                    last_valid_block_height: None,
                },
            })
        }
    };
    Ok(QuoteResponse { quote: body, swap_transaction })
}
