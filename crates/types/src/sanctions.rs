//! Sanctions screening against address lists loaded at start-up.

use std::collections::HashSet;
use std::path::Path;

#[derive(Debug, Default)]
pub struct SanctionsList {
    entries: HashSet<String>,
}

impl SanctionsList {
    /// Each file is one address per line (`#` starts a comment) or a JSON
    /// array of strings. A file may mix address families.
    pub fn load(files: &[impl AsRef<Path>]) -> anyhow::Result<SanctionsList> {
        let mut entries = HashSet::new();
        for f in files {
            let f = f.as_ref();
            let text = std::fs::read_to_string(f).map_err(|e| anyhow::anyhow!("sanctions list {}: {e}", f.display()))?;
            let items: Vec<String> = if text.trim_start().starts_with('[') {
                serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("sanctions list {}: {e}", f.display()))?
            } else {
                text.lines().map(|l| l.split('#').next().unwrap_or("").trim().to_string()).collect()
            };
            entries.extend(items.iter().map(|a| normalize(a)).filter(|a| !a.is_empty()));
        }
        Ok(SanctionsList { entries })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn is_listed(&self, address: &str) -> bool {
        self.entries.contains(&normalize(address))
    }
}

/// EVM addresses compare case-insensitively; TRON and Solana are case-sensitive.
fn normalize(a: &str) -> String {
    let a = a.trim();
    if a.len() == 42 && (a.starts_with("0x") || a.starts_with("0X")) {
        a.to_ascii_lowercase()
    } else {
        a.to_string()
    }
}
