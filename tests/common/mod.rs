//! Shared test harness: builds the real adapters once, writes configs,
//! builds registries with a controllable clock.
#![allow(dead_code)]

pub mod app;
pub mod config;
pub mod devnet;
pub mod eip3009;
pub mod empty_chain;
pub mod process;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use stablerail::adapter::{Clock, Registry};
use stablerail::config::Config;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The service's binary beside this test binary (`target/release`). The
/// suite is a package of its own, compiled with less optimisation than the
/// service (Cargo.toml), so Cargo does not build the binary for it:
/// `cargo build --release --workspace --all-targets` does (scripts/test.sh).
/// A binary older than the host library it was built from is refused.
pub fn stablerail_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/release/deps/suite-… → target/release/stablerail
    let release = exe.parent().and_then(Path::parent).expect("a target folder");
    let bin = release.join("stablerail");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = match (modified(&bin), modified(&release.join("libstablerail.rlib"))) {
        (Some(bin), Some(lib)) => bin >= lib,
        (bin, _) => bin.is_some(),
    };
    assert!(fresh, "{} is missing or older than the host library: `cargo build --release --workspace --all-targets`", bin.display());
    bin
}

/// Build every adapter (and the test fixtures) for wasm32-wasip2, once per
/// test process, and return the folder holding the `.wasm` files.
pub fn adapters_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = repo_root();
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                // Cargo reads .cargo/config.toml from the working directory.
                .current_dir(root.join("adapters"))
                .args(["build", "--release", "--target", "wasm32-wasip2"])
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_TARGET_DIR")
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building the adapters failed");
            root.join("adapters/target/wasm32-wasip2/release")
        })
        .clone()
}

/// One folder of precompiled adapters for every service the suite starts:
/// a component is compiled once per engine configuration, not once per
/// test. The key covers the wasm bytes and the engine (`adapter::engine`),
/// so a changed adapter is compiled anew. Tests of the cache itself use
/// their own folder.
pub fn adapter_cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("adapter-cache")
}

/// A clock the test moves by hand. Starts at the real time.
pub struct TestClock(Arc<AtomicU64>);

impl TestClock {
    pub fn new() -> Self {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        TestClock(Arc::new(AtomicU64::new(now)))
    }
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    pub fn set(&self, t: u64) {
        self.0.store(t, Ordering::SeqCst)
    }
    pub fn clock(&self) -> Clock {
        let t = self.0.clone();
        Arc::new(move || t.load(Ordering::SeqCst))
    }
}

/// base (8453) with live EIP-3009 USDC, mainnet values, on a chain where
/// nothing is deployed (`empty_chain`): payers are EOAs.
pub const BASE_USDC: &str = r#"
[chains.base]
family = "evm"
chain_id = 8453
roles = ["payer", "target"]
rpc_urls = ["http://127.0.0.1:21445"]

[chains.base.assets.usdc]
state = "live"
scheme = "eip3009"
token = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
decimals = 6
eip712_name = "USD Coin"
eip712_version = "2"
"#;

/// Write `dir/chains.toml`: the suite's header (the real adapters, the
/// shared adapter cache) with `body` merged over it.
pub fn write_config(dir: &Path, body: &str) -> PathBuf {
    config::TestConfig::new().with(body).write(dir)
}

/// Await an async call (an adapter's) from a synchronous test.
pub fn wait<F: std::future::Future>(f: F) -> F::Output {
    static RUNTIME: std::sync::LazyLock<tokio::runtime::Runtime> =
        std::sync::LazyLock::new(|| tokio::runtime::Runtime::new().expect("a tokio runtime starts"));
    RUNTIME.block_on(f)
}

pub fn registry(dir: &Path, body: &str, clock: Clock) -> Result<Registry, anyhow::Error> {
    registry_of(&write_config(dir, body), clock)
}

/// The registry of a config file already written.
pub fn registry_of(file: &Path, clock: Clock) -> Result<Registry, anyhow::Error> {
    let cfg = Config::load(file)?;
    let runtime = stablerail::server::runtime_for(&cfg, clock)?;
    Ok(Registry::from_config(&cfg, runtime, &stablerail::family::chain::Chains::from_config(&cfg))?)
}

/// A minimal HTTP/1.1 client over std, for tests that talk to a `serve`
/// subprocess: `(status, JSON body)`.
pub fn http(port: u16, method: &str, path: &str, auth: Option<&str>, body: Option<serde_json::Value>) -> (u16, serde_json::Value) {
    try_http(port, method, path, auth, body).expect("the server answers")
}

/// The same, `None` when the server is gone (killed mid-request).
pub fn try_http(
    port: u16,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: Option<serde_json::Value>,
) -> Option<(u16, serde_json::Value)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let auth = auth.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.get(9..12)?.parse().ok()?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    Some((status, serde_json::from_str(body).unwrap_or(serde_json::Value::Null)))
}

/// Wait until something accepts connections on the port. Bounded by time,
/// not tries: under the whole suite's load a service takes many seconds to
/// start (CI saw ten run out).
pub fn wait_for_port(port: u16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while std::time::Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("nothing listens on {port}");
}

/// `stablerail keys init` in process: the master key, pepper and service
/// wallets that `serve` and `build_state` require.
pub async fn init_keys(config: &Path, database: &str) {
    let cfg = Config::load(config).unwrap();
    let db = stablerail::server::connect(database).await.unwrap();
    let files = (cfg.resolve(&cfg.service.master_key_file), cfg.resolve(&cfg.service.pepper_file));
    stablerail::family::keys::init(&files.0, &files.1, db.clone(), &cfg.families(), None).await.unwrap();
    db.pool.close().await;
}
