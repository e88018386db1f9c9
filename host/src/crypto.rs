//! Native crypto the host offers adapters (and uses itself).

use alloy_primitives::{Signature, B256};

/// Recover the 65-byte uncompressed public key that signed `prehash`.
pub fn secp256k1_recover(prehash: &[u8], signature: &[u8]) -> Result<Vec<u8>, String> {
    if prehash.len() != 32 {
        return Err(format!("prehash must be 32 bytes, got {}", prehash.len()));
    }
    if signature.len() != 65 {
        return Err(format!("signature must be 65 bytes, got {}", signature.len()));
    }
    let v = match signature[64] {
        0 | 27 => false,
        1 | 28 => true,
        v => return Err(format!("recovery id {v} is not 0, 1, 27 or 28")),
    };
    let sig = Signature::from_bytes_and_parity(&signature[..64], v);
    let key = sig
        .recover_from_prehash(&B256::from_slice(prehash))
        .map_err(|e| format!("recovery failed: {e}"))?;
    Ok(key.to_encoded_point(false).as_bytes().to_vec())
}

pub fn ed25519_verify(public_key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};
    let (Ok(pk), Ok(sig)) = (<[u8; 32]>::try_from(public_key), <[u8; 64]>::try_from(signature)) else {
        return false;
    };
    let Ok(key) = VerifyingKey::from_bytes(&pk) else { return false };
    key.verify(message, &Signature::from_bytes(&sig)).is_ok()
}
