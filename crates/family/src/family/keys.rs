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

pub struct Keystore {
    db: Db,
    cipher: Aes256Gcm,
    cache: Mutex<HashMap<String, Key>>,
}

/// A wallet's secret, of its family's kind.
#[derive(Clone)]
pub enum Key {
    Secp256k1(PrivateKeySigner),
    Ed25519(ed25519_dalek::SigningKey),
}

impl Key {
    fn random(kind: KeyKind) -> Key {
        match kind {
            KeyKind::Secp256k1 => Key::Secp256k1(PrivateKeySigner::random()),
            KeyKind::Ed25519 => {
                let mut seed = [0u8; 32];
                rand::thread_rng().fill_bytes(&mut seed);
                Key::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed))
            }
        }
    }

    /// A key of `kind` from its secret: a secp256k1 scalar or an ed25519 seed, 32 bytes each.
    fn from_secret(kind: KeyKind, secret: &[u8]) -> anyhow::Result<Key> {
        Ok(match kind {
            KeyKind::Secp256k1 => {
                Key::Secp256k1(PrivateKeySigner::from_slice(secret).map_err(|_| anyhow::anyhow!("not a valid secp256k1 key"))?)
            }
            KeyKind::Ed25519 => {
                let seed: [u8; 32] = secret.try_into().map_err(|_| anyhow::anyhow!("an ed25519 seed is 32 bytes"))?;
                Key::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed))
            }
        })
    }

    fn secret(&self) -> Vec<u8> {
        match self {
            Key::Secp256k1(k) => k.credential().to_bytes().to_vec(),
            Key::Ed25519(k) => k.to_bytes().to_vec(),
        }
    }

    /// The address in `family`'s form: EIP-55 hex (EVM), base58check of
    /// 0x41 ‖ 20 bytes (TRON), base58 of the public key (Solana).
    pub fn address(&self, family: Family) -> String {
        let facts = family.facts();
        match self {
            Key::Secp256k1(k) => facts.show_address(k.address().as_slice()),
            Key::Ed25519(k) => facts.show_address(k.verifying_key().as_bytes()),
        }
    }
}

pub use stablerail_types::facts::KeyKind;

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
        let f = family.facts().name;
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

/// The roles of the wallets the service itself holds, one each per family.
pub const SERVICE_ROLES: [Role; 3] = [Role::Relayer, Role::Collection, Role::Proxy];

/// The service's wallets for `families`, by name.
pub fn service_wallets(families: &[Family]) -> Vec<String> {
    families.iter().flat_map(|f| SERVICE_ROLES.iter().map(move |r| r.key_name(*f))).collect()
}

/// Is `name` one of the service's own wallets (of any family)?
pub fn is_service_wallet(name: &str) -> bool {
    let family = family_of(name);
    SERVICE_ROLES.iter().any(|r| r.key_name(family) == name)
}

/// Sealed with the key's name as associated data.
const BOUND: &str = "v2:";

/// The family a key belongs to, from its name's last part. A key imported
/// under a name of the operator's choosing is a secp256k1 key with an EVM
/// address.
pub fn family_of(name: &str) -> Family {
    name.rsplit(':').next().and_then(Family::named).unwrap_or(Family::Evm)
}

pub fn agent_key(agent_id: &str) -> String {
    Role::Agent(agent_id.to_string()).key_name(Family::Evm)
}

const INIT_HINT: &str = "run `stablerail keys init` with the same --config and --database first";

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
            crate::secret_file::write_private(master_key_file, &hex::encode(k))?;
        }
        Ok((Keystore::open(db, master_key_file)?, created))
    }

    fn seal(&self, name: &str, secret: &[u8]) -> String {
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        let ct = self.cipher.encrypt(&Nonce::from(nonce), Payload { msg: secret, aad: name.as_bytes() }).expect("AES-GCM seals any length");
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

    async fn stored(&self, name: &str) -> anyhow::Result<Option<Key>> {
        if let Some(k) = self.cache.lock().unwrap().get(name) {
            return Ok(Some(k.clone()));
        }
        let Some(sealed) = crate::store::keys::sealed(&self.db, name).await? else { return Ok(None) };
        let key = Key::from_secret(KeyKind::of(family_of(name)), &self.open_sealed(name, &sealed)?)?;
        self.cache.lock().unwrap().insert(name.to_string(), key.clone());
        Ok(Some(key))
    }

    /// Store `key` as `name`; `false` when that name is already taken.
    async fn insert(&self, name: &str, key: &Key) -> anyhow::Result<bool> {
        let address = key.address(family_of(name));
        let sealed = self.seal(name, &key.secret());
        match crate::store::keys::insert(&self.db, name, &address, &sealed, crate::clock::now_ms()).await {
            Ok(()) => Ok(true),
            Err(e) if e.is_duplicate() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The secp256k1 signer of `role` in `family` (EVM, TRON).
    pub async fn secp256k1(&self, role: &Role, family: Family) -> anyhow::Result<PrivateKeySigner> {
        anyhow::ensure!(KeyKind::of(family) == KeyKind::Secp256k1, "{family:?} wallets are not secp256k1 keys");
        self.signer(&role.key_name(family)).await
    }

    /// The ed25519 key of `role` in `family` (Solana).
    pub async fn ed25519(&self, role: &Role, family: Family) -> anyhow::Result<ed25519_dalek::SigningKey> {
        match self.key(&role.key_name(family)).await? {
            Key::Ed25519(k) => Ok(k),
            Key::Secp256k1(_) => anyhow::bail!("{family:?} wallets are not ed25519 keys"),
        }
    }

    /// The key called `name`, of the kind its family takes. A service
    /// wallet must exist already (`keys init`); an agent's hosted wallet is
    /// created on first use.
    pub async fn key(&self, name: &str) -> anyhow::Result<Key> {
        if let Some(k) = self.stored(name).await? {
            return Ok(k);
        }
        anyhow::ensure!(!is_service_wallet(name), "the service wallet `{name}` does not exist; {INIT_HINT}");
        // Another replica may create it at the same moment: theirs wins.
        self.insert(name, &Key::random(KeyKind::of(family_of(name)))).await?;
        self.stored(name).await?.ok_or_else(|| anyhow::anyhow!("wallet `{name}` vanished after creation"))
    }

    /// The secp256k1 signer called `name`.
    pub async fn signer(&self, name: &str) -> anyhow::Result<PrivateKeySigner> {
        match self.key(name).await? {
            Key::Secp256k1(k) => Ok(k),
            Key::Ed25519(_) => anyhow::bail!("`{name}` is an ed25519 key, not a secp256k1 signer"),
        }
    }

    /// Create `name` with a fresh key of its family's kind unless it
    /// exists; `true` if created.
    pub async fn ensure(&self, name: &str) -> anyhow::Result<bool> {
        if self.stored(name).await?.is_some() {
            return Ok(false);
        }
        self.insert(name, &Key::random(KeyKind::of(family_of(name)))).await
    }

    /// Store an existing key as `name`, of the kind its family takes
    /// (secp256k1 scalar, or ed25519 seed for `…:solana`), hex. Refuses a
    /// name in use. Returns the address.
    pub async fn import(&self, name: &str, private_key_hex: &str) -> anyhow::Result<String> {
        let bytes =
            hex::decode(private_key_hex.trim().trim_start_matches("0x")).map_err(|_| anyhow::anyhow!("the private key is not hex"))?;
        let kind = KeyKind::of(family_of(name));
        let key = Key::from_secret(kind, &bytes).map_err(|e| anyhow::anyhow!("the private key is {e}"))?;
        anyhow::ensure!(self.insert(name, &key).await?, "a key named `{name}` exists already; import under a new name or keep it");
        Ok(key.address(family_of(name)))
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

    /// Service wallets of `families` that do not exist yet.
    pub async fn missing_service_wallets(&self, families: &[Family]) -> anyhow::Result<Vec<String>> {
        let mut missing = Vec::new();
        for name in service_wallets(families) {
            if self.stored(&name).await?.is_none() {
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
        Ok(self.key(name).await?.address(family_of(name)))
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

impl Initialized {
    /// A service wallet's address ("" when this run has no such wallet).
    pub fn wallet(&self, name: &str) -> String {
        self.wallets.iter().find(|w| w.name == name).map(|w| w.address.clone()).unwrap_or_default()
    }

    /// What `devnet/setup/up.mjs` funds, per family: each relayer and proxy gets
    /// the native coin (the proxy pays merchants and, on Permit2 chains,
    /// approves Permit2 once), each proxy the devnet's tokens, and the
    /// Solana collection wallet its token accounts.
    pub fn devnet_funding_args(&self) -> Vec<String> {
        let [relayer, proxy] = [RELAYER, PROXY].map(|n| self.wallet(n));
        let [sol_relayer, sol_proxy, sol_collection] = ["relayer:solana", "proxy:solana", "collection:solana"].map(|n| self.wallet(n));
        let [tron_relayer, tron_proxy] = ["relayer:tron", "proxy:tron"].map(|n| self.wallet(n));
        [
            ("--gas", format!("{relayer},{proxy}")),
            ("--tokens", proxy),
            ("--sol-gas", format!("{sol_relayer},{sol_proxy}")),
            ("--sol-tokens", sol_proxy),
            ("--sol-accounts", sol_collection),
            ("--tron-gas", format!("{tron_relayer},{tron_proxy}")),
            ("--tron-tokens", tron_proxy),
        ]
        .into_iter()
        .flat_map(|(flag, value)| [flag.to_string(), value])
        .collect()
    }
}

#[derive(Debug, serde::Serialize)]
pub struct InitWallet {
    pub name: String,
    pub address: String,
    pub created: bool,
}

/// Create what is missing (master key file, pepper file, the service
/// wallets of `families`) and keep what exists; safe to run again.
pub async fn init(master_key_file: &Path, pepper_file: &Path, db: Db, families: &[Family]) -> anyhow::Result<Initialized> {
    let said = |created: bool| if created { "created" } else { "kept" };
    let (keys, master_created) = Keystore::create(db, master_key_file)?;
    let pepper_created = stablerail_types::pepper::Pepper::create(pepper_file)?;
    let mut wallets = Vec::new();
    for name in service_wallets(families) {
        let created = keys.ensure(&name).await?;
        wallets.push(InitWallet { address: keys.address(&name).await?, name, created });
    }
    let rebound = keys.bind_names().await?;
    Ok(Initialized { master_key: said(master_created), pepper: said(pepper_created), wallets, rebound })
}
