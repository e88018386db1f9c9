//! Liveness, readiness, the documented health check and metrics. None of
//! them is rate-limited.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiError, Shared};

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Ready {
    #[schema(example = "ready")]
    pub status: &'static str,
    pub checks: Checks,
}

/// Each check: `ok`, or what is wrong.
#[derive(Debug, Serialize, ToSchema)]
pub struct Checks {
    #[schema(example = "ok")]
    pub database: &'static str,
    /// Per exposed chain: `ok`, `unreachable` or `wrong_chain_id`.
    #[schema(example = json!({"base": "ok"}))]
    pub chains: BTreeMap<String, &'static str>,
    /// Service wallets below their configured floors (empty when none).
    #[schema(example = json!({"relayer:evm base eth": "below 0.05"}))]
    pub wallets: BTreeMap<String, String>,
    /// Payer chains where intents wait because the relayer cannot pay gas.
    #[schema(example = json!(["base"]))]
    pub relayer_unfunded: Vec<String>,
    /// Served assets withheld because their chain disagrees with
    /// chains.toml (decimals, EIP-712 domain, contract code), with the
    /// difference. Reported, not a failed check: every other asset serves.
    #[schema(example = json!({"arbitrum usdt0": "decimals: chains.toml says 6, the token says 18"}))]
    pub assets_withheld: BTreeMap<String, String>,
    /// What the books cannot explain at the service's wallets (reported,
    /// not a failed check): money out that no payment claims, money in
    /// that no payment claims, credits the chain does not show, wallets
    /// whose balance is not what the movements read add up to. See
    /// `stablerail books check`.
    #[schema(example = json!({"unexplained_outgoing": 0, "unmatched_incoming": 1, "unseen_credits": 0, "stalled_wallets": 0}))]
    pub books: BTreeMap<&'static str, i64>,
}

/// The spec's health check: the database answers.
#[utoipa::path(get, path = "/api/health", tag = "operations",
    responses((status = 200, description = "Healthy", body = Health),
              (status = 503, description = "The database does not answer", body = super::docs::ErrorBody)))]
pub async fn health(State(s): State<Shared>) -> Result<Json<Health>, ApiError> {
    crate::store::ping(&s.db).await.map_err(|e| {
        tracing::warn!(error = %e, "health: database unavailable");
        ApiError::Unavailable("database unavailable".into())
    })?;
    Ok(Json(Health { status: "ok" }))
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process is alive", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

async fn ready_view(s: &Shared) -> crate::watch::ReadyView {
    let max_age = std::time::Duration::from_secs(s.config.service.probe_cache_seconds);
    s.probe_cache
        .ready
        .get(max_age, || async {
            let chains = crate::watch::probe_chains(&s.config, &s.chains).await.into_iter().map(|(name, p)| (name, p.as_str())).collect();
            let relayer_unfunded =
                crate::store::intents::chains_waiting_with(&s.db, crate::failure::Failure::RelayerUnfunded).await.unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "readiness: database unavailable");
                    vec![]
                });
            let books =
                crate::store::books::alarms(&s.db, crate::clock::now_ms() - crate::settle::books::GRACE_MS).await.unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "readiness: database unavailable");
                    Default::default()
                });
            let books = [
                ("unexplained_outgoing", books.unexplained_outgoing),
                ("unmatched_incoming", books.unmatched_incoming),
                ("unseen_credits", books.unseen_credits),
                ("stalled_wallets", books.stalled_wallets),
            ]
            .into_iter()
            .collect();
            crate::watch::ReadyView { chains, relayer_unfunded, books }
        })
        .await
}

/// Readiness: the database answers and every exposed chain's node answers
/// with its configured chain id. 503 (the error envelope plus `checks`)
/// otherwise. The chains are asked at most once per `probe_cache_seconds`.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "Ready to take traffic", body = Ready),
              (status = 503, description = "Not ready: the error envelope with `checks`", body = super::docs::ErrorBody)))]
pub async fn readyz(State(s): State<Shared>) -> axum::response::Response {
    let database = match crate::store::ping(&s.db).await {
        Ok(()) => "ok",
        Err(e) => {
            tracing::warn!(error = %e, "readiness: database unavailable");
            "unavailable"
        }
    };
    let crate::watch::ReadyView { chains, relayer_unfunded, books } = ready_view(&s).await;
    let checks =
        Checks { database, chains, wallets: s.watch.below_floor(), relayer_unfunded, assets_withheld: s.watch.withheld_assets(), books };
    if checks.database == "ok"
        && checks.chains.values().all(|v| *v == "ok")
        && checks.wallets.is_empty()
        && checks.relayer_unfunded.is_empty()
    {
        return Json(Ready { status: "ready", checks }).into_response();
    }
    let mut body = ApiError::Unavailable("not ready: see checks".into()).envelope();
    body["checks"] = serde_json::to_value(&checks).expect("checks serialize");
    (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
}

/// Marks the requests of `metrics_listen`, the operator's own address.
#[derive(Debug, Clone, Copy)]
pub struct OwnListener;

/// Prometheus metrics, on the API's address only with `[service]
/// metrics_token` (sent as a Bearer token); otherwise 404 here, and served
/// on `metrics_listen` if set.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String),
              (status = 401, description = "The metrics token is missing or wrong", body = super::docs::ErrorBody),
              (status = 404, description = "Metrics are not served on this address", body = super::docs::ErrorBody)))]
pub async fn metrics_text(
    State(s): State<Shared>,
    own: Option<axum::Extension<OwnListener>>,
    headers: axum::http::HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    if own.is_some() {
        return Ok(metrics_body(&s).await);
    }
    let Some(token) = s.config.service.metrics_token.as_deref().filter(|t| !t.is_empty()) else {
        return Err(ApiError::NotFound("metrics are not served on this address".into()));
    };
    let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).unwrap_or("");
    // Compared as digests: equal-length values, no early exit on a prefix.
    use sha2::Digest;
    if sha2::Sha256::digest(given.as_bytes()) != sha2::Sha256::digest(token.as_bytes()) {
        return Err(ApiError::Unauthorized("metrics token required".into()));
    }
    Ok(metrics_body(&s).await)
}

/// The metrics text: what this process counts, plus the database's view
/// (intents by status, the settlement queue) read at most once per
/// `probe_cache_seconds`.
pub async fn metrics_body(s: &Shared) -> axum::response::Response {
    let max_age = std::time::Duration::from_secs(s.config.service.probe_cache_seconds);
    let db_view = s
        .probe_cache
        .db_metrics
        .get(max_age, || async {
            let now = crate::clock::now_ms();
            let read = async {
                let by_status = crate::store::intents::count_by_status(&s.db).await?;
                let (depth, oldest_due) = crate::store::settlement::queue_stats(&s.db, now).await?;
                Ok::<_, crate::store::StoreError>((by_status, depth, oldest_due))
            };
            match read.await {
                Ok((by_status, depth, oldest_due)) => {
                    let age = oldest_due.map_or(0, |at| (now - at).max(0) / 1000);
                    crate::telemetry::scrape_text(&by_status, depth, age)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics: database unavailable");
                    String::new()
                }
            }
        })
        .await;
    let text = crate::telemetry::render() + &db_view;
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}
