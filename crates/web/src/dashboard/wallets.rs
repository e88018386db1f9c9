//! Each agent's hosted wallets: addresses, balances (the rows of
//! `/v2/agents/balances`), a QR code to fund each, and what each needs.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};

use super::error::DashError;
use super::page::{self, Nav};
use super::session::Signed;
use crate::config::Family;
use crate::ops::balances::Priced;
use crate::state::Shared;

/// What a wallet of a family must hold, in words.
fn needs(family: Family) -> Markup {
    match family {
        Family::Evm => html! {
            p { "Send it the stablecoins it pays with, on the chains it pays from. Paying USDC costs it no gas: it only signs, and the service sends the transaction. "
                "Tokens paid through Permit2 (USDT and others) need a one-time approval that this wallet sends itself, and swaps are sent by it too: for those, keep a little of each chain's native coin (ETH, POL, BNB…) here." }
        },
        Family::Solana => html! {
            p { "Send it the SPL stablecoins it pays with. Paying costs it no SOL: the service pays the network fee. Swaps are sent by this wallet and need a little SOL." }
        },
        Family::Tron => html! {
            p { "Send it USDT (TRC-20) and some TRX. Before its first payment it approves the x402 Permit2 proxy for USDT once, a transaction that burns TRX for energy; after that, paying costs it nothing." }
        },
    }
}

fn balances_table(label: &str, rows: &[Priced]) -> Markup {
    html! {
        div.scroll tabindex="0" { table {
            caption.sr { "Balances of " (label) }
            thead { tr { th scope="col" { "Chain" } th scope="col" { "Asset" } th.num scope="col" { "Balance" } th.num scope="col" { "USD" } } }
            tbody { @for p in rows { tr {
                td { (p.balance.chain) }
                td { (p.balance.asset.to_uppercase()) }
                td.num.mono { (crate::wallets::display(p.balance.raw, p.balance.decimals)) }
                td.num { (p.value_usd.map(|v| format!("${v}")).unwrap_or_else(|| "—".into())) }
            } } }
        } }
    }
}

pub async fn page(State(s): State<Shared>, signed: Signed) -> Result<Response, DashError> {
    let session = &signed.session;
    let agents = crate::store::agents::agents(&s.db, Some(&session.account.id), None).await?;
    let wallets = crate::store::agents::account_wallets(&s.db, &session.account.id).await?;
    let mut sections = Vec::new();
    for agent in &agents {
        let prefix = format!("agent:{}:", agent.agent_id);
        let mut cards = Vec::new();
        for (name, address) in wallets.iter().filter(|(n, _)| n.starts_with(&prefix)) {
            let family = crate::family::keys::family_of(name);
            let label = format!("{}'s {} wallet", agent.name, family.facts().name);
            let balances = crate::ops::balances::of_wallet(&s, family, address).await;
            if let Err(e) = &balances {
                tracing::warn!(error = %e, "dashboard: reading a wallet's balances failed");
            }
            cards.push(html! {
                article.wallet {
                    h3 { (family.facts().name.to_uppercase()) }
                    div.walletrow {
                        div.qr { (page::svg(super::qr::svg(address, &format!("QR code of {label}")))) }
                        div {
                            (page::copyable(&format!("addr-{}-{}", agent.agent_id, family.facts().name), "Address", address))
                            (needs(family))
                        }
                    }
                    @match &balances {
                        Ok(rows) => (balances_table(&label, rows)),
                        Err(_) => p.notice.bad { "Balances could not be read right now." },
                    }
                }
            });
        }
        sections.push(html! {
            section id={ "agent-" (agent.agent_id) } {
                h2 { (agent.name) " " span class={ "badge " (agent.status) } { (agent.status) } }
                @if cards.is_empty() { p { "No hosted wallets yet." } }
                @for c in cards { (c) }
            }
        });
    }
    let body = html! {
        @if agents.is_empty() { p.notice { "Create an agent first: each agent gets its own wallets." } }
        @for s in sections { (s) }
    };
    Ok(page::signed_in("Wallets", session, Nav::Wallets, body).into_response())
}
