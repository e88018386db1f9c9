//! The x402 exact-Permit2 payload and its two gas-sponsoring extensions, as
//! JSON on the wire (numbers are decimal strings, as x402 writes them).

use serde::{Deserialize, Serialize};

pub const EIP2612_GAS_SPONSORING: &str = "eip2612GasSponsoring";
pub const ERC20_APPROVAL_GAS_SPONSORING: &str = "erc20ApprovalGasSponsoring";

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permit2Payload {
    pub signature: String,
    pub permit2_authorization: Authorization,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    pub from: String,
    pub permitted: Permitted,
    pub spender: String,
    pub nonce: String,
    pub deadline: String,
    pub witness: WitnessJson,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Permitted {
    pub token: String,
    pub amount: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitnessJson {
    pub to: String,
    pub valid_after: String,
}

/// `extensions` of the PaymentPayload; each present extension wraps `info`.
#[derive(Debug, Default, Deserialize)]
pub struct Extensions {
    #[serde(rename = "eip2612GasSponsoring")]
    pub eip2612: Option<Wrapped<PermitInfo>>,
    #[serde(rename = "erc20ApprovalGasSponsoring")]
    pub approval: Option<Wrapped<ApprovalInfo>>,
}

#[derive(Debug, Deserialize)]
pub struct Wrapped<T> {
    pub info: T,
}

/// An EIP-2612 permit giving Permit2 an allowance, signed off chain.
#[derive(Debug, Deserialize)]
pub struct PermitInfo {
    pub from: String,
    pub asset: String,
    pub spender: String,
    pub amount: String,
    pub nonce: String,
    pub deadline: String,
    pub signature: String,
}

/// A raw signed `approve(Permit2, amount)` transaction from the payer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalInfo {
    pub from: String,
    pub asset: String,
    pub spender: String,
    pub amount: String,
    pub signed_transaction: String,
}

/// The x402 `upto` payload: as exact-Permit2's, with the facilitator in the witness.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UptoPayload {
    pub signature: String,
    pub permit2_authorization: UptoAuthorization,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UptoAuthorization {
    pub from: String,
    pub permitted: Permitted,
    pub spender: String,
    pub nonce: String,
    pub deadline: String,
    pub witness: UptoWitnessJson,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UptoWitnessJson {
    pub to: String,
    pub facilitator: String,
    pub valid_after: String,
}
