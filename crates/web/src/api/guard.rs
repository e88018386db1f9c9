//! Request guards: Bearer authentication for `/v2` and rate limits
//! (per agent on `/v2`, per client on `/api`: its IP, or its IPv6 /64,
//! behind trusted proxies the address they forwarded).
//!
//! Limits are kept in memory per replica: N replicas allow up to N times the
//! configured rate in total.

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::Response;

use super::{ApiError, Shared};
use crate::auth::{self, AuthFailure};

pub async fn public_limit(State(s): State<Shared>, req: Request, next: Next) -> Result<Response, ApiError> {
    let ip = crate::client_ip::of(&s.proxies, &req);
    let mut over = s.limiter.check(format!("ip:{ip}"));
    if over.is_ok() {
        if let Some(site) = crate::client_ip::site_of(&s.proxies, &req) {
            over = s.site_limiter.check(format!("ip:{site}"));
        }
    }
    match over {
        Ok(()) => Ok(next.run(req).await),
        Err(wait) => Err(refused(&s, wait).await),
    }
}

/// A keyless client over its limit is answered 429, after
/// `[limits] rejection_delay_ms`: a client that sends as fast as it is
/// answered (most flooding tools) then costs a timer, not a core.
pub async fn refused(s: &Shared, wait: u64) -> ApiError {
    tokio::time::sleep(std::time::Duration::from_millis(s.config.limits.rejection_delay_ms)).await;
    ApiError::RateLimited(wait)
}

pub async fn agent_auth(State(s): State<Shared>, mut req: Request, next: Next) -> Result<Response, ApiError> {
    let header = req.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    let agent = match auth::authenticate(&s.db, &s.pepper, header).await? {
        Ok(agent) => agent,
        Err(AuthFailure::Missing) => return Err(ApiError::Unauthorized("api key required".into())),
        Err(AuthFailure::Invalid) => return Err(ApiError::Unauthorized("invalid credentials".into())),
    };
    s.limiter.check(format!("agent:{}", agent.id)).map_err(ApiError::RateLimited)?;
    req.extensions_mut().insert(agent);
    Ok(next.run(req).await)
}
