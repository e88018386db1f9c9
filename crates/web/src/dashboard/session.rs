//! The session cookie, and the two extractors every handler takes: a
//! signed-in account (`Signed`) and a posted form whose CSRF token matches
//! its session's (`Posted`).
//!
//! The cookie is `__Host-sr_session` (Secure, HttpOnly, SameSite=Strict,
//! Path=/) when `[dashboard] public_url` is https, whatever Host a proxy
//! sends; `sr_session` without Secure when it is a loopback http URL (the
//! devnet: a `__Host-` cookie must be Secure). Without `public_url` the
//! request's Host decides, for local use only.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{header, request::Parts, HeaderMap};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::de::DeserializeOwned;

use super::error::DashError;
use crate::state::Shared;
use crate::store::dashboard::Session;

const SESSION: &str = "sr_session";
const SIGN_IN: &str = "sr_signin";
/// Largest form body the dashboard reads.
pub const MAX_FORM_BYTES: usize = 16 * 1024;

/// Is this request for a loopback host (no TLS to expect)?
pub fn loopback(headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Are the cookies plain (no Secure, no `__Host-`)? Only for a dashboard
/// served over http on loopback. The Host read here is `public_url`'s when
/// it is set (`dashboard::public_host` puts it there), whatever a proxy
/// sent.
fn plain(headers: &HeaderMap) -> bool {
    loopback(headers)
}

fn name(base: &str, headers: &HeaderMap) -> String {
    if plain(headers) {
        base.to_string()
    } else {
        format!("__Host-{base}")
    }
}

fn cookie(base: &str, headers: &HeaderMap, value: String) -> Cookie<'static> {
    Cookie::build((name(base, headers), value)).path("/").http_only(true).secure(!plain(headers)).same_site(SameSite::Strict).build()
}

fn read(base: &str, headers: &HeaderMap) -> Option<String> {
    CookieJar::from_headers(headers).get(&name(base, headers)).map(|c| c.value().to_string())
}

/// The session cookie to set after sign-in.
pub fn session_cookie(headers: &HeaderMap, token: String) -> Cookie<'static> {
    cookie(SESSION, headers, token)
}

/// The session cookie, removed.
pub fn cleared(headers: &HeaderMap) -> Cookie<'static> {
    let mut c = cookie(SESSION, headers, String::new());
    c.make_removal();
    c
}

/// The sign-in forms' token: before a session, the forms carry the value
/// of a cookie of their own (double submit), so another site cannot sign a
/// browser in to an account of its choosing.
pub fn sign_in_token(headers: &HeaderMap) -> (String, Option<Cookie<'static>>) {
    match read(SIGN_IN, headers) {
        Some(t) if t.len() >= 32 => (t, None),
        _ => {
            let t = crate::ops::signin::fresh_token();
            (t.clone(), Some(cookie(SIGN_IN, headers, t)))
        }
    }
}

/// A signed-in account and its cookie's token.
pub struct Signed {
    pub session: Session,
    pub token: String,
}

impl FromRequestParts<Shared> for Signed {
    type Rejection = DashError;

    async fn from_request_parts(parts: &mut Parts, s: &Shared) -> Result<Self, DashError> {
        let token = read(SESSION, &parts.headers).ok_or(DashError::SignInNeeded)?;
        let session = crate::ops::signin::session(s, &token).await?.ok_or(DashError::SignInNeeded)?;
        Ok(Signed { session, token })
    }
}

/// A form with no field but its CSRF token.
#[derive(serde::Deserialize)]
pub struct Nothing {}

#[derive(serde::Deserialize)]
struct CsrfField {
    csrf: String,
}

fn same(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

async fn form_bytes(req: Request) -> Result<(Parts, axum::body::Bytes), DashError> {
    let (parts, body) = req.into_parts();
    let media = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !media.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        return Err(DashError::MediaType);
    }
    let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES).await.map_err(|_| DashError::Invalid("That form is too large."))?;
    Ok((parts, bytes))
}

fn checked<T: DeserializeOwned>(bytes: &[u8], expected: &str) -> Result<T, DashError> {
    let field: CsrfField = serde_urlencoded::from_bytes(bytes).map_err(|_| DashError::Csrf)?;
    if !same(&field.csrf, expected) {
        return Err(DashError::Csrf);
    }
    serde_urlencoded::from_bytes(bytes).map_err(|_| DashError::Invalid("That form is missing a field."))
}

/// A form posted by a signed-in account, its CSRF token checked.
pub struct Posted<T> {
    pub signed: Signed,
    pub form: T,
    pub headers: HeaderMap,
}

impl<T: DeserializeOwned + Send> FromRequest<Shared> for Posted<T> {
    type Rejection = DashError;

    async fn from_request(req: Request, s: &Shared) -> Result<Self, DashError> {
        let (mut parts, bytes) = form_bytes(req).await?;
        let signed = Signed::from_request_parts(&mut parts, s).await?;
        let form = checked(&bytes, &signed.session.csrf)?;
        Ok(Posted { signed, form, headers: parts.headers })
    }
}

/// A sign-in form, its token checked against the sign-in cookie.
pub struct SignInForm<T> {
    pub form: T,
    pub headers: HeaderMap,
    /// The limit key of the client it came from (set by `signin::limit`).
    pub client: String,
}

/// The limit key of a sign-in request's client, for the handlers.
#[derive(Debug, Clone)]
pub struct Client(pub String);

impl<T: DeserializeOwned + Send> FromRequest<Shared> for SignInForm<T> {
    type Rejection = DashError;

    async fn from_request(req: Request, _: &Shared) -> Result<Self, DashError> {
        let (parts, bytes) = form_bytes(req).await?;
        let expected = read(SIGN_IN, &parts.headers).ok_or(DashError::Csrf)?;
        let form = checked(&bytes, &expected)?;
        let client = parts.extensions.get::<Client>().map_or_else(|| "unknown".to_string(), |c| c.0.clone());
        Ok(SignInForm { form, headers: parts.headers, client })
    }
}

impl axum::extract::OptionalFromRequestParts<Shared> for Signed {
    type Rejection = DashError;

    async fn from_request_parts(parts: &mut Parts, s: &Shared) -> Result<Option<Self>, DashError> {
        match <Signed as FromRequestParts<Shared>>::from_request_parts(parts, s).await {
            Ok(signed) => Ok(Some(signed)),
            Err(DashError::SignInNeeded) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
