//! "Get paid": where an intent created for the account's email pays out,
//! one address per target chain.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::error::DashError;
use super::page::{self, Nav};
use super::session::{Posted, Signed};
use crate::ops::payout::{self as op, PayoutError};
use crate::state::Shared;

pub async fn page(State(s): State<Shared>, signed: Signed) -> Result<Response, DashError> {
    let session = &signed.session;
    let set = crate::store::dashboard::payouts(&s.db, &session.account.id).await?;
    let chains = op::chains(&s);
    let email = session.account.email.as_deref().unwrap_or("");
    let body = html! {
        p { "Anyone can pay " strong { (email) } " without knowing your address: an intent created for your email pays the address you set here for its target chain. Nobody else sees it." }
        div.scroll tabindex="0" { table {
            caption { "Your payout addresses" }
            thead { tr { th scope="col" { "Chain" } th scope="col" { "Address" } th scope="col" { span.sr { "Action" } } } }
            tbody {
                @if set.is_empty() { tr { td colspan="3" { "None yet: payments to your email cannot be made until you set one." } } }
                @for (chain, address) in &set { tr {
                    td { (chain) }
                    td.mono { (address) }
                    td { form.inline method="post" action="/dashboard/payout/remove" {
                        (page::csrf(session))
                        input type="hidden" name="chain" value=(chain);
                        button.danger type="submit" aria-label={ "Remove the address on " (chain) } { "Remove" }
                    } }
                } }
            }
        } }
        form.card method="post" action="/dashboard/payout" {
            h2 { "Set an address" }
            (page::csrf(session))
            label for="chain" { "Chain" }
            select id="chain" name="chain" required { @for c in &chains { option value=(c) { (c) } } }
            label for="address" { "Address" }
            input.mono id="address" name="address" type="text" required autocomplete="off" spellcheck="false";
            button type="submit" { "Save" }
        }
        p.small { a href="/dashboard/payments#received" { "Payments you received" } }
    };
    Ok(page::signed_in("Get paid", session, Nav::Payout, body).into_response())
}

#[derive(Deserialize)]
pub struct SetForm {
    chain: String,
    address: String,
}

pub async fn set(State(s): State<Shared>, posted: Posted<SetForm>) -> Result<Redirect, DashError> {
    let account = &posted.signed.session.account.id;
    match op::set(&s, account, posted.form.chain.trim(), &posted.form.address).await {
        Ok(_) => Ok(Redirect::to("/dashboard/payout")),
        Err(PayoutError::UnknownChain) => Err(DashError::Invalid("That chain does not receive payments here.")),
        Err(PayoutError::InvalidAddress) => Err(DashError::Invalid("That is not a valid address on this chain.")),
        Err(PayoutError::Unreceivable) => Err(DashError::Invalid("That address cannot receive payments.")),
        Err(PayoutError::Store(e)) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct RemoveForm {
    chain: String,
}

pub async fn remove(State(s): State<Shared>, posted: Posted<RemoveForm>) -> Result<Redirect, DashError> {
    if !crate::store::dashboard::remove_payout(&s.db, &posted.signed.session.account.id, &posted.form.chain).await? {
        return Err(DashError::NotFound);
    }
    Ok(Redirect::to("/dashboard/payout"))
}
