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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evm_case_insensitive_others_exact() {
        let dir = tempfile::tempdir().unwrap();
        let txt = dir.path().join("a.txt");
        std::fs::write(&txt, "# OFAC\n0xAbCdEf0000000000000000000000000000000001\nTR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t # usdt\n\n").unwrap();
        let json = dir.path().join("b.json");
        std::fs::write(&json, r#"["EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"]"#).unwrap();
        let l = SanctionsList::load(&[txt, json]).unwrap();
        assert_eq!(l.len(), 3);
        assert!(l.is_listed("0xabcdef0000000000000000000000000000000001"));
        assert!(l.is_listed("0xABCDEF0000000000000000000000000000000001"));
        assert!(l.is_listed("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"));
        assert!(!l.is_listed("tr7nhqjekqxgtci8q8zy4pl8otszgjlj6t"));
        assert!(l.is_listed("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"));
        assert!(!l.is_listed("0x0000000000000000000000000000000000000001"));
    }
}
