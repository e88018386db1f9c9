//! `POST /api/tron/permit2/approve/prepare` and `…/submit`: the TRON
//! payer's one-time Permit2 approval. Routed only while TRON is wired and
//! enabled (404 otherwise, as the spec says).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{ApiError, Shared};
use crate::ops::tron_approve::{self as approve, Wired};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PrepareBody {
    /// The payer's TRON address (base58check, `T…`).
    pub address: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PrepareResponse {
    pub needed: bool,
    /// `approve` (allowance 0 → maximum) or `reset` (a partial allowance → 0; prepare again after).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<&'static str>,
    /// sha256 of raw_data, hex: what the payer signs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_data_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub raw_data: Option<Value>,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration: Option<i64>,
    pub usdt_contract: String,
    pub permit2_contract: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitBody {
    pub address: String,
    pub raw_data_hex: String,
    #[schema(value_type = Object)]
    pub raw_data: Value,
    /// Hex, 64 bytes r‖s or 65 bytes r‖s‖v.
    pub signature: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SubmitResponse {
    pub tx_id: String,
}

fn wired(s: &Shared) -> Result<Wired, ApiError> {
    Wired::find(&s.config, &s.registry, &s.chains).ok_or_else(|| ApiError::NotFound("TRON is not enabled on this deployment".into()))
}

/// Whether the helpers are routed on this deployment.
pub fn enabled(s: &Shared) -> bool {
    Wired::find(&s.config, &s.registry, &s.chains).is_some()
}

/// The approve (or reset) a TRON payer must sign before paying through Permit2.
#[utoipa::path(post, path = "/api/tron/permit2/approve/prepare", tag = "tron", request_body = PrepareBody,
    responses((status = 200, description = "Whether an approval is needed, and the transaction to sign", body = PrepareResponse),
              (status = 400, description = "Not a TRON address"), (status = 404, description = "TRON is not enabled")))]
pub async fn prepare(
    State(s): State<Shared>,
    body: Result<Json<PrepareBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<PrepareResponse>, ApiError> {
    let Json(body) = body?;
    let w = wired(&s)?;
    let (usdt_contract, permit2_contract) = (tron_wire::address::show(&w.usdt), tron_wire::address::show(&w.permit2));
    let answer = match w.prepare(&body.address).await? {
        None => PrepareResponse {
            needed: false,
            step: None,
            tx_id: None,
            raw_data_hex: None,
            raw_data: None,
            expiration: None,
            usdt_contract,
            permit2_contract,
        },
        Some(p) => PrepareResponse {
            needed: true,
            step: Some(p.step.as_str()),
            tx_id: Some(p.tx_id()),
            raw_data_hex: Some(alloy_primitives::hex::encode(&p.raw_data)),
            raw_data: Some(p.raw_data_json()),
            expiration: Some(p.expiration),
            usdt_contract,
            permit2_contract,
        },
    };
    Ok(Json(answer))
}

/// Broadcast the payer's signed approve, if it is exactly what prepare gives.
#[utoipa::path(post, path = "/api/tron/permit2/approve/submit", tag = "tron", request_body = SubmitBody,
    responses((status = 200, description = "Broadcast", body = SubmitResponse),
              (status = 400, description = "Expired, wrongly signed, or not the prepared shape"), (status = 404, description = "TRON is not enabled")))]
pub async fn submit(
    State(s): State<Shared>,
    body: Result<Json<SubmitBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<SubmitResponse>, ApiError> {
    let Json(b) = body?;
    let w = wired(&s)?;
    let signed = approve::Signed { address: &b.address, raw_data_hex: &b.raw_data_hex, raw_data: &b.raw_data, signature: &b.signature };
    Ok(Json(SubmitResponse { tx_id: w.submit(&signed).await? }))
}
