//! HTTP surface: `/api` (public) and `/v2` (Bearer).

mod chains;
pub mod error;

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

pub use error::ApiError;

use crate::adapter::Registry;
use crate::config::Config;
use crate::db::Db;

/// Largest request body accepted, in bytes. A settle_proof is a few KiB.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

pub struct AppState {
    pub config: Arc<Config>,
    pub registry: Arc<Registry>,
    pub db: Db,
}

pub type Shared = Arc<AppState>;

pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/api/chains", get(chains::list))
        .route("/api/health", get(health))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

async fn health(axum::extract::State(s): axum::extract::State<Shared>) -> Result<impl IntoResponse, ApiError> {
    s.db.ping().await.map_err(|e| ApiError::Unavailable(format!("database unavailable: {e}")))?;
    Ok((StatusCode::OK, axum::Json(serde_json::json!({ "status": "ok" }))))
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed("method not allowed on this endpoint".into())
}
