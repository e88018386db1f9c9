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
pub fn secp256k1_sign(key: &Secp256k1Key, prehash: &B256) -> anyhow::Result<Signature> {
    let _span = tracing::info_span!("sign", curve = "secp256k1").entered();
    let key = match key {
        Secp256k1Key::Local(k) => k,
        Secp256k1Key::Held(m) => return module_secp256k1_sign(m.as_ref(), prehash),
    };
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
    Ok(signature)
}

/// A key held elsewhere (a hardware module) that signs when asked.
pub trait HeldKey: Send + Sync {
    /// Its public key: a 65-byte uncompressed secp256k1 point, or 32
    /// Ed25519 bytes.
    fn public(&self) -> &[u8];
    /// Sign `data` (a secp256k1 prehash: r ‖ s; an Ed25519 message).
    fn sign(&self, data: &[u8]) -> anyhow::Result<Vec<u8>>;
}

/// A hosted secp256k1 key: in this process (sealed at rest), or held in a
/// hardware module that signs for it.
#[derive(Clone)]
pub enum Secp256k1Key {
    Local(PrivateKeySigner),
    Held(std::sync::Arc<dyn HeldKey>),
}

impl Secp256k1Key {
    pub fn address(&self) -> alloy_primitives::Address {
        match self {
            Secp256k1Key::Local(k) => k.address(),
            Secp256k1Key::Held(h) => alloy_primitives::Address::from_raw_public_key(&h.public()[1..]),
        }
    }
}

/// Names the key by its address; never its secret.
impl std::fmt::Debug for Secp256k1Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secp256k1Key({})", self.address())
    }
}

/// A hosted Ed25519 key, likewise.
// dalek's key keeps its expanded form (224 bytes); a few per wallet, cloned
// from the keystore's cache: not worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub enum Ed25519Key {
    Local(ed25519_dalek::SigningKey),
    Held(std::sync::Arc<dyn HeldKey>),
}

impl Ed25519Key {
    pub fn public(&self) -> [u8; 32] {
        match self {
            Ed25519Key::Local(k) => k.verifying_key().to_bytes(),
            Ed25519Key::Held(h) => h.public().try_into().expect("a held Ed25519 key's public key is 32 bytes"),
        }
    }
}

/// The module answers r ‖ s for any `s`: Ethereum and TRON take the low
/// one, and a recovery id the module does not give. Both come from the
/// key's own public point, which also checks what the module signed.
fn module_secp256k1_sign(key: &dyn HeldKey, prehash: &B256) -> anyhow::Result<Signature> {
    let raw = key.sign(&prehash.0)?;
    anyhow::ensure!(raw.len() == 64, "the module's signature is {} bytes, not 64", raw.len());
    let r = U256::from_be_slice(&raw[..32]);
    let mut s = U256::from_be_slice(&raw[32..]);
    let n = U256::from_str_radix("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16).expect("the group order");
    if s > n >> 1 {
        s = n - s;
    }
    let mut rs = [0u8; 64];
    rs[..32].copy_from_slice(&r.to_be_bytes::<32>());
    rs[32..].copy_from_slice(&s.to_be_bytes::<32>());
    for odd in [false, true] {
        let mut sig = [0u8; 65];
        sig[..64].copy_from_slice(&rs);
        sig[64] = u8::from(odd);
        if recover(prehash.0, &sig).is_ok_and(|p| p == key.public()) {
            let mut memo = RECENT.lock().unwrap();
            for v in [27 + u8::from(odd), u8::from(odd)] {
                sig[64] = v;
                memo.insert(memo_key(&prehash.0, &sig), key.public().to_vec());
            }
            return Ok(Signature::new(r, s, odd));
        }
    }
    anyhow::bail!("the module's signature is not its key's")
}

/// Sign a message with a hosted Ed25519 key (Solana).
pub fn ed25519_sign(key: &Ed25519Key, message: &[u8]) -> anyhow::Result<[u8; 64]> {
    use ed25519_dalek::Signer as _;
    let _span = tracing::info_span!("sign", curve = "ed25519").entered();
    match key {
        Ed25519Key::Local(k) => Ok(k.sign(message).to_bytes()),
        Ed25519Key::Held(h) => {
            let signature: [u8; 64] =
                h.sign(message)?.try_into().map_err(|_| anyhow::anyhow!("the module's Ed25519 signature is not 64 bytes"))?;
            // What the module signed is checked before anything uses it.
            anyhow::ensure!(ed25519_verify(h.public(), message, &signature), "the module's signature is not its key's");
            Ok(signature)
        }
    }
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
