//! The keystore: the service's wallets and agents' hosted wallets.
//!
//! Keys are generated here, sealed with AES-256-GCM under a master key
//! (`STABLERAIL_MASTER_KEY`, 64 hex characters, or `service.master_key_file`,
//! created on first use), stored in `wallet_keys`, and never logged or given
//! to adapters. Names: `relayer:evm`, `collection:evm`, `proxy:evm`,
//! `agent:<agent_id>:evm`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use alloy_signer_local::PrivateKeySigner;
use rand::RngCore;
use sqlx::Row;

use crate::db::Db;
use crate::store::is_unique_violation;

pub struct Keystore {
    db: Db,
    cipher: Aes256Gcm,
    cache: Mutex<HashMap<String, PrivateKeySigner>>,
}

pub const RELAYER: &str = "relayer:evm";
pub const COLLECTION: &str = "collection:evm";
pub const PROXY: &str = "proxy:evm";

pub fn agent_key(agent_id: &str) -> String {
    format!("agent:{agent_id}:evm")
}

impl Keystore {
    pub fn open(db: Db, master_key_file: &Path) -> anyhow::Result<Keystore> {
        let key = match std::env::var("STABLERAIL_MASTER_KEY") {
            Ok(hexkey) => hex::decode(hexkey.trim())?,
            Err(_) => match std::fs::read_to_string(master_key_file) {
                Ok(t) => hex::decode(t.trim())?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let mut k = [0u8; 32];
                    rand::thread_rng().fill_bytes(&mut k);
                    if let Some(d) = master_key_file.parent() {
                        std::fs::create_dir_all(d)?;
                    }
                    use std::io::Write;
                    use std::os::unix::fs::OpenOptionsExt;
                    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(master_key_file)?
                        .write_all(hex::encode(k).as_bytes())?;
                    tracing::info!(file = %master_key_file.display(), "created a new keystore master key");
                    k.to_vec()
                }
                Err(e) => return Err(e.into()),
            },
        };
        anyhow::ensure!(key.len() == 32, "the master key must be 32 bytes (64 hex characters)");
        Ok(Keystore { db, cipher: Aes256Gcm::new_from_slice(&key)?, cache: Mutex::new(HashMap::new()) })
    }

    fn seal(&self, secret: &[u8]) -> String {
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        let ct = self.cipher.encrypt(&Nonce::from(nonce), secret).expect("AES-GCM seals any length");
        hex::encode([nonce.as_slice(), &ct].concat())
    }

    fn open_sealed(&self, sealed: &str) -> anyhow::Result<Vec<u8>> {
        let bytes = hex::decode(sealed)?;
        anyhow::ensure!(bytes.len() > 12, "sealed key is too short");
        let nonce: [u8; 12] = bytes[..12].try_into()?;
        self.cipher
            .decrypt(&Nonce::from(nonce), &bytes[12..])
            .map_err(|_| anyhow::anyhow!("a key does not open with this master key"))
    }

    /// The signer called `name`, created on first use.
    pub async fn signer(&self, name: &str) -> anyhow::Result<PrivateKeySigner> {
        if let Some(s) = self.cache.lock().unwrap().get(name) {
            return Ok(s.clone());
        }
        let row = sqlx::query("SELECT sealed FROM wallet_keys WHERE name = $1").bind(name).fetch_optional(&self.db.pool).await?;
        let signer = match row {
            Some(r) => PrivateKeySigner::from_slice(&self.open_sealed(&r.try_get::<String, _>("sealed")?)?)?,
            None => {
                let fresh = PrivateKeySigner::random();
                let inserted = sqlx::query("INSERT INTO wallet_keys (name, address, sealed, created_at) VALUES ($1, $2, $3, $4)")
                    .bind(name)
                    .bind(fresh.address().to_checksum(None))
                    .bind(self.seal(&fresh.credential().to_bytes()))
                    .bind(crate::intent::now_ms())
                    .execute(&self.db.pool)
                    .await;
                match inserted {
                    Ok(_) => fresh,
                    // Another replica created it first: use theirs.
                    Err(e) if is_unique_violation(&e) => return Box::pin(self.signer(name)).await,
                    Err(e) => return Err(e.into()),
                }
            }
        };
        self.cache.lock().unwrap().insert(name.to_string(), signer.clone());
        Ok(signer)
    }

    /// Every key's name and address, by name.
    pub async fn list(&self) -> anyhow::Result<Vec<(String, String)>> {
        let rows = sqlx::query("SELECT name, address FROM wallet_keys ORDER BY name").fetch_all(&self.db.pool).await?;
        rows.iter().map(|r| Ok((r.try_get("name")?, r.try_get("address")?))).collect()
    }

    /// The signer whose address is `address`, if this keystore holds it.
    pub async fn signer_by_address(&self, address: &str) -> anyhow::Result<Option<PrivateKeySigner>> {
        let row = sqlx::query("SELECT name FROM wallet_keys WHERE address = $1").bind(address).fetch_optional(&self.db.pool).await?;
        match row {
            Some(r) => Ok(Some(self.signer(&r.try_get::<String, _>("name")?).await?)),
            None => Ok(None),
        }
    }

    pub async fn address(&self, name: &str) -> anyhow::Result<String> {
        Ok(self.signer(name).await?.address().to_checksum(None))
    }
}
