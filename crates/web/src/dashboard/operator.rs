//! The operator's pages (accounts the CLI marks `account operator`):
//! accounts, the service wallets' floats against their floors, the books'
//! alarms and unclaimed money, what is withheld and why, and the last
//! day's failures by code.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use maud::html;

use super::error::DashError;
use super::page::{self, Nav};
use super::session::Signed;
use crate::clock::now_ms;
use crate::state::Shared;

/// How far back "recent failures" looks.
const RECENT_MS: i64 = 24 * 3_600_000;

struct Float {
    wallet: String,
    chain: String,
    asset: String,
    balance: Option<String>,
    floor: Option<String>,
    low: bool,
}

async fn floats(s: &Shared) -> Result<Vec<Float>, DashError> {
    let mut out = Vec::new();
    let wallets = s.keys.list().await?;
    for (name, address) in wallets.into_iter().filter(|(n, _)| crate::family::keys::is_service_wallet(n)) {
        let family = crate::family::keys::family_of(&name);
        for chain in crate::wallets::chains_of(&s.config, family) {
            match crate::wallets::on_chain(&s.drivers, &chain, &address).await {
                Ok(balances) => {
                    for b in balances {
                        let shown = crate::wallets::display(b.raw, b.decimals);
                        let floor = crate::watch::floor(&s.config, &name, &chain, &b.asset);
                        let low = floor.is_some_and(|f| {
                            let (have, min) = (crate::decimal::parse(&shown), crate::decimal::parse(&f.amount));
                            matches!((have, min), (Ok(h), Ok(m)) if h < m)
                        });
                        out.push(Float {
                            wallet: name.clone(),
                            chain: chain.clone(),
                            asset: b.asset,
                            balance: Some(shown),
                            floor: floor.map(|f| f.amount.clone()),
                            low,
                        });
                    }
                }
                Err(e) => {
                    tracing::warn!(wallet = %name, chain = %chain, error = %e, "operator page: chain unavailable");
                    out.push(Float { wallet: name.clone(), chain, asset: "—".into(), balance: None, floor: None, low: false });
                }
            }
        }
    }
    Ok(out)
}

pub async fn page(State(s): State<Shared>, signed: Signed) -> Result<Response, DashError> {
    let session = &signed.session;
    if !session.account.operator {
        return Err(DashError::NotFound);
    }
    let accounts = crate::store::agents::accounts(&s.db, None).await?;
    let floats = floats(&s).await?;
    let mut withheld: Vec<(String, String)> = Vec::new();
    for (id, chain) in &s.config.chains {
        if !s.config.chain_exposed(chain) {
            withheld.push((id.clone(), "disabled in chains.toml, or its flag is off".into()));
        }
    }
    for chain in s.watch.withheld() {
        withheld.push((chain, "its node does not answer with the configured chain id".into()));
    }
    for (asset, why) in s.watch.withheld_assets() {
        withheld.push((asset, format!("the chain disagrees with chains.toml: {why}")));
    }
    let failures = crate::store::intents::failures_by_code(&s.db, now_ms() - RECENT_MS).await?;
    let books = crate::store::books::alarms(&s.db, now_ms() - crate::settle::books::GRACE_MS).await?;
    let unmatched = crate::store::books::unmatched(&s.db, 20).await?;
    let body = html! {
        section {
            h2 { "Service wallets" }
            div.scroll tabindex="0" { table id="floats" {
                caption { "Floats against their floors" }
                thead { tr { th scope="col" { "Wallet" } th scope="col" { "Chain" } th scope="col" { "Asset" } th.num scope="col" { "Balance" } th.num scope="col" { "Floor" } th scope="col" { "State" } } }
                tbody { @for f in &floats { tr {
                    td.mono { (f.wallet) } td { (f.chain) } td { (f.asset) }
                    td.num.mono { (f.balance.clone().unwrap_or_else(|| "unavailable".into())) }
                    td.num.mono { (f.floor.clone().unwrap_or_else(|| "—".into())) }
                    td { @if f.low { span.badge.disabled { "below floor" } } @else if f.balance.is_none() { span.badge { "unknown" } } @else if f.floor.is_some() { span.badge.active { "ok" } } @else { span.small { "no floor" } } }
                } } }
            } }
        }
        section {
            h2 { "Books" }
            p id="books-alarms" {
                @if books.unexplained_outgoing > 0 || books.unseen_credits > 0 || books.stalled_wallets > 0 { span.badge.disabled { "alarm" } " " } @else { span.badge.active { "balanced" } " " }
                (books.unexplained_outgoing) " movements out that no payment claims; "
                (books.unseen_credits) " credits the chain does not show; "
                (books.stalled_wallets) " wallets whose balance the movements read do not explain; "
                (books.unmatched_incoming) " movements in that no payment claims (stablerail books unmatched, books check)."
            }
            @if !unmatched.is_empty() {
                div.scroll tabindex="0" { table id="unmatched" {
                    caption { "Money no payment claims, oldest first" }
                    thead { tr { th scope="col" { "Chain" } th scope="col" { "Transaction" } th scope="col" { "From" } th scope="col" { "To" } th.num scope="col" { "Amount (base units)" } } }
                    tbody { @for m in &unmatched { tr {
                        td { (m.chain) } td.mono.small { (m.tx_id) } td.mono.small { (m.from) } td.mono.small { (m.to) } td.num.mono { (m.amount) }
                    } } }
                } }
            }
        }
        section {
            h2 { "Withheld" }
            @if withheld.is_empty() { p { "Every configured chain and asset is served." } } @else {
                div.scroll tabindex="0" { table id="withheld" {
                    caption { "Chains and assets not served" }
                    thead { tr { th scope="col" { "Chain or asset" } th scope="col" { "Why" } } }
                    tbody { @for (what, why) in &withheld { tr { td { (what) } td { (why) } } } }
                } }
            }
        }
        section {
            h2 { "Failures, last 24 hours" }
            @if failures.is_empty() { p { "None." } } @else {
                div.scroll tabindex="0" { table id="failures" {
                    caption { "Intents with a failure code, by code" }
                    thead { tr { th scope="col" { "Code" } th.num scope="col" { "Intents" } th scope="col" { "Meaning" } } }
                    tbody { @for (code, n) in &failures { tr {
                        td.mono { (code) } td.num { (n) }
                        td { (crate::failure::Failure::parse(code).map(|f| f.sentence()).unwrap_or("")) }
                    } } }
                } }
            }
        }
        section {
            h2 { "Accounts" }
            div.scroll tabindex="0" { table id="accounts" {
                caption { "Every account (" (accounts.len()) ")" }
                thead { tr { th scope="col" { "Account" } th scope="col" { "Email" } th scope="col" { "Status" } th.num scope="col" { "Agents" } th scope="col" { "Created" } } }
                tbody { @for a in &accounts { tr {
                    td.mono.small { (a.account_id) } td { (a.email.clone().unwrap_or_else(|| a.name.clone())) @if a.operator { " " span.badge { "operator" } } }
                    td { span class={ "badge " (a.status) } { (a.status) } } td.num { (a.agent_count) } td { (a.created_at.get(..10).unwrap_or("")) }
                } } }
            } }
        }
    };
    Ok(page::signed_in("Operator", session, Nav::Operator, body).into_response())
}
