//! x402 v2 wire types: PaymentRequirements and PaymentPayload.

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::Value;

use crate::types::{PaymentRequirements, ProofError};

pub const X402_VERSION: u32 = 2;
pub const SCHEME_EXACT: &str = "exact";
/// x402 requires at least this many seconds left before an authorization
/// expires, so the settlement transaction has time to land.
pub const VALIDITY_MARGIN_SECS: u64 = 6;

/// PaymentRequirements as the payer sees them (camelCase JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirements {
    pub scheme: String,
    pub network: String,
    pub amount: String,
    pub asset: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    #[serde(default)]
    pub extra: Value,
}

impl Requirements {
    pub fn from_wit(r: &PaymentRequirements) -> Self {
        Requirements {
            scheme: r.scheme.clone(),
            network: r.network.clone(),
            amount: r.amount.clone(),
            asset: r.asset.clone(),
            pay_to: r.pay_to.clone(),
            max_timeout_seconds: r.max_timeout_seconds,
            extra: serde_json::from_str(&r.extra).unwrap_or(Value::Null),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload<P> {
    pub x402_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Value>,
    pub accepted: Requirements,
    pub payload: P,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// Decode a proof and check that it answers exactly these requirements.
/// `same_address` compares addresses in the family's own way.
pub fn decode_payload<P: DeserializeOwned>(
    proof: &str,
    required: &PaymentRequirements,
    same_address: fn(&str, &str) -> bool,
) -> Result<PaymentPayload<P>, ProofError> {
    let p: PaymentPayload<P> = serde_json::from_str(proof).map_err(|e| ProofError::Malformed(format!("payment payload: {e}")))?;
    if p.x402_version != X402_VERSION {
        return Err(ProofError::Unsupported(format!("x402Version {} (expected 2)", p.x402_version)));
    }
    let a = &p.accepted;
    if a.scheme != required.scheme {
        return Err(ProofError::Unsupported(format!("scheme `{}`", a.scheme)));
    }
    let mismatch =
        |what: &str, got: &str, want: &str| Err(ProofError::RequirementsMismatch(format!("accepted {what} is {got}, required {want}")));
    if a.network != required.network {
        return mismatch("network", &a.network, &required.network);
    }
    if a.amount != required.amount {
        return mismatch("amount", &a.amount, &required.amount);
    }
    if !same_address(&a.asset, &required.asset) {
        return mismatch("asset", &a.asset, &required.asset);
    }
    if !same_address(&a.pay_to, &required.pay_to) {
        return mismatch("payTo", &a.pay_to, &required.pay_to);
    }
    Ok(p)
}
