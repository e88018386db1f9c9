//! `crates/types/src/crypto.rs`

use alloy_primitives::{keccak256, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use stablerail::crypto::secp256k1_recover;
use stablerail::crypto::Secp256k1Key;

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
    for n in 0..stablerail::crypto::RECENT_RECOVERIES as u32 + 100 {
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
        let ours = stablerail::crypto::secp256k1_sign(&Secp256k1Key::Local(signer.clone()), &digest).unwrap();
        assert_eq!(ours, signer.sign_hash_sync(&digest).unwrap());
        // Recovered for real, not from what signing remembered.
        assert_eq!(stablerail::crypto::recover(digest.0, &ours.as_bytes()).unwrap(), uncompressed(&signer));
    }
}

/// What signing remembers is what a recovery answers, in both forms of
/// `v`, and nothing for a changed signature.
#[test]
fn a_hosted_signature_is_remembered_as_its_recovery() {
    for n in 0..16u32 {
        let signer = PrivateKeySigner::random();
        let digest = keccak256(n.to_be_bytes());
        let mut raw = stablerail::crypto::secp256k1_sign(&Secp256k1Key::Local(signer.clone()), &digest).unwrap().as_bytes().to_vec();
        let mut low_v = raw.clone();
        low_v[64] -= 27;
        for form in [&raw, &low_v] {
            assert_eq!(secp256k1_recover(digest.as_slice(), form).unwrap(), stablerail::crypto::recover(digest.0, form).unwrap());
        }
        raw[5] ^= 1;
        assert_ne!(secp256k1_recover(digest.as_slice(), &raw).ok(), Some(uncompressed(&signer)));
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
