//! HTTP surface: `/api` (public) and `/v2` (Bearer).

mod agents;
mod balances;
mod chains;
mod create;
pub mod error;
pub mod guard;
mod intents;
mod views;

use std::sync::Arc;

use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

pub use error::ApiError;

use crate::adapter::Registry;
use crate::auth::Pepper;
use crate::config::Config;
use crate::db::Db;
use crate::sanctions::SanctionsList;

/// Largest request body accepted, in bytes. A settle_proof is a few KiB.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

pub struct AppState {
    pub config: Arc<Config>,
    pub registry: Arc<Registry>,
    pub db: Db,
    pub pepper: Pepper,
    pub sanctions: SanctionsList,
    pub limiter: guard::Limiter,
    pub keys: Arc<crate::keys::Keystore>,
    /// Wakes this replica's settlement workers when work is queued.
    pub work: tokio::sync::Notify,
}

pub type Shared = Arc<AppState>;

pub fn router(state: Shared) -> Router {
    let public = Router::new()
        .route("/api/chains", get(chains::list))
        .route("/api/health", get(health))
        .route("/api/intents", post(create::create_public).get(intents::get_public_query))
        .route("/api/intents/{id}", get(intents::get_public).post(intents::submit_proof))
        .layer(from_fn_with_state(state.clone(), guard::public_limit));
    let agent = Router::new()
        .route("/v2/me", get(agents::me))
        .route("/v2/agents/balances", get(balances::balances))
        .route("/v2/intents", post(create::create_agent).get(intents::get_agent_query))
        .route("/v2/intents/list", get(intents::list))
        .route("/v2/intents/{id}", get(intents::get_agent))
        .route("/v2/intents/{id}/execute", post(intents::execute))
        .layer(from_fn_with_state(state.clone(), guard::agent_auth));
    Router::new()
        .merge(public)
        .merge(agent)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Run blocking work (adapter calls) off the request workers.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(format!("blocking task failed: {e}")))
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
