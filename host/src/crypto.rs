//! Native crypto the host offers adapters (and uses itself).

use std::sync::LazyLock;

use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::{Message, Secp256k1, VerifyOnly};

static SECP: LazyLock<Secp256k1<VerifyOnly>> = LazyLock::new(Secp256k1::verification_only);

/// Recover the 65-byte uncompressed public key that signed `prehash`, as the
/// EVM's `ecrecover` does (any `s` below the group order; refusing malleable
/// high-`s` signatures is the caller's policy).
pub fn secp256k1_recover(prehash: &[u8], signature: &[u8]) -> Result<Vec<u8>, String> {
    let digest: [u8; 32] = prehash.try_into().map_err(|_| format!("prehash must be 32 bytes, got {}", prehash.len()))?;
    if signature.len() != 65 {
        return Err(format!("signature must be 65 bytes, got {}", signature.len()));
    }
    let id = match signature[64] {
        0 | 27 => RecoveryId::Zero,
        1 | 28 => RecoveryId::One,
        v => return Err(format!("recovery id {v} is not 0, 1, 27 or 28")),
    };
    let sig = RecoverableSignature::from_compact(&signature[..64], id).map_err(|e| format!("recovery failed: {e}"))?;
    let key = SECP.recover_ecdsa(&Message::from_digest(digest), &sig).map_err(|e| format!("recovery failed: {e}"))?;
    Ok(key.serialize_uncompressed().to_vec())
}

pub fn ed25519_verify(public_key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};
    let (Ok(pk), Ok(sig)) = (<[u8; 32]>::try_from(public_key), <[u8; 64]>::try_from(signature)) else {
        return false;
    };
    let Ok(key) = VerifyingKey::from_bytes(&pk) else { return false };
    key.verify(message, &Signature::from_bytes(&sig)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::secp256k1_recover;
    use alloy_primitives::{keccak256, U256};
    use alloy_signer::SignerSync;
    use alloy_signer_local::PrivateKeySigner;

    /// secp256k1's group order.
    const N: U256 = alloy_primitives::uint!(0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141_U256);

    fn uncompressed(signer: &PrivateKeySigner) -> Vec<u8> {
        signer.credential().verifying_key().to_encoded_point(false).as_bytes().to_vec()
    }

    #[test]
    fn recovers_the_signer_in_every_v_form_and_high_s_like_ecrecover() {
        for n in 0..32u32 {
            let signer = PrivateKeySigner::random();
            let digest = keccak256(n.to_be_bytes());
            let sig = signer.sign_hash_sync(&digest).unwrap();
            let mut raw = sig.as_bytes().to_vec(); // v = 27 or 28
            assert_eq!(secp256k1_recover(digest.as_slice(), &raw).unwrap(), uncompressed(&signer));
            raw[64] -= 27; // v = 0 or 1
            assert_eq!(secp256k1_recover(digest.as_slice(), &raw).unwrap(), uncompressed(&signer));
            // (r, n - s, !v) is the same signature to ecrecover.
            let s = U256::from_be_slice(&raw[32..64]);
            raw[32..64].copy_from_slice(&(N - s).to_be_bytes::<32>());
            raw[64] ^= 1;
            assert_eq!(secp256k1_recover(digest.as_slice(), &raw).unwrap(), uncompressed(&signer));
            // Another digest recovers someone else.
            assert_ne!(secp256k1_recover(keccak256(b"other").as_slice(), &raw).ok(), Some(uncompressed(&signer)));
        }
    }

    #[test]
    fn malformed_input_is_an_error() {
        let signer = PrivateKeySigner::random();
        let digest = keccak256(b"x");
        let raw = signer.sign_hash_sync(&digest).unwrap().as_bytes().to_vec();
        assert!(secp256k1_recover(&digest[..31], &raw).unwrap_err().contains("32 bytes"));
        assert!(secp256k1_recover(digest.as_slice(), &raw[..64]).unwrap_err().contains("65 bytes"));
        let mut bad_v = raw.clone();
        bad_v[64] = 2;
        assert!(secp256k1_recover(digest.as_slice(), &bad_v).unwrap_err().contains("recovery id 2"));
        let mut zero = raw.clone();
        zero[..64].fill(0);
        assert!(secp256k1_recover(digest.as_slice(), &zero).is_err());
        let mut over = raw;
        over[32..64].copy_from_slice(&N.to_be_bytes::<32>()); // s = n is out of range
        assert!(secp256k1_recover(digest.as_slice(), &over).is_err());
    }
}
