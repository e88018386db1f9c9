//! "Webhooks": the account's own endpoints, which receive the events of
//! all its agents (their intents and the swaps their wallets sent). The
//! same operations as an agent's `/v2/webhook_endpoints`.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::error::DashError;
use super::page::{self, Nav};
use super::session::{Nothing, Posted, Signed};
use crate::ops::webhooks::{self as op, Owner, WebhookError};
use crate::state::Shared;
use crate::store::dashboard::Session;
use crate::webhooks::event::TYPES;

fn owner(session: &Session) -> Owner {
    Owner::account(&session.account.id)
}

fn refused(e: WebhookError) -> DashError {
    match e {
        WebhookError::Url(_) => DashError::Invalid("That URL cannot receive webhooks: use https, and a public address."),
        WebhookError::UnknownEvent => DashError::Invalid("That names an event type this service does not send."),
        WebhookError::TooMany => DashError::Invalid("An account has at most 10 webhook endpoints: remove one first."),
        WebhookError::NotFound => DashError::NotFound,
        WebhookError::Store(e) => e.into(),
    }
}

pub async fn list(State(s): State<Shared>, signed: Signed) -> Result<Response, DashError> {
    let session = &signed.session;
    let hooks = op::list((&*s).into(), &owner(session)).await.map_err(refused)?;
    let body = html! {
        p { "Each endpoint receives a signed POST (Standard Webhooks) when an intent of any of your agents changes status, and when a swap sent from one of their wallets ends. "
            a href="https://www.standardwebhooks.com/" { "How to verify one" } "." }
        div.scroll tabindex="0" { table id="endpoints" {
            caption { "Your webhook endpoints" }
            thead { tr { th scope="col" { "URL" } th scope="col" { "Events" } th scope="col" { "Status" } th scope="col" { "Created" } th scope="col" { span.sr { "Actions" } } } }
            tbody {
                @if hooks.is_empty() { tr { td colspan="5" { "None yet." } } }
                @for h in &hooks { tr {
                    td.mono { a href={ "/dashboard/webhooks/" (h.id) } { (h.url) } }
                    td.small { (page::event_types(&h.events)) }
                    td { @if h.status == "enabled" { span.badge.active { "enabled" } } @else {
                        span.badge.disabled { (h.status) } @if let Some(why) = &h.disabled_reason { br; span.small { (why) } } } }
                    td { (page::time(h.created_at)) }
                    td { form.inline method="post" action={ "/dashboard/webhooks/" (h.id) "/remove" } {
                        (page::csrf(session))
                        button.danger type="submit" aria-label={ "Remove " (h.url) } { "Remove" }
                    } }
                } }
            }
        } }
        form.card method="post" action="/dashboard/webhooks" {
            h2 { "Add an endpoint" }
            (page::csrf(session))
            label for="url" { "URL" }
            input.mono id="url" name="url" type="url" required autocomplete="off" spellcheck="false" placeholder="https://";
            label for="events" { "Event types, comma-separated (empty: all)" }
            input.mono id="events" name="events" type="text" autocomplete="off" spellcheck="false";
            p.small { "Types: " (TYPES.join(", ")) }
            button type="submit" { "Add endpoint" }
        }
    };
    Ok(page::signed_in("Webhooks", session, Nav::Webhooks, body).into_response())
}

#[derive(Deserialize)]
pub struct AddForm {
    url: String,
    #[serde(default)]
    events: String,
}

pub async fn add(State(s): State<Shared>, posted: Posted<AddForm>) -> Result<Response, DashError> {
    let session = &posted.signed.session;
    let events: Vec<String> = posted.form.events.split(',').map(str::trim).filter(|e| !e.is_empty()).map(str::to_string).collect();
    let made = op::create((&*s).into(), &owner(session), posted.form.url.trim(), Some(events)).await.map_err(refused)?;
    Ok(secret_page(session, &made.endpoint.id, &made.endpoint.url, &made.secret))
}

/// The page that shows a signing secret, once.
fn secret_page(session: &Session, id: &str, url: &str, secret: &str) -> Response {
    let body = html! {
        p.notice.warn role="status" { "Copy the signing secret now: it is shown only this once." }
        div.card {
            p { "Endpoint " span.mono { (url) } }
            (page::copyable("webhook-secret", "Signing secret", secret))
        }
        p { a href={ "/dashboard/webhooks/" (id) } { "Done: see its deliveries" } }
    };
    let mut resp = page::signed_in("Signing secret", session, Nav::Webhooks, body).into_response();
    resp.headers_mut().insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    resp
}

pub async fn show(State(s): State<Shared>, signed: Signed, Path(id): Path<String>) -> Result<Response, DashError> {
    let session = &signed.session;
    let hook =
        op::list((&*s).into(), &owner(session)).await.map_err(refused)?.into_iter().find(|h| h.id == id).ok_or(DashError::NotFound)?;
    let deliveries = op::deliveries((&*s).into(), &owner(session), &id).await.map_err(refused)?;
    let base = format!("/dashboard/webhooks/{}", hook.id);
    let body = html! {
        p { span.mono { (hook.url) } " · " (page::event_types(&hook.events)) " · "
            @if hook.status == "enabled" { span.badge.active { "enabled" } } @else { span.badge.disabled { (hook.status) } } }
        @if let Some(why) = &hook.disabled_reason { p.notice.warn { "Disabled: " (why) } }
        div.scroll tabindex="0" { table id="deliveries" {
            caption { "Latest deliveries" }
            thead { tr { th scope="col" { "Event" } th scope="col" { "Status" } th scope="col" { "Attempts" } th scope="col" { "Last answer" } th scope="col" { "Made" } th scope="col" { span.sr { "Action" } } } }
            tbody {
                @if deliveries.is_empty() { tr { td colspan="6" { "None yet." } } }
                @for d in &deliveries { tr {
                    td.mono { (d.event_id) }
                    td { (d.status) }
                    td { (d.attempts) }
                    td { @if let Some(c) = d.last_code { (c) } @else if let Some(e) = &d.last_error { (e) } @else { "—" } }
                    td { (page::time(d.created_at)) }
                    td { @if d.status != "pending" {
                        form.inline method="post" action={ (base) "/redeliver" } {
                            (page::csrf(session))
                            input type="hidden" name="event" value=(d.event_id);
                            button type="submit" aria-label={ "Send " (d.event_id) " again" } { "Send again" }
                        }
                    } }
                } }
            }
        } }
        form.card method="post" action={ (base) "/rotate" } {
            h2 { "Rotate the signing secret" }
            (page::csrf(session))
            p.small { "The current secret keeps signing for 24 hours beside the new one, so receivers can switch without missing a delivery." }
            button type="submit" { "Rotate" }
        }
        p { a href="/dashboard/webhooks" { "All endpoints" } }
    };
    Ok(page::signed_in("Webhook endpoint", session, Nav::Webhooks, body).into_response())
}

pub async fn remove(State(s): State<Shared>, Path(id): Path<String>, posted: Posted<Nothing>) -> Result<Redirect, DashError> {
    op::remove((&*s).into(), &owner(&posted.signed.session), &id).await.map_err(refused)?;
    Ok(Redirect::to("/dashboard/webhooks"))
}

pub async fn rotate(State(s): State<Shared>, Path(id): Path<String>, posted: Posted<Nothing>) -> Result<Response, DashError> {
    let session = &posted.signed.session;
    let hook =
        op::list((&*s).into(), &owner(session)).await.map_err(refused)?.into_iter().find(|h| h.id == id).ok_or(DashError::NotFound)?;
    let (secret, _) = op::rotate((&*s).into(), &owner(session), &id).await.map_err(refused)?;
    Ok(secret_page(session, &hook.id, &hook.url, &secret))
}

#[derive(Deserialize)]
pub struct RedeliverForm {
    event: String,
}

pub async fn redeliver(State(s): State<Shared>, Path(id): Path<String>, posted: Posted<RedeliverForm>) -> Result<Redirect, DashError> {
    let owner = owner(&posted.signed.session);
    // Only this endpoint's delivery of the event, and only if it is the account's.
    op::deliveries((&*s).into(), &owner, &id).await.map_err(refused)?;
    op::redeliver_to((&*s).into(), &owner, &id, &posted.form.event).await.map_err(refused)?;
    Ok(Redirect::to(&format!("/dashboard/webhooks/{id}")))
}
