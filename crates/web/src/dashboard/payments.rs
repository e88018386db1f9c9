//! The account's payments: intents its agents made, intents paid to its
//! email, and swaps its wallets registered; newest first, by status and
//! chain.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;

use super::error::DashError;
use super::page::{self, Nav};
use super::session::Signed;
use crate::clock::now_ms;
use crate::config::Config;
use crate::intent::{Intent, Status};
use crate::state::Shared;
use crate::store::intents::Filter;

/// Rows per table.
const SHOWN: i64 = 100;

#[derive(Deserialize, Default)]
pub struct Params {
    status: Option<String>,
    chain: Option<String>,
}

fn link(url: Option<&str>, tx: &str) -> Markup {
    let short = if tx.len() > 14 { format!("{}…{}", &tx[..8], &tx[tx.len() - 4..]) } else { tx.to_string() };
    html! {
        @match url {
            Some(u) => a.mono href=(u) rel="noopener noreferrer" target="_blank" title=(tx) { (short) },
            None => span.mono title=(tx) { (short) },
        }
    }
}

fn intents_table(cfg: &Config, caption: &str, rows: &[Intent], id: &str, now: i64) -> Markup {
    html! {
        div.scroll tabindex="0" { table id=(id) {
            caption { (caption) }
            thead { tr {
                th scope="col" { "Created" } th scope="col" { "Status" } th scope="col" { "From" } th scope="col" { "To" }
                th.num scope="col" { "Sent" } th.num scope="col" { "Received" } th.num scope="col" { "Fee" }
                th scope="col" { "Transactions" }
            } }
            tbody {
                @if rows.is_empty() { tr { td colspan="8" { "Nothing yet." } } }
                @for i in rows {
                    @let status = i.effective_status(now).as_str();
                    tr data-intent=(i.id) {
                    td { (page::time(i.created_at)) br; span.mono.small title=(i.id) { (i.id.get(..10).unwrap_or(&i.id)) } }
                    td {
                        span class={ "badge s-" (status.to_lowercase()) } { (status) }
                        @if let Some(code) = i.error_code { br; span.mono.small { (code.code()) } }
                        @if let Some(m) = &i.error_message { br; span.small { (m) } }
                    }
                    td { (i.payer_chain) " " (i.payer_asset.to_uppercase()) }
                    td { (i.target_chain) " " (i.target_asset.to_uppercase())
                        br; span.mono.small { (i.recipient_email.clone().unwrap_or_else(|| i.merchant_recipient.clone())) } }
                    td.num.mono { (i.sending_amount) }
                    td.num.mono { (i.receiving_amount) }
                    td.num.mono { (i.estimated_fee) }
                    td {
                        @if let Some(tx) = &i.source_tx_hash { "source " (link(cfg.explorer_tx_url(&i.payer_chain, tx).as_deref(), tx)) }
                        @if let Some(tx) = i.target_tx_hash.as_ref().filter(|_| status == Status::TargetSettled.as_str()) {
                            br; "payout " (link(cfg.explorer_tx_url(&i.target_chain, tx).as_deref(), tx))
                        }
                    }
                } }
            }
        } }
    }
}

pub async fn page(State(s): State<Shared>, signed: Signed, Query(q): Query<Params>) -> Result<Response, DashError> {
    let session = &signed.session;
    let given = |o: &Option<String>| o.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
    let status = given(&q.status);
    if status.as_deref().is_some_and(|st| Status::parse(st).is_none()) {
        return Err(DashError::Invalid("There is no such status."));
    }
    let chain = given(&q.chain);
    if chain.as_deref().is_some_and(|c| !s.config.chains.contains_key(c)) {
        return Err(DashError::Invalid("There is no such chain."));
    }
    let filter = Filter { status: status.clone(), chain: chain.clone() };
    let account = &session.account;
    let now = now_ms();
    let sent = crate::store::intents::for_account(&s.db, &account.id, None, true, &filter, SHOWN).await?;
    let received = crate::store::intents::for_account(&s.db, &account.id, account.email.as_deref(), false, &filter, SHOWN).await?;
    let payers: Vec<String> = crate::store::agents::account_wallets(&s.db, &account.id).await?.into_iter().map(|(_, a)| a).collect();
    let swaps = crate::store::swaps::by_payers(&s.db, &payers, SHOWN).await?;
    let swaps: Vec<_> = swaps.into_iter().filter(|w| chain.as_deref().is_none_or(|c| w.from_chain == c || w.to_chain == c)).collect();
    let chains: Vec<&String> = s.config.chains.keys().collect();
    let body = html! {
        form.filters method="get" action="/dashboard/payments" {
            label for="status" { "Status" }
            select id="status" name="status" {
                option value="" { "Any" }
                @for st in Status::ALL { option value=(st.as_str()) selected[status.as_deref() == Some(st.as_str())] { (st.as_str()) } }
            }
            label for="chain" { "Chain" }
            select id="chain" name="chain" {
                option value="" { "Any" }
                @for c in &chains { option value=(c) selected[chain.as_deref() == Some(c.as_str())] { (c) } }
            }
            button type="submit" { "Filter" }
        }
        section { h2 { "Sent by your agents" } (intents_table(&s.config, "Intents your agents created", &sent, "sent", now)) }
        section { h2 { "Paid to you" } (intents_table(&s.config, &format!("Intents paid to {}", account.email.as_deref().unwrap_or("your email")), &received, "received", now)) }
        section {
            h2 { "Swaps" }
            div.scroll tabindex="0" { table id="swaps" {
                caption { "Swaps registered from your agents' wallets" }
                thead { tr { th scope="col" { "Created" } th scope="col" { "Status" } th scope="col" { "From" } th scope="col" { "To" } th.num scope="col" { "Sent" } th.num scope="col" { "Received" } th scope="col" { "Transactions" } } }
                tbody {
                    @if swaps.is_empty() { tr { td colspan="7" { "Nothing yet." } } }
                    @for w in &swaps { tr {
                        td { (page::time(w.created_at)) }
                        td { span class={ "badge s-" (w.status.to_lowercase()) } { (w.status) } @if let Some(c) = &w.error_code { br; span.mono.small { (c) } } }
                        td { (w.from_chain) }
                        td { (w.to_chain) }
                        td.num.mono { (w.sending_token_amount) }
                        td.num.mono { (w.received_amount.clone().unwrap_or_else(|| "—".into())) }
                        td {
                            "source " (link(s.config.explorer_tx_url(&w.from_chain, &w.source_tx_hash).as_deref(), &w.source_tx_hash))
                            @if let Some(d) = &w.dest_tx_hash { br; "destination " (link(s.config.explorer_tx_url(&w.to_chain, d).as_deref(), d)) }
                        }
                    } }
                }
            } }
        }
    };
    Ok(page::signed_in("Payments", session, Nav::Payments, body).into_response())
}
