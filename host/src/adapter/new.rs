//! `stablerail adapter new NAME --family evm`: a crate an adapter author
//! starts from. It is a working adapter, not a stub: the shipped EIP-3009
//! adapter's own source (x402 `exact` on EVM, on the kit) under the new
//! name, with the vectors that adapter passes `adapter check` with, so the
//! author builds, checks, and then changes one thing at a time.
//!
//! The crate is its own workspace, with the kit as a path dependency (this
//! checkout's `adapters/kit`, or what `--kit` names: a path or a git URL),
//! the release profile and build settings the shipped adapters use, and
//! their `Cargo.lock` (the same versions of every crate they were checked
//! with).

use std::path::{Path, PathBuf};

use crate::config::Family;

const EIP3009_SOURCE: &str = include_str!("../../../adapters/eip3009/src/lib.rs");
const EIP3009_VECTORS: &str = include_str!("../../../adapters/eip3009/vectors.json");
const LOCKFILE: &str = include_str!("../../../adapters/Cargo.lock");
/// The shipped adapters' build settings (the target, a small stack).
const CARGO_CONFIG: &str = include_str!("../../../adapters/.cargo/config.toml");
/// This checkout's kit, where the binary was built from one.
const KIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../adapters/kit");

/// Why no crate was written.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    #[error("`{0}` is not a crate name: lower-case letters, digits and `-`, starting with a letter")]
    Name(String),
    #[error("{0} already exists; choose another name or folder")]
    Exists(PathBuf),
    #[error(
        "no skeleton for the {0:?} family yet: start from adapters/solana-spl or adapters/tron-permit2 (see docs/adapter-tutorial.md)"
    )]
    Family(Family),
    #[error("writing {0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// What was written.
#[derive(Debug, serde::Serialize)]
pub struct Written {
    pub dir: String,
    pub files: Vec<String>,
    pub build: String,
    pub check: String,
}

/// Write the crate `NAME` under `parent`. `kit`: the kit's path or git URL.
pub fn write(name: &str, family: Family, parent: &Path, kit: Option<&str>) -> Result<Written, NewError> {
    let valid = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.ends_with('-');
    if !valid {
        return Err(NewError::Name(name.into()));
    }
    if family != Family::Evm {
        return Err(NewError::Family(family));
    }
    let dir = parent.join(name);
    if dir.exists() {
        return Err(NewError::Exists(dir));
    }
    let kit = match kit {
        Some(k) if k.contains("://") => format!("{{ git = \"{k}\" }}"),
        Some(k) => format!("{{ path = {:?} }}", k),
        None => format!("{{ path = {:?} }}", std::fs::canonicalize(KIT).unwrap_or_else(|_| PathBuf::from(KIT)).display().to_string()),
    };
    let files = [
        ("Cargo.toml", manifest(name, &kit)),
        ("Cargo.lock", LOCKFILE.to_string()),
        (".cargo/config.toml", CARGO_CONFIG.to_string()),
        ("src/lib.rs", source(name)),
        ("vectors.json", vectors(name)),
        ("README.md", readme(name)),
    ];
    let mut written = vec![];
    for (file, text) in files {
        let path = dir.join(file);
        let io = |e| NewError::Io(path.clone(), e);
        std::fs::create_dir_all(path.parent().expect("a file in the crate")).map_err(io)?;
        std::fs::write(&path, text).map_err(io)?;
        written.push(file.to_string());
    }
    let wasm = format!("target/wasm32-wasip2/release/{}.wasm", name.replace('-', "_"));
    Ok(Written {
        dir: dir.display().to_string(),
        files: written,
        build: "cargo build --release".into(),
        check: format!("stablerail adapter check {wasm} --vectors vectors.json"),
    })
}

fn manifest(name: &str, kit: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
description = "A stablerail chain adapter"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
stablerail-adapter-kit = {kit}
alloy-primitives = {{ version = "1", default-features = false, features = ["std"] }}
alloy-sol-types = {{ version = "1", default-features = false, features = ["std"] }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"

# What the shipped adapters are built with: small, fast, no unwinding.
[profile.release]
opt-level = 3
lto = true
codegen-units = 1
panic = "abort"
strip = true

# A workspace of its own, wherever it is put.
[workspace]
"#
    )
}

/// The EIP-3009 adapter's source, named `name`.
fn source(name: &str) -> String {
    let header = format!(
        "//! `{name}`: a stablerail adapter, started from the shipped EIP-3009 adapter\n\
         //! (`stablerail adapter new`). Change what your scheme does differently;\n\
         //! `stablerail adapter check` with your vectors says what still holds.\n\n"
    );
    let body = EIP3009_SOURCE.split_once("\n\n").map_or(EIP3009_SOURCE, |(_, rest)| rest);
    let body = body
        .replace("name: \"eip3009\".into()", &format!("name: {name:?}.into()"))
        .replace("scheme: \"eip3009\".into()", &format!("scheme: {name:?}.into()"))
        .replace("#[cfg(feature = \"export\")]\n", "");
    header + &body
}

/// The EIP-3009 adapter's vectors, for the scheme `name` serves.
fn vectors(name: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(EIP3009_VECTORS).expect("the shipped vectors are JSON");
    v["scheme"] = serde_json::json!(name);
    serde_json::to_string_pretty(&v).expect("vectors serialize") + "\n"
}

fn readme(name: &str) -> String {
    let wasm = name.replace('-', "_");
    format!(
        "# {name}\n\nA stablerail chain adapter (`stablerail adapter new`), on `stablerail-adapter-kit`.\n\n\
         ```sh\nrustup target add wasm32-wasip2\ncargo build --release\n\
         stablerail adapter check target/wasm32-wasip2/release/{wasm}.wasm --vectors vectors.json\n```\n\n\
         To serve it, copy the `.wasm` into the service's adapters folder, name it in\n\
         `chains.toml` (`[adapters] {name} = \"{wasm}.wasm\"`) and give an asset\n\
         `scheme = \"{name}\"`. The tutorial: docs/adapter-tutorial.md in stablerail.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skeleton_is_the_eip3009_adapter_renamed() {
        let src = source("my-scheme");
        assert_eq!(src.matches("\"my-scheme\".into()").count(), 2, "name and scheme renamed");
        assert!(!src.contains("\"eip3009\".into()") && !src.contains("cfg(feature = \"export\")"));
        assert!(src.contains("stablerail_adapter_kit::export!("));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&vectors("my-scheme")).unwrap()["scheme"], "my-scheme");
    }

    #[test]
    fn names_and_families_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(write("My_Scheme", Family::Evm, dir.path(), None), Err(NewError::Name(_))));
        assert!(matches!(write("sol", Family::Solana, dir.path(), None), Err(NewError::Family(Family::Solana))));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
