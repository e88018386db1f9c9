//! `/api/swap/*`: quote, approval, status, register and discovery. The
//! rules and the upstream live in `crate::swap`; this is their HTTP face.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiError, Shared};
use crate::store::agents::Agent;
use crate::swap;
use crate::swap::approval::{ApprovalQuery, ApprovalResponse};
use crate::swap::discovery::{ChainsQuery, ConnectionsQuery, List, TokensQuery};
use crate::swap::execute::Executed;
use crate::swap::quote::{QuoteQuery, QuoteResponse};
use crate::swap::status::{StatusQuery, StatusResponse};

/// A query the handler could not read (a repeated parameter, bad encoding).
type Q<T> = Result<Query<T>, QueryRejection>;

/// A price quote; with the signer known, the transaction to sign.
#[utoipa::path(get, path = "/api/swap/quote", tag = "swaps", params(QuoteQuery),
    responses((status = 200, description = "The quote", body = QuoteResponse),
              (status = 400, description = "A rule of the request, no route or no liquidity"),
              (status = 502, description = "The swap provider failed")))]
pub async fn quote(State(s): State<Shared>, q: Q<QuoteQuery>) -> Result<Json<QuoteResponse>, ApiError> {
    let now = crate::clock::now_ms() / 1000;
    Ok(Json(swap::quote::quote(&s.swaps, &q?.0, now).await?))
}

/// Whether the signer must approve the route's spender first (EVM).
#[utoipa::path(get, path = "/api/swap/approval", tag = "swaps", params(ApprovalQuery),
    responses((status = 200, description = "Whether an approval is needed, and its transactions", body = ApprovalResponse),
              (status = 400, description = "A rule of the request"), (status = 502, description = "The swap provider or the chain failed")))]
pub async fn approval(State(s): State<Shared>, q: Q<ApprovalQuery>) -> Result<Json<ApprovalResponse>, ApiError> {
    Ok(Json(swap::approval::approval(&s.swaps, &q?.0).await?))
}

/// The provider's record of a cross-chain swap.
#[utoipa::path(get, path = "/api/swap/status", tag = "swaps", params(StatusQuery),
    responses((status = 200, description = "The transfer's status", body = StatusResponse),
              (status = 404, description = "No record yet; retry in about 30 s"), (status = 502, description = "The swap provider failed")))]
pub async fn status(State(s): State<Shared>, q: Q<StatusQuery>) -> Result<Json<StatusResponse>, ApiError> {
    Ok(Json(swap::status::status(&s.swaps, &q?.0).await?))
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
pub async fn register(State(s): State<Shared>, req: axum::extract::Request) -> Result<(StatusCode, Json<Registered>), ApiError> {
    let client = crate::client_ip::of(&s.proxies, &req);
    let body = axum::body::to_bytes(req.into_body(), super::MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::PayloadTooLarge("request body is too large".into()))?;
    let body: serde_json::Value = serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
    if !body.is_object() {
        return Err(ApiError::BadRequest("the body must be a JSON object".into()));
    }
    let new = swap::register::parse(&s.swaps, &body, crate::clock::now_ms())?;
    // On its chain already: checked now. What the chain cannot judge yet
    // (not mined, or a destination on another chain) costs the tracker and
    // the provider until it can, so the client's budget pays for it.
    if swap::register::budgeted(swap::register::check_on_chain(&s.drivers, &s.config, &new).await?, &new) {
        s.unseen_swaps.check(format!("ip:{client}")).map_err(ApiError::RateLimited)?;
    }
    let i = swap::register::store(&s.db, &s.config, &new).await?;
    Ok((StatusCode::CREATED, Json(Registered { intent_id: i.id, status: i.status })))
}

/// A discovery list, as the provider gave it.
async fn discovery(s: &Shared, list: List<'_>) -> Result<Response, ApiError> {
    let body = swap::discovery::fetch(&s.swaps, list).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], Bytes::from(body.to_vec())).into_response())
}

/// Tokens the provider knows, as it lists them.
#[utoipa::path(get, path = "/api/swap/tokens", tag = "swaps",
    params(TokensQuery),
    responses((status = 200, description = "The provider's answer, unchanged", content_type = "application/json", body = Object),
              (status = 502, description = "The swap provider failed")))]
pub async fn tokens(State(s): State<Shared>, q: Q<TokensQuery>) -> Result<Response, ApiError> {
    discovery(&s, List::Tokens(&q?.0)).await
}

/// Chains the provider serves, as it lists them.
#[utoipa::path(get, path = "/api/swap/chains", tag = "swaps",
    params(ChainsQuery),
    responses((status = 200, description = "The provider's answer, unchanged", content_type = "application/json", body = Object),
              (status = 502, description = "The swap provider failed")))]
pub async fn chains(State(s): State<Shared>, q: Q<ChainsQuery>) -> Result<Response, ApiError> {
    discovery(&s, List::Chains(&q?.0)).await
}

/// Routes between chains and tokens, as the provider lists them.
#[utoipa::path(get, path = "/api/swap/connections", tag = "swaps",
    params(ConnectionsQuery),
    responses((status = 200, description = "The provider's answer, unchanged", content_type = "application/json", body = Object),
              (status = 502, description = "The swap provider failed")))]
pub async fn connections(State(s): State<Shared>, q: Q<ConnectionsQuery>) -> Result<Response, ApiError> {
    discovery(&s, List::Connections(&q?.0)).await
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
        Ok(swap::execute::execute(&s.swaps, &s.db, &s.drivers, &s.steps, &agent.id, &v, &run).await?)
    };
    super::idempotency::run(&s, &format!("v2swap:{}", agent.id), key.as_deref(), &body, StatusCode::OK, work).await
}
