//! Agents and their key pairs: list, create (with a first pair), rename,
//! disable; pairs made (the secret shown once), listed by prefix and last
//! use, revoked.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::error::DashError;
use super::page::{self, Nav};
use super::session::{Nothing, Posted, Signed};
use crate::auth::Credentials;
use crate::clock::now_ms;
use crate::ops::agents::CreateAgentError;
use crate::state::Shared;
use crate::store::agents::{self as repo, AgentError, AgentRow, MAX_AGENTS_PER_ACCOUNT};
use crate::store::dashboard::Session;

/// One of the session's account's agents, or 404 (another account's too).
pub async fn owned(s: &Shared, session: &Session, id: &str) -> Result<AgentRow, DashError> {
    repo::agents(&s.db, Some(&session.account.id), Some(id)).await?.into_iter().next().ok_or(DashError::NotFound)
}

fn checked_name(name: &str) -> Result<&str, DashError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(DashError::Invalid("An agent's name is 1 to 64 characters."));
    }
    Ok(name)
}

/// How a key is named in forms: not the key itself.
fn key_ref(api_key: &str) -> String {
    hex::encode(&Sha256::digest(api_key.as_bytes())[..12])
}

fn prefix(api_key: &str) -> String {
    format!("{}…", api_key.chars().take(11).collect::<String>())
}

pub async fn list(State(s): State<Shared>, signed: Signed) -> Result<Response, DashError> {
    let session = &signed.session;
    let agents = repo::agents(&s.db, Some(&session.account.id), None).await?;
    let full = agents.len() as i64 >= MAX_AGENTS_PER_ACCOUNT;
    let body = html! {
        @if agents.is_empty() {
            p.notice { "No agents yet. An agent is a program that pays through the API with its own key pair and hosted wallets." }
        } @else {
            div.scroll tabindex="0" { table {
                caption { "Your agents (" (agents.len()) " of " (MAX_AGENTS_PER_ACCOUNT) ")" }
                thead { tr { th scope="col" { "Name" } th scope="col" { "Number" } th scope="col" { "Status" } th scope="col" { "Created" } } }
                tbody { @for a in &agents { tr {
                    td { a href={ "/dashboard/agents/" (a.agent_id) } { (a.name) } }
                    td.mono { (a.agent_number) }
                    td { span class={ "badge " (a.status) } { (a.status) } }
                    td { (a.created_at.get(..10).unwrap_or("")) }
                } } }
            } }
        }
        @if full {
            p.notice { "This account has " (MAX_AGENTS_PER_ACCOUNT) " agents, the most it may have." }
        } @else {
            form.card method="post" action="/dashboard/agents" {
                h2 { "New agent" }
                (page::csrf(session))
                label for="name" { "Name" }
                input id="name" name="name" type="text" maxlength="64" required placeholder="e.g. checkout-bot";
                button type="submit" { "Create agent and key pair" }
            }
        }
    };
    Ok(page::signed_in("Agents", session, Nav::Agents, body).into_response())
}

#[derive(Deserialize)]
pub struct NameForm {
    name: String,
}

/// The page that shows a new pair once.
fn new_pair(session: &Session, agent: &AgentRow, c: &Credentials) -> Response {
    let body = html! {
        p.notice.warn role="status" { "Copy the secret key now: it is shown only this once. Keep it where your agent reads its secrets." }
        div.card {
            (page::copyable("api-key", "API key", &c.api_key))
            (page::copyable("secret-key", "Secret key", &c.secret_key))
            (page::copyable("bearer", "Authorization header value", &format!("Bearer {}", c.bearer())))
        }
        p { a href={ "/dashboard/agents/" (agent.agent_id) } { "Done: back to " (agent.name) } }
    };
    let mut resp = page::signed_in(&format!("New key pair for {}", agent.name), session, Nav::Agents, body).into_response();
    resp.headers_mut().insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    resp
}

pub async fn create(State(s): State<Shared>, posted: Posted<NameForm>) -> Result<Response, DashError> {
    let session = &posted.signed.session;
    let name = checked_name(&posted.form.name)?;
    let agent = match crate::ops::agents::create(&s.db, &s.keys, &s.config, Some(&session.account.id), name, now_ms()).await {
        Ok(a) => a,
        Err(CreateAgentError::Agent(AgentError::TooMany(_))) => return Err(DashError::Invalid("An account can have at most 10 agents.")),
        Err(CreateAgentError::Agent(AgentError::AccountDisabled(_))) => return Err(DashError::SignInNeeded),
        Err(e) => return Err(DashError::Internal(e.to_string())),
    };
    let pair = crate::auth::add_keys(&s.db, &s.pepper, &agent.id, now_ms()).await.map_err(|e| DashError::Internal(e.to_string()))?;
    let row = owned(&s, session, &agent.id).await?;
    match pair {
        Some(c) => Ok(new_pair(session, &row, &c)),
        None => Err(DashError::Internal("a new agent holds no keys".into())),
    }
}

pub async fn show(State(s): State<Shared>, signed: Signed, Path(id): Path<String>) -> Result<Response, DashError> {
    let session = &signed.session;
    let agent = owned(&s, session, &id).await?;
    let keys = repo::keys_of(&s.db, &agent.agent_id).await?;
    let hooks = crate::store::webhooks::endpoints_of(&s.db, "agent", &agent.agent_id).await?;
    let active = agent.status == "active";
    let base = format!("/dashboard/agents/{}", agent.agent_id);
    let body = html! {
        p { "Agent " span.mono { (agent.agent_number) } " · " span class={ "badge " (agent.status) } { (agent.status) }
            " · " a href={ "/dashboard/wallets#agent-" (agent.agent_id) } { "Wallets" } }
        section {
            h2 { "Key pairs" }
            p.small { "Rotate by making a new pair, moving your agent to it, then revoking the old one." }
            @if keys.is_empty() { p { "No key pairs." } } @else {
                div.scroll tabindex="0" { table {
                    caption { "Key pairs of " (agent.name) }
                    thead { tr { th scope="col" { "API key" } th scope="col" { "Created" } th scope="col" { "Last used" } th scope="col" { "Status" } th scope="col" { span.sr { "Action" } } } }
                    tbody { @for k in &keys { tr {
                        td.mono { (prefix(&k.api_key)) }
                        td { (page::time(k.created_at)) }
                        td { (k.last_used_at.map(page::time).unwrap_or_else(|| "never".into())) }
                        td { @if k.revoked_at.is_some() { span.badge.disabled { "revoked" } } @else { span.badge.active { "live" } } }
                        td { @if k.revoked_at.is_none() {
                            form.inline method="post" action={ (base) "/keys/revoke" } {
                                (page::csrf(session))
                                input type="hidden" name="key" value=(key_ref(&k.api_key));
                                button.danger type="submit" aria-label={ "Revoke key " (prefix(&k.api_key)) } { "Revoke" }
                            }
                        } }
                    } } }
                } }
            }
            @if active {
                form method="post" action={ (base) "/keys" } {
                    (page::csrf(session))
                    button type="submit" { "New key pair" }
                }
            }
        }
        section {
            h2 { "Webhook endpoints" }
            p.small { "The agent adds them with its key (" code { "POST /v2/webhook_endpoints" } "); an endpoint whose deliveries failed for 3 days is disabled, and shows why here." }
            @if hooks.is_empty() { p { "None." } } @else {
                div.scroll tabindex="0" { table id="webhooks" {
                    caption { "Webhook endpoints of " (agent.name) }
                    thead { tr { th scope="col" { "URL" } th scope="col" { "Events" } th scope="col" { "Status" } th scope="col" { "Created" } } }
                    tbody { @for h in &hooks { tr {
                        td.mono { (h.url) }
                        td.small { (page::event_types(&h.events)) }
                        td { @if h.status == "enabled" { span.badge.active { "enabled" } } @else {
                            span.badge.disabled { (h.status) } @if let Some(why) = &h.disabled_reason { br; span.small { (why) } } } }
                        td { (page::time(h.created_at)) }
                    } } }
                } }
            }
        }
        @if active {
            section.grid2 {
                form.card method="post" action={ (base) "/rename" } {
                    h2 { "Rename" }
                    (page::csrf(session))
                    label for="name" { "Name" }
                    input id="name" name="name" type="text" maxlength="64" required value=(agent.name);
                    button type="submit" { "Save name" }
                }
                form.card method="post" action={ (base) "/disable" } {
                    h2 { "Disable" }
                    (page::csrf(session))
                    p.small { "Its keys stop working at once. Its wallets and payments stay." }
                    button.danger type="submit" { "Disable agent" }
                }
            }
        }
    };
    Ok(page::signed_in(&agent.name, session, Nav::Agents, body).into_response())
}

pub async fn rename(State(s): State<Shared>, Path(id): Path<String>, posted: Posted<NameForm>) -> Result<Redirect, DashError> {
    let session = &posted.signed.session;
    let name = checked_name(&posted.form.name)?;
    if !repo::rename_agent(&s.db, &session.account.id, &id, name).await? {
        return Err(DashError::NotFound);
    }
    Ok(Redirect::to(&format!("/dashboard/agents/{id}")))
}

pub async fn disable(State(s): State<Shared>, Path(id): Path<String>, posted: Posted<Nothing>) -> Result<Redirect, DashError> {
    let agent = owned(&s, &posted.signed.session, &id).await?;
    repo::disable_agent(&s.db, &agent.agent_id).await?;
    Ok(Redirect::to(&format!("/dashboard/agents/{}", agent.agent_id)))
}

pub async fn add_key(State(s): State<Shared>, Path(id): Path<String>, posted: Posted<Nothing>) -> Result<Response, DashError> {
    let session = &posted.signed.session;
    let agent = owned(&s, session, &id).await?;
    if agent.status != "active" {
        return Err(DashError::Invalid("A disabled agent gets no new keys."));
    }
    match crate::auth::add_keys(&s.db, &s.pepper, &agent.agent_id, now_ms()).await {
        Ok(Some(c)) => Ok(new_pair(session, &agent, &c)),
        Ok(None) => {
            Err(DashError::Invalid("An agent holds at most 5 live key pairs, and gets at most 20 a day: revoke one first, or wait."))
        }
        Err(AgentError::NoAgent(_)) => Err(DashError::Invalid("A disabled agent gets no new keys.")),
        Err(e) => Err(DashError::Internal(e.to_string())),
    }
}

#[derive(Deserialize)]
pub struct KeyForm {
    key: String,
}

pub async fn revoke_key(State(s): State<Shared>, Path(id): Path<String>, posted: Posted<KeyForm>) -> Result<Redirect, DashError> {
    let agent = owned(&s, &posted.signed.session, &id).await?;
    let keys = repo::keys_of(&s.db, &agent.agent_id).await?;
    let key = keys.iter().find(|k| key_ref(&k.api_key) == posted.form.key).ok_or(DashError::NotFound)?;
    repo::revoke_key(&s.db, &agent.agent_id, &key.api_key, now_ms()).await?;
    Ok(Redirect::to(&format!("/dashboard/agents/{}", agent.agent_id)))
}
