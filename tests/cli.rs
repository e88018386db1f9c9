//! The operator CLI: accounts, agents and keys, the recipient directory,
//! then the running service honouring what the CLI wrote.

use crate::common;

use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

struct Env {
    dir: tempfile::TempDir,
    config: std::path::PathBuf,
    database: String,
    chains: Vec<common::process::Reaped>,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let config = common::write_config(dir.path(), &common::app::config(""));
        let database = format!("sqlite://{}", dir.path().join("cli.db").display());
        Env { dir, config, database, chains: vec![] }
    }

    /// Real nodes (anvil, with each chain's id) for base and arbitrum, named
    /// in the config: `serve` exposes only chains whose node answers.
    fn with_nodes(mut self) -> Env {
        let anvil = common::devnet::devnet_dir().join("node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
        let mut text = std::fs::read_to_string(&self.config).unwrap();
        for (chain, id) in [("base", 8453), ("arbitrum", 42161)] {
            let port = common::process::free_port();
            let child = Command::new(&anvil)
                .args(["--chain-id", &id.to_string(), "--port", &port.to_string(), "--host", "127.0.0.1", "--silent"])
                .spawn()
                .unwrap();
            self.chains.push(common::process::Reaped(child));
            common::wait_for_port(port);
            stub_tokens(port, chain, id, &text);
            // The anvil takes the place of any node the config names.
            let node = format!("rpc_urls = [\"http://127.0.0.1:{port}\"]\n");
            text = text.replacen(&format!("rpc_urls = [\"{}\"]\n", common::empty_chain::URL), "", 1);
            text = text.replacen(&format!("[chains.{chain}]\n"), &format!("[chains.{chain}]\n{node}"), 1);
        }
        std::fs::write(&self.config, text).unwrap();
        self
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(common::stablerail_bin())
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
    let env = Env::new().with_nodes();
    // Nothing exists yet: serve refuses rather than creating keys silently.
    let refused = env.run(&["serve", "--listen", "127.0.0.1:0"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("stablerail keys init"), "{said}");
    assert!(!env.dir.path().join(".stablerail/master.key").exists(), "serve created a master key");
    // keys init creates them; a second run keeps them.
    let init = env.json(&["keys", "init"]);
    assert_eq!((init["master_key"].as_str(), init["pepper"].as_str()), (Some("created"), Some("created")), "{init}");
    assert!(init["wallets"].as_array().unwrap().iter().all(|w| w["created"] == true && w["address"].as_str().unwrap().starts_with("0x")));
    let again = env.json(&["keys", "init"]);
    assert_eq!((again["master_key"].as_str(), again["pepper"].as_str()), (Some("kept"), Some("kept")));
    assert_eq!(again["wallets"][0]["address"], init["wallets"][0]["address"]);
    assert!(again["wallets"].as_array().unwrap().iter().all(|w| w["created"] == false));

    // Commands that write need the database named: no default file.
    let nodb = Command::new(common::stablerail_bin())
        .args(["account", "create", "--name", "x", "--config"])
        .arg(&env.config)
        .env_remove("STABLERAIL_DATABASE")
        .output()
        .unwrap();
    assert!(!nodb.status.success());
    assert!(String::from_utf8_lossy(&nodb.stderr).contains("--database"));

    let account = env.json(&["account", "create", "--name", "acme"]);
    let account_id = account["account_id"].as_str().unwrap().to_string();
    let agent = env.json(&["agent", "create", "--account", &account_id, "--name", "buyer-bot"]);
    let agent_id = agent["agent_id"].as_str().unwrap().to_string();
    let wallet = agent["wallet_address"].as_str().expect("agent create prints the hosted wallet").to_string();
    assert!(wallet.starts_with("0x") && wallet.len() == 42, "{agent}");
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

    let added = env.json(&[
        "recipient",
        "add",
        "Shop@Example.com",
        "--chain",
        "arbitrum",
        "--address",
        "0x000000000000000000000000000000000000beef",
    ]);
    assert_eq!(added["address"], "0x000000000000000000000000000000000000bEEF", "stored checksummed");
    let bad = env.run(&["recipient", "add", "shop@example.com", "--chain", "arbitrum", "--address", "0x1234"]);
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("is not a valid address on arbitrum") && !said.contains("Err(") && !said.contains("{ "), "{said}");

    let port = common::process::free_port();
    let log = tempfile::NamedTempFile::new().unwrap();
    // Reaped: killed even when an assertion fails before the graceful stop.
    let mut server = common::process::Reaped(
        Command::new(common::stablerail_bin())
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--database", &env.database, "--config"])
            .arg(&env.config)
            .env("RUST_LOG", "stablerail=info")
            .env("STABLERAIL_LOG_FORMAT", "json")
            .env_remove("STABLERAIL_PEPPER")
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap(),
    );
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
    assert_eq!(me["wallet_address"], wallet.as_str());
    assert_eq!(me["name"], "buyer-bot");
    let (status, created) = http(
        port,
        "POST",
        "/v2/intents",
        Some(&bearer),
        Some(json!({
            "email": "shop@example.com", "amount": "12.5", "payer_chain": "base", "target_chain": "arbitrum",
        })),
    );
    assert_eq!(status, 201, "{created}");
    // Whom an email resolves to is not the payer's to see, an agent's included.
    assert_eq!(created["merchant_recipient"], "shop@example.com");

    // Rotating keys while the service runs: the old token stops working.
    let rotated = env.json(&["agent", "keys", "--agent", &agent_id]);
    let (status, _) = http(port, "GET", "/v2/me", Some(&bearer), None);
    assert_eq!(status, 401);
    let fresh = format!("Bearer {}", rotated["bearer_token"].as_str().unwrap());
    let (status, _) = http(port, "GET", "/v2/me", Some(&fresh), None);
    assert_eq!(status, 200);

    // list / show / disable, as JSON and as a table.
    let agents = env.json(&["agent", "list", "--account", &account_id]);
    assert_eq!(agents.as_array().unwrap().len(), 1);
    assert_eq!(agents[0]["wallet_address"], wallet.as_str());
    assert!(agents[0].get("secret_key").is_none() && agents[0].get("api_key").is_none(), "no keys in listings");
    let shown = env.json(&["agent", "show", &agent_id]);
    assert_eq!(shown["status"], "active");
    let table = env.run(&["agent", "list", "--output", "table"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.starts_with("AGENT_ID") && table.contains(&agent_id) && table.contains(&wallet), "{table}");
    let disabled = env.json(&["agent", "disable", &agent_id]);
    assert_eq!(disabled["status"], "disabled");
    let (status, _) = http(port, "GET", "/v2/me", Some(&fresh), None);
    assert_eq!(status, 401, "a disabled agent's keys stop working");
    assert_eq!(env.json(&["account", "show", &account_id])["name"], "acme");
    assert_eq!(env.json(&["account", "list"]).as_array().unwrap().len(), 1);
    let missing = env.run(&["account", "show", "nope"]);
    assert!(!missing.status.success());
    assert_eq!(String::from_utf8_lossy(&missing.stderr).trim(), "error: no account nope");

    assert_eq!(env.json(&["recipient", "show", "shop@example.com"])[0]["status"], "active");
    let gone = env.json(&["recipient", "disable", "shop@example.com", "--chain", "arbitrum"]);
    assert_eq!(gone[0]["status"], "disabled");
    let second = env.json(&["agent", "create", "--account", &account_id, "--name", "second"]);
    let (status, e) = http(
        port,
        "POST",
        "/v2/intents",
        Some(&format!("Bearer {}", second["bearer_token"].as_str().unwrap())),
        Some(json!({
            "email": "shop@example.com", "amount": "1", "payer_chain": "base", "target_chain": "arbitrum",
        })),
    );
    assert_eq!(status, 400, "a disabled recipient no longer resolves: {e}");
    env.json(&["recipient", "add", "shop@example.com", "--chain", "arbitrum", "--address", "0x000000000000000000000000000000000000beef"]);
    assert_eq!(env.json(&["recipient", "list"])[0]["status"], "active");
    env.json(&["account", "disable", &account_id]);
    assert_eq!(env.json(&["agent", "show", second["agent_id"].as_str().unwrap()])["status"], "disabled");
    let refused = env.run(&["agent", "create", "--account", &account_id, "--name", "late"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is disabled"));
    let _ = Command::new("kill").arg(server.0.id().to_string()).status();
    assert!(server.0.wait().unwrap().success());
    // `--log-format json` (here by its env var): every line one JSON object,
    // no colour codes, one line per answered request.
    let logs = std::fs::read_to_string(log.path()).unwrap();
    assert!(!logs.contains('\u{1b}'), "no ANSI codes in a log file");
    let lines: Vec<Value> = logs.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    let answered: Vec<&Value> = lines.iter().filter(|l| l["message"] == "answered").collect();
    assert!(
        answered.iter().any(|l| l["span"]["route"] == "/v2/me"
            && l["status"] == 200
            && l["span"]["request_id"].as_str().is_some_and(|id| id.len() == 36)),
        "{logs}"
    );
    assert!(answered.iter().any(|l| l["span"]["route"] == "/api/chains" && l["span"]["request_id"] == "cli-test-1"), "{logs}");
    assert!(answered.iter().all(|l| l["latency_us"].is_u64() && l["span"]["method"].is_string()), "{logs}");

    // Ten agents per account, then a clear refusal.
    let account_id = env.json(&["account", "create", "--name", "busy"])["account_id"].as_str().unwrap().to_string();
    for n in 1..=10 {
        env.json(&["agent", "create", "--account", &account_id, "--name", &format!("bot-{n}")]);
    }
    let eleventh = env.run(&["agent", "create", "--account", &account_id, "--name", "bot-11"]);
    assert!(!eleventh.status.success());
    assert!(String::from_utf8_lossy(&eleventh.stderr).contains("already has 10 agents"));
    let nobody = env.run(&["agent", "keys", "--agent", "no-such-agent"]);
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("agent no-such-agent not found"));
}

/// `keys import` stores an existing key; a sealed key is bound to its name,
/// so a row copied under another name does not open.
#[tokio::test]
async fn imported_keys_and_keys_bound_to_names() {
    let env = Env::new();
    env.json(&["keys", "init"]);
    let key = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
    let mut import = Command::new(common::stablerail_bin())
        .args(["keys", "import", "--name", "treasury:evm", "--config"])
        .arg(&env.config)
        .args(["--database", &env.database])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    import.stdin.take().unwrap().write_all(key.as_bytes()).unwrap();
    let out = import.wait_with_output().unwrap();
    assert!(out.status.success());
    let imported: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(imported["address"], "0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
    // Malformed keys are refused with one sentence, and nothing is stored.
    for (bad, says) in [("nothex", "is not hex"), ("0x1234", "not a valid secp256k1 key")] {
        let mut import = Command::new(common::stablerail_bin())
            .args(["keys", "import", "--name", "bad:evm", "--config"])
            .arg(&env.config)
            .args(["--database", &env.database])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        import.stdin.take().unwrap().write_all(bad.as_bytes()).unwrap();
        let out = import.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && said.contains(says) && !said.contains(bad.trim_start_matches("0x")), "{said}");
    }
    // The same name twice is refused.
    let again = Command::new(common::stablerail_bin())
        .args(["keys", "import", "--name", "treasury:evm", "--config"])
        .arg(&env.config)
        .args(["--database", &env.database])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!again.status.success());

    let cfg = stablerail::config::Config::load(&env.config).unwrap();
    let db = stablerail::db::Db::connect(&env.database).await.unwrap();
    let master = cfg.resolve(&cfg.service.master_key_file);
    let keys = stablerail::family::keys::Keystore::open(db.clone(), &master).unwrap();
    assert_eq!(keys.address("treasury:evm").await.unwrap(), "0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
    sqlx::query("UPDATE wallet_keys SET sealed = (SELECT sealed FROM wallet_keys WHERE name = 'treasury:evm') WHERE name = 'proxy:evm'")
        .execute(&db.pool)
        .await
        .unwrap();
    assert!(!keys.list().await.unwrap().iter().any(|(name, _)| name == "bad:evm"), "a refused import stores nothing");
    let fresh = stablerail::family::keys::Keystore::open(db.clone(), &master).unwrap();
    let err = fresh.signer(stablerail::family::keys::PROXY).await.unwrap_err().to_string();
    assert!(err.contains("does not open"), "{err}");
    // And a service wallet is never created behind the operator's back.
    sqlx::query("DELETE FROM wallet_keys WHERE name = 'relayer:evm'").execute(&db.pool).await.unwrap();
    let err = fresh.signer(stablerail::family::keys::RELAYER).await.unwrap_err().to_string();
    assert!(err.contains("keys init"), "{err}");
}

/// The service reads each served token's facts before it exposes a chain:
/// these bare nodes get, at every configured token, a contract that answers
/// `DOMAIN_SEPARATOR()` with the configured domain's and anything else with
/// 6 (decimals), and code at Permit2 and the x402 proxy.
fn stub_tokens(port: u16, chain: &str, chain_id: u64, config: &str) {
    use stablerail::family::evm::token_facts::{domain, PERMIT2, X402_EXACT_PROXY};
    let cfg: toml::Value = toml::from_str(config).unwrap();
    let set_code = |at: String, code: String| {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "anvil_setCode", "params": [at, code] });
        let (s, v) = common::http(port, "POST", "/", None, Some(body));
        assert!(s == 200 && v.get("error").is_none(), "{v}");
    };
    for (_, asset) in cfg["chains"][chain]["assets"].as_table().unwrap() {
        let Some(token) = asset.get("token").and_then(|t| t.as_str()).filter(|t| !t.is_empty()) else { continue };
        let name = asset.get("eip712_name").and_then(|v| v.as_str()).unwrap_or("");
        let version = asset.get("eip712_version").and_then(|v| v.as_str()).unwrap_or("");
        let salted = asset.get("domain").and_then(|v| v.as_str()) == Some("salted");
        let separator = domain(name, version, chain_id, token.parse().unwrap(), salted).separator();
        // if selector == DOMAIN_SEPARATOR() return separator else return 6
        let code =
            format!("0x633644e51560003560e01c14601957600660005260206000f35b7f{}60005260206000f3", alloy_primitives::hex::encode(separator));
        set_code(token.to_string(), code);
    }
    for at in [PERMIT2, X402_EXACT_PROXY] {
        set_code(at.to_string(), "0x00".into());
    }
}
