//! Standard Webhooks signatures (standardwebhooks.com): `whsec_` secrets,
//! `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`; and the secrets
//! sealed at rest under a key derived from the pepper.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::Rng;
use sha2::Sha256;

/// A fresh endpoint secret, as Standard Webhooks writes them.
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::thread_rng().gen();
    format!("whsec_{}", B64.encode(bytes))
}

/// One `v1,<signature>` entry of the `webhook-signature` header.
pub fn signature(secret: &str, id: &str, timestamp: i64, body: &str) -> Option<String> {
    let key = B64.decode(secret.strip_prefix("whsec_")?).ok()?;
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key).ok()?;
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    Some(format!("v1,{}", B64.encode(mac.finalize().into_bytes())))
}

/// Seals endpoint secrets for the database: AES-256-GCM under
/// HMAC(pepper, a fixed label), so a copy of the database alone cannot
/// forge deliveries.
#[derive(Clone)]
pub struct Sealer(Aes256Gcm);

impl Sealer {
    pub fn new(pepper: &crate::pepper::Pepper) -> Sealer {
        let key = hex::decode(pepper.hash("stablerail webhook secrets v1")).expect("the pepper's MAC is hex");
        Sealer(Aes256Gcm::new_from_slice(&key).expect("a 32-byte key"))
    }

    pub fn seal(&self, secret: &str) -> String {
        let nonce: [u8; 12] = rand::thread_rng().gen();
        let sealed = self.0.encrypt(&Nonce::from(nonce), secret.as_bytes()).expect("AES-GCM seals any length");
        format!("v1:{}", B64.encode([nonce.as_slice(), &sealed].concat()))
    }

    pub fn open(&self, sealed: &str) -> Option<String> {
        let bytes = B64.decode(sealed.strip_prefix("v1:")?).ok()?;
        if bytes.len() < 12 {
            return None;
        }
        let (nonce, body) = bytes.split_at(12);
        let nonce: [u8; 12] = nonce.try_into().ok()?;
        String::from_utf8(self.0.decrypt(&Nonce::from(nonce), body).ok()?).ok()
    }
}
