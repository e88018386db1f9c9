//! The x402 facilitator wire (v2 §7; v1 bodies share these shapes, see
//! `v1`): request and answer bodies as `@x402/core`'s
//! `HTTPFacilitatorClient` sends and reads them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// `POST /x402/verify` and `POST /x402/settle`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FacilitatorRequest {
    #[schema(example = 2)]
    pub x402_version: u64,
    /// The client's PaymentPayload (x402 v2 §5.2, or v1's with top-level scheme and network).
    #[schema(value_type = Object)]
    pub payment_payload: Value,
    /// The resource server's PaymentRequirements (x402 v2 §5.1, or v1's with `maxAmountRequired`).
    #[schema(value_type = Object)]
    pub payment_requirements: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    pub is_valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "invalid_exact_evm_payload_signature")]
    pub invalid_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// The scheme's state a resource server keeps (batch-settlement's
    /// channel), where the scheme has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "settlement_pending")]
    pub error_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// The settling transaction; empty when nothing was broadcast.
    pub transaction: String,
    #[schema(example = "eip155:8453")]
    pub network: String,
    /// What was settled, in base units: the charge of an `upto` payment
    /// (0 when the resource server charged nothing and nothing was sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "2500")]
    pub amount: Option<String>,
    /// The scheme's state after the settlement (batch-settlement's
    /// `channelState`), where the scheme has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupportedKind {
    pub x402_version: u64,
    #[schema(example = "exact")]
    pub scheme: String,
    #[schema(example = "eip155:8453")]
    pub network: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extra: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SupportedResponse {
    pub kinds: Vec<SupportedKind>,
    #[schema(example = json!(["eip2612GasSponsoring", "erc20ApprovalGasSponsoring", "payment-identifier"]))]
    pub extensions: Vec<String>,
    /// CAIP-2 family pattern → the addresses that sign settlements.
    #[schema(example = json!({"eip155:*": ["0x1234567890abcdef1234567890abcdef12345678"]}))]
    pub signers: BTreeMap<String, Vec<String>>,
}

/// One settlement as an operator looks it up.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SettlementView {
    pub id: String,
    #[schema(example = "settled")]
    pub status: String,
    pub network: String,
    pub scheme: String,
    pub asset: String,
    pub payer: String,
    pub pay_to: String,
    /// Base units.
    pub amount: String,
    /// Final transaction, or the one sent while pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    /// The facilitator key's name, or `public`.
    pub client: String,
    pub created_at: i64,
    pub updated_at: i64,
}
