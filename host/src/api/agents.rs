//! `GET /v2/me`: the authenticated agent, straight from the request context.

use axum::Extension;
use axum::Json;
use serde_json::{json, Value};

use crate::store::agents::Agent;

/// Wallet fields are omitted while the agent has no hosted wallet of that family.
pub async fn me(Extension(agent): Extension<Agent>) -> Json<Value> {
    let mut me = json!({
        "agent_id": agent.id,
        "agent_number": agent.agent_number,
        "name": agent.name,
        "status": agent.status,
    });
    if let Some(w) = agent.wallet_address {
        me["wallet_address"] = json!(w);
    }
    Json(me)
}
