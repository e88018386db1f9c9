//! `stablerail adapter new NAME --family evm|solana|tron`: a crate an
//! adapter author starts from. It is a working adapter, not a stub: a
//! shipped adapter's own source (x402 `exact` on EVM by EIP-3009, on Solana
//! by an SPL transfer, on TRON by Permit2, all on the kit) under the new
//! name, with the vectors that
//! adapter passes `adapter check` with, so the author builds, checks, and
//! then changes one thing at a time.
//!
//! The crate is its own workspace, with the kit (and the wire crates the
//! Solana and TRON adapters share with the host) as path dependencies (this checkout's
//! `adapters/`, or what `--kit` names: a path or a git URL), the release
//! profile and build settings the shipped adapters use, and their
//! `Cargo.lock` (the same versions of every crate they were checked with).

use std::path::{Path, PathBuf};

use crate::config::Family;

const LOCKFILE: &str = include_str!("../../../adapters/Cargo.lock");
/// The shipped adapters' build settings (the target, a small stack).
const CARGO_CONFIG: &str = include_str!("../../../adapters/.cargo/config.toml");
/// This checkout's kit, where the binary was built from one.
const KIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../adapters/kit");

/// A shipped adapter a new crate starts from.
pub struct Skeleton {
    /// The family it is for, by name.
    family: &'static str,
    /// Its scheme name, replaced by the new one in the source and vectors.
    pub shipped: &'static str,
    what: &'static str,
    /// Source files by their path in the crate; the first is `src/lib.rs`.
    pub sources: &'static [(&'static str, &'static str)],
    vectors: &'static str,
    /// Crates of `adapters/` besides the kit it depends on.
    siblings: &'static [&'static str],
    /// Its other dependencies, as manifest lines.
    dependencies: &'static str,
    /// Text replaced in its sources, each of which must occur once in one
    /// of them: what moves a shipped adapter of an older interface onto the
    /// kit's bindings.
    pub rewrites: &'static [(&'static str, &'static str)],
}

pub const EVM: Skeleton = Skeleton {
    family: "evm",
    shipped: "eip3009",
    what: "the shipped EIP-3009 adapter",
    sources: &[("src/lib.rs", include_str!("../../../adapters/eip3009/src/lib.rs"))],
    vectors: include_str!("../../../adapters/eip3009/vectors.json"),
    siblings: &[],
    dependencies: r#"alloy-primitives = { version = "1", default-features = false, features = ["std"] }
alloy-sol-types = { version = "1", default-features = false, features = ["std"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
"#,
    rewrites: &[],
};

pub const TRON: Skeleton = Skeleton {
    family: "tron",
    shipped: "tron-permit2",
    what: "the shipped TRON Permit2 adapter",
    sources: &[
        ("src/lib.rs", include_str!("../../../adapters/tron-permit2/src/lib.rs")),
        ("src/node.rs", include_str!("../../../adapters/tron-permit2/src/node.rs")),
        ("src/permit.rs", include_str!("../../../adapters/tron-permit2/src/permit.rs")),
        ("src/transfer.rs", include_str!("../../../adapters/tron-permit2/src/transfer.rs")),
    ],
    vectors: include_str!("../../../adapters/tron-permit2/vectors.json"),
    siblings: &["x402-wire", "permit2-wire", "tron-wire"],
    dependencies: r#"alloy-primitives = { version = "1", default-features = false, features = ["std"] }
alloy-sol-types = { version = "1", default-features = false, features = ["std"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
prost = { version = "0.14", default-features = false, features = ["derive", "std"] }
hex = "0.4"
"#,
    rewrites: &[],
};

/// The shipped Solana adapter keeps its own 0.3.0 bindings (it is the
/// suite's component of that version); its skeleton is moved onto the kit's
/// 0.7.0 bindings, whose only changes for it are the signing request's type
/// (0.4.0), the proof error's (0.5.0), the context and the proof record
/// (0.6.0: it reads the proof's JSON) and `answer-extra` (0.7.0: none).
pub const SOLANA: Skeleton = Skeleton {
    family: "solana",
    shipped: "solana-spl",
    what: "the shipped Solana SPL adapter",
    sources: &[
        ("src/lib.rs", include_str!("../../../adapters/solana-spl/src/lib.rs")),
        ("src/accounts.rs", include_str!("../../../adapters/solana-spl/src/accounts.rs")),
        ("src/build.rs", include_str!("../../../adapters/solana-spl/src/build.rs")),
        ("src/chain.rs", include_str!("../../../adapters/solana-spl/src/chain.rs")),
        ("src/payer_tx.rs", include_str!("../../../adapters/solana-spl/src/payer_tx.rs")),
        ("src/receipt.rs", include_str!("../../../adapters/solana-spl/src/receipt.rs")),
        ("src/units.rs", include_str!("../../../adapters/solana-spl/src/units.rs")),
    ],
    vectors: include_str!("../../../adapters/solana-spl/vectors.json"),
    siblings: &["x402-wire"],
    dependencies: r#"serde = { version = "1", features = ["derive"] }
serde_json = "1"
base64 = "0.22"
bs58 = "0.5"
bincode = "1"
solana-message = { version = "=3.0.1", features = ["serde", "bincode"] }
solana-pubkey = { version = "3", features = ["curve25519"] }
solana-short-vec = "3"
solana-compute-budget-interface = "3.1"
spl-token-interface = "3"
spl-associated-token-account-interface = "2"
"#,
    rewrites: &[
        (
            "wit_bindgen::generate!({\n    world: \"stablerail:adapter/adapter@0.3.0\",\n    path: \"../../wit/0.3.0\",\n    generate_all,\n});\n",
            "// The kit's bindings of 0.7.0, under the names the modules use.\nuse stablerail_adapter_kit::bindings::{exports, stablerail};\n",
        ),
        (
            "use exports::stablerail::adapter0_3_0::scheme::Guest;\n",
            "use exports::stablerail::adapter0_7_0::scheme::Guest;\nuse stablerail::adapter0_4_0::types::SigningRequest;\nuse stablerail::adapter0_7_0::types::ProofError;\n",
        ),
        // 0.6.0's context, and the proof handed over with what the host decoded of it.
        ("use stablerail::adapter0_3_0::types::AssetContext;\n", "use stablerail::adapter0_6_0::types::{AssetContext, PaymentProof};\n"),
        ("use crate::stablerail::adapter0_3_0::types::AssetContext;\n", "use crate::stablerail::adapter0_6_0::types::AssetContext;\n"),
        (
            "fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: String) -> Result<VerifiedPayment, ProofError> {\n        let tx = payer_tx::decode_proof(&proof, &requirements)?;",
            "fn verify(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<VerifiedPayment, ProofError> {\n        let tx = payer_tx::decode_proof(&proof.json, &requirements)?;",
        ),
        (
            "fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: String) -> Result<Vec<SettleStep>, ProofError> {\n        let tx = payer_tx::decode_proof(&proof, &requirements)?;",
            "fn settle(ctx: AssetContext, requirements: PaymentRequirements, proof: PaymentProof) -> Result<Vec<SettleStep>, ProofError> {\n        let tx = payer_tx::decode_proof(&proof.json, &requirements)?;",
        ),
        (
            "use crate::stablerail::adapter0_1_0::types::{AdapterError, ProofError};\n",
            "use crate::stablerail::adapter0_1_0::types::AdapterError;\nuse crate::stablerail::adapter0_7_0::types::ProofError;\n",
        ),
        (
            "use crate::stablerail::adapter0_1_0::types::{PaymentRequirements, ProofError};\n",
            "use crate::stablerail::adapter0_1_0::types::PaymentRequirements;\nuse crate::stablerail::adapter0_7_0::types::ProofError;\n",
        ),
        (
            "    fn normalize_address(family: Family, address: String) -> Result<String, AdapterError> {\n",
            "    /// Answers of this scheme carry no `extra` (0.7.0).\n    fn answer_extra(_: AssetContext, _: PaymentRequirements, _: PaymentProof, _: Option<String>) -> Result<Option<String>, AdapterError> {\n        Ok(None)\n    }\n\n    fn normalize_address(family: Family, address: String) -> Result<String, AdapterError> {\n",
        ),
        ("\nexport!(SolanaSpl);\n", "\nstablerail_adapter_kit::export!(SolanaSpl with_types_in stablerail_adapter_kit::bindings);\n"),
    ],
};

fn skeleton(family: Family) -> &'static Skeleton {
    let name = family.facts().name;
    [&EVM, &TRON, &SOLANA].into_iter().find(|s| s.family == name).expect("a skeleton for every family")
}

/// Why no crate was written.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    #[error("`{0}` is not a crate name: lower-case letters, digits and `-`, starting with a letter")]
    Name(String),
    #[error("{0} already exists; choose another name or folder")]
    Exists(PathBuf),
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
    let skeleton = skeleton(family);
    let dir = parent.join(name);
    if dir.exists() {
        return Err(NewError::Exists(dir));
    }
    let kit = match kit {
        Some(k) if k.contains("://") => Source::Git(k.into()),
        Some(k) => Source::Path(PathBuf::from(k)),
        None => Source::Path(std::fs::canonicalize(KIT).unwrap_or_else(|_| PathBuf::from(KIT))),
    };
    let mut files = vec![
        ("Cargo.toml".to_string(), manifest(name, skeleton, &kit)),
        ("Cargo.lock".into(), LOCKFILE.to_string()),
        (".cargo/config.toml".into(), CARGO_CONFIG.to_string()),
    ];
    for (n, (path, text)) in skeleton.sources.iter().enumerate() {
        files.push((path.to_string(), source(name, skeleton, text, n == 0)));
    }
    files.push(("vectors.json".into(), vectors(name, skeleton)));
    files.push(("README.md".into(), readme(name)));
    let mut written = vec![];
    for (file, text) in files {
        let path = dir.join(&file);
        let io = |e| NewError::Io(path.clone(), e);
        std::fs::create_dir_all(path.parent().expect("a file in the crate")).map_err(io)?;
        std::fs::write(&path, text).map_err(io)?;
        written.push(file);
    }
    let wasm = format!("target/wasm32-wasip2/release/{}.wasm", name.replace('-', "_"));
    Ok(Written {
        dir: dir.display().to_string(),
        files: written,
        build: "cargo build --release".into(),
        check: format!("stablerail adapter check {wasm} --vectors vectors.json"),
    })
}

/// Where the kit (and its sibling crates) come from.
pub enum Source {
    Path(PathBuf),
    Git(String),
}

impl Source {
    /// The manifest's source of the crate `krate` of `adapters/`.
    fn of(&self, krate: &str) -> String {
        match self {
            Source::Git(url) => format!("{{ git = \"{url}\" }}"),
            Source::Path(kit) if krate == "stablerail-adapter-kit" => format!("{{ path = {:?} }}", kit.display().to_string()),
            Source::Path(kit) => {
                let sibling = kit.parent().unwrap_or(Path::new(".")).join(krate);
                format!("{{ path = {:?} }}", sibling.display().to_string())
            }
        }
    }
}

pub fn manifest(name: &str, skeleton: &Skeleton, kit: &Source) -> String {
    let mut deps = format!("stablerail-adapter-kit = {}\n", kit.of("stablerail-adapter-kit"));
    for sibling in skeleton.siblings {
        deps += &format!("{sibling} = {}\n", kit.of(sibling));
    }
    deps += skeleton.dependencies;
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
{deps}
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

/// A shipped adapter's source file, its scheme named `name`. `lib`: the
/// crate root, whose own doc paragraph is replaced by the new crate's.
pub fn source(name: &str, skeleton: &Skeleton, text: &str, lib: bool) -> String {
    let shipped = skeleton.shipped;
    let mut text = text.to_string();
    for (from, to) in skeleton.rewrites {
        text = text.replace(from, to);
    }
    let body = text
        .replace(&format!("name: \"{shipped}\".into()"), &format!("name: {name:?}.into()"))
        .replace(&format!("scheme: \"{shipped}\".into()"), &format!("scheme: {name:?}.into()"))
        .replace(&format!("\"{shipped} "), &format!("\"{name} "))
        .replace("#[cfg(feature = \"export\")]\n", "");
    if !lib {
        return body;
    }
    let header = format!(
        "//! `{name}`: a stablerail adapter, started from {} (`stablerail adapter new`).\n\
         //! Change what your scheme does differently; `stablerail adapter check`\n\
         //! with your vectors says what still holds.\n\n",
        skeleton.what
    );
    // The shipped crate's doc comment is its first paragraph.
    let rest = body.split_once("\n\n").map_or(body.as_str(), |(_, rest)| rest);
    header + rest
}

/// The shipped adapter's vectors, for the scheme `name` serves.
pub fn vectors(name: &str, skeleton: &Skeleton) -> String {
    let mut v: serde_json::Value = serde_json::from_str(skeleton.vectors).expect("the shipped vectors are JSON");
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
