//! `Idempotency-Key` for the endpoints that take one: the first answer for
//! a (scope, key) is stored and replayed for the same body; another body is
//! 422; a request still running is 409, unless it has run past
//! `service.idempotency_stale_seconds` (its server died): then the retry
//! takes it over. Server errors are not final answers: the key is freed
//! for a retry.

use std::future::Future;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::{ApiError, Shared};
use crate::store::idempotency::{self, Claim};

/// The request's key, if it has a well-formed one.
pub fn key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    match headers.get("idempotency-key").map(|v| v.to_str().map(str::trim)) {
        None => Ok(None),
        Some(Ok(k)) if !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| b.is_ascii_graphic()) => Ok(Some(k.to_string())),
        Some(_) => Err(ApiError::BadRequest(
            "Idempotency-Key must be 1 to 255 visible ASCII characters, without spaces or control characters".into(),
        )),
    }
}

/// Run `work` once per (scope, key); without a key, just run it.
pub async fn run<F, Fut, T>(s: &Shared, scope: &str, key: Option<&str>, body: &[u8], success: StatusCode, work: F) -> Response
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
    T: serde::Serialize,
{
    // The answer is serialized once, for the response and the record alike.
    let work = || async { work().await.map(|v| serde_json::to_string(&v).expect("an answer serializes")) };
    let Some(key) = key else { return respond(success, work().await) };
    let hash = hex::encode(Sha256::digest(body));
    let stale_ms = s.config.service.idempotency_stale_seconds.saturating_mul(1000) as i64;
    let claim = match idempotency::claim(&s.db, scope, key, &hash, crate::clock::now_ms(), stale_ms).await {
        Ok(c) => c,
        Err(e) => return ApiError::from(e).into_response(),
    };
    match claim {
        Claim::Replay { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Claim::Mismatch => ApiError::Unprocessable("Idempotency-Key was already used with a different request body".into()).into_response(),
        Claim::InProgress => ApiError::Conflict("a request with this Idempotency-Key is still in progress".into()).into_response(),
        Claim::Claimed => {
            let outcome = work().await;
            let (status, text) = match &outcome {
                Ok(v) => (success, v.clone()),
                Err(e) => (e.status(), e.envelope().to_string()),
            };
            let saved = if status.is_server_error() {
                idempotency::release(&s.db, scope, key).await
            } else {
                idempotency::finish(&s.db, scope, key, status.as_u16(), &text).await
            };
            if let Err(e) = saved {
                tracing::error!(error = %e, "could not record idempotent response");
            }
            respond(success, outcome)
        }
    }
}

fn respond(success: StatusCode, outcome: Result<String, ApiError>) -> Response {
    match outcome {
        Ok(json) => (success, [(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => e.into_response(),
    }
}
