//! Create intent: `POST /v2/intents` (agent-owned) and `POST /api/intents`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::{ApiError, Shared};
use crate::intent::views;
use crate::ops::create_intent::{self, CreateRequest};
use crate::store::agents::Agent;

/// Create a payment intent anyone can pay with an x402 proof.
#[utoipa::path(post, path = "/api/intents", tag = "intents", request_body = CreateRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for the same key and body")),
    responses(
        (status = 201, description = "Created; pay it with `payment_requirements`", body = crate::intent::views::IntentView),
        (status = 409, description = "A request with this Idempotency-Key is still in progress", body = super::docs::ErrorBody),
        (status = 422, description = "The Idempotency-Key was used with another body", body = super::docs::ErrorBody)))]
pub async fn create_public(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    idempotent(&s, None, &headers, &body).await
}

/// Create a payment intent owned by the calling agent.
#[utoipa::path(post, path = "/v2/intents", tag = "agents", security(("bearer" = [])), request_body = CreateRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for the same key and body")),
    responses(
        (status = 201, description = "Created; pay it with execute", body = crate::intent::views::IntentView),
        (status = 409, description = "A request with this Idempotency-Key is still in progress", body = super::docs::ErrorBody),
        (status = 422, description = "The Idempotency-Key was used with another body", body = super::docs::ErrorBody)))]
pub async fn create_agent(State(s): State<Shared>, Extension(agent): Extension<Agent>, headers: HeaderMap, body: Bytes) -> Response {
    idempotent(&s, Some(&agent), &headers, &body).await
}

/// Run `create` under the request's `Idempotency-Key`, if it has one.
/// Keys are scoped per agent on `/v2` and shared on `/api`.
async fn idempotent(s: &Shared, agent: Option<&Agent>, headers: &HeaderMap, body: &[u8]) -> Response {
    let key = match super::idempotency::key(headers) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    let scope = agent.map_or_else(|| "api".to_string(), |a| format!("v2:{}", a.id));
    let work = || create(s, agent, body);
    super::idempotency::run(s, &scope, key.as_deref(), body, StatusCode::CREATED, work).await
}

/// The body as a `CreateRequest`, then the operation, then its view.
async fn create(s: &Shared, agent: Option<&Agent>, body: &[u8]) -> Result<views::IntentView, ApiError> {
    let req: CreateRequest = serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
    let record = create_intent::create(s, agent, req).await?;
    let v = views::created(&record, record.created_at);
    Ok(if agent.is_none() { views::public(v) } else { v })
}
