//! HTTP surface: `/api` (public) and `/v2` (Bearer).

mod agents;
mod balances;
mod chains;
mod create;
pub mod docs;
pub mod error;
mod facilitator;
pub mod guard;
mod idempotency;
mod intents;
pub mod probes;
mod streams;
mod swap;
mod tron_approve;
mod webhooks;

use axum::http::{header, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::IntoResponse;
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use error::ApiError;

pub use crate::state::{AppState, Shared};

/// Largest request body accepted, in bytes. A settle_proof is a few KiB.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Every route, in three groups by the guard in front of them. Routes are
/// added only through `routes!`, which takes each handler's OpenAPI entry
/// with it.
struct Routes {
    public: OpenApiRouter<Shared>,
    /// Public too, but routed only while TRON is wired and enabled.
    tron: OpenApiRouter<Shared>,
    agent: OpenApiRouter<Shared>,
    /// `/x402`: facilitator keys, or keyless under its own limit.
    x402: OpenApiRouter<Shared>,
    probes: OpenApiRouter<Shared>,
}

fn routes() -> Routes {
    Routes {
        public: OpenApiRouter::new()
            .routes(routes!(chains::list))
            .routes(routes!(probes::health))
            .routes(routes!(create::create_public, intents::get_public_query))
            .routes(routes!(intents::get_public, intents::submit_proof))
            .routes(routes!(streams::intent_events))
            .routes(routes!(swap::quote))
            .routes(routes!(swap::approval))
            .routes(routes!(swap::status))
            .routes(routes!(swap::register))
            .routes(routes!(swap::tokens))
            .routes(routes!(swap::chains))
            .routes(routes!(swap::connections))
            .routes(routes!(facilitator::supported)),
        tron: OpenApiRouter::new().routes(routes!(tron_approve::prepare)).routes(routes!(tron_approve::submit)),
        agent: OpenApiRouter::new()
            .routes(routes!(agents::me))
            .routes(routes!(balances::balances))
            .routes(routes!(create::create_agent, intents::get_agent_query))
            .routes(routes!(intents::list))
            .routes(routes!(intents::get_agent))
            .routes(routes!(intents::execute))
            .routes(routes!(swap::execute))
            .routes(routes!(webhooks::create, webhooks::list))
            .routes(routes!(webhooks::remove))
            .routes(routes!(webhooks::rotate))
            .routes(routes!(webhooks::deliveries))
            .routes(routes!(webhooks::redeliver))
            .routes(routes!(streams::agent_events)),
        x402: OpenApiRouter::new()
            .routes(routes!(facilitator::verify))
            .routes(routes!(facilitator::settle))
            .routes(routes!(facilitator::settlements)),
        probes: OpenApiRouter::new()
            .routes(routes!(probes::healthz))
            .routes(routes!(probes::readyz))
            .routes(routes!(probes::metrics_text))
            .routes(routes!(docs::openapi_json)),
    }
}

/// The OpenAPI document of every route (the TRON helpers with `tron`).
pub fn openapi(tron: bool) -> utoipa::openapi::OpenApi {
    let Routes { public, tron: helpers, agent, x402, probes } = routes();
    let public = if tron { public.merge(helpers) } else { public };
    let mut doc = OpenApiRouter::with_openapi(docs::ApiDoc::openapi()).merge(public).merge(agent).merge(x402).merge(probes).into_openapi();
    utoipa::Modify::modify(&docs::Conventions, &mut doc);
    doc
}

pub fn router(state: Shared) -> Router {
    let Routes { public, tron, agent, x402, probes } = routes();
    let public = if tron_approve::enabled(&state) { public.merge(tron) } else { public };
    let public = public.layer(from_fn_with_state(state.clone(), guard::public_limit));
    let agent = agent.layer(from_fn_with_state(state.clone(), guard::agent_auth));
    let x402 = x402.layer(from_fn_with_state(state.clone(), facilitator::caller));
    // Probes and the document are never rate-limited.
    let (routes, _) = probes.merge(public).merge(agent).merge(x402).split_for_parts();
    let dashboard = crate::dashboard::router(&state);
    routes
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        // Every request ends: 408 (in the envelope) past the longest wait.
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            std::time::Duration::from_secs(state.config.service.request_timeout_seconds),
        ))
        .layer(axum::middleware::from_fn(json_bodies_only))
        .layer(axum::middleware::map_response(envelope_everything))
        // The dashboard's pages: HTML and forms, so outside the JSON rules.
        .merge(dashboard)
        .layer(axum::middleware::from_fn(http_metrics))
        .layer(request_log())
        // Outermost: every request has an id before it is logged, and the
        // answer carries it back (a client's own `x-request-id` is kept).
        .layer(tower_http::request_id::PropagateRequestIdLayer::x_request_id())
        .layer(tower_http::request_id::SetRequestIdLayer::x_request_id(tower_http::request_id::MakeRequestUuid))
        .with_state(state)
}

/// `/metrics` alone, for `[service] metrics_listen`: the operator's own
/// address, so no token.
pub fn metrics_router(state: Shared) -> Router {
    let (routes, _) = OpenApiRouter::new().routes(routes!(probes::metrics_text)).split_for_parts();
    routes.fallback(not_found).layer(axum::Extension(probes::OwnListener)).with_state(state)
}

/// One INFO line per request when it is answered: method, route (the
/// template, so ids do not explode log cardinality), status, latency and
/// request id. Query strings are never logged.
#[allow(clippy::type_complexity)] // tower-http's layer type, spelled once here
fn request_log() -> TraceLayer<
    tower_http::classify::SharedClassifier<tower_http::classify::ServerErrorsAsFailures>,
    impl Fn(&axum::extract::Request) -> tracing::Span + Clone,
    tower_http::trace::DefaultOnRequest,
    impl Fn(&axum::response::Response, std::time::Duration, &tracing::Span) + Clone,
> {
    TraceLayer::new_for_http()
        .make_span_with(|req: &axum::extract::Request| {
            let route = req.extensions().get::<axum::extract::MatchedPath>().map_or("(unrouted)", |p| p.as_str());
            // A caller's own id is kept only when short (it is logged and
            // traced with every line of the request).
            let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).filter(|v| v.len() <= 64).unwrap_or("(long)");
            let span = tracing::info_span!("request", method = %req.method(), route, request_id = id);
            // A caller's trace goes on here (and its sampling decision holds).
            crate::traces::set_parent(&span, req.headers().get("traceparent").and_then(|v| v.to_str().ok()));
            span
        })
        .on_response(|resp: &axum::response::Response, latency: std::time::Duration, _span: &tracing::Span| {
            tracing::info!(status = resp.status().as_u16(), latency_us = latency.as_micros() as u64, "answered");
        })
}

/// A request body is JSON, said so by its Content-Type (`application/json`
/// or a `+json` type, parameters allowed); anything else is 415. Requests
/// without a body (execute) need no Content-Type.
async fn json_bodies_only(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::body::HttpBody as _;
    let has_body = req.body().size_hint().exact() != Some(0);
    if has_body {
        let media = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let media = media.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if media != "application/json" && !(media.starts_with("application/") && media.ends_with("+json")) {
            return ApiError::UnsupportedMediaType("Content-Type must be application/json".into()).into_response();
        }
    }
    next.run(req).await
}

/// Rejections that axum, hyper or tower-http write themselves (an
/// over-long body, a path that is not UTF-8, …) come as plain text: give
/// them the envelope with a fixed sentence, keeping the headers that matter.
async fn envelope_everything(resp: axum::response::Response) -> axum::response::Response {
    let status = resp.status();
    let json = resp.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    if json || !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let error = match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge("request body is too large".into()),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType("Content-Type must be application/json".into()),
        StatusCode::NOT_FOUND => ApiError::NotFound("no such endpoint".into()),
        StatusCode::REQUEST_TIMEOUT => ApiError::Status(status, "the request took too long and was stopped".into()),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::MethodNotAllowed("method not allowed on this endpoint".into()),
        s if s.is_client_error() => ApiError::Status(s, "malformed request".into()),
        s => ApiError::Status(s, "the request could not be completed".into()),
    };
    let mut out = error.into_response();
    for h in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(v) = resp.headers().get(&h) {
            out.headers_mut().insert(h, v.clone());
        }
    }
    out
}

/// Requests by route template, method and status, with their latency.
async fn http_metrics(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let route = req.extensions().get::<axum::extract::MatchedPath>().map_or("(unrouted)".to_string(), |p| p.as_str().to_string());
    let method = req.method().to_string();
    let started = std::time::Instant::now();
    let resp = next.run(req).await;
    crate::telemetry::http_request(&route, &method, resp.status().as_u16(), started.elapsed());
    resp
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed("method not allowed on this endpoint".into())
}
