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
    let odd = i32::from(id) == 1;
    let signature = Signature::new(U256::from_be_slice(&rs[..32]), U256::from_be_slice(&rs[32..]), odd);
    // The adapter checks what a hosted key signed (a payout's authorization)
    // before it builds the call; its signer is known here, so that check is a
    // lookup instead of a recovery (~30 µs each).
    let public = key.credential().verifying_key().to_encoded_point(false);
    let mut memo = RECENT.lock().unwrap();
    for v in [27 + u8::from(odd), u8::from(odd)] {
        let mut sig = [0u8; 65];
        sig[..64].copy_from_slice(&rs);
        sig[64] = v;
        memo.insert(memo_key(&prehash.0, &sig), public.as_bytes().to_vec());
    }
    signature
}

/// Recoveries done lately, by prehash and signature, and the signatures
/// hosted keys made. A payment's signature is recovered when it is verified
/// and again moments later when the adapter builds its settlement (it checks
/// the payload offline once more); a recovery depends on its inputs alone, so
/// the second is looked up. 8,192 entries (about 2 MB) outlast the queue of
/// a 1,000-intent burst between acceptance and settling.
pub const RECENT_RECOVERIES: usize = 8192;
static RECENT: LazyLock<Mutex<LruCache<[u8; 97], Vec<u8>>>> = LazyLock::new(|| Mutex::new(LruCache::new(RECENT_RECOVERIES)));

/// Recover the 65-byte uncompressed public key that signed `prehash`, as the
/// EVM's `ecrecover` does (any `s` below the group order; refusing malleable
/// high-`s` signatures is the caller's policy).
pub fn secp256k1_recover(prehash: &[u8], signature: &[u8]) -> Result<Vec<u8>, String> {
    let digest: [u8; 32] = prehash.try_into().map_err(|_| format!("prehash must be 32 bytes, got {}", prehash.len()))?;
    if signature.len() != 65 {
        return Err(format!("signature must be 65 bytes, got {}", signature.len()));
    }
    let key = memo_key(&digest, signature);
    if let Some(known) = RECENT.lock().unwrap().get(&key) {
        return Ok(known.clone());
    }
    let public = recover(digest, signature)?;
    RECENT.lock().unwrap().insert(key, public.clone());
    Ok(public)
}

/// The memo's key: the prehash, then the 65-byte signature as given.
fn memo_key(digest: &[u8; 32], signature: &[u8]) -> [u8; 97] {
    let mut key = [0u8; 97];
    key[..32].copy_from_slice(digest);
    key[32..].copy_from_slice(signature);
    key
}

/// Recover without the memo.
pub fn recover(digest: [u8; 32], signature: &[u8]) -> Result<Vec<u8>, String> {
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
