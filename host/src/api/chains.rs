//! `GET /api/chains`: payer chains and target chains this deployment exposes.

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use super::Shared;
use crate::config::Role;

#[derive(Debug, Serialize)]
pub struct ChainsResponse {
    pub chains: Vec<String>,
    pub target_chains: Vec<String>,
}

pub async fn list(State(s): State<Shared>) -> Json<ChainsResponse> {
    Json(ChainsResponse {
        chains: s.config.chains_with_role(Role::Payer),
        target_chains: s.config.chains_with_role(Role::Target),
    })
}
