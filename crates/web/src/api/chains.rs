//! `GET /api/chains`: payer chains and target chains this deployment exposes.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::Shared;
use crate::config::{Availability, Role};

#[derive(Debug, Serialize, ToSchema)]
pub struct ChainsResponse {
    /// Chains a payer can pay on.
    #[schema(example = json!(["base", "arbitrum"]))]
    pub chains: Vec<String>,
    /// Chains a merchant can be paid on.
    #[schema(example = json!(["arbitrum"]))]
    pub target_chains: Vec<String>,
}

/// The chains this deployment exposes, by role.
#[utoipa::path(get, path = "/api/chains", tag = "intents",
    responses((status = 200, description = "Payer and target chains", body = ChainsResponse)))]
pub async fn list(State(s): State<Shared>) -> Json<ChainsResponse> {
    // A chain whose node has not answered right yet is not listed, nor one
    // with nothing to serve: every asset unwired, gated off or withheld.
    let serves = |chain: &String| {
        s.watch.exposed(chain)
            && s.config.chains[chain]
                .assets
                .iter()
                .any(|(key, a)| s.config.availability(a) == Availability::Available && !s.watch.asset_withheld(chain, key))
    };
    let exposed = |role| s.config.chains_with_role(role).into_iter().filter(serves).collect();
    Json(ChainsResponse { chains: exposed(Role::Payer), target_chains: exposed(Role::Target) })
}
