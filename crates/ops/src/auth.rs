//! Agent credentials: key generation, secret hashing under a server-side
//! pepper, and the Bearer check for `/v2`.
//!
//! Bearer token = base64(`API_KEY:SECRET_KEY`). Only HMAC-SHA256(pepper,
//! secret) is stored; checks compare MACs in constant time.

use base64::Engine as _;
use rand::distributions::Alphanumeric;
use rand::Rng;

use crate::db::Db;
use crate::store::agents::{self, Agent};

pub use stablerail_types::pepper::Pepper;

fn random(n: usize) -> String {
    rand::thread_rng().sample_iter(&Alphanumeric).take(n).map(char::from).collect()
}

/// A fresh key pair. The secret is returned once and never stored.
pub struct Credentials {
    pub api_key: String,
    pub secret_key: String,
}

impl Credentials {
    pub fn generate() -> Self {
        Credentials { api_key: format!("sr_{}", random(24)), secret_key: format!("srsk_{}", random(40)) }
    }

    pub fn bearer(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", self.api_key, self.secret_key))
    }
}

/// Issue (or rotate) an agent's key pair.
pub async fn issue_keys(db: &Db, pepper: &Pepper, agent_id: &str, now_ms: i64) -> Result<Credentials, agents::AgentError> {
    let c = Credentials::generate();
    agents::replace_key(db, agent_id, &c.api_key, &pepper.hash(&c.secret_key), now_ms).await?;
    Ok(c)
}

/// Add a key pair to an agent, keeping its others (the dashboard); `None`
/// when it holds as many live keys as it may.
pub async fn add_keys(db: &Db, pepper: &Pepper, agent_id: &str, now_ms: i64) -> Result<Option<Credentials>, agents::AgentError> {
    let c = Credentials::generate();
    Ok(agents::add_key(db, agent_id, &c.api_key, &pepper.hash(&c.secret_key), now_ms).await?.then_some(c))
}

#[derive(Debug, PartialEq, Eq)]
pub enum AuthFailure {
    /// No Authorization header.
    Missing,
    /// A header that is not a valid, live credential.
    Invalid,
}

/// Resolve an `Authorization` header value to its agent.
pub async fn authenticate(db: &Db, pepper: &Pepper, header: Option<&str>) -> Result<Result<Agent, AuthFailure>, crate::store::StoreError> {
    let Some(header) = header else { return Ok(Err(AuthFailure::Missing)) };
    let Some(token) = header.strip_prefix("Bearer ").map(str::trim) else { return Ok(Err(AuthFailure::Invalid)) };
    let decoded = base64::engine::general_purpose::STANDARD.decode(token).ok().and_then(|b| String::from_utf8(b).ok());
    let Some((api_key, secret)) = decoded.as_deref().and_then(|d| d.split_once(':')) else {
        return Ok(Err(AuthFailure::Invalid));
    };
    match agents::by_api_key(db, api_key).await? {
        Some((agent, stored, last_used)) if pepper.verify(secret, &stored) && agent.status == "active" => {
            let now = crate::clock::now_ms();
            // The dashboard's "last used", to the minute, written off the
            // request's path.
            if last_used.is_none_or(|t| t <= now - agents::KEY_USE_RESOLUTION_MS) {
                let (db, key) = (db.clone(), api_key.to_string());
                tokio::spawn(async move {
                    if let Err(e) = agents::touch_key(&db, &key, now).await {
                        tracing::debug!(error = %e, "recording a key's use failed");
                    }
                });
            }
            Ok(Ok(agent))
        }
        _ => Ok(Err(AuthFailure::Invalid)),
    }
}

/// A new facilitator key named `name`, speaking for `receivers` (in the
/// form `store::facilitator::key_receivers` reads): the secret is returned
/// once; only its MAC is stored.
pub async fn issue_facilitator_key(
    db: &Db,
    pepper: &Pepper,
    name: &str,
    receivers: &[String],
    now_ms: i64,
) -> Result<String, crate::store::StoreError> {
    let secret = format!("srfk_{}", random(40));
    let id = format!("fk_{}", ulid::Ulid::new());
    crate::store::facilitator::add_key(db, &id, name, &pepper.hash(&secret), receivers, now_ms).await?;
    Ok(secret)
}

/// The name of the live facilitator key in an `Authorization: Bearer srfk_…`
/// header; `None` for anything else.
pub async fn facilitator_key(db: &Db, pepper: &Pepper, header: &str) -> Result<Option<String>, crate::store::StoreError> {
    let Some(secret) = header.strip_prefix("Bearer ").map(str::trim).filter(|s| s.starts_with("srfk_")) else { return Ok(None) };
    crate::store::facilitator::key_by_hash(db, &pepper.hash(secret)).await
}
