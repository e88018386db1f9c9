//! The Jupiter Swap API client (Solana same-chain): `GET /quote` (ExactIn
//! and ExactOut) and `POST /swap`, which builds the transaction for a
//! quote and a user. Every failure is typed here; no upstream text or URL
//! leaves this module except in logs.

use serde_json::{json, Value};

use super::upstream::Upstream;
use super::Amount;
use super::SwapError;
use crate::config::Swap as SwapConfig;

pub struct Jupiter {
    up: Upstream,
}

/// A swap transaction Jupiter built for a quote.
pub struct Built {
    /// Base64 wire bytes of a v0 transaction, the user's signature missing.
    pub transaction: String,
    pub last_valid_block_height: Option<u64>,
}

/// The routing errors Jupiter answers when the amount is more than the
/// markets can take; the others (no route, token not tradable, …) are "no
/// route".
const TOO_LARGE: [&str; 1] = ["ROUTE_PLAN_DOES_NOT_CONSUME_ALL_THE_AMOUNT"];

fn refused(path: &str, status: reqwest::StatusCode, v: &Value) -> SwapError {
    if status.is_client_error() {
        tracing::info!(%status, answer = %v, "the Solana swap provider has no route");
        let code = v.get("errorCode").and_then(Value::as_str).unwrap_or_default();
        return if TOO_LARGE.contains(&code) { SwapError::NoLiquidity } else { SwapError::NoRoute };
    }
    SwapError::Unavailable(format!("{path}: HTTP {status}: {v}"))
}

impl Jupiter {
    pub fn new(cfg: &SwapConfig) -> Jupiter {
        Jupiter { up: Upstream::new(&cfg.jupiter_url, cfg.timeout_ms, "x-api-key", cfg.jupiter_api_key_env.as_deref()) }
    }

    /// A quote (Jupiter's `quoteResponse`, kept whole: `/swap` takes it back).
    pub async fn quote(&self, input_mint: &str, output_mint: &str, amount: Amount, slippage_bps: u16) -> Result<Value, SwapError> {
        let (mode, units) = match amount {
            Amount::From(a) => ("ExactIn", a),
            Amount::To(a) => ("ExactOut", a),
        };
        let query = [
            ("inputMint", input_mint.to_string()),
            ("outputMint", output_mint.to_string()),
            ("amount", units.to_string()),
            ("slippageBps", slippage_bps.to_string()),
            ("swapMode", mode.to_string()),
        ];
        let (status, v) = self.up.get("/quote", &query).await?;
        if !status.is_success() {
            return Err(refused("/quote", status, &v));
        }
        for field in ["inAmount", "outAmount", "otherAmountThreshold"] {
            if v.get(field).and_then(Value::as_str).and_then(|s| s.parse::<u64>().ok()).is_none() {
                return Err(SwapError::Unavailable(format!("/quote: no {field} in the answer")));
            }
        }
        Ok(v)
    }

    /// The transaction that carries out `quote` for `user` (fee payer); the
    /// output goes to `destination` (a token account, which must exist)
    /// when given, else to the user's associated token account.
    pub async fn swap(&self, quote: &Value, user: &str, destination: Option<&str>) -> Result<Built, SwapError> {
        let mut body = json!({ "quoteResponse": quote, "userPublicKey": user, "wrapAndUnwrapSol": true, "dynamicComputeUnitLimit": true });
        if let Some(account) = destination {
            body["destinationTokenAccount"] = json!(account);
        }
        let (status, v) = self.up.post("/swap", &body).await?;
        if !status.is_success() {
            return Err(refused("/swap", status, &v));
        }
        let transaction = v
            .get("swapTransaction")
            .and_then(Value::as_str)
            .ok_or_else(|| SwapError::Unavailable("/swap: no swapTransaction in the answer".into()))?;
        Ok(Built { transaction: transaction.to_string(), last_valid_block_height: v.get("lastValidBlockHeight").and_then(Value::as_u64) })
    }
}
