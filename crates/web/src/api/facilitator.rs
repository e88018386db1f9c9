//! The x402 facilitator over HTTP (`/x402`), as `@x402/core`'s
//! `HTTPFacilitatorClient` calls it. Verdicts travel in x402's bodies;
//! a body that is not a facilitator request gets the error envelope.

use axum::body::Bytes;
use axum::extract::{Query, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::IntoParams;

use super::{ApiError, Shared};
use crate::store::facilitator::Lookup;
use crate::x402::facilitator::{self, Caller, Status};
use crate::x402::wire::{FacilitatorRequest, SettleResponse, SettlementView, SupportedResponse, VerifyResponse};

/// Facilitator keys (`Authorization: Bearer srfk_…`), or keyless callers
/// when `[facilitator] public = true`, under their own per-IP limit.
pub async fn caller(State(s): State<Shared>, mut req: Request, next: Next) -> Result<Response, ApiError> {
    if !s.config.facilitator.enabled {
        return Err(ApiError::NotFound("no such endpoint".into()));
    }
    let header = req.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    let who = match header {
        Some(h) => match crate::auth::facilitator_key(&s.db, &s.pepper, h).await? {
            Some(name) => Caller::Key(name),
            None => return Err(ApiError::Unauthorized("invalid credentials".into())),
        },
        None if s.config.facilitator.public => {
            let ip = crate::client_ip::of(&s.proxies, &req);
            let mut over = s.facilitator_limiter.check(format!("x402:{ip}"));
            if let (Ok(()), Some(site)) = (&over, crate::client_ip::site_of(&s.proxies, &req)) {
                over = s.site_limiter.check(format!("x402:{site}"));
            }
            if let Err(wait) = over {
                return Err(super::guard::refused(&s, wait).await);
            }
            Caller::Public
        }
        None => return Err(ApiError::Unauthorized("facilitator key required".into())),
    };
    req.extensions_mut().insert(who);
    Ok(next.run(req).await)
}

fn parse(body: &[u8]) -> Result<FacilitatorRequest, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(format!("invalid facilitator request: {e}")))
}

fn status(st: Status) -> StatusCode {
    match st {
        Status::Ok => StatusCode::OK,
        Status::Conflict => StatusCode::CONFLICT,
        Status::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Status::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Verify a payment against the resource server's requirements: signature,
/// amount, recipient and window, then the payer's balance and allowance.
#[utoipa::path(post, path = "/x402/verify", tag = "facilitator", security(("bearer" = [])), request_body = FacilitatorRequest,
    responses(
        (status = 200, description = "The verdict (`isValid`, x402's `invalidReason`)", body = VerifyResponse),
        (status = 401, description = "A facilitator key is required", body = super::docs::ErrorBody),
        (status = 503, description = "The chain could not be asked", body = VerifyResponse)))]
pub async fn verify(State(s): State<Shared>, Extension(who): Extension<Caller>, body: Bytes) -> Result<Response, ApiError> {
    let req = parse(&body)?;
    let (st, answer) = facilitator::verify(&s.x402, &req, &who).await;
    Ok((status(st), Json(answer)).into_response())
}

/// Settle a payment once: stored before broadcast, batched with the chain's
/// other transfers; `settlement_pending` with the transaction when it is
/// not final within `settle_wait_seconds` (settle the same payload again).
#[utoipa::path(post, path = "/x402/settle", tag = "facilitator", security(("bearer" = [])), request_body = FacilitatorRequest,
    responses(
        (status = 200, description = "The outcome (`success`, `transaction`, x402's `errorReason`)", body = SettleResponse),
        (status = 401, description = "A facilitator key is required", body = super::docs::ErrorBody),
        (status = 409, description = "The payment identifier was used with another payload", body = SettleResponse),
        (status = 503, description = "The chain could not be asked; nothing was sent", body = SettleResponse)))]
pub async fn settle(State(s): State<Shared>, Extension(who): Extension<Caller>, body: Bytes) -> Result<Response, ApiError> {
    let req = parse(&body)?;
    let (st, answer) = facilitator::settle(&s.x402, &req, &who).await;
    Ok((status(st), Json(answer)).into_response())
}

/// The payment kinds, extensions and signers this facilitator serves.
#[utoipa::path(get, path = "/x402/supported", tag = "facilitator",
    responses((status = 200, description = "Every exposed network with a served asset, in x402 v2 and v1", body = SupportedResponse)))]
pub async fn supported(State(s): State<Shared>) -> Result<Json<SupportedResponse>, ApiError> {
    if !s.config.facilitator.enabled {
        return Err(ApiError::NotFound("no such endpoint".into()));
    }
    Ok(Json(facilitator::supported(&s.x402).await))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SettlementQuery {
    /// A settlement id (`xs_…`).
    pub id: Option<String>,
    /// A transaction hash, final or sent.
    pub transaction: Option<String>,
    /// A payer address.
    pub payer: Option<String>,
    /// At most this many, 1 to 100 (default 50).
    pub limit: Option<i64>,
    /// The next page: the `id` of the last settlement of the previous one.
    pub before: Option<String>,
}

/// Look the calling key's settlements up by id, transaction or payer.
#[utoipa::path(get, path = "/x402/settlements", tag = "facilitator", security(("bearer" = [])), params(SettlementQuery),
    responses(
        (status = 200, description = "Matching settlements of this key, newest first, one page (`limit`, then `before` = the last id)", body = Vec<SettlementView>),
        (status = 400, description = "Exactly one of id, transaction, payer is required", body = super::docs::ErrorBody)))]
pub async fn settlements(
    State(s): State<Shared>,
    Extension(who): Extension<Caller>,
    Query(q): Query<SettlementQuery>,
) -> Result<Json<Vec<SettlementView>>, ApiError> {
    let by = match (&q.id, &q.transaction, &q.payer) {
        (Some(v), None, None) => Lookup::Id(v),
        (None, Some(v), None) => Lookup::Transaction(v),
        (None, None, Some(v)) => Lookup::Payer(v),
        _ => return Err(ApiError::BadRequest("exactly one of id, transaction, payer is required".into())),
    };
    let limit = q.limit.unwrap_or(50);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::BadRequest("limit must be 1 to 100".into()));
    }
    let Caller::Key(name) = who else { return Err(ApiError::Unauthorized("facilitator key required".into())) };
    let page = crate::store::facilitator::Page { client: Some(&name), limit, before: q.before.as_deref() };
    Ok(Json(facilitator::lookup(&s.db, by, page).await?))
}
