//! One way to write and change a test's `chains.toml`: TOML fragments
//! merged table by table over the suite's header, and settings changed in a
//! written file by key rather than by editing its text.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// A config under construction. Starts from the suite's header: every
/// adapter the suite builds, generous fuel, and the suite's adapter cache.
pub struct TestConfig(Table);

impl Default for TestConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl TestConfig {
    pub fn new() -> Self {
        let header = r#"
[service]
adapter_fuel = 200000000
adapter_memory_mib = 32

[adapters]
eip3009 = "eip3009.wasm"
misbehave = "misbehave.wasm"
lab-v1 = "lab_v1.wasm"
lab-v2 = "lab_v2.wasm"
lab-v4 = "lab_v4.wasm"
lab-v5 = "lab_v5.wasm"
lab-v6 = "lab_v6.wasm"
"#;
        TestConfig(Table::new())
            .with(header)
            .set("service.adapters_dir", super::adapters_dir().display().to_string())
            .set("service.cache_dir", super::adapter_cache_dir().display().to_string())
    }

    /// Merge a TOML fragment: tables merge key by key, a later value wins.
    pub fn with(mut self, fragment: &str) -> Self {
        let more: Table = fragment.parse().unwrap_or_else(|e| panic!("a test's TOML fragment parses: {e}\n{fragment}"));
        merge(&mut self.0, more);
        self
    }

    /// Set one dotted key (`service.execute_wait_seconds`).
    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        set_key(&mut self.0, key, value.into());
        self
    }

    /// Write `dir/chains.toml`.
    pub fn write(self, dir: &Path) -> PathBuf {
        let path = dir.join("chains.toml");
        let text = toml::to_string(&self.0).unwrap();
        // A config on the offline tests' chain has it answering.
        if text.contains(super::empty_chain::URL) {
            super::empty_chain::ensure();
        }
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// Set one dotted key in a config file already written (a devnet's, or a
/// test's between two starts of the service).
pub fn set_in_file(path: &Path, key: &str, value: impl Into<Value>) {
    let mut doc: Table = std::fs::read_to_string(path).unwrap().parse().unwrap();
    set_key(&mut doc, key, value.into());
    std::fs::write(path, toml::to_string(&doc).unwrap()).unwrap();
}

/// Merge a TOML fragment into a config file already written.
pub fn merge_into_file(path: &Path, fragment: &str) {
    let mut doc: Table = std::fs::read_to_string(path).unwrap().parse().unwrap();
    merge(&mut doc, fragment.parse().unwrap_or_else(|e| panic!("a test's TOML fragment parses: {e}\n{fragment}")));
    std::fs::write(path, toml::to_string(&doc).unwrap()).unwrap();
}

fn merge(into: &mut Table, from: Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(Value::Table(old)), Value::Table(new)) => merge(old, new),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

fn set_key(doc: &mut Table, key: &str, value: Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().expect("a key");
    let mut table = doc;
    for p in parts {
        table = table.entry(p).or_insert_with(|| Value::Table(Table::new())).as_table_mut().expect("a table on the key's path");
    }
    table.insert(last.to_string(), value);
}
