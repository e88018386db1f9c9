//! A devnet for end-to-end tests: anvil chains started by devnet/setup/up.mjs, the
//! service built on its config, and helpers to pay, read and wait.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use alloy_primitives::U256;
use alloy_sol_types::{sol, SolCall};
use serde_json::{json, Value};
use stablerail::adapter::system_clock;
use stablerail::api::Shared;
use stablerail::family::keys;

use super::app::MERCHANT;

sol! {
    function balanceOf(address owner) external view returns (uint256);
    function allowance(address owner, address spender) external view returns (uint256);
    function approve(address spender, uint256 value) external returns (bool);
    function mint(address to, uint256 value) external;
}

pub fn devnet_dir() -> PathBuf {
    super::repo_root().join("devnet")
}

/// A devnet script by its file name, in whichever role folder holds it
/// (clients, setup, node stand-ins, vectors, bench).
pub fn devnet_script(name: &str) -> PathBuf {
    let dir = devnet_dir();
    ["clients", "setup", "nodes", "vectors", "bench"]
        .iter()
        .map(|folder| dir.join(folder).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no devnet script {name}"))
}

pub struct Devnet {
    pub dir: tempfile::TempDir,
    pub info: Value,
    pub state: Shared,
}

impl Drop for Devnet {
    fn drop(&mut self) {
        let _ = Command::new("node").arg(devnet_script("down.mjs")).arg("--dir").arg(self.dir.path()).output();
    }
}

pub async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let v = rpc_answer(url, method, params).await;
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

/// The node's whole JSON-RPC answer, an error answer included.
pub async fn rpc_answer(url: &str, method: &str, params: Value) -> Value {
    reqwest::Client::new()
        .post(url)
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

// Devnet ports sit below Linux's ephemeral range (32768–60999), so no
// outgoing connection can hold one when anvil wants it.
impl Devnet {
    /// Keys first (so the devnet can fund them), then chains, then the service.
    pub async fn start(port: u16, chains: &str, extra_config: &str) -> Devnet {
        Devnet::start_with(port, chains, extra_config, 1, None).await
    }

    /// `replicas` service instances, each with its own engine, on one database.
    pub async fn start_with(port: u16, chains: &str, extra_config: &str, replicas: usize, db_url: Option<String>) -> Devnet {
        Devnet::start_full(port, chains, extra_config, replicas, db_url, None, None, &[]).await
    }

    /// With the config `stablerail devnet up` writes: x402 batch-settlement
    /// served on every EVM chain's USDC and USDT, and the facilitator's own
    /// receiver authorizer.
    pub async fn start_serving_batch(port: u16, chains: &str, extra_config: &str) -> Devnet {
        Devnet::start_full(port, chains, extra_config, 1, None, None, None, &["--batch-settlement"]).await
    }

    /// The service wallets of `held`'s roles made in its module (no
    /// in-process replica; `extra_config` names the same module).
    pub async fn start_held(port: u16, chains: &str, extra_config: &str, held: stablerail::family::module::Held) -> Devnet {
        Devnet::start_full(port, chains, extra_config, 0, None, None, Some(held), &[]).await
    }

    /// With Uniswap pools on every EVM chain and the devnet's swap
    /// provider; `swap_settings` are TOML lines for the `[swap]` table.
    pub async fn start_swaps(port: u16, chains: &str, swap_settings: &str) -> Devnet {
        Devnet::start_full(port, chains, "", 1, None, Some(swap_settings), None, &[]).await
    }

    /// The same with `replicas` in-process service instances (0: none; the
    /// test serves the binary itself).
    pub async fn start_swaps_with(port: u16, chains: &str, swap_settings: &str, replicas: usize) -> Devnet {
        Devnet::start_full(port, chains, "", replicas, None, Some(swap_settings), None, &[]).await
    }

    // Each way a test starts a devnet sets one of these; a builder for
    // seven callers would be more code than the list.
    #[allow(clippy::too_many_arguments)]
    async fn start_full(
        port: u16,
        chains: &str,
        extra_config: &str,
        replicas: usize,
        db_url: Option<String>,
        swaps: Option<&str>,
        held: Option<stablerail::family::module::Held>,
        up_flags: &[&str],
    ) -> Devnet {
        super::adapters_dir();
        let dir = tempfile::tempdir().unwrap();
        let db_url = db_url.unwrap_or_else(|| format!("sqlite://{}", dir.path().join("sr.db").display()));
        // The files the devnet's config will name, and the service wallets,
        // before the chains start so that they can be funded.
        let db = stablerail::db::Db::connect(&db_url).await.unwrap();
        let families = stablerail::config::devnet_families(chains);
        let made = keys::init(&dir.path().join("master.key"), &dir.path().join("pepper"), db.clone(), &families, held).await.unwrap();
        db.pool.close().await;
        let out = Command::new("node")
            .arg(devnet_script("up.mjs"))
            .args(["--dir", &dir.path().display().to_string(), "--port", &port.to_string(), "--chains", chains])
            .args(made.devnet_funding_args())
            .args(swaps.is_none().then_some("--no-swaps"))
            .args(up_flags)
            .args(["--adapters-dir", &super::adapters_dir().display().to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "devnet up: {}", String::from_utf8_lossy(&out.stderr));
        let info: Value = serde_json::from_slice(&out.stdout).unwrap();
        let cfg = dir.path().join("chains.toml");
        super::config::set_in_file(&cfg, "service.cache_dir", super::adapter_cache_dir().display().to_string());
        super::config::merge_into_file(&cfg, extra_config);
        if let Some(settings) = swaps {
            super::config::merge_into_file(&cfg, &format!("[swap]\n{settings}\n"));
        }
        let state = stablerail::server::build_state(&cfg, &db_url, system_clock()).await.unwrap();
        for n in 0..replicas {
            let replica =
                if n == 0 { state.clone() } else { stablerail::server::build_state(&cfg, &db_url, system_clock()).await.unwrap() };
            replica.start_workers(4);
        }
        Devnet { dir, info, state }
    }

    /// `stablerail ARGS --config <devnet's> --database <devnet's>`, as an
    /// operator runs it: its JSON output, asserting success.
    pub fn cli(&self, args: &[&str]) -> Value {
        let (ok, answer, stderr) = self.cli_answer(args);
        assert!(ok, "{stderr}\n{answer}");
        answer
    }

    /// A CLI command's exit, its JSON answer (null if none) and its stderr.
    pub fn cli_answer(&self, args: &[&str]) -> (bool, Value, String) {
        let out = Command::new(super::stablerail_bin())
            .args(args)
            .arg("--config")
            .arg(self.config_path())
            .arg("--database")
            .arg(format!("sqlite://{}", self.dir.path().join("sr.db").display()))
            .output()
            .unwrap();
        (out.status.success(), serde_json::from_slice(&out.stdout).unwrap_or(Value::Null), String::from_utf8_lossy(&out.stderr).into())
    }

    /// The devnet's config file.
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("chains.toml")
    }

    /// Set one dotted key (`service.claim_lease_seconds`) in the devnet config.
    pub fn set(&self, key: &str, value: impl Into<toml::Value>) {
        super::config::set_in_file(&self.config_path(), key, value)
    }

    /// Set `key` in the devnet config's `[service]` table.
    pub fn service_setting(&self, key: &str, value: i64) {
        self.set(&format!("service.{key}"), value)
    }

    /// Point `chain`'s rpc_urls at `url` in the devnet config.
    pub fn set_rpc_url(&self, chain: &str, url: &str) {
        assert!(self.chain(chain).is_object(), "{chain} is not on this devnet");
        self.set(&format!("chains.{chain}.rpc_urls"), vec![url.to_string()])
    }

    pub fn chain(&self, name: &str) -> &Value {
        &self.info["chains"][name]
    }

    pub fn payer(&self, n: usize) -> (String, String) {
        let p = &self.info["payers"][n];
        (p["address"].as_str().unwrap().into(), p["private_key"].as_str().unwrap().into())
    }

    pub fn token(&self, chain: &str, asset: &str) -> String {
        self.chain(chain)["assets"][asset]["address"].as_str().unwrap().to_string()
    }

    pub fn rpc_url(&self, chain: &str) -> String {
        self.chain(chain)["rpc"].as_str().unwrap().to_string()
    }

    /// Devnet USDC held by `who`.
    pub async fn balance(&self, chain: &str, who: &str) -> U256 {
        self.balance_of(chain, "usdc", who).await
    }

    pub async fn balance_of(&self, chain: &str, asset: &str, who: &str) -> U256 {
        let data = balanceOfCall { owner: who.parse().unwrap() }.abi_encode();
        self.read(chain, &self.token(chain, asset), data).await
    }

    /// A view call's single uint256 answer.
    pub async fn read(&self, chain: &str, to: &str, data: Vec<u8>) -> U256 {
        let out =
            rpc(&self.rpc_url(chain), "eth_call", json!([{ "to": to, "data": alloy_primitives::hex::encode_prefixed(data) }, "latest"]))
                .await;
        U256::from_str_radix(out.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    }

    /// Mint devnet USDC to `who`.
    pub async fn mint(&self, chain: &str, who: &str, units: U256) {
        self.mint_asset(chain, "usdc", who, units).await
    }

    /// The deployer (an unlocked anvil account) mints any devnet token.
    pub async fn mint_asset(&self, chain: &str, asset: &str, who: &str, units: U256) {
        let data = mintCall { to: who.parse().unwrap(), value: units }.abi_encode();
        let from = self.info["deployer"].as_str().unwrap().to_string();
        self.send_as(chain, &from, &self.token(chain, asset), data).await;
    }

    /// Send a transaction from an unlocked anvil account; asserts it succeeded.
    pub async fn send_as(&self, chain: &str, from: &str, to: &str, data: Vec<u8>) -> Value {
        let url = self.rpc_url(chain);
        let hash =
            rpc(&url, "eth_sendTransaction", json!([{ "from": from, "to": to, "data": alloy_primitives::hex::encode_prefixed(data) }]))
                .await;
        let mut receipt = Value::Null;
        for _ in 0..100 {
            receipt = rpc(&url, "eth_getTransactionReceipt", json!([hash])).await;
            if !receipt.is_null() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(receipt["status"], "0x1", "transaction to {to} on {chain}: {receipt}");
        receipt
    }

    pub async fn call(&self, method: &str, uri: &str, body: Option<Value>, headers: &[(&str, &str)]) -> (u16, Value) {
        call_state(&self.state, method, uri, body, headers).await
    }

    /// Another service state on this devnet's config file (after it was
    /// edited) and database.
    pub async fn restate(&self) -> Shared {
        let db_url = format!("sqlite://{}", self.dir.path().join("sr.db").display());
        stablerail::server::build_state(&self.dir.path().join("chains.toml"), &db_url, system_clock()).await.unwrap()
    }

    /// `n` intents of 1 USDC base → arbitrum, each signed through the x402
    /// client by payer `payer(k)`: (intent id, settle_proof).
    pub async fn sign_all(&self, n: usize, payer: impl Fn(usize) -> usize) -> Vec<(String, String)> {
        let mut signed = Vec::new();
        for k in 0..n {
            let (s, intent) = self
                .call(
                    "POST",
                    "/api/intents",
                    Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "arbitrum" })),
                    &[],
                )
                .await;
            assert_eq!(s, 201);
            let (_, key) = self.payer(payer(k));
            signed.push((intent["intent_id"].as_str().unwrap().to_string(), x402_pay(&intent["payment_requirements"], &key)));
        }
        signed
    }

    /// Submit every proof at once, so the engine sees them together.
    pub async fn submit_all(&self, signed: &[(String, String)]) {
        let posts = signed.iter().map(|(id, proof)| async move {
            self.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await
        });
        for (s, r) in futures::future::join_all(posts).await {
            assert_eq!(s, 200, "{r}");
        }
    }

    /// `n` intents signed by the payers in turn, submitted at once, settled.
    pub async fn pay_and_settle(&self, n: usize) {
        let signed = self.sign_all(n, |k| k % 8).await;
        self.submit_all(&signed).await;
        for (id, _) in &signed {
            self.wait_status(id, "TARGET_SETTLED").await;
        }
    }

    /// Relayer transactions mined on `chain`, and the distinct transactions
    /// the service recorded there: equal when no nonce was lost or doubled.
    pub async fn relayer_txs(&self, chain: &str) -> (u64, u64) {
        let relayer = self.state.keys.address(keys::RELAYER).await.unwrap();
        let count = rpc(&self.rpc_url(chain), "eth_getTransactionCount", json!([relayer, "latest"])).await;
        let mined = u64::from_str_radix(count.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let row = sqlx::query("SELECT COUNT(DISTINCT tx_hash) AS n FROM chain_transactions WHERE chain = $1 AND sender = $2")
            .bind(chain)
            .bind(&relayer)
            .fetch_one(&self.state.db.pool)
            .await
            .unwrap();
        (mined, sqlx::Row::get::<i64, _>(&row, "n") as u64)
    }

    /// The payer's `spender` allowance on a devnet token.
    pub async fn allowance(&self, chain: &str, asset: &str, owner: &str, spender: &str) -> U256 {
        let data = allowanceCall { owner: owner.parse().unwrap(), spender: spender.parse().unwrap() }.abi_encode();
        self.read(chain, &self.token(chain, asset), data).await
    }

    /// `owner` (an unlocked anvil account, as the payers are) approves `spender`.
    pub async fn approve(&self, chain: &str, asset: &str, owner: &str, spender: &str, value: U256) {
        let data = approveCall { spender: spender.parse().unwrap(), value }.abi_encode();
        self.send_as(chain, owner, &self.token(chain, asset), data).await;
    }

    pub async fn create_public(&self, body: Value) -> (String, Value) {
        let (s, intent) = self.call("POST", "/api/intents", Some(body), &[]).await;
        assert_eq!(s, 201, "{intent}");
        (intent["intent_id"].as_str().unwrap().to_string(), intent)
    }

    /// A public-flow payment of `amount` from payer `n` (`from` chain/asset)
    /// to MERCHANT (`to` chain/asset), signed by `sign(requirements, key)`;
    /// settles it and checks every balance it touches. Returns the settled
    /// intent and the proof.
    pub async fn settle_public(
        &self,
        from: (&str, &str),
        to: (&str, &str),
        amount: &str,
        n: usize,
        sign: impl Fn(&Value, &str) -> String,
    ) -> (Value, String) {
        let (payer, key) = self.payer(n);
        let collection = self.state.keys.address(keys::COLLECTION).await.unwrap();
        let proxy = self.state.keys.address(keys::PROXY).await.unwrap();
        let body = json!({ "recipient": MERCHANT, "amount": amount, "payer_chain": from.0, "payer_asset": from.1, "target_chain": to.0, "target_asset": to.1 });
        let (id, intent) = self.create_public(body).await;
        let sending = units(&intent["payment_requirements"]["amount"]);
        let decimals = self.chain(to.0)["assets"][to.1]["decimals"].as_u64().unwrap() as u32;
        let receiving = scaled(intent["receiving_amount"].as_str().unwrap(), decimals);
        let before = (
            self.balance_of(from.0, from.1, &payer).await,
            self.balance_of(from.0, from.1, &collection).await,
            self.balance_of(to.0, to.1, MERCHANT).await,
            self.balance_of(to.0, to.1, &proxy).await,
        );
        let proof = sign(&intent["payment_requirements"], &key);
        let (s, ok) = self.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
        assert_eq!(s, 200, "{ok}");
        let done = self.wait_status(&id, "TARGET_SETTLED").await;
        assert!(done["source_payment"]["tx_hash"].as_str().unwrap().starts_with("0x"));
        assert!(done["target_payment"]["tx_hash"].as_str().unwrap().starts_with("0x"));
        assert_eq!(self.balance_of(from.0, from.1, &payer).await, before.0 - sending, "payer lost exactly sending_amount");
        assert_eq!(self.balance_of(from.0, from.1, &collection).await, before.1 + sending, "the service collected it");
        assert_eq!(self.balance_of(to.0, to.1, MERCHANT).await, before.2 + receiving, "merchant gained exactly receiving_amount");
        assert_eq!(self.balance_of(to.0, to.1, &proxy).await, before.3 - receiving, "paid from the proxy wallet");
        (done, proof)
    }

    /// A new agent of a new account: (agent id, `Authorization` header value).
    /// An agent's hosted wallet address in `family`.
    pub async fn agent_wallet(&self, agent: &str, family: stablerail::config::Family) -> String {
        self.state.keys.address(&stablerail::family::keys::Role::Agent(agent.to_string()).key_name(family)).await.unwrap()
    }

    pub async fn agent(&self) -> (String, String) {
        let now = stablerail::clock::now_ms();
        let account = stablerail::store::agents::create_account(&self.state.db, "acme", now).await.unwrap();
        let agent = stablerail::store::agents::create_agent(&self.state.db, Some(&account), "bot", now).await.unwrap();
        let creds = stablerail::auth::issue_keys(&self.state.db, &self.state.pepper, &agent.id, now).await.unwrap();
        (agent.id, format!("Bearer {}", creds.bearer()))
    }

    /// The devnet TRON node's HTTP API.
    pub fn tron_api(&self) -> String {
        self.info["tron"]["http"].as_str().unwrap().to_string()
    }

    /// Give TRON account `who` (base58check) `trx` TRX and `usdt` base
    /// units of the devnet USDT (sent by payer 1 with tronweb).
    pub async fn tron_fund(&self, who: &str, trx: u64, usdt: u64) {
        let t = &self.info["tron"];
        let evm = format!("0x{}", hex::encode(&bs58::decode(who).with_check(None).into_vec().unwrap()[1..]));
        let wei = U256::from(trx) * U256::from(10u64).pow(U256::from(18));
        rpc(t["anvil"].as_str().unwrap(), "anvil_setBalance", json!([evm, format!("{wei:#x}")])).await;
        if usdt > 0 {
            let sent = tron_send(
                &self.tron_api(),
                t["payers"][1]["private_key"].as_str().unwrap(),
                t["assets"]["usdt"]["address"].as_str().unwrap(),
                who,
                usdt,
                &[],
            );
            assert_eq!(sent["info"]["receipt"]["result"], "SUCCESS", "{sent}");
        }
    }

    /// Solana payer `n`: (address, ed25519 seed hex).
    pub fn sol_payer(&self, n: usize) -> (String, String) {
        let p = &self.info["solana"]["payers"][n];
        (p["address"].as_str().unwrap().into(), p["seed"].as_str().unwrap().into())
    }

    pub fn sol_rpc(&self) -> String {
        self.info["solana"]["rpc"].as_str().unwrap().to_string()
    }

    pub fn sol_mint(&self, asset: &str) -> String {
        self.info["solana"]["assets"][asset]["address"].as_str().unwrap().to_string()
    }

    /// What `owner` holds of the Solana `asset`, over all its token accounts.
    pub async fn sol_balance(&self, asset: &str, owner: &str) -> u64 {
        let v = rpc(&self.sol_rpc(), "getTokenAccountsByOwner", json!([owner, { "mint": self.sol_mint(asset) }, { "encoding": "base64" }]))
            .await;
        let mut total = 0;
        for a in v["value"].as_array().unwrap() {
            let b = rpc(&self.sol_rpc(), "getTokenAccountBalance", json!([a["pubkey"]])).await;
            total += b["value"]["amount"].as_str().unwrap().parse::<u64>().unwrap();
        }
        total
    }

    /// Set `owner`'s token account for the Solana `asset` to hold `amount`.
    pub fn sol_fund(&self, owner: &str, asset: &str, amount: u64) {
        node(
            "sol-fund.mjs",
            &["--rpc", &self.sol_rpc(), "--owner", owner, "--mint", &self.sol_mint(asset), "--amount", &amount.to_string()],
            "",
        );
    }

    /// `/readyz` (status, body) once `done` holds for its body; the chains
    /// and the queue are read at most once per `probe_cache_seconds`.
    pub async fn ready_until(&self, done: impl Fn(&Value) -> bool) -> (u16, Value) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let (s, v) = self.call("GET", "/readyz", None, &[]).await;
            if done(&v) {
                return (s, v);
            }
            assert!(std::time::Instant::now() < deadline, "readiness never turned: {v}");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    pub async fn wait_status(&self, id: &str, want: &str) -> Value {
        let mut last = Value::Null;
        for _ in 0..600 {
            let (_, v) = self.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
            last = v.clone();
            let s = v["status"].as_str().unwrap_or("");
            if s == want {
                return v;
            }
            if ["TARGET_SETTLED", "VERIFICATION_FAILED", "BLOCKED", "PARTIAL_SETTLEMENT", "EXPIRED"].contains(&s) {
                panic!("intent ended {s}, wanted {want}: {v}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("intent {id} never reached {want}: {last}");
    }
}

/// The scripts that are also functions (devnet/clients/command.mjs): called in the
/// suite's one script host, not each in a Node of its own.
const HOSTED: &[&str] = &["pay.mjs", "craft.mjs", "sol-pay.mjs", "tron-pay.mjs"];

/// Run a devnet/ node script with `stdin`; its stdout, asserting success.
pub fn node(script: &str, args: &[&str], stdin: &str) -> String {
    use std::io::Write;
    if HOSTED.contains(&script) {
        return script_host::call(script, args, stdin);
    }
    let mut child = Command::new("node")
        .arg(devnet_script(script))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The real x402 client signs the requirements; returns the settle_proof.
pub fn x402_pay(requirements: &Value, private_key: &str) -> String {
    node("pay.mjs", &[private_key], &requirements.to_string())
}

/// The real x402 client signs each of `requirements` in one process.
pub fn x402_pay_many(requirements: &[Value], private_key: &str) -> Vec<String> {
    serde_json::from_str(&node("pay.mjs", &[private_key], &Value::from(requirements.to_vec()).to_string())).unwrap()
}

/// The x402 client with chain access, as Permit2 payments need: it reads
/// the payer's Permit2 allowance and signs an offered extension if short.
pub fn x402_pay_on(requirements: &Value, private_key: &str, rpc: &str) -> String {
    node("pay.mjs", &[private_key, rpc], &requirements.to_string())
}

/// A Permit2 payload signed with viem by hand (devnet/clients/craft.mjs): `case`
/// names what it carries or which fault it has.
pub fn craft(requirements: &Value, private_key: &str, rpc: &str, case: &str) -> String {
    let input = json!({ "requirements": requirements, "key": private_key, "rpc": rpc, "case": case });
    node("craft.mjs", &[], &input.to_string())
}

/// A Solana payment of `requirements` by the payer with ed25519 `seed`:
/// the real @x402/svm client, or with `case` a hand-built transaction with
/// that fault (devnet/clients/sol-pay.mjs). Returns the settle_proof.
pub fn sol_pay(requirements: &Value, seed: &str, rpc: &str, case: Option<&str>) -> String {
    let mut args = vec![seed, rpc];
    args.extend(case);
    node("sol-pay.mjs", &args, &requirements.to_string())
}

/// A TRC-20 transfer by tronweb against the devnet's TRON node
/// (devnet/clients/tron-send.mjs): built by the node, signed, broadcast unless
/// `extra` says otherwise. Returns {from, transaction, broadcast?, info?}.
pub fn tron_send(api: &str, key: &str, token: &str, to: &str, amount: impl std::fmt::Display, extra: &[&str]) -> Value {
    let amount = amount.to_string();
    let mut args = vec!["--api", api, "--key", key, "--token", token, "--to", to, "--amount", &amount];
    args.extend_from_slice(extra);
    serde_json::from_str(&node("tron-send.mjs", &args, "")).unwrap()
}

/// A TRON Permit2 payment of `requirements` signed over TIP-712 by tronweb
/// (devnet/clients/tron-pay.mjs) with the payer's `key`: the settle_proof.
/// POST `body` as JSON to `url` (a TRON node's HTTP API, a devnet
/// control endpoint) and read the JSON answer.
pub async fn post_json(url: &str, body: Value) -> Value {
    reqwest::Client::new().post(url).json(&body).send().await.unwrap().json().await.unwrap()
}

/// The devnet config's `[service] metrics_token`.
pub const METRICS_TOKEN: &str = "devnet";

/// `/metrics` of a service running on `port` with the devnet's config.
pub async fn metrics_text(port: u16) -> String {
    let url = format!("http://127.0.0.1:{port}/metrics");
    reqwest::Client::new().get(url).bearer_auth(METRICS_TOKEN).send().await.unwrap().text().await.unwrap()
}

/// What TRON account `who` holds of TRC-20 `token` (both base58check).
pub async fn trc20_balance(api: &str, token: &str, who: &str) -> u128 {
    let body = bs58::decode(who).with_check(None).into_vec().unwrap();
    let parameter = format!("{:0>64}", hex::encode(&body[1..]));
    let call = json!({ "owner_address": who, "contract_address": token, "function_selector": "balanceOf(address)", "parameter": parameter, "visible": true });
    let v = post_json(&format!("{api}/wallet/triggerconstantcontract"), call).await;
    u128::from_str_radix(v["constant_result"][0].as_str().unwrap(), 16).unwrap()
}

/// Sign a base64 Solana transaction as the wallet of `seed` (hex), send it
/// and wait for it (@solana/kit): (signature, err).
pub fn sol_send(transaction: &str, seed: &str, rpc: &str) -> (String, Value) {
    let out: Value = serde_json::from_str(&node("sol-send.mjs", &[seed, rpc], transaction)).unwrap();
    (out["signature"].as_str().unwrap().to_string(), out["err"].clone())
}

pub fn tron_pay(requirements: &Value, key: &str) -> String {
    node("tron-pay.mjs", &[key], &requirements.to_string())
}

/// One request through the router of `state`: (status, JSON body).
pub async fn call_state(state: &Shared, method: &str, uri: &str, body: Option<Value>, headers: &[(&str, &str)]) -> (u16, Value) {
    use tower::ServiceExt;
    let mut req = axum::http::Request::builder().method(method).uri(uri).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(axum::body::Body::from(body.map(|b| b.to_string()).unwrap_or_default())).unwrap();
    let resp = stablerail::api::router(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// A transaction sent by viem with `key` (devnet/clients/send-tx.mjs), waited
/// for: {hash, status, block}.
pub fn send_tx(rpc: &str, key: &str, to: &str, data: &str, value: &str, gas: Option<&str>) -> Value {
    let mut args = vec!["--rpc", rpc, "--key", key, "--to", to, "--data", data, "--value", value];
    if let Some(g) = gas {
        args.extend(["--gas", g]);
    }
    serde_json::from_str(&node("send-tx.mjs", &args, "")).unwrap()
}

/// The signature tronweb's `trx.sign` makes over a prepared transaction
/// ({tx_id, raw_data, raw_data_hex}), by the owner's `key` or, with
/// `cosign`, by any key.
pub fn tron_sign(prepared: &Value, key: &str, cosign: bool) -> String {
    let args: Vec<&str> = std::iter::once(key).chain(cosign.then_some("--cosign")).collect();
    node("tron-sign.mjs", &args, &prepared.to_string()).trim().to_string()
}

/// The PaymentPayload inside a settle_proof.
pub fn decode_proof(proof: &str) -> Value {
    use base64::Engine as _;
    serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(proof).unwrap()).unwrap()
}

pub fn units(v: &Value) -> U256 {
    U256::from_str_radix(v.as_str().unwrap(), 10).unwrap()
}

pub fn scaled(amount: &str, decimals: u32) -> U256 {
    let d: rust_decimal::Decimal = amount.parse().unwrap();
    let scaled = d * rust_decimal::Decimal::from(10u64.pow(decimals.min(18)));
    U256::from_str_radix(&scaled.trunc().to_string(), 10).unwrap()
}

/// devnet/clients/script-host.mjs, started on the first call and shared by every
/// test: one Node that has imported viem and the x402 clients once. Calls
/// are JSON lines matched to their answers by id, so tests call side by side.
mod script_host {
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader, Write};
    use std::process::{ChildStdin, Command, Stdio};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex, OnceLock};

    use serde_json::{json, Value};

    type Waiting = Arc<Mutex<HashMap<u64, mpsc::Sender<Value>>>>;

    struct Host {
        stdin: Mutex<ChildStdin>,
        waiting: Waiting,
        next: AtomicU64,
    }

    fn host() -> &'static Host {
        static HOST: OnceLock<Host> = OnceLock::new();
        HOST.get_or_init(|| {
            // The child exits when the suite does: its stdin closes. Nothing
            // waits on it, since it lives as long as the process.
            #[allow(clippy::zombie_processes)]
            let mut child = Command::new("node")
                .arg(super::devnet_script("script-host.mjs"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("node starts the script host");
            let waiting: Waiting = Arc::default();
            let stdout = child.stdout.take().unwrap();
            let routes = waiting.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let answer: Value = serde_json::from_str(&line.expect("the script host writes lines")).expect("a JSON answer");
                    let id = answer["id"].as_u64().expect("the answer names its call");
                    if let Some(to) = routes.lock().unwrap().remove(&id) {
                        let _ = to.send(answer);
                    }
                }
                // The host is gone: every caller still waiting learns it.
                routes.lock().unwrap().clear();
            });
            Host { stdin: Mutex::new(child.stdin.take().unwrap()), waiting, next: AtomicU64::new(0) }
        })
    }

    pub fn call(script: &str, args: &[&str], input: &str) -> String {
        let host = host();
        let id = host.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        host.waiting.lock().unwrap().insert(id, tx);
        let line = json!({ "id": id, "script": script, "args": args, "input": input }).to_string();
        writeln!(host.stdin.lock().unwrap(), "{line}").expect("the script host reads its calls");
        let answer = rx.recv().unwrap_or_else(|_| panic!("{script}: the script host exited"));
        match answer["output"].as_str() {
            Some(out) => out.to_string(),
            None => panic!("{script}: {}", answer["error"]),
        }
    }
}
