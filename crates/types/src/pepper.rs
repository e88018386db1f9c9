//! The server-side pepper: the HMAC key agent secrets are hashed under
//! (only the MAC is stored), from `STABLERAIL_PEPPER` or its file.

use std::path::Path;

use hmac::{Hmac, Mac};
use rand::Rng;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

#[derive(Clone)]
pub struct Pepper(Vec<u8>);

impl Pepper {
    /// `STABLERAIL_PEPPER` if set, else the pepper file, which `keys init`
    /// creates.
    pub fn load(file: &Path) -> anyhow::Result<Pepper> {
        Pepper::read(file)?.ok_or_else(|| {
            anyhow::anyhow!(
                "no pepper: {} does not exist and STABLERAIL_PEPPER is not set; run `stablerail keys init` with the same --config first",
                file.display()
            )
        })
    }

    fn read(file: &Path) -> anyhow::Result<Option<Pepper>> {
        if let Ok(p) = std::env::var("STABLERAIL_PEPPER") {
            anyhow::ensure!(p.len() >= 16, "STABLERAIL_PEPPER must be at least 16 characters");
            return Ok(Some(Pepper(p.into_bytes())));
        }
        match std::fs::read_to_string(file) {
            Ok(text) => Ok(Some(Pepper(hex::decode(text.trim()).map_err(|_| anyhow::anyhow!("{} is not hex", file.display()))?))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", file.display())),
        }
    }

    /// Create the pepper file (32 random bytes, owner-only) unless a pepper
    /// exists; `true` if it was created.
    pub fn create(file: &Path) -> anyhow::Result<bool> {
        if Pepper::read(file)?.is_some() {
            return Ok(false);
        }
        let bytes: [u8; 32] = rand::thread_rng().gen();
        crate::secret_file::write_private(file, &hex::encode(bytes))?;
        Ok(true)
    }

    pub fn from_bytes(bytes: &[u8]) -> Pepper {
        Pepper(bytes.to_vec())
    }

    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.0).expect("HMAC takes keys of any length")
    }

    pub fn hash(&self, secret: &str) -> String {
        let mut m = self.mac();
        m.update(secret.as_bytes());
        hex::encode(m.finalize().into_bytes())
    }

    /// Constant-time comparison of `secret` against a stored MAC.
    pub fn verify(&self, secret: &str, stored_hex: &str) -> bool {
        let Ok(stored) = hex::decode(stored_hex) else { return false };
        let mut m = self.mac();
        m.update(secret.as_bytes());
        m.verify_slice(&stored).is_ok()
    }
}
