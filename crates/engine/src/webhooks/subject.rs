//! Whose an event is and what it says: the owners whose endpoints receive
//! it, and the owner's view of its subject with the event's status.
//!
//! - an intent: its agent, and the agent's account;
//! - a facilitator settlement: the facilitator key that asked (keyless
//!   settlements have no owner);
//! - a registered swap: the agent whose hosted wallet paid it, and that
//!   agent's account, only when the chain says that wallet sent the source
//!   transaction (anyone may register a swap naming any payer).

use serde_json::Value;

use super::Deps;
use crate::store::webhooks::{NewEvent, Owner};
use crate::store::StoreError;

pub struct Subject {
    pub owners: Vec<Owner>,
    pub data: Value,
}

/// `None` when the event has no owner to tell.
pub async fn resolve(d: &Deps, e: &NewEvent, now: i64) -> Result<Option<Subject>, StoreError> {
    let mut subject = match e.subject_kind.as_str() {
        "intent" => intent(d, &e.subject_id, now).await?,
        "x402_settlement" => settlement(d, &e.subject_id).await?,
        "swap" => swap(d, &e.subject_id).await?,
        _ => None,
    };
    // The view as it is now, with the event's status (a later change has
    // its own event).
    if let Some(s) = subject.as_mut() {
        s.data["status"] = e.to_status.clone().into();
    }
    Ok(subject.filter(|s| !s.owners.is_empty()))
}

fn agent_and_account(agent: &str, account: Option<&str>) -> Vec<Owner> {
    std::iter::once(Owner::agent(agent)).chain(account.map(Owner::account)).collect()
}

async fn intent(d: &Deps, id: &str, now: i64) -> Result<Option<Subject>, StoreError> {
    let Some(intent) = crate::store::intents::get(&d.db, id).await? else { return Ok(None) };
    let Some(agent) = intent.agent_id.as_deref() else { return Ok(None) };
    let account = crate::store::agents::agents(&d.db, None, Some(agent)).await?.into_iter().next().and_then(|a| a.account_id);
    let data = serde_json::to_value(crate::intent::views::intent(&d.config, &intent, now)).expect("views serialize");
    Ok(Some(Subject { owners: agent_and_account(agent, account.as_deref()), data }))
}

async fn settlement(d: &Deps, id: &str) -> Result<Option<Subject>, StoreError> {
    use crate::store::facilitator::{Lookup, Page};
    let page = Page { client: None, limit: 1, before: None };
    let Some(view) = crate::x402::facilitator::lookup(&d.db, Lookup::Id(id), page).await?.into_iter().next() else {
        return Ok(None);
    };
    let owners = if view.client == crate::x402::facilitator::PUBLIC_CLIENT { vec![] } else { vec![Owner::facilitator_key(&view.client)] };
    Ok(Some(Subject { owners, data: serde_json::to_value(view).expect("views serialize") }))
}

async fn swap(d: &Deps, id: &str) -> Result<Option<Subject>, StoreError> {
    let Some(swap) = crate::store::swaps::get(&d.db, id).await? else { return Ok(None) };
    let Some((agent, account)) = crate::store::agents::owner_of_wallet(&d.db, &swap.payer_address).await? else { return Ok(None) };
    let Some(driver) = d.drivers.for_chain(&swap.from_chain) else { return Ok(None) };
    // The chain was just read for this swap's end; if it cannot be read now
    // the event is not announced rather than held up (and everything behind it).
    let sender = match driver.sender_of(&swap.from_chain, &swap.source_tx_hash).await {
        Ok(sender) => sender,
        Err(e) => {
            tracing::warn!(swap = %id, error = %e, "webhooks: the swap's sender could not be read; not announced");
            None
        }
    };
    if !sender.is_some_and(|s| same_address(&s, &swap.payer_address)) {
        return Ok(None);
    }
    let data = serde_json::to_value(crate::swap::register::SwapIntentView::of(swap)).expect("views serialize");
    Ok(Some(Subject { owners: agent_and_account(&agent, account.as_deref()), data }))
}

/// EVM addresses in any case; others exactly.
fn same_address(a: &str, b: &str) -> bool {
    a == b || (a.starts_with("0x") && a.eq_ignore_ascii_case(b))
}
