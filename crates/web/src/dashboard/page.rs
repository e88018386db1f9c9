//! The frame every page shares: head, navigation, sign-out, and the small
//! pieces pages repeat (times, amounts, forms' CSRF field).

use axum::http::StatusCode;
use axum::response::Html;
use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::store::dashboard::Session;

/// The navigation's entries.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Agents,
    Wallets,
    Payments,
    Payout,
    Webhooks,
    Operator,
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · stablerail" }
            link rel="stylesheet" href="/dashboard/static/style.css";
            script src="/dashboard/static/copy.js" defer {}
        }
    }
}

/// The hidden field every form of a session carries.
pub fn csrf(session: &Session) -> Markup {
    html! { input type="hidden" name="csrf" value=(session.csrf); }
}

/// A page of a signed-in account.
pub fn signed_in(title: &str, session: &Session, active: Nav, body: Markup) -> Html<String> {
    let item = |nav: Nav, href: &str, label: &str| {
        html! { a href=(href) aria-current=[(nav == active).then_some("page")] { (label) } }
    };
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                (head(title))
                body {
                    header.top {
                        a.brand href="/dashboard/agents" { "stablerail" }
                        nav aria-label="Main" {
                            (item(Nav::Agents, "/dashboard/agents", "Agents"))
                            (item(Nav::Wallets, "/dashboard/wallets", "Wallets"))
                            (item(Nav::Payments, "/dashboard/payments", "Payments"))
                            (item(Nav::Payout, "/dashboard/payout", "Get paid"))
                            (item(Nav::Webhooks, "/dashboard/webhooks", "Webhooks"))
                            @if session.account.operator { (item(Nav::Operator, "/dashboard/operator", "Operator")) }
                        }
                        div.who {
                            span.email { (session.account.email.as_deref().unwrap_or("")) }
                            form method="post" action="/dashboard/sign-out" {
                                (csrf(session))
                                button.link type="submit" { "Sign out" }
                            }
                        }
                    }
                    main id="main" {
                        h1 { (title) }
                        (body)
                    }
                }
            }
        }
        .into_string(),
    )
}

/// A page before sign-in.
pub fn public(title: &str, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                (head(title))
                body.narrow {
                    header.top { a.brand href="/dashboard" { "stablerail" } }
                    main id="main" { h1 { (title) } (body) }
                }
            }
        }
        .into_string(),
    )
}

pub fn error(status: StatusCode, sentence: &str) -> Html<String> {
    let title = status.canonical_reason().unwrap_or("Error");
    public(
        title,
        html! {
            p.notice.bad role="alert" { (sentence) }
            p { a href="/dashboard" { "Back to the dashboard" } }
        },
    )
}

/// Milliseconds since the epoch as `2026-11-27 20:31 UTC`.
pub fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string()).unwrap_or_default()
}

/// A value with a button that copies it (the button needs JavaScript; the
/// value is selectable text without it).
pub fn copyable(id: &str, label: &str, value: &str) -> Markup {
    html! {
        div.copy {
            label for=(id) { (label) }
            div.row {
                input.mono id=(id) type="text" readonly value=(value);
                button type="button" data-copy=(id) aria-label={ "Copy " (label) } { "Copy" }
            }
        }
    }
}

/// A trusted SVG made by this binary.
pub fn svg(svg: String) -> Markup {
    PreEscaped(svg)
}

/// An endpoint's event types as people read them.
pub fn event_types(events: &[String]) -> String {
    if events.iter().any(|e| e == "*") {
        "all events".into()
    } else {
        events.join(", ")
    }
}
