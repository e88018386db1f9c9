//! `GET /v2/agents/balances`: the hosted wallets on the agent's owner account
//! and their balances on every exposed chain of their family.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;

use super::{ApiError, Shared};
use crate::ops::balances::Wallet;
use crate::store::agents::Agent;

#[derive(Debug, Serialize, ToSchema)]
pub struct Balances {
    pub wallets: Vec<WalletBalances>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WalletBalances {
    pub address: String,
    #[schema(example = "ethereum")]
    pub chain_type: &'static str,
    pub balances: Vec<Balance>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Balance {
    pub chain: String,
    pub asset: String,
    /// Base units, as a decimal integer string.
    #[schema(example = "2500000")]
    pub raw_value: String,
    pub raw_value_decimals: u8,
    /// The same amount in whole tokens, keyed by asset.
    #[schema(example = json!({"usdc": "2.5"}))]
    pub display_values: BTreeMap<String, String>,
    /// From the swap provider's token list, where it knows the token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "USDC")]
    pub symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_uri: Option<String>,
    /// USD per whole token, decimal string; absent when no price younger
    /// than `swap.price_max_age_seconds` is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "0.9998")]
    pub price_usd: Option<String>,
    /// The balance in USD, exact to the cent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "2.50")]
    pub value_usd: Option<String>,
}

/// The hosted wallets of the caller's account and their balances.
#[utoipa::path(get, path = "/v2/agents/balances", tag = "agents", security(("bearer" = [])),
    responses(
        (status = 200, description = "Every hosted wallet of the account", body = Balances),
        (status = 403, description = "The agent has no owner account", body = super::docs::ErrorBody),
        (status = 502, description = "A chain did not answer", body = super::docs::ErrorBody)))]
pub async fn balances(State(s): State<Shared>, Extension(agent): Extension<Agent>) -> Result<Json<Balances>, ApiError> {
    let wallets = crate::ops::balances::balances(&s, &agent).await?;
    Ok(Json(Balances { wallets: wallets.into_iter().map(wallet_view).collect() }))
}

fn wallet_view(w: Wallet) -> WalletBalances {
    let balances = w
        .balances
        .into_iter()
        .map(|p| {
            let b = p.balance;
            Balance {
                display_values: BTreeMap::from([(b.asset.clone(), crate::wallets::display(b.raw, b.decimals))]),
                raw_value: b.raw.to_string(),
                raw_value_decimals: b.decimals,
                chain: b.chain,
                asset: b.asset,
                symbol: p.symbol,
                logo_uri: p.logo_uri,
                price_usd: p.price_usd.map(|v| v.normalize().to_string()),
                value_usd: p.value_usd.map(|v| format!("{v:.2}")),
            }
        })
        .collect();
    let chain_type = w.family.facts().chain_type;
    WalletBalances { address: w.address, chain_type, balances }
}
