//! The keystore: the service's wallets and agents' hosted wallets.
//!
//! Keys are generated here (or imported), sealed with AES-256-GCM under a
//! master key (`STABLERAIL_MASTER_KEY`, 64 hex characters, or
//! `service.master_key_file`), stored in `wallet_keys`, and never logged or
//! given to adapters. Each sealed key is bound to its name (the name is the
//! AEAD's associated data), so a row copied under another name does not
//! open. A key is named for its role and family (`Role::key_name`):
//! `relayer:evm`, `collection:evm`, `proxy:evm`, `agent:<agent_id>:evm`;
//! its kind follows from the family (`KeyKind::of`).
//!
//! Only `stablerail keys init` (or `devnet up`) creates the master key and
//! the service wallets; `serve` refuses to start without them. An agent's
//! hosted wallet is created with the agent.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use alloy_signer_local::PrivateKeySigner;
use rand::RngCore;

use crate::config::Family;
use crate::db::Db;
use crate::store::is_unique_violation;

pub struct Keystore {
    db: Db,
    cipher: Aes256Gcm,
    cache: Mutex<HashMap<String, PrivateKeySigner>>,
}

/// What a wallet's secret is, by family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// EVM and TRON.
    Secp256k1,
    /// Solana.
    Ed25519,
}

impl KeyKind {
    pub fn of(family: Family) -> KeyKind {
        match family {
            Family::Evm | Family::Tron => KeyKind::Secp256k1,
            Family::Solana => KeyKind::Ed25519,
        }
    }
}

/// What a host-held wallet is for. Each role has one wallet per family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Sends settlement transactions and pays their fees.
    Relayer,
    /// Receives payers' funds (x402 `payTo`).
    Collection,
    /// Pays merchants on target legs.
    Proxy,
    /// An agent's hosted wallet (`/v2`).
    Agent(String),
}

impl Role {
    /// The keystore name of this role's wallet in `family`.
    pub fn key_name(&self, family: Family) -> String {
        let f = match family {
            Family::Evm => "evm",
            Family::Solana => "solana",
            Family::Tron => "tron",
        };
        match self {
            Role::Relayer => format!("relayer:{f}"),
            Role::Collection => format!("collection:{f}"),
            Role::Proxy => format!("proxy:{f}"),
            Role::Agent(id) => format!("agent:{id}:{f}"),
        }
    }
}

pub const RELAYER: &str = "relayer:evm";
pub const COLLECTION: &str = "collection:evm";
pub const PROXY: &str = "proxy:evm";

/// The wallets the service itself signs with.
pub const SERVICE_WALLETS: [&str; 3] = [RELAYER, COLLECTION, PROXY];


/// Sealed with the key's name as associated data.
const BOUND: &str = "v2:";

/// The family a key belongs to, from its name's last part. A key imported
/// under a name of the operator's choosing is a secp256k1 key with an EVM
/// address.
pub fn family_of(name: &str) -> Family {
    match name.rsplit(':').next() {
        Some("solana") => Family::Solana,
        Some("tron") => Family::Tron,
        _ => Family::Evm,
    }
}

pub fn agent_key(agent_id: &str) -> String {
    Role::Agent(agent_id.to_string()).key_name(Family::Evm)
}

const INIT_HINT: &str = "run `stablerail keys init` with the same --config and --database first";

/// Write `text` to a new owner-only file (never over an existing one).
pub fn write_private(file: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(d) = file.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(file)?.write_all(text.as_bytes())?;
    Ok(())
}

/// The master key from the environment or its file; `None` when neither exists.
fn master_key(file: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    let key = match std::env::var("STABLERAIL_MASTER_KEY") {
        Ok(hexkey) => hex::decode(hexkey.trim()).map_err(|_| anyhow::anyhow!("STABLERAIL_MASTER_KEY is not hex"))?,
        Err(_) => match std::fs::read_to_string(file) {
            Ok(t) => hex::decode(t.trim()).map_err(|_| anyhow::anyhow!("{} does not hold a hex master key", file.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => anyhow::bail!("cannot read the master key file {}: {e}", file.display()),
        },
    };
    anyhow::ensure!(key.len() == 32, "the master key must be 32 bytes (64 hex characters)");
    Ok(Some(key))
}

impl Keystore {
    /// The keystore under an existing master key.
    pub fn open(db: Db, master_key_file: &Path) -> anyhow::Result<Keystore> {
        let key = master_key(master_key_file)?.ok_or_else(|| {
            anyhow::anyhow!("no master key: {} does not exist and STABLERAIL_MASTER_KEY is not set; {INIT_HINT}", master_key_file.display())
        })?;
        Ok(Keystore { db, cipher: Aes256Gcm::new_from_slice(&key)?, cache: Mutex::new(HashMap::new()) })
    }

    /// The keystore, creating its master key file first when there is none
    /// (and no `STABLERAIL_MASTER_KEY`). For `keys init` only.
    pub fn create(db: Db, master_key_file: &Path) -> anyhow::Result<(Keystore, bool)> {
        let created = master_key(master_key_file)?.is_none();
        if created {
            let mut k = [0u8; 32];
            rand::thread_rng().fill_bytes(&mut k);
            write_private(master_key_file, &hex::encode(k))?;
        }
        Ok((Keystore::open(db, master_key_file)?, created))
    }

    fn seal(&self, name: &str, secret: &[u8]) -> String {
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        let ct = self
            .cipher
            .encrypt(&Nonce::from(nonce), Payload { msg: secret, aad: name.as_bytes() })
            .expect("AES-GCM seals any length");
        format!("{BOUND}{}", hex::encode([nonce.as_slice(), &ct].concat()))
    }

    /// Keys sealed before names were bound (no prefix) open without
    /// associated data; `keys init` re-seals them bound.
    fn open_sealed(&self, name: &str, sealed: &str) -> anyhow::Result<Vec<u8>> {
        let (text, aad) = match sealed.strip_prefix(BOUND) {
            Some(rest) => (rest, name.as_bytes()),
            None => (sealed, &b""[..]),
        };
        let bytes = hex::decode(text)?;
        anyhow::ensure!(bytes.len() > 12, "sealed key `{name}` is too short");
        let nonce: [u8; 12] = bytes[..12].try_into()?;
        self.cipher
            .decrypt(&Nonce::from(nonce), Payload { msg: &bytes[12..], aad })
            .map_err(|_| anyhow::anyhow!("the key `{name}` does not open with this master key (or was stored under another name)"))
    }

    async fn stored(&self, name: &str) -> anyhow::Result<Option<PrivateKeySigner>> {
        if let Some(s) = self.cache.lock().unwrap().get(name) {
            return Ok(Some(s.clone()));
        }
        let Some(sealed) = crate::store::keys::sealed(&self.db, name).await? else { return Ok(None) };
        let signer = PrivateKeySigner::from_slice(&self.open_sealed(name, &sealed)?)?;
        self.cache.lock().unwrap().insert(name.to_string(), signer.clone());
        Ok(Some(signer))
    }

    /// Store `signer` as `name`; `false` when that name is already taken.
    async fn insert(&self, name: &str, signer: &PrivateKeySigner) -> anyhow::Result<bool> {
        let address = signer.address().to_checksum(None);
        let sealed = self.seal(name, &signer.credential().to_bytes());
        match crate::store::keys::insert(&self.db, name, &address, &sealed, crate::intent::now_ms()).await {
            Ok(()) => Ok(true),
            Err(e) if is_unique_violation(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The secp256k1 signer of `role` in `family`.
    pub async fn secp256k1(&self, role: &Role, family: Family) -> anyhow::Result<PrivateKeySigner> {
        anyhow::ensure!(KeyKind::of(family) == KeyKind::Secp256k1, "{family:?} wallets are not secp256k1 keys");
        self.signer(&role.key_name(family)).await
    }

    /// The signer called `name`. A service wallet must exist already
    /// (`keys init`); an agent's hosted wallet is created on first use.
    pub async fn signer(&self, name: &str) -> anyhow::Result<PrivateKeySigner> {
        if let Some(s) = self.stored(name).await? {
            return Ok(s);
        }
        anyhow::ensure!(!SERVICE_WALLETS.contains(&name), "the service wallet `{name}` does not exist; {INIT_HINT}");
        // Another replica may create it at the same moment: theirs wins.
        self.insert(name, &PrivateKeySigner::random()).await?;
        self.stored(name).await?.ok_or_else(|| anyhow::anyhow!("wallet `{name}` vanished after creation"))
    }

    /// Create `name` with a fresh key unless it exists; `true` if created.
    pub async fn ensure(&self, name: &str) -> anyhow::Result<bool> {
        if self.stored(name).await?.is_some() {
            return Ok(false);
        }
        self.insert(name, &PrivateKeySigner::random()).await
    }

    /// Store an existing secp256k1 key as `name`. Refuses a name in use.
    pub async fn import(&self, name: &str, private_key_hex: &str) -> anyhow::Result<String> {
        let bytes = hex::decode(private_key_hex.trim().trim_start_matches("0x"))
            .map_err(|_| anyhow::anyhow!("the private key is not hex"))?;
        let signer = PrivateKeySigner::from_slice(&bytes).map_err(|_| anyhow::anyhow!("the private key is not a valid secp256k1 key"))?;
        anyhow::ensure!(self.insert(name, &signer).await?, "a key named `{name}` exists already; import under a new name or keep it");
        Ok(signer.address().to_checksum(None))
    }

    /// Re-seal keys stored before names were bound; how many were.
    pub async fn bind_names(&self) -> anyhow::Result<usize> {
        let mut n = 0;
        for (name, sealed) in crate::store::keys::all_sealed(&self.db).await? {
            if !sealed.starts_with(BOUND) {
                let secret = self.open_sealed(&name, &sealed)?;
                crate::store::keys::reseal(&self.db, &name, &sealed, &self.seal(&name, &secret)).await?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Service wallets that do not exist yet.
    pub async fn missing_service_wallets(&self) -> anyhow::Result<Vec<&'static str>> {
        let mut missing = Vec::new();
        for name in SERVICE_WALLETS {
            if self.stored(name).await?.is_none() {
                missing.push(name);
            }
        }
        Ok(missing)
    }

    /// Every key's name and address, by name.
    pub async fn list(&self) -> anyhow::Result<Vec<(String, String)>> {
        Ok(crate::store::keys::list(&self.db).await?)
    }

    /// The signer whose address is `address`, if this keystore holds it.
    pub async fn signer_by_address(&self, address: &str) -> anyhow::Result<Option<PrivateKeySigner>> {
        match crate::store::keys::name_of(&self.db, address).await? {
            Some(name) => Ok(Some(self.signer(&name).await?)),
            None => Ok(None),
        }
    }

    pub async fn address(&self, name: &str) -> anyhow::Result<String> {
        Ok(self.signer(name).await?.address().to_checksum(None))
    }
}

/// What `keys init` did.
#[derive(Debug, serde::Serialize)]
pub struct Initialized {
    pub master_key: &'static str,
    pub pepper: &'static str,
    /// Service wallets: name, address, and whether this run created it.
    pub wallets: Vec<InitWallet>,
    /// Keys re-sealed bound to their names.
    pub rebound: usize,
}

#[derive(Debug, serde::Serialize)]
pub struct InitWallet {
    pub name: &'static str,
    pub address: String,
    pub created: bool,
}

/// Create what is missing (master key file, pepper file, service wallets)
/// and keep what exists; safe to run again.
pub async fn init(master_key_file: &Path, pepper_file: &Path, db: Db) -> anyhow::Result<Initialized> {
    let said = |created: bool| if created { "created" } else { "kept" };
    let (keys, master_created) = Keystore::create(db, master_key_file)?;
    let pepper_created = crate::auth::Pepper::create(pepper_file)?;
    let mut wallets = Vec::new();
    for name in SERVICE_WALLETS {
        let created = keys.ensure(name).await?;
        wallets.push(InitWallet { name, address: keys.address(name).await?, created });
    }
    let rebound = keys.bind_names().await?;
    Ok(Initialized { master_key: said(master_created), pepper: said(pepper_created), wallets, rebound })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_name_their_keys_by_family() {
        assert_eq!(Role::Relayer.key_name(Family::Evm), RELAYER);
        assert_eq!(Role::Collection.key_name(Family::Evm), COLLECTION);
        assert_eq!(Role::Proxy.key_name(Family::Solana), "proxy:solana");
        assert_eq!(Role::Agent("ag1".into()).key_name(Family::Tron), "agent:ag1:tron");
        assert_eq!(KeyKind::of(Family::Solana), KeyKind::Ed25519);
        assert_eq!(KeyKind::of(Family::Tron), KeyKind::Secp256k1);
        assert_eq!(family_of(&agent_key("ag1")), Family::Evm);
        assert_eq!(family_of("proxy:solana"), Family::Solana);
        assert_eq!(family_of("treasury"), Family::Evm);
    }
}
