//! Read one intent (a payment, or a registered swap), or a page of an
//! agent's own intents.

use serde::Deserialize;
use utoipa::IntoParams;

use super::intent_error::{load, load_owned, IntentError};
use crate::intent::Intent;
use crate::state::AppState;
use crate::store::agents::Agent;
use crate::store::swaps::SwapIntent;

/// What an intent id names.
#[allow(clippy::large_enum_variant)] // one per request, rendered at once
pub enum Found {
    Payment(Intent),
    /// A registered swap (ids `swp_…`), which any caller may read.
    Swap(SwapIntent),
}

/// Read an intent: any payment on `/api` (`agent` = None), only the
/// caller's own on `/v2`; swaps for anyone.
pub async fn read(s: &AppState, id: &str, agent: Option<&Agent>) -> Result<Found, IntentError> {
    if id.starts_with("swp_") {
        let swap = crate::store::swaps::get(&s.db, id).await?.ok_or(IntentError::NotFound)?;
        return Ok(Found::Swap(swap));
    }
    Ok(Found::Payment(match agent {
        Some(agent) => load_owned(s, id, agent).await?,
        None => load(s, id).await?,
    }))
}

/// `intent_id` as a query parameter, for clients that cannot put it in the path.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct IdQuery {
    #[param(value_type = String, required = true)]
    pub intent_id: Option<String>,
}

impl IdQuery {
    /// The id, trimmed; absent or blank is the caller's error.
    pub fn id(&self) -> Result<String, IntentError> {
        self.intent_id
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .ok_or_else(|| IntentError::Invalid("intent_id is required".into()))
    }
}

pub const MAX_PAGE: i64 = 1_000_000;
pub const DEFAULT_PAGE_SIZE: i64 = 20;
pub const MAX_PAGE_SIZE: i64 = 100;

/// Pages of the caller's intents, newest first. Values are read as text and
/// checked strictly here, so each refusal names its parameter.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1-based page number (at most 1,000,000).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 1000000)]
    pub page: Option<String>,
    /// Rows per page (default 20; more than 100 is taken as 100).
    #[param(value_type = Option<i64>, minimum = 1)]
    pub page_size: Option<String>,
}

/// A strict positive integer; anything else is the caller's error.
fn positive(v: Option<&str>, key: &str, default: i64) -> Result<i64, IntentError> {
    match v {
        None => Ok(default),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 1 && v.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| IntentError::Invalid(format!("invalid {key}: must be a positive integer"))),
    }
}

/// One page of an agent's intents.
pub struct Page {
    pub intents: Vec<Intent>,
    pub total: i64,
    pub page: i64,
    pub page_size: i64,
}

pub async fn list(s: &AppState, agent: &Agent, q: &PageQuery) -> Result<Page, IntentError> {
    let page = positive(q.page.as_deref(), "page", 1)?;
    if page > MAX_PAGE {
        return Err(IntentError::Invalid(format!("invalid page: must be at most {MAX_PAGE}")));
    }
    let page_size = positive(q.page_size.as_deref(), "page_size", DEFAULT_PAGE_SIZE)?.min(MAX_PAGE_SIZE);
    let (intents, total) = crate::store::intents::list_for_agent(&s.db, &agent.id, page_size, (page - 1) * page_size).await?;
    Ok(Page { intents, total, page, page_size })
}
