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
use stablerail_types::crypto::{Ed25519Key, Secp256k1Key};

use crate::config::Family;
use crate::db::Db;

pub struct Keystore {
    db: Db,
    /// The master key, and the next one first while `keys rotate-master`
    /// runs (new keys are sealed under the newest; either opens). Read
    /// again from the files before a new key is sealed and when a key does
    /// not open, so a running service follows a rotation.
    ciphers: std::sync::RwLock<Ciphers>,
    /// The master key's file; `None` when it comes from the environment.
    master_file: Option<std::path::PathBuf>,
    cache: Mutex<HashMap<String, Key>>,
    /// The hardware module and the roles whose new keys it makes.
    held: Option<crate::family::module::Held>,
}

/// A wallet's key, of its family's kind.
#[derive(Clone)]
pub enum Key {
    Secp256k1(Secp256k1Key),
    Ed25519(Ed25519Key),
}

impl Key {
    fn random(kind: KeyKind) -> Key {
        match kind {
            KeyKind::Secp256k1 => Key::Secp256k1(Secp256k1Key::Local(PrivateKeySigner::random())),
            KeyKind::Ed25519 => {
                let mut seed = [0u8; 32];
                rand::thread_rng().fill_bytes(&mut seed);
                Key::Ed25519(Ed25519Key::Local(ed25519_dalek::SigningKey::from_bytes(&seed)))
            }
        }
    }

    /// A key of `kind` from its secret: a secp256k1 scalar or an ed25519 seed, 32 bytes each.
    fn from_secret(kind: KeyKind, secret: &[u8]) -> anyhow::Result<Key> {
        Ok(match kind {
            KeyKind::Secp256k1 => Key::Secp256k1(Secp256k1Key::Local(
                PrivateKeySigner::from_slice(secret).map_err(|_| anyhow::anyhow!("not a valid secp256k1 key"))?,
            )),
            KeyKind::Ed25519 => {
                let seed: [u8; 32] = secret.try_into().map_err(|_| anyhow::anyhow!("an ed25519 seed is 32 bytes"))?;
                Key::Ed25519(Ed25519Key::Local(ed25519_dalek::SigningKey::from_bytes(&seed)))
            }
        })
    }

    fn held(kind: KeyKind, key: std::sync::Arc<dyn stablerail_types::crypto::HeldKey>) -> Key {
        match kind {
            KeyKind::Secp256k1 => Key::Secp256k1(Secp256k1Key::Held(key)),
            KeyKind::Ed25519 => Key::Ed25519(Ed25519Key::Held(key)),
        }
    }

    /// The secret to seal; `None` for a key held in a module.
    fn secret(&self) -> Option<Vec<u8>> {
        match self {
            Key::Secp256k1(Secp256k1Key::Local(k)) => Some(k.credential().to_bytes().to_vec()),
            Key::Ed25519(Ed25519Key::Local(k)) => Some(k.to_bytes().to_vec()),
            _ => None,
        }
    }

    /// The address in `family`'s form: EIP-55 hex (EVM), base58check of
    /// 0x41 ‖ 20 bytes (TRON), base58 of the public key (Solana).
    pub fn address(&self, family: Family) -> String {
        let facts = family.facts();
        match self {
            Key::Secp256k1(k) => facts.show_address(k.address().as_slice()),
            Key::Ed25519(k) => facts.show_address(&k.public()),
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
/// Not sealed here: held in the hardware module under this id (hex).
const HELD: &str = "held:";

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

/// Where `keys rotate-master` keeps the next master key until every key
/// is sealed under it.
pub fn next_master_file(master_key_file: &Path) -> std::path::PathBuf {
    let mut name = master_key_file.as_os_str().to_owned();
    name.push(".next");
    name.into()
}

/// The master keys a keystore holds, newest first.
struct Ciphers {
    keys: Vec<Vec<u8>>,
    ciphers: Vec<Aes256Gcm>,
}

impl Ciphers {
    /// The master key (from the environment or its file) and, beside a
    /// file, the next one.
    fn read(master_key_file: &Path) -> anyhow::Result<Ciphers> {
        let key = master_key(master_key_file)?.ok_or_else(|| {
            anyhow::anyhow!("no master key: {} does not exist and STABLERAIL_MASTER_KEY is not set; {INIT_HINT}", master_key_file.display())
        })?;
        let mut keys = vec![key];
        if std::env::var_os("STABLERAIL_MASTER_KEY").is_none() {
            if let Some(next) = master_key(&next_master_file(master_key_file))? {
                keys.insert(0, next);
            }
        }
        let ciphers = keys.iter().map(|k| Aes256Gcm::new_from_slice(k)).collect::<Result<_, _>>()?;
        Ok(Ciphers { keys, ciphers })
    }
}

impl Keystore {
    /// The keystore under an existing master key (and the next one, when a
    /// rotation is under way).
    pub fn open(db: Db, master_key_file: &Path) -> anyhow::Result<Keystore> {
        let ciphers = std::sync::RwLock::new(Ciphers::read(master_key_file)?);
        let master_file = std::env::var_os("STABLERAIL_MASTER_KEY").is_none().then(|| master_key_file.to_path_buf());
        Ok(Keystore { db, ciphers, master_file, cache: Mutex::new(HashMap::new()), held: None })
    }

    /// Read the key files again (a rotation may have begun or ended).
    fn reload(&self) -> anyhow::Result<()> {
        if let Some(file) = &self.master_file {
            let fresh = Ciphers::read(file)?;
            let mut held = self.ciphers.write().unwrap();
            if held.keys != fresh.keys {
                *held = fresh;
            }
        }
        Ok(())
    }

    /// New keys of the module's roles are made in it, and keys it holds are
    /// found in it.
    pub fn holding(mut self, held: Option<crate::family::module::Held>) -> Keystore {
        self.held = held;
        self
    }

    /// The module's handle on the key pair of `name` (for checks).
    pub async fn held_id(&self, name: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let sealed = crate::store::keys::sealed(&self.db, name).await?;
        Ok(sealed.as_deref().and_then(|s| s.strip_prefix(HELD)).and_then(|h| hex::decode(h).ok()))
    }

    /// Re-seal every key the old master key sealed under the next one: a
    /// compare-and-set each, so a run killed half-way and run again does
    /// the rest, and every key opens under one of the two all along.
    /// `pause` between keys (a test's way to stop it half-way).
    ///
    /// Passes run until one finds every key under the next key already (a
    /// key another process sealed under the old key meanwhile is caught by
    /// the next pass). `next` is the key this run wrote or found: the
    /// keystore must hold it, or another run replaced it.
    pub async fn reseal_under_next(&self, next: &[u8], pause: std::time::Duration) -> anyhow::Result<(usize, usize)> {
        {
            let c = self.ciphers.read().unwrap();
            anyhow::ensure!(c.keys.len() == 2 && c.keys[0] == next, "the next master key changed under this run");
        }
        let (mut resealed, mut already) = (0, 0);
        let mut first = true;
        loop {
            let mut moved = 0;
            for (name, sealed) in crate::store::keys::all_sealed(&self.db).await? {
                if sealed.starts_with(HELD) {
                    continue;
                }
                let under_next = {
                    let c = self.ciphers.read().unwrap();
                    self.open_with(&c.ciphers[0], &name, &sealed).is_ok()
                };
                if under_next {
                    already += usize::from(first);
                    continue;
                }
                let secret = self.open_sealed(&name, &sealed)?;
                // Lost to another writer of this row: the next pass reads it again.
                if crate::store::keys::reseal(&self.db, &name, &sealed, &self.seal(&name, &secret)).await? {
                    resealed += 1;
                }
                moved += 1;
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
            if moved == 0 {
                return Ok((resealed, already));
            }
            first = false;
        }
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
        // Under the newest key (the next one, while a rotation runs).
        let ct = self.ciphers.read().unwrap().ciphers[0]
            .encrypt(&Nonce::from(nonce), Payload { msg: secret, aad: name.as_bytes() })
            .expect("AES-GCM seals any length");
        format!("{BOUND}{}", hex::encode([nonce.as_slice(), &ct].concat()))
    }

    /// Keys sealed before names were bound (no prefix) open without
    /// associated data; `keys init` re-seals them bound.
    fn open_sealed(&self, name: &str, sealed: &str) -> anyhow::Result<Vec<u8>> {
        let opened = || self.ciphers.read().unwrap().ciphers.iter().find_map(|c| self.open_with(c, name, sealed).ok());
        // Not under the keys read at start: a rotation may have moved it.
        let opened = opened().or_else(|| self.reload().ok().and_then(|_| opened()));
        opened.ok_or_else(|| anyhow::anyhow!("the key `{name}` does not open with this master key (or was stored under another name)"))
    }

    fn open_with(&self, cipher: &Aes256Gcm, name: &str, sealed: &str) -> anyhow::Result<Vec<u8>> {
        let (text, aad) = match sealed.strip_prefix(BOUND) {
            Some(rest) => (rest, name.as_bytes()),
            None => (sealed, &b""[..]),
        };
        let bytes = hex::decode(text)?;
        anyhow::ensure!(bytes.len() > 12, "sealed key `{name}` is too short");
        let nonce: [u8; 12] = bytes[..12].try_into()?;
        cipher.decrypt(&Nonce::from(nonce), Payload { msg: &bytes[12..], aad }).map_err(|_| anyhow::anyhow!("does not open"))
    }

    async fn stored(&self, name: &str) -> anyhow::Result<Option<Key>> {
        if let Some(k) = self.cache.lock().unwrap().get(name) {
            return Ok(Some(k.clone()));
        }
        let Some(sealed) = crate::store::keys::sealed(&self.db, name).await? else { return Ok(None) };
        let kind = KeyKind::of(family_of(name));
        let key = match sealed.strip_prefix(HELD) {
            Some(id) => {
                let held = self
                    .held
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("the key `{name}` is held in a hardware module, and no [hsm] module is configured"))?;
                let key = Key::held(kind, held.key(kind, &hex::decode(id)?)?);
                // The row's address is what the service was funded at: the
                // module's key must be that one.
                let want = crate::store::keys::address_of(&self.db, name).await?;
                anyhow::ensure!(
                    want.as_deref() == Some(key.address(family_of(name)).as_str()),
                    "the module's key for `{name}` is not the stored one"
                );
                key
            }
            None => Key::from_secret(kind, &self.open_sealed(name, &sealed)?)?,
        };
        self.cache.lock().unwrap().insert(name.to_string(), key.clone());
        Ok(Some(key))
    }

    /// Store `key` as `name`; `false` when that name is already taken.
    async fn insert(&self, name: &str, key: &Key) -> anyhow::Result<bool> {
        // Sealed under the newest key on disk, however long this process ran.
        self.reload()?;
        let address = key.address(family_of(name));
        let sealed = match key.secret() {
            Some(secret) => self.seal(name, &secret),
            None => anyhow::bail!("a held key is stored by `insert_held`"),
        };
        match crate::store::keys::insert(&self.db, name, &address, &sealed, crate::clock::now_ms()).await {
            Ok(()) => Ok(true),
            Err(e) if e.is_duplicate() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The secp256k1 signer of `role` in `family` (EVM, TRON).
    pub async fn secp256k1(&self, role: &Role, family: Family) -> anyhow::Result<Secp256k1Key> {
        anyhow::ensure!(KeyKind::of(family) == KeyKind::Secp256k1, "{family:?} wallets are not secp256k1 keys");
        self.signer(&role.key_name(family)).await
    }

    /// The ed25519 key of `role` in `family` (Solana).
    pub async fn ed25519(&self, role: &Role, family: Family) -> anyhow::Result<Ed25519Key> {
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
        self.create_new(name).await?;
        self.stored(name).await?.ok_or_else(|| anyhow::anyhow!("wallet `{name}` vanished after creation"))
    }

    /// The secp256k1 signer called `name`.
    pub async fn signer(&self, name: &str) -> anyhow::Result<Secp256k1Key> {
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
        self.create_new(name).await
    }

    /// A new key for `name`: in the module when its role is held there
    /// (generated inside, never leaving it), else here, sealed. `false`
    /// when another made `name` first (a module key made for nothing is
    /// destroyed).
    async fn create_new(&self, name: &str) -> anyhow::Result<bool> {
        let kind = KeyKind::of(family_of(name));
        let Some(held) = self.held.as_ref().filter(|h| h.holds(name)) else {
            return self.insert(name, &Key::random(kind)).await;
        };
        let (id, key) = held.generate(kind, name)?;
        let key = Key::held(kind, key);
        // It signs as its public point says before its address is given out
        // (both signers check what the module answers).
        let probe = alloy_primitives::keccak256(b"stablerail: a new held key");
        match &key {
            Key::Secp256k1(k) => stablerail_types::crypto::secp256k1_sign(k, &probe).map(|_| ())?,
            Key::Ed25519(k) => stablerail_types::crypto::ed25519_sign(k, probe.as_slice()).map(|_| ())?,
        }
        let address = key.address(family_of(name));
        let row = format!("{HELD}{}", hex::encode(&id));
        match crate::store::keys::insert(&self.db, name, &address, &row, crate::clock::now_ms()).await {
            Ok(()) => Ok(true),
            Err(e) if e.is_duplicate() => {
                // Another made it first; ours is garbage in the module.
                if let Err(e) = held.destroy(&id) {
                    tracing::warn!(key = name, error = %e, "a held key made for nothing could not be destroyed");
                }
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
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
            if !sealed.starts_with(BOUND) && !sealed.starts_with(HELD) {
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
    pub async fn signer_by_address(&self, address: &str) -> anyhow::Result<Option<Secp256k1Key>> {
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
/// Keys of the roles `held` names are made inside its module.
pub async fn init(
    master_key_file: &Path,
    pepper_file: &Path,
    db: Db,
    families: &[Family],
    held: Option<crate::family::module::Held>,
) -> anyhow::Result<Initialized> {
    let said = |created: bool| if created { "created" } else { "kept" };
    let (keys, master_created) = Keystore::create(db, master_key_file)?;
    let keys = keys.holding(held);
    let pepper_created = stablerail_types::pepper::Pepper::create(pepper_file)?;
    let mut wallets = Vec::new();
    for name in service_wallets(families) {
        let created = keys.ensure(&name).await?;
        wallets.push(InitWallet { address: keys.address(&name).await?, name, created });
    }
    let rebound = keys.bind_names().await?;
    Ok(Initialized { master_key: said(master_created), pepper: said(pepper_created), wallets, rebound })
}

/// What `keys rotate-master` did.
#[derive(Debug, serde::Serialize)]
pub struct Rotated {
    /// Keys re-sealed by this run.
    pub resealed: usize,
    /// Keys an interrupted run had re-sealed already.
    pub already: usize,
}

/// Seal every local key under a new master key, then make it the master
/// key (the old one is overwritten). The next key is written first, whole
/// (a temporary file renamed), as `<master>.next`; while it exists every
/// keystore opens keys under either and seals new ones under it, so a run
/// killed at any point leaves every key usable, and running it again
/// finishes with the same next key. Keys held in a module are not sealed
/// here and are left alone.
pub async fn rotate_master(db: Db, master_key_file: &Path, pause: std::time::Duration) -> anyhow::Result<Rotated> {
    anyhow::ensure!(
        std::env::var_os("STABLERAIL_MASTER_KEY").is_none(),
        "the master key comes from STABLERAIL_MASTER_KEY: rotate it where it is kept (a file-kept key is rotated here)"
    );
    anyhow::ensure!(master_key(master_key_file)?.is_some(), "no master key at {}; {INIT_HINT}", master_key_file.display());
    // One run at a time (the lock ends with the process, however it ends).
    let mut lock_name = master_key_file.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(std::path::PathBuf::from(lock_name))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!("another `keys rotate-master` is running on this master key"),
        Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
    }
    let next = next_master_file(master_key_file);
    if master_key(&next)?.is_none() {
        let mut k = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut k);
        let partial = next.with_extension("next.partial");
        let _ = std::fs::remove_file(&partial);
        crate::secret_file::write_private(&partial, &hex::encode(k))?;
        std::fs::File::open(&partial)?.sync_all()?;
        // A link, not a rename: an existing next key is never replaced.
        std::fs::hard_link(&partial, &next)?;
        std::fs::remove_file(&partial)?;
        sync_dir(master_key_file)?;
    }
    let next_key = master_key(&next)?.ok_or_else(|| anyhow::anyhow!("the next master key vanished"))?;
    let keys = Keystore::open(db, master_key_file)?;
    let (resealed, already) = keys.reseal_under_next(&next_key, pause).await?;
    anyhow::ensure!(master_key(&next)?.as_deref() == Some(next_key.as_slice()), "the next master key changed under this run");
    std::fs::rename(&next, master_key_file)?;
    sync_dir(master_key_file)?;
    Ok(Rotated { resealed, already })
}

/// A rename is durable once its folder is.
fn sync_dir(file: &Path) -> anyhow::Result<()> {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}
