//! Intent reads, the list, proof submission and execute.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Extension;
use axum::Json;
use serde::Deserialize;
use utoipa::ToSchema;

use super::{ApiError, Shared};
use crate::intent::views;
use crate::intent::views::{Accepted, IntentList, IntentView};
use crate::intent::Status;
use crate::ops::read_intent::{self, Found, IdQuery, PageQuery};
use crate::ops::{execute_intent, submit_proof};
use crate::store::agents::Agent;
use crate::swap::register::SwapIntentView;

/// What `GET …/intents/{id}` reads: a payment intent, or a registered swap
/// (ids `swp_…`), which any caller may read.
#[derive(Debug, serde::Serialize, ToSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one answer per request, serialized at once
pub enum AnyIntent {
    Payment(IntentView),
    Swap(SwapIntentView),
}

/// The answer of a read. `agent_id` is shown on `/v2` only (SPEC): a
/// public read does not tell who owns an intent.
fn view(s: &Shared, found: Found, agent: Option<&Agent>) -> AnyIntent {
    match found {
        Found::Swap(i) => AnyIntent::Swap(SwapIntentView::of(i)),
        Found::Payment(i) => {
            let v = views::intent(&s.config, &i, crate::clock::now_ms());
            AnyIntent::Payment(if agent.is_none() { views::public(v) } else { v })
        }
    }
}

/// Read a payment intent.
#[utoipa::path(get, path = "/api/intents/{id}", tag = "intents",
    params(("id" = String, Path, description = "Intent id")),
    responses((status = 200, description = "The intent (a payment, or a registered swap)", body = AnyIntent)))]
pub async fn get_public(State(s): State<Shared>, Path(id): Path<String>) -> Result<Json<AnyIntent>, ApiError> {
    Ok(Json(view(&s, read_intent::read(&s, &id, None).await?, None)))
}

/// Read a payment intent named by the `intent_id` query parameter.
#[utoipa::path(get, path = "/api/intents", tag = "intents", params(IdQuery),
    responses((status = 200, description = "The intent (a payment, or a registered swap)", body = AnyIntent)))]
pub async fn get_public_query(State(s): State<Shared>, q: Result<Query<IdQuery>, QueryRejection>) -> Result<Json<AnyIntent>, ApiError> {
    let id = q?.id()?;
    Ok(Json(view(&s, read_intent::read(&s, &id, None).await?, None)))
}

/// Read one of the caller's intents.
#[utoipa::path(get, path = "/v2/intents/{id}", tag = "agents", security(("bearer" = [])),
    params(("id" = String, Path, description = "Intent id")),
    responses((status = 200, description = "The intent (one of the caller's payments, or a registered swap)", body = AnyIntent)))]
pub async fn get_agent(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    Path(id): Path<String>,
) -> Result<Json<AnyIntent>, ApiError> {
    Ok(Json(view(&s, read_intent::read(&s, &id, Some(&agent)).await?, Some(&agent))))
}

/// Read one of the caller's intents, named by the `intent_id` query parameter.
#[utoipa::path(get, path = "/v2/intents", tag = "agents", security(("bearer" = [])), params(IdQuery),
    responses((status = 200, description = "The intent (one of the caller's payments, or a registered swap)", body = AnyIntent)))]
pub async fn get_agent_query(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    q: Result<Query<IdQuery>, QueryRejection>,
) -> Result<Json<AnyIntent>, ApiError> {
    let id = q?.id()?;
    Ok(Json(view(&s, read_intent::read(&s, &id, Some(&agent)).await?, Some(&agent))))
}

/// The caller's intents, a page at a time.
#[utoipa::path(get, path = "/v2/intents/list", tag = "agents", security(("bearer" = [])), params(PageQuery),
    responses((status = 200, description = "One page", body = IntentList)))]
pub async fn list(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    q: Result<Query<PageQuery>, QueryRejection>,
) -> Result<Json<IntentList>, ApiError> {
    let p = read_intent::list(&s, &agent, &q?.0).await?;
    let now = crate::clock::now_ms();
    Ok(Json(IntentList {
        intents: p.intents.iter().map(|i| views::row(i, now)).collect(),
        total: p.total,
        page: p.page,
        page_size: p.page_size,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProofBody {
    /// The x402 `PaymentPayload`: base64 of its JSON, or the JSON itself as a string.
    settle_proof: Option<String>,
}

/// The payer's signed payment for an intent. It is verified at once; the
/// settlement runs in the background (poll the intent for its status).
#[utoipa::path(post, path = "/api/intents/{id}", tag = "intents",
    params(("id" = String, Path, description = "Intent id")),
    request_body = ProofBody,
    responses(
        (status = 200, description = "Proof accepted; settlement in progress", body = Accepted),
        (status = 409, description = "The intent is not awaiting payment, or the authorization was already used", body = super::docs::ErrorBody)))]
pub async fn submit_proof(
    State(s): State<Shared>,
    Path(id): Path<String>,
    body: Result<Json<ProofBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Accepted>, ApiError> {
    let Json(body) = body?;
    let i = submit_proof::submit(&s, &id, body.settle_proof.as_deref()).await?;
    // SPEC: the answer names the intent's agent (none for /api-created ones).
    Ok(Json(Accepted::new(&i, Status::Pending, "proof accepted; settlement in progress")))
}

/// Pay one of the caller's intents from its hosted wallet. Waits a few
/// seconds for the outcome and answers with the status reached.
#[utoipa::path(post, path = "/v2/intents/{id}/execute", tag = "agents", security(("bearer" = [])),
    params(("id" = String, Path, description = "Intent id")),
    responses(
        (status = 200, description = "Execution started (or finished: see status)", body = Accepted),
        (status = 402, description = "The agent's hosted wallet cannot cover the amount", body = super::docs::ErrorBody),
        (status = 409, description = "The intent is not awaiting payment", body = super::docs::ErrorBody)))]
pub async fn execute(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    Path(id): Path<String>,
) -> Result<Json<Accepted>, ApiError> {
    let (i, status) = execute_intent::execute(&s, &agent, &id).await?;
    let message = if status == Status::TargetSettled { "payment settled" } else { "execution started; settlement in progress" };
    Ok(Json(Accepted::new(&i, status, message)))
}
