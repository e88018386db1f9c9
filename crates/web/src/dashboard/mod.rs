//! `/dashboard`: the account holders' pages, rendered by the server (maud
//! templates compiled into the binary), usable without JavaScript. Forms
//! post `application/x-www-form-urlencoded`, each with its session's CSRF
//! token; every answer forbids framing, caching of signed-in pages and
//! scripts from anywhere but here.

mod agents;
mod error;
mod operator;
mod page;
mod payments;
mod payout;
mod qr;
mod session;
mod signin;
mod wallets;
mod webhooks;

use axum::http::{header, HeaderValue};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;

pub use error::DashError;

use crate::state::Shared;

const STYLE: &str = include_str!("style.css");
const COPY_JS: &str = include_str!("copy.js");

/// The dashboard's routes, or none when `[dashboard] enabled` is off.
pub fn router(s: &Shared) -> Router<Shared> {
    if !s.config.dashboard.enabled {
        return Router::new();
    }
    let sign_in = Router::new()
        .route("/sign-in", post(signin::request_code))
        .route("/sign-in/code", post(signin::verify_code))
        .route_layer(from_fn_with_state(s.clone(), signin::limit));
    let pages = Router::new()
        .route("/", get(signin::home))
        .route("/sign-in", get(signin::sign_in_page))
        .merge(sign_in)
        .route("/sign-out", post(signin::sign_out))
        .route("/sign-out-everywhere", post(signin::sign_out_everywhere))
        .route("/agents", get(agents::list).post(agents::create))
        .route("/agents/{id}", get(agents::show))
        .route("/agents/{id}/rename", post(agents::rename))
        .route("/agents/{id}/disable", post(agents::disable))
        .route("/agents/{id}/keys", post(agents::add_key))
        .route("/agents/{id}/keys/revoke", post(agents::revoke_key))
        .route("/wallets", get(wallets::page))
        .route("/payments", get(payments::page))
        .route("/payout", get(payout::page).post(payout::set))
        .route("/payout/remove", post(payout::remove))
        .route("/webhooks", get(webhooks::list).post(webhooks::add))
        .route("/webhooks/{id}", get(webhooks::show))
        .route("/webhooks/{id}/remove", post(webhooks::remove))
        .route("/webhooks/{id}/rotate", post(webhooks::rotate))
        .route("/webhooks/{id}/redeliver", post(webhooks::redeliver))
        .route("/operator", get(operator::page))
        .route("/static/style.css", get(|| asset("text/css; charset=utf-8", STYLE)))
        .route("/static/copy.js", get(|| asset("text/javascript; charset=utf-8", COPY_JS)))
        .fallback(|| async { DashError::NotFound })
        .layer(RequestBodyLimitLayer::new(session::MAX_FORM_BYTES))
        .layer(axum::middleware::map_response(headers));
    let pages = match public_host(s) {
        Some(host) => pages.layer(axum::middleware::map_request(move |mut req: axum::extract::Request| {
            let host = host.clone();
            async move {
                req.headers_mut().insert(header::HOST, host);
                req
            }
        })),
        None => pages,
    };
    Router::new().nest("/dashboard", pages)
}

/// `[dashboard] public_url`'s host, which the pages read in place of the
/// request's (a proxy may rewrite Host to 127.0.0.1): the session cookies
/// are hardened by the operator's word, never by the request's.
fn public_host(s: &Shared) -> Option<HeaderValue> {
    let url = s.config.dashboard.public_url.as_deref()?;
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    HeaderValue::from_str(authority.rsplit_once('@').map_or(authority, |(_, h)| h)).ok()
}

async fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "public, max-age=3600")], body).into_response()
}

/// Headers on every dashboard answer.
async fn headers(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    let set = |h: &mut axum::http::HeaderMap, k: header::HeaderName, v: &'static str| {
        h.insert(k, HeaderValue::from_static(v));
    };
    set(
        h,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    set(h, header::X_FRAME_OPTIONS, "DENY");
    set(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(h, header::REFERRER_POLICY, "no-referrer");
    if !h.contains_key(header::CACHE_CONTROL) {
        set(h, header::CACHE_CONTROL, "no-store");
    }
    resp
}
