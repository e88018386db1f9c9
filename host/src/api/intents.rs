//! Intent reads, the list, proof submission and execute.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::Extension;
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::views::{Accepted, IntentList, IntentView};
use super::{views, ApiError, Shared};
use crate::failure::Failure;
use crate::intent::{requirements, Intent, Status};
use crate::store::agents::Agent;
use crate::store::intents::{self as repo, Acceptance};
use crate::store::is_unique_violation;
use crate::swap::register::SwapIntentView;

const NOT_FOUND: &str = "payment intent not found";

/// What `GET …/intents/{id}` reads: a payment intent, or a registered swap
/// (ids `swp_…`), which any caller may read.
#[derive(Debug, serde::Serialize, ToSchema)]
#[serde(untagged)]
pub enum AnyIntent {
    Payment(IntentView),
    Swap(SwapIntentView),
}

async fn swap_intent(s: &Shared, id: &str) -> Result<Option<AnyIntent>, ApiError> {
    if !id.starts_with("swp_") {
        return Ok(None);
    }
    let i = crate::store::swaps::get(&s.db, id).await?.ok_or_else(|| ApiError::NotFound(NOT_FOUND.into()))?;
    Ok(Some(AnyIntent::Swap(SwapIntentView::of(i))))
}

async fn load(s: &Shared, id: &str) -> Result<Intent, ApiError> {
    repo::get(&s.db, id).await?.ok_or_else(|| ApiError::NotFound(NOT_FOUND.into()))
}

/// `/v2` sees only the caller's own intents; anything else is "not found".
async fn load_owned(s: &Shared, id: &str, agent: &Agent) -> Result<Intent, ApiError> {
    let i = load(s, id).await?;
    if i.agent_id.as_deref() != Some(agent.id.as_str()) {
        return Err(ApiError::NotFound(NOT_FOUND.into()));
    }
    Ok(i)
}

fn id_from_query(q: &HashMap<String, String>) -> Result<String, ApiError> {
    q.get("intent_id")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::BadRequest("intent_id is required".into()))
}

/// `intent_id` as a query parameter, for clients that cannot put it in the path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read through the HashMap extractor; this documents it
pub struct IdQuery {
    intent_id: String,
}

/// Pages of the caller's intents, newest first.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read through the HashMap extractor, strictly; this documents it
pub struct PageQuery {
    /// 1-based page number (at most 1,000,000).
    #[param(minimum = 1, maximum = 1000000)]
    page: Option<i64>,
    /// Rows per page (default 20; more than 100 is taken as 100).
    #[param(minimum = 1)]
    page_size: Option<i64>,
}

/// Read a payment intent.
#[utoipa::path(get, path = "/api/intents/{id}", tag = "intents",
    params(("id" = String, Path, description = "Intent id")),
    responses((status = 200, description = "The intent (a payment, or a registered swap)", body = AnyIntent)))]
pub async fn get_public(State(s): State<Shared>, Path(id): Path<String>) -> Result<Json<AnyIntent>, ApiError> {
    if let Some(swap) = swap_intent(&s, &id).await? {
        return Ok(Json(swap));
    }
    let i = load(&s, &id).await?;
    Ok(Json(AnyIntent::Payment(views::intent(&s.config, &i, crate::clock::now_ms()))))
}

/// Read a payment intent named by the `intent_id` query parameter.
#[utoipa::path(get, path = "/api/intents", tag = "intents", params(IdQuery),
    responses((status = 200, description = "The intent (a payment, or a registered swap)", body = AnyIntent)))]
pub async fn get_public_query(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Result<Json<AnyIntent>, ApiError> {
    get_public(State(s), Path(id_from_query(&q)?)).await
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
    if let Some(swap) = swap_intent(&s, &id).await? {
        return Ok(Json(swap));
    }
    let i = load_owned(&s, &id, &agent).await?;
    Ok(Json(AnyIntent::Payment(views::intent(&s.config, &i, crate::clock::now_ms()))))
}

/// Read one of the caller's intents, named by the `intent_id` query parameter.
#[utoipa::path(get, path = "/v2/intents", tag = "agents", security(("bearer" = [])), params(IdQuery),
    responses((status = 200, description = "The intent (one of the caller's payments, or a registered swap)", body = AnyIntent)))]
pub async fn get_agent_query(
    State(s): State<Shared>,
    ext: Extension<Agent>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<AnyIntent>, ApiError> {
    get_agent(State(s), ext, Path(id_from_query(&q)?)).await
}

pub const MAX_PAGE: i64 = 1_000_000;
pub const DEFAULT_PAGE_SIZE: i64 = 20;
pub const MAX_PAGE_SIZE: i64 = 100;

/// Strict positive integer; anything else is the caller's error.
fn positive(q: &HashMap<String, String>, key: &str, default: i64) -> Result<i64, ApiError> {
    match q.get(key) {
        None => Ok(default),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 1 && v.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| ApiError::BadRequest(format!("invalid {key}: must be a positive integer"))),
    }
}

/// The caller's intents, a page at a time.
#[utoipa::path(get, path = "/v2/intents/list", tag = "agents", security(("bearer" = [])), params(PageQuery),
    responses((status = 200, description = "One page", body = IntentList)))]
pub async fn list(
    State(s): State<Shared>,
    Extension(agent): Extension<Agent>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<IntentList>, ApiError> {
    let page = positive(&q, "page", 1)?;
    if page > MAX_PAGE {
        return Err(ApiError::BadRequest(format!("invalid page: must be at most {MAX_PAGE}")));
    }
    let page_size = positive(&q, "page_size", DEFAULT_PAGE_SIZE)?.min(MAX_PAGE_SIZE);
    let (rows, total) = repo::list_for_agent(&s.db, &agent.id, page_size, (page - 1) * page_size).await?;
    let now = crate::clock::now_ms();
    Ok(Json(IntentList { intents: rows.iter().map(|i| views::row(i, now)).collect(), total, page, page_size }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProofBody {
    /// The x402 `PaymentPayload`: base64 of its JSON, or the JSON itself as a string.
    settle_proof: Option<String>,
}

/// Why an intent cannot take a proof or an execute now.
fn not_payable(i: &Intent, now_ms: i64) -> Option<ApiError> {
    match i.effective_status(now_ms) {
        Status::AwaitingPayment => None,
        Status::Expired => Some(ApiError::BadRequest("payment intent has expired".into())),
        _ => Some(ApiError::Conflict("invalid intent status for this operation".into())),
    }
}

/// After a lost compare-and-set: say why, from the intent as it is now.
async fn lost_race(s: &Shared, id: &str) -> ApiError {
    match repo::get(&s.db, id).await {
        Ok(Some(i)) => {
            not_payable(&i, crate::clock::now_ms()).unwrap_or_else(|| ApiError::Conflict("invalid intent status for this operation".into()))
        }
        Ok(None) => ApiError::NotFound(NOT_FOUND.into()),
        Err(e) => e.into(),
    }
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
    let proof =
        body.settle_proof.filter(|p| !p.trim().is_empty()).ok_or_else(|| ApiError::BadRequest("settle_proof is required".into()))?;
    let i = load(&s, &id).await?;
    if let Some(e) = not_payable(&i, crate::clock::now_ms()) {
        return Err(e);
    }
    let proof = requirements::decode_proof(&proof).ok_or_else(|| {
        ApiError::BadRequest("proof validation failed: settle_proof is neither base64 of a JSON object nor a JSON object".into())
    })?;
    let req_json: Value =
        serde_json::from_str(&i.payment_requirements).map_err(|e| ApiError::Internal(format!("stored requirements: {e}")))?;
    let req = requirements::from_json(&req_json).ok_or_else(|| ApiError::Internal("stored requirements are incomplete".into()))?;
    let adapter = s
        .registry
        .asset(&i.payer_chain, &i.payer_asset)
        .ok_or_else(|| ApiError::Unavailable(format!("{}/{} is no longer served", i.payer_chain, i.payer_asset)))?;
    let paid = adapter.verify(&req, &proof).await??;

    let acceptance = Acceptance { settle_proof: Some(&proof), replay_key: Some(&paid.replay_key), payer: Some(&paid.payer) };
    match repo::accept(&s.db, &i.id, &acceptance, crate::clock::now_ms()).await {
        Ok(true) => {
            s.work.notify_one();
            Ok(Json(Accepted::new(&i, Status::Pending, "proof accepted; settlement in progress")))
        }
        Ok(false) => Err(lost_race(&s, &i.id).await),
        Err(e) if is_unique_violation(&e) => {
            Err(ApiError::Conflict("proof validation failed: this payment authorization was already used".into()))
        }
        Err(e) => Err(e.into()),
    }
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
    let i = load_owned(&s, &id, &agent).await?;
    if let Some(e) = not_payable(&i, crate::clock::now_ms()) {
        return Err(e);
    }
    let none = Acceptance { settle_proof: None, replay_key: None, payer: None };
    if !repo::accept(&s.db, &i.id, &none, crate::clock::now_ms()).await? {
        return Err(lost_race(&s, &i.id).await);
    }
    s.work.notify_one();
    // Wait (bounded) for the engine, so an agent usually gets the outcome.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(s.config.service.execute_wait_seconds);
    let mut status = Status::Pending;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now = repo::get(&s.db, &i.id).await?.ok_or_else(|| ApiError::NotFound(NOT_FOUND.into()))?;
        status = now.status;
        // The engine put it back to AWAITING_PAYMENT: the agent funds its
        // wallet and executes again.
        if status == Status::AwaitingPayment && now.error_code == Some(Failure::AgentWalletShort) {
            return Err(ApiError::PaymentRequired(Failure::AgentWalletShort.sentence().into()));
        }
        if matches!(status, Status::TargetSettled | Status::VerificationFailed | Status::Blocked | Status::PartialSettlement) {
            break;
        }
    }
    let message = if status == Status::TargetSettled { "payment settled" } else { "execution started; settlement in progress" };
    Ok(Json(Accepted::new(&i, status, message)))
}
