//! The Solana driver against the devnet's Solana node (JSON-RPC over
//! LiteSVM, `devnet/nodes/solana.mjs`), with payer-signed transactions built by
//! `@solana/kit`: co-signing as fee payer, stored before sent, finality from
//! signature statuses, re-sending stored bytes until their blockhash
//! expires and only then calling them dropped, balances, message signing.

use crate::common;

use std::process::{Child, Command};
use std::time::Duration;

use serde_json::{json, Value};
use stablerail::adapter::system_clock;
use stablerail::config::Family;
use stablerail::family::keys::Role;
use stablerail::family::{Finality, Resent, Submit};
use stablerail::payment::{SigningRequest, SolanaCosign, Submission};
use stablerail::store::settlement::{self as repo, TxRow};

use common::devnet::{devnet_script, rpc};

const PORT: u16 = 23745;

/// The devnet Solana node, stopped when dropped.
struct SolanaNode(Child);

impl SolanaNode {
    fn start() -> (SolanaNode, String) {
        let child = Command::new("node")
            .arg(devnet_script("solana.mjs"))
            .args(["--port", &PORT.to_string(), "--slot-ms", "200"])
            .spawn()
            .expect("node runs");
        common::wait_for_port(PORT);
        (SolanaNode(child), format!("http://127.0.0.1:{PORT}"))
    }
}

impl Drop for SolanaNode {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A payer-signed SOL transfer with `fee_payer`'s slot empty.
fn craft(url: &str, fee_payer: &str, lamports: u64) -> Value {
    let out = Command::new("node")
        .arg(devnet_script("sol-craft.mjs"))
        .args(["--rpc", url, "--fee-payer", fee_payer, "--lamports", &lamports.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cosign_of(tx: &Value) -> Submission {
    use base64::Engine as _;
    let transaction = base64::engine::general_purpose::STANDARD.decode(tx["transaction"].as_str().unwrap()).unwrap();
    Submission::SolanaCosign(SolanaCosign { transaction, fee_payer_index: 0 })
}

async fn lamports(url: &str, who: &str) -> u64 {
    rpc(url, "getBalance", json!([who])).await["value"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solana_driver_cosigns_stores_resends_and_follows_to_finality() {
    let (_node, url) = SolanaNode::start();
    let dir = tempfile::tempdir().unwrap();
    // The cluster's CAIP-2 name is its genesis hash's first 32 characters:
    // a provider naming another cluster is not used.
    let genesis = rpc(&url, "getGenesisHash", json!([])).await.as_str().unwrap()[..32].to_string();
    let body = format!(
        "{}\n[chains.sol]\nfamily = \"solana\"\ncaip2 = \"solana:{genesis}\"\nroles = [\"payer\", \"target\"]\nrpc_urls = [\"{url}\"]\nnative_asset = \"sol\"\n[chains.sol.assets.usdc]\nstate = \"unwired\"\nscheme = \"solana-spl\"\ndecimals = 6\n",
        common::BASE_USDC
    );
    let path = common::write_config(dir.path(), &body);
    let db = format!("sqlite://{}", dir.path().join("sr.db").display());
    common::init_keys(&path, &db).await;
    let state = stablerail::server::build_state(&path, &db, system_clock()).await.unwrap();
    let driver = state.drivers.for_chain("sol").expect("a Solana driver");
    assert_eq!(driver.family(), Family::Solana);

    // The node's genesis hash must match the configured CAIP-2 network, as
    // an EVM node's chain id must: a node of another cluster is refused.
    use stablerail::watch::{probe_chains, ChainProbe};
    let wrong = std::fs::read_to_string(&path).unwrap().replace(&format!("solana:{genesis}"), "solana:devnet");
    let cfg = stablerail::config::Config::parse(&wrong).unwrap();
    let probes = probe_chains(&cfg, &stablerail::family::chain::Chains::from_config(&cfg)).await;
    let sol = probes.iter().find(|(c, _)| c == "sol").map(|(_, p)| p.clone());
    assert_eq!(sol, Some(ChainProbe::WrongChainId { node: genesis.clone(), config: "devnet".into() }));
    let probes = probe_chains(&state.config, &state.chains).await;
    assert_eq!(probes.iter().find(|(c, _)| c == "sol").map(|(_, p)| p.clone()), Some(ChainProbe::Ok));

    // `keys init` made the Solana service wallets: ed25519, base58 addresses.
    let relayer = driver.address(&Role::Relayer).await.unwrap();
    assert_eq!(relayer, state.keys.address("relayer:solana").await.unwrap());
    rpc(&url, "requestAirdrop", json!([relayer, 5_000_000_000u64])).await;

    // Signing requests: an ed25519 signature the relayer's key verifies.
    let sig = driver.sign(&Role::Relayer, &SigningRequest::SolanaMessage(b"hello".to_vec())).await.unwrap();
    let key = state.keys.ed25519(&Role::Relayer, Family::Solana).await.unwrap();
    assert!(stablerail::crypto::ed25519_verify(&key.public(), b"hello", &sig));
    assert!(driver.sign(&Role::Relayer, &SigningRequest::Eip712Digest(vec![0; 32])).await.is_err());

    // Rows hang on an intent.
    let app = stablerail::api::router(state.clone());
    let id = {
        use tower::ServiceExt;
        let body = json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base" });
        let req = axum::http::Request::post("/api/intents")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        let resp = app.oneshot(req).await.unwrap();
        let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
        serde_json::from_slice::<Value>(&bytes).unwrap()["intent_id"].as_str().unwrap().to_string()
    };
    let row = |step: i32| TxRow { intent_id: id.clone(), leg: "source".into(), step, label: format!("s{step}") };
    let follow = |tx: String| {
        let driver = driver.clone();
        async move {
            for _ in 0..100 {
                match driver.finality("sol", &tx, 1).await.unwrap() {
                    Finality::Confirmed(r) => return r,
                    Finality::Failed => panic!("{tx} failed"),
                    Finality::Pending => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
            panic!("{tx} never final");
        }
    };

    // 1. Co-signed as fee payer, stored, sent, final; the receipt is the
    //    node's transaction record.
    let t1 = craft(&url, &relayer, 1_000_000);
    let recipient = t1["recipient"].as_str().unwrap().to_string();
    let id1 = driver.submit("sol", &Role::Relayer, &cosign_of(&t1), row(0), Submit::default()).await.unwrap();
    let stored = repo::list_txs(&state.db, &id, "source").await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!((stored[0].tx_hash.as_str(), stored[0].sender.as_str()), (id1.as_str(), relayer.as_str()));
    let receipt = follow(id1.clone()).await;
    assert_eq!(receipt.json["transaction"]["signatures"][0], id1.as_str());
    assert!(receipt.json["meta"]["err"].is_null());
    assert_eq!(lamports(&url, &recipient).await, 1_000_000);
    // Sending it again changes nothing: the node knows it.
    assert_eq!(driver.resend("sol", &stored[0]).await.unwrap(), Resent::InFlight);
    assert!(!driver.can_land("sol", &stored[0]).await, "landed already");
    assert_eq!(lamports(&url, &recipient).await, 1_000_000, "paid once");

    // 2. Signed and stored, never sent (a crash in between): re-sending the
    //    stored bytes lands it, once.
    let t2 = craft(&url, &relayer, 2_000_000);
    let (raw, id2) = state.drivers.solana().cosign(&Role::Relayer, &cosign_of_bytes(&t2), 0).await.unwrap();
    let stored2 = stablerail::store::settlement::StoredTx {
        step: 1,
        label: "s1".into(),
        raw,
        tx_hash: id2.clone(),
        nonce: -1,
        status: "signed".into(),
        sender: relayer.clone(),
    };
    assert!(driver.can_land("sol", &stored2).await, "its blockhash is still valid");
    assert_eq!(driver.resend("sol", &stored2).await.unwrap(), Resent::InFlight);
    follow(id2.clone()).await;
    assert_eq!(driver.resend("sol", &stored2).await.unwrap(), Resent::InFlight);
    assert_eq!(lamports(&url, t2["recipient"].as_str().unwrap()).await, 2_000_000, "paid once");

    // 3. Stored, never sent, and its blockhash expired: dropped for good,
    //    and only now may the step be signed again.
    let t3 = craft(&url, &relayer, 3_000_000);
    let (raw, id3) = state.drivers.solana().cosign(&Role::Relayer, &cosign_of_bytes(&t3), 0).await.unwrap();
    let stored3 = stablerail::store::settlement::StoredTx {
        step: 2,
        label: "s2".into(),
        raw,
        tx_hash: id3,
        nonce: -1,
        status: "signed".into(),
        sender: relayer.clone(),
    };
    rpc(&url, "devnet_advanceSlots", json!([200])).await;
    assert_eq!(driver.resend("sol", &stored3).await.unwrap(), Resent::Superseded);
    assert!(!driver.can_land("sol", &stored3).await);
    assert_eq!(lamports(&url, t3["recipient"].as_str().unwrap()).await, 0);

    // 4. A payer transaction whose blockhash expired before it was sent is
    //    refused, and nothing moves.
    let t4 = craft(&url, &relayer, 4_000_000);
    rpc(&url, "devnet_advanceSlots", json!([200])).await;
    let refused = driver.submit("sol", &Role::Relayer, &cosign_of(&t4), row(3), Submit::default()).await;
    assert!(matches!(refused, Err(stablerail::family::SendError::WouldRevert(_))), "{refused:?}");

    // Bad input gets the node's errors, not a crash: bytes that are no
    // transaction, an unknown method, a body that is not JSON.
    let garbage = common::devnet::rpc_answer(&url, "sendTransaction", json!(["bm90IGEgdHJhbnNhY3Rpb24=", { "encoding": "base64" }])).await;
    assert_eq!(garbage["error"]["code"], -32602, "{garbage}");
    let unknown = common::devnet::rpc_answer(&url, "getEverything", json!([])).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let text = reqwest::Client::new().post(&url).body("{not json").send().await.unwrap().json::<Value>().await.unwrap();
    assert_eq!(text["error"]["code"], -32700, "{text}");
    assert_eq!(rpc(&url, "getHealth", json!([])).await, "ok", "still serving");

    // 5. A transaction whose fee-payer slot is not this wallet's is refused.
    let other = craft(&url, "11111111111111111111111111111112", 1);
    let refused = driver.submit("sol", &Role::Relayer, &cosign_of(&other), row(4), Submit::default()).await;
    assert!(matches!(refused, Err(stablerail::family::SendError::WouldRevert(_))), "{refused:?}");

    // Balances: SOL read on chain.
    let balances = driver.balances("sol", &recipient).await.unwrap();
    assert_eq!(balances.len(), 1, "the unwired asset is not read");
    assert_eq!((balances[0].asset.as_str(), balances[0].raw, balances[0].decimals), ("sol", alloy_primitives::U256::from(1_000_000u64), 9));

    // An agent's hosted Solana wallet: in /v2/me, and in its account's
    // balances with the SOL it holds on chain.
    let now = stablerail::clock::now_ms();
    let account = stablerail::store::agents::create_account(&state.db, "acme", now).await.unwrap();
    let agent = stablerail::store::agents::create_agent(&state.db, Some(&account), "sol-agent", now).await.unwrap();
    let creds = stablerail::auth::issue_keys(&state.db, &state.pepper, &agent.id, now).await.unwrap();
    let auth = format!("Bearer {}", creds.bearer());
    let hosted = driver.address(&Role::Agent(agent.id.clone())).await.unwrap();
    assert_eq!(bs58::decode(&hosted).into_vec().unwrap().len(), 32);
    rpc(&url, "requestAirdrop", json!([hosted, 1_500_000_000u64])).await;
    let get = |path: &'static str| {
        let (app, auth) = (stablerail::api::router(state.clone()), auth.clone());
        async move {
            use tower::ServiceExt;
            let req = axum::http::Request::get(path).header("authorization", auth).body(axum::body::Body::empty()).unwrap();
            let resp = app.oneshot(req).await.unwrap();
            let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
            serde_json::from_slice::<Value>(&bytes).unwrap()
        }
    };
    assert_eq!(get("/v2/me").await["solana_wallet_address"], hosted.as_str());
    let wallets = get("/v2/agents/balances").await;
    let sol = wallets["wallets"].as_array().unwrap().iter().find(|w| w["chain_type"] == "solana").expect("a Solana wallet row");
    assert_eq!(sol["address"], hosted.as_str());
    assert_eq!(sol["balances"][0]["chain"], "sol");
    assert_eq!(sol["balances"][0]["raw_value"], "1500000000");
    assert_eq!(sol["balances"][0]["display_values"]["sol"], "1.5");
}

fn cosign_of_bytes(tx: &Value) -> Vec<u8> {
    let Submission::SolanaCosign(c) = cosign_of(tx) else { unreachable!() };
    c.transaction
}

/// `devnet up` with `solana`: a Solana node beside the anvils, a USDC-like
/// mint, payers holding it, the service's Solana relayer and proxy funded
/// with SOL and the proxy with tokens, and the cluster's CAIP-2 id in the
/// generated config.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_devnet_has_a_funded_solana_cluster() {
    let dn = common::devnet::Devnet::start(23845, "base,solana", "").await;
    let sol = &dn.info["solana"];
    let url = sol["rpc"].as_str().unwrap();
    let mint = sol["assets"]["usdc"]["address"].as_str().unwrap();
    let genesis = rpc(url, "getGenesisHash", json!([])).await;
    assert_eq!(sol["caip2"], format!("solana:{}", &genesis.as_str().unwrap()[..32]));
    let config = std::fs::read_to_string(dn.dir.path().join("chains.toml")).unwrap();
    assert!(config.contains(&format!("caip2 = {:?}", sol["caip2"].as_str().unwrap())), "{config}");
    let held = |owner: String| async move {
        let v = rpc(url, "getTokenAccountsByOwner", json!([owner, { "mint": mint }, { "encoding": "base64" }])).await;
        let accounts = v["value"].as_array().unwrap().clone();
        assert_eq!(accounts.len(), 1, "one associated token account");
        let pubkey = accounts[0]["pubkey"].as_str().unwrap().to_string();
        rpc(url, "getTokenAccountBalance", json!([pubkey])).await["value"]["uiAmountString"].as_str().unwrap().to_string()
    };
    let payer = sol["payers"][0]["address"].as_str().unwrap().to_string();
    assert_eq!(held(payer.clone()).await, "1000000");
    assert!(lamports(url, &payer).await > 0);
    let relayer = dn.state.keys.address("relayer:solana").await.unwrap();
    let proxy = dn.state.keys.address("proxy:solana").await.unwrap();
    assert_eq!(lamports(url, &relayer).await, 100_000_000_000);
    assert_eq!(held(proxy).await, "1000000");
}
