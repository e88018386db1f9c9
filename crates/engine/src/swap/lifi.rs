//! The LI.FI API client: quotes (ExactIn and ExactOut), cross-chain status
//! and the discovery lists. Every failure is typed here; no upstream text or
//! URL leaves this module except in logs.

use serde_json::Value;

use super::upstream::Upstream;
use super::Amount;
use super::SwapError;
use crate::config::Swap as SwapConfig;

/// LI.FI's chain ids for the non-EVM chains.
pub const SOLANA_CHAIN_ID: u64 = 1_151_111_081_099_710;
pub const TRON_CHAIN_ID: u64 = 728_126_428;

/// LI.FI's `NoQuoteError`.
const NO_QUOTE: i64 = 1002;

pub struct Lifi {
    up: Upstream,
}

/// One quote request, in LI.FI's terms.
pub struct QuoteRequest<'a> {
    pub from_chain: u64,
    pub to_chain: u64,
    pub from_token: &'a str,
    pub to_token: &'a str,
    pub from_address: &'a str,
    pub to_address: Option<&'a str>,
    pub amount: Amount,
    pub slippage_bps: u16,
}

/// What a status lookup found.
pub enum Status {
    /// No record yet (HTTP 404 or `NOT_FOUND`).
    Unknown,
    Known(Value),
}

impl Lifi {
    pub fn new(cfg: &SwapConfig) -> Lifi {
        Lifi { up: Upstream::new(&cfg.lifi_url, cfg.timeout_ms, "x-lifi-api-key", cfg.lifi_api_key_env.as_deref()) }
    }

    /// A quote: one LI.FI step with `estimate` and `transactionRequest`.
    pub async fn quote(&self, q: &QuoteRequest<'_>) -> Result<Value, SwapError> {
        let mut query = vec![
            ("fromChain", q.from_chain.to_string()),
            ("toChain", q.to_chain.to_string()),
            ("fromToken", q.from_token.to_string()),
            ("toToken", q.to_token.to_string()),
            ("fromAddress", q.from_address.to_string()),
            // LI.FI takes slippage as a fraction: 50 bps = 0.005.
            ("slippage", (rust_decimal::Decimal::from(q.slippage_bps) / rust_decimal::Decimal::from(10_000)).normalize().to_string()),
        ];
        if let Some(to) = q.to_address {
            query.push(("toAddress", to.to_string()));
        }
        let path = match q.amount {
            Amount::From(a) => {
                query.push(("fromAmount", a.to_string()));
                "/quote"
            }
            Amount::To(a) => {
                query.push(("toAmount", a.to_string()));
                "/quote/toAmount"
            }
        };
        let (status, v) = self.up.get(path, &query).await?;
        if status.is_success() {
            return if v.get("estimate").is_some() {
                Ok(v)
            } else {
                Err(SwapError::Unavailable(format!("{path}: no estimate in the answer")))
            };
        }
        let code = v.get("code").and_then(Value::as_i64);
        if status == reqwest::StatusCode::NOT_FOUND || code == Some(NO_QUOTE) || status == reqwest::StatusCode::BAD_REQUEST {
            tracing::info!(%status, answer = %v, "the swap provider has no quote");
            return Err(if names_insufficient_liquidity(v.get("errors")) { SwapError::NoLiquidity } else { SwapError::NoRoute });
        }
        Err(SwapError::Unavailable(format!("{path}: HTTP {status}: {v}")))
    }

    pub async fn status(
        &self,
        tx_hash: &str,
        from_chain: Option<u64>,
        to_chain: Option<u64>,
        bridge: Option<&str>,
    ) -> Result<Status, SwapError> {
        let mut query = vec![("txHash", tx_hash.to_string())];
        query.extend(from_chain.map(|c| ("fromChain", c.to_string())));
        query.extend(to_chain.map(|c| ("toChain", c.to_string())));
        query.extend(bridge.map(|b| ("bridge", b.to_string())));
        let (status, v) = self.up.get("/status", &query).await?;
        // 400: LI.FI cannot read the hash as a transfer it could know.
        let unknown = [reqwest::StatusCode::NOT_FOUND, reqwest::StatusCode::BAD_REQUEST].contains(&status);
        if unknown || v.get("status").and_then(Value::as_str) == Some("NOT_FOUND") {
            return Ok(Status::Unknown);
        }
        if !status.is_success() || v.get("status").and_then(Value::as_str).is_none() {
            return Err(SwapError::Unavailable(format!("/status: HTTP {status}: {v}")));
        }
        Ok(Status::Known(v))
    }

    /// A discovery list, byte for byte as the provider gave it (JSON).
    pub async fn discovery(&self, path: &str, query: &[(&str, String)]) -> Result<std::sync::Arc<[u8]>, SwapError> {
        let (status, body) = self.up.get_bytes(path, query).await?;
        if !status.is_success() || serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_err() {
            return Err(SwapError::Unavailable(format!("{path}: HTTP {status}")));
        }
        Ok(body.into())
    }
}

/// Whether a no-quote answer's tool errors say the pools are too shallow:
/// any `code` of `INSUFFICIENT_LIQUIDITY`, wherever LI.FI nests it.
pub fn names_insufficient_liquidity(errors: Option<&Value>) -> bool {
    match errors {
        Some(Value::Object(m)) => {
            m.get("code").and_then(Value::as_str) == Some("INSUFFICIENT_LIQUIDITY")
                || m.values().any(|v| names_insufficient_liquidity(Some(v)))
        }
        Some(Value::Array(a)) => a.iter().any(|v| names_insufficient_liquidity(Some(v))),
        _ => false,
    }
}
