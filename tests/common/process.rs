//! Services and chains as separate processes, for tests that kill them.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::devnet::{devnet_dir, Devnet};

/// A child process that is killed when the test ends, passed or not.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn http(port: u16, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    super::http(port, method, path, None, body)
}

/// `stablerail serve` on the devnet's config and SQLite file.
pub fn serve(dn: &Devnet, port: u16) -> Reaped {
    serve_logged(dn, port, None, "warn")
}

/// The same, its log (stderr and stdout) appended to `log` when given.
pub fn serve_logged(dn: &Devnet, port: u16, log: Option<&Path>, filter: &str) -> Reaped {
    serve_on(dn, port, &dn.dir.path().join("sr.db"), log, filter)
}

/// The service on the devnet's config and the SQLite database at `db`.
pub fn serve_on(dn: &Devnet, port: u16, db: &Path, log: Option<&Path>, filter: &str) -> Reaped {
    let out = |p: Option<&Path>| match p {
        Some(p) => std::process::Stdio::from(std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap()),
        None => std::process::Stdio::null(),
    };
    let child = Command::new(super::stablerail_bin())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--config"])
        .arg(dn.dir.path().join("chains.toml"))
        .arg("--database")
        .arg(format!("sqlite://{}", db.display()))
        .env("RUST_LOG", filter)
        .stdout(out(log))
        .stderr(out(log))
        .spawn()
        .unwrap();
    super::wait_for_port(port);
    Reaped(child)
}

/// Restart a devnet chain's anvil from the state file it wrote on SIGTERM.
pub fn anvil(dn: &Devnet, chain: &str) -> Reaped {
    let c = dn.chain(chain);
    let child = Command::new(devnet_dir().join("node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"))
        .args(["--chain-id", &c["chain_id"].to_string(), "--port", &c["port"].to_string(), "--host", "127.0.0.1", "--silent"])
        .args(["--mnemonic", "test test test test test test test test test test test junk", "--state"])
        .arg(dn.dir.path().join(format!("{chain}.state.json")))
        .spawn()
        .unwrap();
    std::fs::write(dn.dir.path().join(format!("{chain}.pid")), child.id().to_string()).unwrap();
    Reaped(child)
}

/// Stop a devnet chain's anvil (SIGTERM: it writes its state file) and
/// wait until its port is closed.
pub fn stop_chain(dn: &Devnet, chain: &str, pid: u32) {
    kill(pid, "-TERM");
    let port = dn.chain(chain)["port"].as_u64().unwrap() as u16;
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{chain} did not stop");
}

pub fn kill(pid: u32, signal: &str) {
    let _ = Command::new("kill").args([signal, &pid.to_string()]).status();
}

/// A port nothing listens on, below Linux's ephemeral range (32768–60999)
/// and the devnets' ports (21545 and up): an OS-assigned port could be
/// handed to an outgoing connection between this pick and the service's
/// bind (CI once saw `serve` never come up on one). Each pick in a run is
/// a new port; runs side by side start apart.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let start = (std::process::id() % 90) as u16 * 100;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 12_000 + (start + n) % 9_000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Poll `GET /api/intents/{id}` on a server process until it says `want`.
pub fn wait_status(port: u16, id: &str, want: &str, within: std::time::Duration) -> Value {
    let end = std::time::Instant::now() + within;
    loop {
        let (_, v) = http(port, "GET", &format!("/api/intents/{id}"), None);
        if v["status"] == want {
            return v;
        }
        assert!(std::time::Instant::now() < end, "intent {id} never reached {want}: {v}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The ids of the transactions stored for an intent's leg.
pub async fn stored_txs(dn: &Devnet, id: &str, leg: &str) -> Vec<String> {
    let q = sqlx::query("SELECT tx_hash FROM chain_transactions WHERE intent_id = $1 AND leg = $2").bind(id).bind(leg);
    q.fetch_all(&dn.state.db.pool).await.unwrap().iter().map(|r| sqlx::Row::get(r, "tx_hash")).collect()
}
