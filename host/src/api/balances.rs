//! `GET /v2/agents/balances`: the hosted wallets on the agent's owner account
//! and their balances on every exposed chain of their family.

use alloy_primitives::Address;
use axum::extract::State;
use axum::{Extension, Json};
use serde_json::{json, Value};
use sqlx::Row;

use super::{ApiError, Shared};
use crate::store::agents::Agent;

const UPSTREAM: &str = "failed to retrieve wallet balances";

pub async fn balances(State(s): State<Shared>, Extension(agent): Extension<Agent>) -> Result<Json<Value>, ApiError> {
    let account = agent.account_id.clone().ok_or_else(|| ApiError::Forbidden("agent owner not set".into()))?;
    let rows = sqlx::query(
        "SELECT w.address FROM agents a JOIN wallet_keys w ON w.name = 'agent:' || a.id || ':evm' \
         WHERE a.account_id = $1 ORDER BY a.created_at, a.id",
    )
    .bind(&account)
    .fetch_all(&s.db.pool)
    .await?;
    let cfg = &s.config;
    let mut wallets = Vec::new();
    for r in rows {
        let address: String = r.try_get("address")?;
        let owner: Address = address.parse().map_err(|_| ApiError::Internal("stored wallet address".into()))?;
        let balances: Vec<Value> = crate::wallets::evm_balances(cfg, &s.registry, owner)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "wallet balances");
                ApiError::BadGateway(UPSTREAM.into())
            })?
            .iter()
            .map(|b| row(&b.chain, &b.asset, b.raw, b.decimals))
            .collect();
        wallets.push(json!({ "address": address, "chain_type": "ethereum", "balances": balances }));
    }
    Ok(Json(json!({ "wallets": wallets })))
}

fn row(chain: &str, asset: &str, raw: alloy_primitives::U256, decimals: u8) -> Value {
    json!({
        "chain": chain,
        "asset": asset,
        "raw_value": raw.to_string(),
        "raw_value_decimals": decimals,
        "display_values": { asset: crate::wallets::display(raw, decimals) },
    })
}

