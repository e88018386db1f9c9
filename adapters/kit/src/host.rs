//! The host's other imports: native crypto, the clock and the log. (Chain
//! questions are [`crate::chain`].)

use crate::bindings::stablerail::adapter0_1_0::{clock, crypto, log};

/// Unix seconds, as the host's clock says (a test's recorded clock under
/// `adapter check`).
pub fn now() -> u64 {
    clock::now()
}

/// Keccak-256 on the host, natively: inside the sandbox the same hash costs
/// several times as much. (Built for the machine, as the kit's own tests
/// are, it is alloy's.)
pub fn keccak256(data: &[u8]) -> [u8; 32] {
    #[cfg(target_arch = "wasm32")]
    return to32(&crypto::keccak256(data));
    #[cfg(not(target_arch = "wasm32"))]
    return alloy_primitives::keccak256(data).0;
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

/// A warning in the host's log, with fields (never a secret: the host
/// writes them as they are).
pub fn warn(message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<(String, String)> = fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    log::log(log::Level::Warn, message, &fields);
}

fn to32(v: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&v[..32]);
    out
}
