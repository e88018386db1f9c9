//! An independent EIP-3009 signer side, shared by tests and benches: the
//! typed struct, the base USDC domain and a hand-built x402 PaymentPayload.
#![allow(dead_code)]

use std::borrow::Cow;

use alloy_primitives::{address, hex, Address, B256, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use alloy_sol_types::{sol, Eip712Domain, SolStruct};
use serde_json::{json, Value};
use stablerail::payment::PaymentRequirements;

sol! {
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

pub const USDC: Address = address!("833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
pub const COLLECTOR: Address = address!("00000000000000000000000000000000c011ec70");

/// The USDC domain: standard with `chain_id`, or salted with `salt`.
pub fn usdc_domain(chain_id: Option<u64>, salt: Option<B256>) -> Eip712Domain {
    Eip712Domain::new(Some(Cow::Borrowed("USD Coin")), Some(Cow::Borrowed("2")), chain_id.map(U256::from), Some(USDC), salt)
}

pub fn sign(payer: &PrivateKeySigner, auth: &TransferWithAuthorization, domain: &Eip712Domain) -> String {
    let sig = payer.sign_hash_sync(&auth.eip712_signing_hash(domain)).unwrap();
    hex::encode_prefixed(sig.as_bytes())
}

/// A PaymentPayload as an x402 client sends it, built by hand.
pub fn proof(req: &PaymentRequirements, auth: &TransferWithAuthorization, signature: &str) -> Value {
    json!({
        "x402Version": 2,
        "accepted": {
            "scheme": req.scheme, "network": req.network, "amount": req.amount,
            "asset": req.asset, "payTo": req.pay_to, "maxTimeoutSeconds": req.max_timeout_seconds,
            "extra": serde_json::from_str::<Value>(&req.extra).unwrap(),
        },
        "payload": {
            "signature": signature,
            "authorization": {
                "from": auth.from.to_string(), "to": auth.to.to_string(),
                "value": auth.value.to_string(), "validAfter": auth.validAfter.to_string(),
                "validBefore": auth.validBefore.to_string(), "nonce": auth.nonce.to_string(),
            }
        }
    })
}
