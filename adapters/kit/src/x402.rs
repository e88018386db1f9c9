//! x402 wire types: v2's PaymentRequirements and PaymentPayload (what the
//! host hands an adapter: it rewrites v1 bodies at its edge), v1's for
//! tools and vectors, and the check that a payload answers the requirements.
//!
//! ```ignore
//! use stablerail_adapter_kit::x402::{decode_payload, AmountRule};
//! let p: PaymentPayload<MyPayload> = decode_payload(&proof, &requirements, evm::same_address, AmountRule::Exact)?;
//! ```

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::Value;

use crate::types::{DecodedProof, Eip3009Payload, PaymentProof, PaymentRequirements, ProofError, ProofPayload};

pub const X402_VERSION: u32 = 2;
pub const SCHEME_EXACT: &str = "exact";
pub const SCHEME_UPTO: &str = "upto";
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

/// x402 v1 PaymentRequirements (`maxAmountRequired`, network names such as
/// `base-sepolia`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequirementsV1 {
    pub scheme: String,
    pub network: String,
    pub max_amount_required: String,
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub mime_type: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    pub asset: String,
    #[serde(default)]
    pub extra: Value,
}

/// x402 v1 PaymentPayload: the scheme and network beside the payload, no
/// `accepted`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayloadV1<P> {
    pub x402_version: u32,
    pub scheme: String,
    pub network: String,
    pub payload: P,
}

/// How the requirements' amount must relate to the amount the payer accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmountRule {
    /// The same amount (`exact`).
    Exact,
    /// At most the accepted amount (`upto`: the resource server names what
    /// it charges when it settles, up to the maximum the payer signed).
    AtMost,
}

/// Decode a proof and check that it answers these requirements: version,
/// scheme, network, asset and payTo the same, the amount as `rule` says.
/// `same_address` compares addresses in the family's own way.
pub fn decode_payload<P: DeserializeOwned>(
    proof: &str,
    required: &PaymentRequirements,
    same_address: fn(&str, &str) -> bool,
    rule: AmountRule,
) -> Result<PaymentPayload<P>, ProofError> {
    let p: PaymentPayload<P> = serde_json::from_str(proof).map_err(|e| ProofError::Malformed(format!("payment payload: {e}")))?;
    let a = &p.accepted;
    let accepted = Accepted { scheme: &a.scheme, network: &a.network, amount: &a.amount, asset: &a.asset, pay_to: &a.pay_to };
    check_accepted(p.x402_version, accepted, required, same_address, rule)?;
    Ok(p)
}

/// What the host decoded of a proof (0.6.0), when it decoded its envelope
/// and typed its payload as EIP-3009's, checked as [`decode_payload`]
/// checks the JSON; `None` when it did not (decode `proof.json` then).
pub fn decoded_eip3009<'p>(
    proof: &'p PaymentProof,
    required: &PaymentRequirements,
    same_address: fn(&str, &str) -> bool,
    rule: AmountRule,
) -> Result<Option<&'p Eip3009Payload>, ProofError> {
    let Some(DecodedProof { x402_version, accepted: a, payload: ProofPayload::Eip3009(payload) }) = &proof.decoded else {
        return Ok(None);
    };
    let accepted = Accepted { scheme: &a.scheme, network: &a.network, amount: &a.amount, asset: &a.asset, pay_to: &a.pay_to };
    check_accepted(*x402_version, accepted, required, same_address, rule)?;
    Ok(Some(payload))
}

/// The members of `accepted` the requirements are matched on.
struct Accepted<'a> {
    scheme: &'a str,
    network: &'a str,
    amount: &'a str,
    asset: &'a str,
    pay_to: &'a str,
}

fn check_accepted(
    x402_version: u32,
    a: Accepted,
    required: &PaymentRequirements,
    same_address: fn(&str, &str) -> bool,
    rule: AmountRule,
) -> Result<(), ProofError> {
    if x402_version != X402_VERSION {
        return Err(ProofError::Unsupported(format!("x402Version {x402_version} (expected 2)")));
    }
    if a.scheme != required.scheme {
        return Err(ProofError::Unsupported(format!("scheme `{}`", a.scheme)));
    }
    let mismatch =
        |what: &str, got: &str, want: &str| Err(ProofError::RequirementsMismatch(format!("accepted {what} is {got}, required {want}")));
    if a.network != required.network {
        return mismatch("network", a.network, &required.network);
    }
    let amount_ok = match rule {
        AmountRule::Exact => a.amount == required.amount,
        AmountRule::AtMost => match (crate::amount::parse_units(a.amount), crate::amount::parse_units(&required.amount)) {
            (Ok(accepted), Ok(charged)) => charged <= accepted,
            _ => false,
        },
    };
    if !amount_ok {
        return mismatch("amount", a.amount, &required.amount);
    }
    if !same_address(a.asset, &required.asset) {
        return mismatch("asset", a.asset, &required.asset);
    }
    if !same_address(a.pay_to, &required.pay_to) {
        return mismatch("payTo", a.pay_to, &required.pay_to);
    }
    Ok(())
}
