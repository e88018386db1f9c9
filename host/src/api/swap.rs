//! `/api/swap/*`: quote, approval, status, register and discovery. The
//! rules and the upstream live in `crate::swap`; this is their HTTP face.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiError, Shared};
use crate::store::agents::Agent;
use crate::swap::approval::ApprovalResponse;
use crate::swap::execute::Executed;
use crate::swap::quote::QuoteResponse;
use crate::swap::status::StatusResponse;
use crate::swap::{self, SwapError};

impl From<SwapError> for ApiError {
    fn from(e: SwapError) -> Self {
        match e {
            SwapError::NotFound => ApiError::NotFound(e.to_string()),
            SwapError::Unavailable(detail) => {
                tracing::warn!(%detail, "swap provider unavailable");
                ApiError::BadGateway(SwapError::Unavailable(String::new()).to_string())
            }
            SwapError::Internal(detail) => ApiError::Internal(detail),
            SwapError::WalletNotReady | SwapError::NoTronWallet => ApiError::Forbidden(e.to_string()),
            SwapError::SendFailed(ref detail) => {
                tracing::warn!(%detail, "hosted wallet could not send a swap transaction");
                ApiError::BadGateway(e.to_string())
            }
            other => ApiError::BadRequest(other.to_string()),
        }
    }
}

type Params = Query<HashMap<String, String>>;

fn query(q: Result<Params, axum::extract::rejection::QueryRejection>) -> Result<HashMap<String, String>, ApiError> {
    Ok(q?.0)
}

/// A price quote; with the signer known, the transaction to sign.
#[utoipa::path(get, path = "/api/swap/quote", tag = "swaps",
    params(
        ("chain" = String, Query, description = "Source chain"),
        ("input_token" = String, Query, description = "Token to send (EVM contract or Solana mint)"),
        ("output_token" = String, Query, description = "Token to receive"),
        ("from_amount" = Option<u64>, Query, description = "ExactIn: smallest units sent"),
        ("to_amount" = Option<u64>, Query, description = "ExactOut: smallest units received"),
        ("amount" = Option<u64>, Query, description = "Deprecated alias of from_amount", deprecated),
        ("slippage_bps" = Option<u16>, Query, description = "Default 50, at most 500"),
        ("to_chain" = Option<String>, Query, description = "Destination chain (default: chain)"),
        ("user_address" = Option<String>, Query, description = "Signer; with it the answer carries swap_transaction"),
        ("to_user_address" = Option<String>, Query, description = "Recipient; required across families"),
        ("email" = Option<String>, Query, description = "Resolved to user_address"),
        ("to_user_email" = Option<String>, Query, description = "Resolved to to_user_address"),
    ),
    responses((status = 200, description = "The quote", body = QuoteResponse),
              (status = 400, description = "A rule of the request, no route or no liquidity"),
              (status = 502, description = "The swap provider failed")))]
pub async fn quote(
    State(s): State<Shared>,
    q: Result<Params, axum::extract::rejection::QueryRejection>,
) -> Result<Json<QuoteResponse>, ApiError> {
    let now = crate::clock::now_ms() / 1000;
    Ok(Json(swap::quote::quote(&s.swaps, &s.db, &query(q)?, now).await?))
}

/// Whether the signer must approve the route's spender first (EVM).
#[utoipa::path(get, path = "/api/swap/approval", tag = "swaps",
    params(
        ("chain" = String, Query, description = "Source chain (EVM)"),
        ("token" = String, Query, description = "Token to approve"),
        ("token_out" = String, Query, description = "Output token, to find the route's spender"),
        ("amount" = u64, Query, description = "Smallest units to be spent"),
        ("user_address" = Option<String>, Query, description = "Signer (or email)"),
        ("email" = Option<String>, Query, description = "Resolved to user_address"),
        ("to_chain" = Option<String>, Query, description = "Destination chain"),
        ("to_user_address" = Option<String>, Query, description = "Recipient"),
        ("to_user_email" = Option<String>, Query, description = "Resolved to to_user_address"),
        ("include_gas_info" = Option<bool>, Query, description = "Add gas_fee and cancel_gas_fee (wei)"),
    ),
    responses((status = 200, description = "Whether an approval is needed, and its transactions", body = ApprovalResponse),
              (status = 400, description = "A rule of the request"), (status = 502, description = "The swap provider or the chain failed")))]
pub async fn approval(
    State(s): State<Shared>,
    q: Result<Params, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ApprovalResponse>, ApiError> {
    Ok(Json(swap::approval::approval(&s.swaps, &s.db, &query(q)?).await?))
}

/// The provider's record of a cross-chain swap.
#[utoipa::path(get, path = "/api/swap/status", tag = "swaps",
    params(
        ("tx_hash" = String, Query, description = "Source-chain transaction hash"),
        ("from_chain" = Option<String>, Query, description = "Source chain"),
        ("to_chain" = Option<String>, Query, description = "Destination chain"),
        ("bridge" = Option<String>, Query, description = "Bridge tool identifier"),
    ),
    responses((status = 200, description = "The transfer's status", body = StatusResponse),
              (status = 404, description = "No record yet; retry in about 30 s"), (status = 502, description = "The swap provider failed")))]
pub async fn status(
    State(s): State<Shared>,
    q: Result<Params, axum::extract::rejection::QueryRejection>,
) -> Result<Json<StatusResponse>, ApiError> {
    Ok(Json(swap::status::status(&s.swaps, &query(q)?).await?))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Registered {
    pub intent_id: String,
    /// `PENDING` at first.
    pub status: String,
}

/// Register a broadcast swap as an intent that is followed to its end.
#[utoipa::path(post, path = "/api/swap/intents", tag = "swaps",
    request_body(content = Object, description = "source_tx_hash, from_chain, to_chain, from_token, to_token, payer_address, recipient_address, sending_token_amount: all required strings"),
    responses((status = 201, description = "Registered (the same intent again for the same transaction)", body = Registered),
              (status = 400, description = "A field is missing or malformed")))]
pub async fn register(State(s): State<Shared>, body: Bytes) -> Result<(StatusCode, Json<Registered>), ApiError> {
    let body: serde_json::Value = serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
    if !body.is_object() {
        return Err(ApiError::BadRequest("the body must be a JSON object".into()));
    }
    let i = swap::register::register(&s.swaps, &s.db, &body, crate::clock::now_ms()).await?;
    Ok((StatusCode::CREATED, Json(Registered { intent_id: i.id, status: i.status })))
}

/// A discovery list from the provider, cached; passed through as it came.
async fn discovery(s: &Shared, path: &'static str, allowed: &[&str], q: HashMap<String, String>) -> Result<Response, ApiError> {
    let mut pairs: Vec<(&str, String)> = allowed.iter().filter_map(|k| q.get(*k).map(|v| (*k, v.clone()))).collect();
    pairs.sort();
    let key = format!("{path}?{}", pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&"));
    let lifi = &s.swaps.lifi;
    let body = s.swaps.discovery.get(&key, || lifi.discovery(path, &pairs)).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], Bytes::from(body.to_vec())).into_response())
}

/// Tokens the provider knows, as it lists them.
#[utoipa::path(get, path = "/api/swap/tokens", tag = "swaps",
    params(("chains" = Option<String>, Query, description = "Comma-separated chain ids"), ("chainTypes" = Option<String>, Query, description = "e.g. EVM,SVM")),
    responses((status = 200, description = "The provider's answer, unchanged", content_type = "application/json", body = Object),
              (status = 502, description = "The swap provider failed")))]
pub async fn tokens(State(s): State<Shared>, q: Result<Params, axum::extract::rejection::QueryRejection>) -> Result<Response, ApiError> {
    discovery(&s, "/tokens", &["chains", "chainTypes"], query(q)?).await
}

/// Chains the provider serves, as it lists them.
#[utoipa::path(get, path = "/api/swap/chains", tag = "swaps",
    params(("chainTypes" = Option<String>, Query, description = "EVM or SVM")),
    responses((status = 200, description = "The provider's answer, unchanged", content_type = "application/json", body = Object),
              (status = 502, description = "The swap provider failed")))]
pub async fn chains(State(s): State<Shared>, q: Result<Params, axum::extract::rejection::QueryRejection>) -> Result<Response, ApiError> {
    discovery(&s, "/chains", &["chainTypes"], query(q)?).await
}

/// Routes between chains and tokens, as the provider lists them.
#[utoipa::path(get, path = "/api/swap/connections", tag = "swaps",
    params(("fromChain" = Option<String>, Query, description = "Chain id"), ("toChain" = Option<String>, Query, description = "Chain id"),
           ("fromToken" = Option<String>, Query, description = "Token address"), ("toToken" = Option<String>, Query, description = "Token address")),
    responses((status = 200, description = "The provider's answer, unchanged", content_type = "application/json", body = Object),
              (status = 502, description = "The swap provider failed")))]
pub async fn connections(
    State(s): State<Shared>,
    q: Result<Params, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    discovery(&s, "/connections", &["fromChain", "toChain", "fromToken", "toToken"], query(q)?).await
}

/// Swap from the agent's hosted wallet: quote, approve if needed, sign,
/// store, broadcast. Not registered as a swap intent.
#[utoipa::path(post, path = "/v2/swap/execute", tag = "agents", security(("bearer" = [])),
    request_body(content = Object, description = "chain, from_token, to_token, from_amount (u64 > 0); slippage_bps (default 50, at most 500), to_chain (default chain)"),
    params(("Idempotency-Key" = Option<String>, Header, description = "The same key and body return the first answer and send nothing new")),
    responses((status = 200, description = "Sent", body = Executed),
              (status = 400, description = "A rule of the request"), (status = 403, description = "The agent has no wallet for it"),
              (status = 422, description = "The Idempotency-Key was used with another body"), (status = 502, description = "The provider or the wallet failed")))]
pub async fn execute(State(s): State<Shared>, Extension(agent): Extension<Agent>, headers: HeaderMap, body: Bytes) -> Response {
    let key = match super::idempotency::key(&headers) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    let run = swap::execute::run_id(&agent.id, key.as_deref());
    let work = || async {
        let v: serde_json::Value = serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
        let done = swap::execute::execute(&s.swaps, &s.db, &s.drivers, &agent.id, &v, &run).await?;
        Ok(serde_json::to_value(done).expect("serializable"))
    };
    super::idempotency::run(&s, &format!("v2swap:{}", agent.id), key.as_deref(), &body, StatusCode::OK, work).await
}
