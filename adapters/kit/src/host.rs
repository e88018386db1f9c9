//! Thin wrappers over the host imports.

use crate::bindings::stablerail::adapter::{chain, clock, crypto, log};
use crate::types::ProofError;

pub fn now() -> u64 {
    clock::now()
}

pub fn keccak256(data: &[u8]) -> [u8; 32] {
    to32(&crypto::keccak256(data))
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    to32(&crypto::sha256(data))
}

/// Recover the uncompressed public key (65 bytes) that signed `prehash`.
pub fn secp256k1_recover(prehash: &[u8; 32], signature: &[u8]) -> Result<Vec<u8>, String> {
    crypto::secp256k1_recover(prehash, signature)
}

pub fn ed25519_verify(public_key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    crypto::ed25519_verify(public_key, message, signature)
}

pub fn warn(message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<(String, String)> = fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    log::log(log::Level::Warn, message, &fields);
}

/// A read-only query to this call's chain; failures become `chain-unavailable`.
pub fn query(method: &str, params: &serde_json::Value) -> Result<serde_json::Value, ProofError> {
    let text = chain::query(method, &params.to_string()).map_err(|e| {
        ProofError::ChainUnavailable(match e {
            chain::QueryError::Denied(m) => format!("query denied: {m}"),
            chain::QueryError::Unavailable(m) => format!("chain unavailable: {m}"),
            chain::QueryError::Rpc(m) => format!("rpc error: {m}"),
        })
    })?;
    serde_json::from_str(&text).map_err(|e| ProofError::ChainUnavailable(format!("unreadable chain answer: {e}")))
}

fn to32(v: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&v[..32]);
    out
}
