//! A devnet for end-to-end tests: anvil chains started by devnet/up.mjs, the
//! service built on its config, and helpers to pay, read and wait.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use alloy_primitives::U256;
use alloy_sol_types::{sol, SolCall};
use serde_json::{json, Value};
use stablerail::adapter::system_clock;
use stablerail::api::Shared;
use stablerail::keys::{self, Keystore};
use stablerail::settle::Engine;

use super::app::MERCHANT;

sol! {
    function balanceOf(address owner) external view returns (uint256);
    function mint(address to, uint256 value) external;
}

pub fn devnet_dir() -> PathBuf {
    super::repo_root().join("devnet")
}

pub struct Devnet {
    pub dir: tempfile::TempDir,
    pub info: Value,
    pub state: Shared,
}

impl Drop for Devnet {
    fn drop(&mut self) {
        let _ = Command::new("node").arg(devnet_dir().join("down.mjs")).arg("--dir").arg(self.dir.path()).output();
    }
}

pub async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let v: Value = reqwest::Client::new()
        .post(url)
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
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
        super::adapters_dir();
        let dir = tempfile::tempdir().unwrap();
        let db_url = db_url.unwrap_or_else(|| format!("sqlite://{}", dir.path().join("sr.db").display()));
        let db = stablerail::db::Db::connect(&db_url).await.unwrap();
        let ks = Keystore::open(db.clone(), &dir.path().join("master.key")).unwrap();
        let relayer = ks.address(keys::RELAYER).await.unwrap();
        let proxy = ks.address(keys::PROXY).await.unwrap();
        db.pool.close().await;
        let out = Command::new("node")
            .arg(devnet_dir().join("up.mjs"))
            .args(["--dir", &dir.path().display().to_string(), "--port", &port.to_string(), "--chains", chains])
            .args(["--gas", &format!("{relayer},{proxy}"), "--tokens", &proxy])
            .args(["--adapters-dir", &super::adapters_dir().display().to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "devnet up: {}", String::from_utf8_lossy(&out.stderr));
        let info: Value = serde_json::from_slice(&out.stdout).unwrap();
        let cfg = dir.path().join("chains.toml");
        let mut text = std::fs::read_to_string(&cfg).unwrap();
        text.push_str(extra_config);
        std::fs::write(&cfg, text).unwrap();
        let state = stablerail::server::build_state(&cfg, &db_url, system_clock()).await.unwrap();
        for n in 0..replicas {
            let replica = if n == 0 { state.clone() } else { stablerail::server::build_state(&cfg, &db_url, system_clock()).await.unwrap() };
            Engine::new(replica.clone(), replica.keys.clone()).spawn(4);
        }
        Devnet { dir, info, state }
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
        let out = rpc(&self.rpc_url(chain), "eth_call", json!([{ "to": to, "data": alloy_primitives::hex::encode_prefixed(data) }, "latest"])).await;
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
        let hash = rpc(&url, "eth_sendTransaction", json!([{ "from": from, "to": to, "data": alloy_primitives::hex::encode_prefixed(data) }])).await;
        let receipt = rpc(&url, "eth_getTransactionReceipt", json!([hash])).await;
        assert_eq!(receipt["status"], "0x1", "transaction to {to} on {chain}: {receipt}");
        receipt
    }

    pub async fn call(&self, method: &str, uri: &str, body: Option<Value>, headers: &[(&str, &str)]) -> (u16, Value) {
        use tower::ServiceExt;
        let mut req = axum::http::Request::builder().method(method).uri(uri).header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(axum::body::Body::from(body.map(|b| b.to_string()).unwrap_or_default())).unwrap();
        let resp = stablerail::api::router(self.state.clone()).oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    /// `n` intents of 1 USDC base → arbitrum, paid through the x402 client by
    /// the devnet payers in turn, all proofs submitted before any is awaited.
    pub async fn pay_and_settle(&self, n: usize) {
        let mut ids = Vec::new();
        for k in 0..n {
            let (s, intent) = self.call("POST", "/api/intents", Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "arbitrum" })), &[]).await;
            assert_eq!(s, 201);
            let (_, key) = self.payer(k % 8);
            let proof = x402_pay(&intent["payment_requirements"], &key);
            let id = intent["intent_id"].as_str().unwrap().to_string();
            let (s, r) = self.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
            assert_eq!(s, 200, "{r}");
            ids.push(id);
        }
        for id in &ids {
            self.wait_status(id, "TARGET_SETTLED").await;
        }
    }

    pub async fn wait_status(&self, id: &str, want: &str) -> Value {
        for _ in 0..600 {
            let (_, v) = self.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
            let s = v["status"].as_str().unwrap_or("");
            if s == want {
                return v;
            }
            if ["TARGET_SETTLED", "VERIFICATION_FAILED", "BLOCKED", "PARTIAL_SETTLEMENT", "EXPIRED"].contains(&s) {
                panic!("intent ended {s}, wanted {want}: {v}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("intent {id} never reached {want}");
    }
}

/// The real x402 client signs the requirements; returns the settle_proof.
pub fn x402_pay(requirements: &Value, private_key: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("node")
        .arg(devnet_dir().join("pay.mjs"))
        .arg(private_key)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(requirements.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "pay.mjs: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

pub fn units(v: &Value) -> U256 {
    U256::from_str_radix(v.as_str().unwrap(), 10).unwrap()
}

pub fn scaled(amount: &str, decimals: u32) -> U256 {
    let d: rust_decimal::Decimal = amount.parse().unwrap();
    let scaled = d * rust_decimal::Decimal::from(10u64.pow(decimals.min(18)));
    U256::from_str_radix(&scaled.trunc().to_string(), 10).unwrap()
}

