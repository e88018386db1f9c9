//! Native crypto the host offers adapters (and uses itself).

use std::sync::{LazyLock, Mutex};

use hashlink::LruCache;

use alloy_primitives::{Signature, B256, U256};
use alloy_signer_local::PrivateKeySigner;
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::{Message, Secp256k1, SecretKey, SignOnly, VerifyOnly};

static SECP: LazyLock<Secp256k1<VerifyOnly>> = LazyLock::new(Secp256k1::verification_only);
static SIGNING: LazyLock<Secp256k1<SignOnly>> = LazyLock::new(Secp256k1::signing_only);

/// Sign a 32-byte prehash with a hosted key, on libsecp256k1. The same
/// signature alloy's signer (k256) makes: both take the nonce from RFC 6979
/// and answer the low `s`; libsecp256k1 is several times faster, and every
/// payout authorization and relayed transaction is signed here.
pub fn secp256k1_sign(key: &PrivateKeySigner, prehash: &B256) -> Signature {
    let secret: [u8; 32] = key.credential().to_bytes().into();
    let secret = SecretKey::from_byte_array(&secret).expect("a k256 signing key is a valid secp256k1 secret");
    let (id, rs) = SIGNING.sign_ecdsa_recoverable(&Message::from_digest(prehash.0), &secret).serialize_compact();
    Signature::new(U256::from_be_slice(&rs[..32]), U256::from_be_slice(&rs[32..]), i32::from(id) == 1)
}

/// Recoveries done lately, by prehash and signature. A payment's signature
/// is recovered when it is verified and again moments later when the adapter
/// builds its settlement (it checks the payload offline once more); a
/// recovery depends on its inputs alone, so the second is looked up.
static RECENT: LazyLock<Mutex<LruCache<[u8; 97], Vec<u8>>>> = LazyLock::new(|| Mutex::new(LruCache::new(1024)));

/// Recover the 65-byte uncompressed public key that signed `prehash`, as the
/// EVM's `ecrecover` does (any `s` below the group order; refusing malleable
/// high-`s` signatures is the caller's policy).
pub fn secp256k1_recover(prehash: &[u8], signature: &[u8]) -> Result<Vec<u8>, String> {
    let digest: [u8; 32] = prehash.try_into().map_err(|_| format!("prehash must be 32 bytes, got {}", prehash.len()))?;
    if signature.len() != 65 {
        return Err(format!("signature must be 65 bytes, got {}", signature.len()));
    }
    let mut key = [0u8; 97];
    key[..32].copy_from_slice(&digest);
    key[32..].copy_from_slice(signature);
    if let Some(known) = RECENT.lock().unwrap().get(&key) {
        return Ok(known.clone());
    }
    let public = recover(digest, signature)?;
    RECENT.lock().unwrap().insert(key, public.clone());
    Ok(public)
}

fn recover(digest: [u8; 32], signature: &[u8]) -> Result<Vec<u8>, String> {
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
    fn a_repeated_recovery_answers_the_same_and_a_changed_input_is_recovered_anew() {
        let (a, b) = (PrivateKeySigner::random(), PrivateKeySigner::random());
        let digest = keccak256(b"payment");
        let sig_a = a.sign_hash_sync(&digest).unwrap().as_bytes().to_vec();
        let sig_b = b.sign_hash_sync(&digest).unwrap().as_bytes().to_vec();
        for _ in 0..3 {
            assert_eq!(secp256k1_recover(digest.as_slice(), &sig_a).unwrap(), uncompressed(&a));
            assert_eq!(secp256k1_recover(digest.as_slice(), &sig_b).unwrap(), uncompressed(&b));
        }
        let mut flipped = sig_a.clone();
        flipped[10] ^= 1;
        assert_ne!(secp256k1_recover(digest.as_slice(), &flipped).ok(), Some(uncompressed(&a)));
        assert_ne!(secp256k1_recover(keccak256(b"other").as_slice(), &sig_a).ok(), Some(uncompressed(&a)));
        // Past the memo's size, the first is recovered again, the same.
        for n in 0..1100u32 {
            let _ = secp256k1_recover(keccak256(n.to_be_bytes()).as_slice(), &sig_b);
        }
        assert_eq!(secp256k1_recover(digest.as_slice(), &sig_a).unwrap(), uncompressed(&a));
    }

    /// libsecp256k1's signatures are alloy's (k256's), byte for byte, and
    /// recover to the key.
    #[test]
    fn signatures_are_alloys_byte_for_byte() {
        for n in 0..64u32 {
            let signer = PrivateKeySigner::random();
            let digest = keccak256(n.to_be_bytes());
            let ours = super::secp256k1_sign(&signer, &digest);
            assert_eq!(ours, signer.sign_hash_sync(&digest).unwrap());
            assert_eq!(secp256k1_recover(digest.as_slice(), &ours.as_bytes()).unwrap(), uncompressed(&signer));
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
