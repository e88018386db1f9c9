//! `GET /v2/agents/balances`: the hosted wallets on the agent's owner account
//! and their balances on every exposed chain of their family.

use std::collections::BTreeMap;

use crate::config::Family;
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
        .iter()
        .map(|b| Balance {
            chain: b.chain.clone(),
            asset: b.asset.clone(),
            raw_value: b.raw.to_string(),
            raw_value_decimals: b.decimals,
            display_values: BTreeMap::from([(b.asset.clone(), crate::wallets::display(b.raw, b.decimals))]),
        })
        .collect();
    let chain_type = match w.family {
        Family::Evm => "ethereum",
        Family::Solana => "solana",
        Family::Tron => "tron",
    };
    WalletBalances { address: w.address, chain_type, balances }
}
