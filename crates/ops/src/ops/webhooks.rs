//! Webhook endpoints, managed by their owner: an agent (`/v2`), an account
//! (the dashboard) or a facilitator key (the CLI).

use crate::clock::now_ms;
use crate::config::Config;
use crate::db::Db;
use crate::state::AppState;
use crate::store::webhooks::{self as repo, Delivery, Endpoint};
use crate::store::StoreError;
use crate::webhooks::{event, guard, sign};

/// How long a rotated-out secret keeps signing.
const ROTATION_OVERLAP_MS: i64 = 24 * 3_600_000;

pub use crate::store::webhooks::Owner;

/// What managing endpoints needs: the server's state or the CLI's.
pub struct Parts<'a> {
    pub config: &'a Config,
    pub db: &'a Db,
    pub sealer: &'a sign::Sealer,
}

impl<'a> From<&'a AppState> for Parts<'a> {
    fn from(s: &'a AppState) -> Parts<'a> {
        Parts { config: &s.config, db: &s.db, sealer: &s.sealer }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error(transparent)]
    Url(#[from] guard::Refusal),
    #[error("events names an unknown event type")]
    UnknownEvent,
    #[error("at most {} webhook endpoints", repo::MAX_ENDPOINTS_PER_OWNER)]
    TooMany,
    #[error("webhook endpoint not found")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A new endpoint and its secret (shown once).
pub struct Created {
    pub endpoint: Endpoint,
    pub secret: String,
}

pub async fn create(s: Parts<'_>, owner: &Owner, url: &str, events: Option<Vec<String>>) -> Result<Created, WebhookError> {
    let url = guard::check_url(&s.config.webhooks, url)?;
    let events = match events {
        None => vec!["*".to_string()],
        Some(list) if list.is_empty() => vec!["*".to_string()],
        Some(list) => {
            if list.iter().any(|e| e != "*" && !event::TYPES.contains(&e.as_str())) {
                return Err(WebhookError::UnknownEvent);
            }
            let mut list = list;
            list.sort();
            list.dedup();
            list
        }
    };
    let secret = sign::new_secret();
    let endpoint = Endpoint {
        id: format!("we_{}", ulid::Ulid::new()),
        owner_kind: owner.kind.to_string(),
        owner_id: owner.id.clone(),
        url: url.to_string(),
        events,
        secret: s.sealer.seal(&secret),
        previous_secret: None,
        previous_until: None,
        status: "enabled".into(),
        disabled_reason: None,
        created_at: now_ms(),
    };
    if !repo::add_endpoint(s.db, &endpoint).await? {
        return Err(WebhookError::TooMany);
    }
    Ok(Created { endpoint, secret })
}

pub async fn list(s: Parts<'_>, owner: &Owner) -> Result<Vec<Endpoint>, WebhookError> {
    Ok(repo::endpoints_of(s.db, owner.kind, &owner.id).await?)
}

pub async fn remove(s: Parts<'_>, owner: &Owner, id: &str) -> Result<(), WebhookError> {
    repo::remove_endpoint(s.db, owner.kind, &owner.id, id).await?.then_some(()).ok_or(WebhookError::NotFound)
}

/// A new secret; the old one also signs for 24 hours. Returns the new
/// secret and until when the old one signs.
pub async fn rotate(s: Parts<'_>, owner: &Owner, id: &str) -> Result<(String, i64), WebhookError> {
    repo::endpoint_of(s.db, owner.kind, &owner.id, id).await?.ok_or(WebhookError::NotFound)?;
    let secret = sign::new_secret();
    let until = now_ms() + ROTATION_OVERLAP_MS;
    repo::rotate_secret(s.db, id, &s.sealer.seal(&secret), until).await?;
    Ok((secret, until))
}

pub async fn deliveries(s: Parts<'_>, owner: &Owner, id: &str) -> Result<Vec<Delivery>, WebhookError> {
    repo::endpoint_of(s.db, owner.kind, &owner.id, id).await?.ok_or(WebhookError::NotFound)?;
    Ok(repo::deliveries_of(s.db, id, 100).await?)
}

/// Send an event again to each of the owner's endpoints that had it; how many.
pub async fn redeliver(s: Parts<'_>, owner: &Owner, event_id: &str) -> Result<usize, WebhookError> {
    let mut n = 0;
    for e in repo::endpoints_of(s.db, owner.kind, &owner.id).await? {
        if repo::redeliver(s.db, &e.id, event_id, now_ms()).await? {
            n += 1;
        }
    }
    if n == 0 {
        return Err(WebhookError::NotFound);
    }
    Ok(n)
}

/// Send an event again to one of the owner's endpoints.
pub async fn redeliver_to(s: Parts<'_>, owner: &Owner, endpoint: &str, event_id: &str) -> Result<(), WebhookError> {
    repo::endpoint_of(s.db, owner.kind, &owner.id, endpoint).await?.ok_or(WebhookError::NotFound)?;
    repo::redeliver(s.db, endpoint, event_id, now_ms()).await?.then_some(()).ok_or(WebhookError::NotFound)
}
