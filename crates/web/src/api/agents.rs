//! `GET /v2/me`: the authenticated agent, straight from the request context.

use axum::Extension;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::store::agents::Agent;

#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    pub agent_id: String,
    #[schema(example = "1")]
    pub agent_number: String,
    pub name: String,
    #[schema(example = "active")]
    pub status: String,
    /// The agent's hosted EVM wallet; absent while it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wallet_address: Option<String>,
    /// The agent's hosted Solana wallet (base58); absent while it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solana_wallet_address: Option<String>,
    /// The agent's hosted TRON wallet (base58check `T…`); absent while it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tron_wallet_address: Option<String>,
}

/// The calling agent.
#[utoipa::path(get, path = "/v2/me", tag = "agents", security(("bearer" = [])),
    responses((status = 200, description = "The agent behind the Bearer token", body = Me)))]
pub async fn me(Extension(agent): Extension<Agent>) -> Json<Me> {
    Json(Me {
        agent_id: agent.id,
        agent_number: agent.agent_number,
        name: agent.name,
        status: agent.status,
        wallet_address: agent.wallet_address,
        solana_wallet_address: agent.solana_wallet_address,
        tron_wallet_address: agent.tron_wallet_address,
    })
}
