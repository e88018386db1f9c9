//! Keys in a hardware module, through PKCS#11 (`cryptoki`): generated inside
//! the token (sensitive, never extractable), found again by their id, and
//! asked to sign. The private half never leaves the module; the keystore
//! keeps only the key's id and address.
//!
//! secp256k1: the module signs a 32-byte prehash (`CKM_ECDSA`) and answers
//! r ‖ s; the signature is brought to the low `s` Ethereum and TRON require
//! and its recovery id found against the key's own public point. Ed25519:
//! `CKM_EDDSA`, 64 bytes as Solana takes them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::types::AuthPin;

use crate::crypto::HeldKey;
use stablerail_types::facts::KeyKind;

/// DER of the curves' object identifiers (`CKA_EC_PARAMS`).
const SECP256K1: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a];
const ED25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];

/// One logged-in session on the operator's token. PKCS#11 sessions are
/// not for two threads at once: signing takes turns (a module signs in
/// well under a millisecond; a busy one is the operator's to size).
pub struct Module {
    session: Mutex<Session>,
    /// Kept alive as long as the session.
    _context: Pkcs11,
}

/// What the module says of a key's private half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guarded {
    pub sensitive: bool,
    pub extractable: bool,
    pub never_extractable: bool,
}

impl Module {
    /// Load `library`, find the token labelled `token`, log in as its user.
    pub fn open(library: &Path, token: &str, pin: &str) -> anyhow::Result<Module> {
        let context = Pkcs11::new(library).map_err(|e| anyhow::anyhow!("PKCS#11 module {}: {e}", library.display()))?;
        context.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))?;
        let slot = context
            .get_slots_with_token()?
            .into_iter()
            .find(|s| context.get_token_info(*s).is_ok_and(|i| i.label().trim_end() == token))
            .ok_or_else(|| anyhow::anyhow!("no token labelled `{token}` in {}", library.display()))?;
        let session = context.open_rw_session(slot)?;
        session.login(UserType::User, Some(&AuthPin::new(pin.into()))).map_err(|e| anyhow::anyhow!("logging in to `{token}`: {e}"))?;
        Ok(Module { session: Mutex::new(session), _context: context })
    }

    /// A new key pair of `kind` inside the module, labelled `label`, under a
    /// fresh random id; its id and public key (secp256k1: the 65-byte
    /// uncompressed point; Ed25519: 32 bytes).
    pub fn generate(&self, kind: KeyKind, label: &str) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
        let mut id = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::thread_rng(), &mut id);
        let (mechanism, params, key_type) = match kind {
            KeyKind::Secp256k1 => (Mechanism::EccKeyPairGen, SECP256K1, KeyType::EC),
            KeyKind::Ed25519 => (Mechanism::EccEdwardsKeyPairGen, ED25519, KeyType::EC_EDWARDS),
        };
        let public = [
            Attribute::Token(true),
            Attribute::Private(false),
            Attribute::Verify(true),
            Attribute::EcParams(params.to_vec()),
            Attribute::KeyType(key_type),
            Attribute::Id(id.to_vec()),
            Attribute::Label(label.as_bytes().to_vec()),
        ];
        let private = [
            Attribute::Token(true),
            Attribute::Private(true),
            Attribute::Sign(true),
            Attribute::Sensitive(true),
            Attribute::Extractable(false),
            Attribute::KeyType(key_type),
            Attribute::Id(id.to_vec()),
            Attribute::Label(label.as_bytes().to_vec()),
        ];
        let session = self.session.lock().unwrap();
        let (public, _) = session.generate_key_pair(&mechanism, &public, &private)?;
        let point = ec_point(&session, public)?;
        Ok((id.to_vec(), public_key(kind, &point)?))
    }

    /// The public key of the key pair `id`.
    pub fn public_key(&self, kind: KeyKind, id: &[u8]) -> anyhow::Result<Vec<u8>> {
        let session = self.session.lock().unwrap();
        let handle = find(&session, ObjectClass::PUBLIC_KEY, id)?;
        public_key(kind, &ec_point(&session, handle)?)
    }

    /// Sign with the private key `id`: a secp256k1 prehash (r ‖ s as the
    /// module made it) or an Ed25519 message.
    pub fn sign(&self, kind: KeyKind, id: &[u8], data: &[u8]) -> anyhow::Result<Vec<u8>> {
        let session = self.session.lock().unwrap();
        let key = find(&session, ObjectClass::PRIVATE_KEY, id)?;
        let mechanism = match kind {
            KeyKind::Secp256k1 => Mechanism::Ecdsa,
            KeyKind::Ed25519 => Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure)),
        };
        Ok(session.sign(&mechanism, key, data)?)
    }

    /// Remove the key pair `id` (one this process made and could not keep).
    pub fn destroy(&self, id: &[u8]) -> anyhow::Result<()> {
        let session = self.session.lock().unwrap();
        for class in [ObjectClass::PRIVATE_KEY, ObjectClass::PUBLIC_KEY] {
            if let Ok(handle) = find(&session, class, id) {
                session.destroy_object(handle)?;
            }
        }
        Ok(())
    }

    /// How the module guards the private half of `id`.
    pub fn guarded(&self, id: &[u8]) -> anyhow::Result<Guarded> {
        let session = self.session.lock().unwrap();
        let key = find(&session, ObjectClass::PRIVATE_KEY, id)?;
        let wanted = [AttributeType::Sensitive, AttributeType::Extractable, AttributeType::NeverExtractable];
        let mut g = Guarded { sensitive: false, extractable: true, never_extractable: false };
        for a in session.get_attributes(key, &wanted)? {
            match a {
                Attribute::Sensitive(v) => g.sensitive = v,
                Attribute::Extractable(v) => g.extractable = v,
                Attribute::NeverExtractable(v) => g.never_extractable = v,
                _ => {}
            }
        }
        Ok(g)
    }

    /// Ask for the private value of `id` as an attacker would: `true` if
    /// the module gave it.
    pub fn gives_private_value(&self, id: &[u8]) -> bool {
        let session = self.session.lock().unwrap();
        let Ok(key) = find(&session, ObjectClass::PRIVATE_KEY, id) else { return false };
        session
            .get_attributes(key, &[AttributeType::Value])
            .is_ok_and(|a| a.iter().any(|a| matches!(a, Attribute::Value(v) if !v.is_empty())))
    }
}

fn find(session: &Session, class: ObjectClass, id: &[u8]) -> anyhow::Result<ObjectHandle> {
    let found = session.find_objects(&[Attribute::Class(class), Attribute::Id(id.to_vec())])?;
    match found.as_slice() {
        [one] => Ok(*one),
        [] => anyhow::bail!("the module holds no key with id {}", hex::encode(id)),
        _ => anyhow::bail!("the module holds {} keys with id {}", found.len(), hex::encode(id)),
    }
}

fn ec_point(session: &Session, public: ObjectHandle) -> anyhow::Result<Vec<u8>> {
    for a in session.get_attributes(public, &[AttributeType::EcPoint])? {
        if let Attribute::EcPoint(p) = a {
            return Ok(p);
        }
    }
    anyhow::bail!("the module gave no public point")
}

/// `CKA_EC_POINT` is a DER OCTET STRING around the point (some modules give
/// the point bare): the 65-byte uncompressed secp256k1 point, or the 32
/// bytes of an Ed25519 key.
fn public_key(kind: KeyKind, der: &[u8]) -> anyhow::Result<Vec<u8>> {
    let want = match kind {
        KeyKind::Secp256k1 => 65,
        KeyKind::Ed25519 => 32,
    };
    let bare = match der {
        [0x04, len, rest @ ..] if usize::from(*len) == want && rest.len() == want => rest,
        [0x04, 0x81, len, rest @ ..] if usize::from(*len) == want && rest.len() == want => rest,
        bare if bare.len() == want => bare,
        _ => anyhow::bail!("the module's public point is not a {kind:?} key ({} bytes)", der.len()),
    };
    if kind == KeyKind::Secp256k1 {
        anyhow::ensure!(bare[0] == 0x04, "the module's secp256k1 point is not uncompressed");
    }
    Ok(bare.to_vec())
}

/// The module, and the roles whose new keys it makes.
#[derive(Clone)]
pub struct Held {
    module: Arc<Module>,
    roles: Vec<String>,
}

/// Modules opened in this process, by library and token: PKCS#11 is
/// initialized once per process.
static OPENED: Mutex<Option<Opened>> = Mutex::new(None);

/// Modules by (library, token label).
type Opened = HashMap<(std::path::PathBuf, String), Arc<Module>>;

impl Held {
    /// The config's `[hsm]`, opened; `None` when it names no module. The
    /// PIN is `STABLERAIL_HSM_PIN`, else the file `pin_file`.
    pub fn from_config(cfg: &crate::config::Config) -> anyhow::Result<Option<Held>> {
        Held::open(&cfg.hsm, &|p: &Path| cfg.resolve(p))
    }

    /// `[hsm]` opened, its files resolved by `resolve`.
    pub fn open(h: &crate::config::Hsm, resolve: &dyn Fn(&Path) -> std::path::PathBuf) -> anyhow::Result<Option<Held>> {
        let Some(library) = &h.module else { return Ok(None) };
        let pin = match std::env::var("STABLERAIL_HSM_PIN") {
            Ok(pin) => pin,
            Err(_) => {
                let file = h.pin_file.as_ref().ok_or_else(|| anyhow::anyhow!("hsm: set STABLERAIL_HSM_PIN or hsm.pin_file"))?;
                let file = resolve(file);
                std::fs::read_to_string(&file).map_err(|e| anyhow::anyhow!("hsm.pin_file {}: {e}", file.display()))?.trim().to_string()
            }
        };
        let mut opened = OPENED.lock().unwrap();
        let key = (library.clone(), h.token.clone());
        let module = match opened.get_or_insert_with(HashMap::new).get(&key) {
            Some(m) => m.clone(),
            None => {
                let m = Arc::new(Module::open(library, &h.token, &pin)?);
                opened.as_mut().expect("set above").insert(key, m.clone());
                m
            }
        };
        Ok(Some(Held { module, roles: h.roles.clone() }))
    }

    /// Does the module make `name`'s key? By its role: `relayer:…`,
    /// `proxy:…`, `collection:…`, or `agent:…` for `agents`.
    pub fn holds(&self, name: &str) -> bool {
        let role = match name.split(':').next() {
            Some("agent") => "agents",
            Some(r) => r,
            None => return false,
        };
        self.roles.iter().any(|r| r == role)
    }

    pub fn module(&self) -> &Module {
        &self.module
    }

    /// A new key for `label`, made inside the module: its id and the key.
    pub fn generate(&self, kind: KeyKind, label: &str) -> anyhow::Result<(Vec<u8>, Arc<dyn HeldKey>)> {
        let (id, public) = self.module.generate(kind, label)?;
        Ok((id.clone(), self.pair(kind, id, public)))
    }

    /// The key the module holds under `id`.
    pub fn key(&self, kind: KeyKind, id: &[u8]) -> anyhow::Result<Arc<dyn HeldKey>> {
        let public = self.module.public_key(kind, id)?;
        Ok(self.pair(kind, id.to_vec(), public))
    }

    pub fn destroy(&self, id: &[u8]) -> anyhow::Result<()> {
        self.module.destroy(id)
    }

    fn pair(&self, kind: KeyKind, id: Vec<u8>, public: Vec<u8>) -> Arc<dyn HeldKey> {
        Arc::new(Pair { module: self.module.clone(), kind, id, public })
    }
}

/// One key pair in the module, as the signers see it.
struct Pair {
    module: Arc<Module>,
    kind: KeyKind,
    id: Vec<u8>,
    public: Vec<u8>,
}

impl HeldKey for Pair {
    fn public(&self) -> &[u8] {
        &self.public
    }

    fn sign(&self, data: &[u8]) -> anyhow::Result<Vec<u8>> {
        self.module.sign(self.kind, &self.id, data)
    }
}
