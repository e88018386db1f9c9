//! Request guards: Bearer authentication for `/v2` and rate limits
//! (per agent on `/v2`, per client IP on `/api`).
//!
//! Limits are kept in memory per replica: N replicas allow up to N times the
//! configured rate in total.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::Response;

use super::{ApiError, Shared};
use crate::auth::{self, AuthFailure};

pub async fn public_limit(State(s): State<Shared>, req: Request, next: Next) -> Result<Response, ApiError> {
    let ip = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip().to_string()).unwrap_or_else(|| "unknown".into());
    s.limiter.check(format!("ip:{ip}")).map_err(ApiError::RateLimited)?;
    Ok(next.run(req).await)
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
