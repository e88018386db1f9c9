//! The operator CLI: accounts, agents and keys, the recipient directory,
//! then the running service honouring what the CLI wrote.

mod common;

use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

struct Env {
    dir: tempfile::TempDir,
    config: std::path::PathBuf,
    database: String,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let config = common::write_config(dir.path(), &common::app::config(""));
        let database = format!("sqlite://{}", dir.path().join("cli.db").display());
        Env { dir, config, database }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_stablerail"))
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .args(["--database", &self.database])
            .env("RUST_LOG", "warn")
            .env_remove("STABLERAIL_PEPPER")
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

use common::http;

#[test]
fn operator_cli_end_to_end() {
    let env = Env::new();
    let account = env.json(&["account", "create", "--name", "acme"]);
    let account_id = account["account_id"].as_str().unwrap().to_string();
    let agent = env.json(&["agent", "create", "--account", &account_id, "--name", "buyer-bot"]);
    let agent_id = agent["agent_id"].as_str().unwrap().to_string();
    assert!(agent["api_key"].as_str().unwrap().starts_with("sr_"));
    assert!(agent["secret_key"].as_str().unwrap().starts_with("srsk_"));
    let bearer = format!("Bearer {}", agent["bearer_token"].as_str().unwrap());
    // The secret is stored only as a MAC: it is nowhere in the database file.
    let db_bytes = std::fs::read(env.dir.path().join("cli.db")).unwrap_or_default();
    let wal = std::fs::read(env.dir.path().join("cli.db-wal")).unwrap_or_default();
    let secret = agent["secret_key"].as_str().unwrap().as_bytes();
    for bytes in [&db_bytes, &wal] {
        assert!(!bytes.windows(secret.len()).any(|w| w == secret), "secret stored in clear");
    }

    let added = env.json(&["recipient", "add", "Shop@Example.com", "--chain", "arbitrum", "--address", "0x000000000000000000000000000000000000beef"]);
    assert_eq!(added["address"], "0x000000000000000000000000000000000000bEEF", "stored checksummed");
    let bad = env.run(&["recipient", "add", "shop@example.com", "--chain", "arbitrum", "--address", "0x1234"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid address"));

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_stablerail"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--database", &env.database, "--config"])
        .arg(&env.config)
        .env("RUST_LOG", "stablerail=info")
        .env("STABLERAIL_LOG_FORMAT", "json")
        .env_remove("STABLERAIL_PEPPER")
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    common::wait_for_port(port);
    // The request id comes back: the caller's own, or a new one.
    {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(s, "GET /api/chains HTTP/1.1\r\nHost: x\r\nx-request-id: cli-test-1\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        assert!(text.to_ascii_lowercase().contains("x-request-id: cli-test-1"), "{text}");
    }
    let (status, me) = http(port, "GET", "/v2/me", Some(&bearer), None);
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["agent_id"], agent_id.as_str());
    assert_eq!(me["name"], "buyer-bot");
    let (status, created) = http(port, "POST", "/v2/intents", Some(&bearer), Some(json!({
        "email": "shop@example.com", "amount": "12.5", "payer_chain": "base", "target_chain": "arbitrum",
    })));
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["merchant_recipient"], "0x000000000000000000000000000000000000bEEF");

    // Rotating keys while the service runs: the old token stops working.
    let rotated = env.json(&["agent", "keys", "--agent", &agent_id]);
    let (status, _) = http(port, "GET", "/v2/me", Some(&bearer), None);
    assert_eq!(status, 401);
    let (status, _) = http(port, "GET", "/v2/me", Some(&format!("Bearer {}", rotated["bearer_token"].as_str().unwrap())), None);
    assert_eq!(status, 200);
    let _ = Command::new("kill").arg(server.id().to_string()).status();
    assert!(server.wait().unwrap().success());
    // `--log-format json` (here by its env var): every line one JSON object,
    // no colour codes, one line per answered request.
    let logs = std::fs::read_to_string(log.path()).unwrap();
    assert!(!logs.contains('\u{1b}'), "no ANSI codes in a log file");
    let lines: Vec<Value> = logs.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    let answered: Vec<&Value> = lines.iter().filter(|l| l["message"] == "answered").collect();
    assert!(answered.iter().any(|l| l["span"]["route"] == "/v2/me" && l["status"] == 200 && l["span"]["request_id"].as_str().is_some_and(|id| id.len() == 36)), "{logs}");
    assert!(answered.iter().any(|l| l["span"]["route"] == "/api/chains" && l["span"]["request_id"] == "cli-test-1"), "{logs}");
    assert!(answered.iter().all(|l| l["latency_us"].is_u64() && l["span"]["method"].is_string()), "{logs}");

    // Ten agents per account, then a clear refusal.
    for n in 2..=10 {
        env.json(&["agent", "create", "--account", &account_id, "--name", &format!("bot-{n}")]);
    }
    let eleventh = env.run(&["agent", "create", "--account", &account_id, "--name", "bot-11"]);
    assert!(!eleventh.status.success());
    assert!(String::from_utf8_lossy(&eleventh.stderr).contains("already has 10 agents"));
    let nobody = env.run(&["agent", "keys", "--agent", "no-such-agent"]);
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("agent no-such-agent not found"));
}
