//! End to end on local anvil chains: real payer signatures from the x402
//! client (@x402/evm), the engine settling both legs, balances checked on chain.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::U256;
use serde_json::{json, Value};
use stablerail::family::keys;

use common::app::MERCHANT;
use common::devnet::{rpc, units, x402_pay, Devnet};

alloy_sol_types::sol! {
    function transfer(address to, uint256 value) external returns (bool);
}
use stablerail::adapter::system_clock;
use stablerail::settle::Engine;

async fn public_payment(dn: &Devnet, from: &str, to: &str, amount: &str, payer: usize) {
    let (done, proof) = dn.settle_public((from, "usdc"), (to, "usdc"), amount, payer, x402_pay).await;
    assert!(done["target_payment"]["explorer_url"].as_str().unwrap().contains(done["target_payment"]["tx_hash"].as_str().unwrap()));
    // The same proof again moves nothing more.
    let merchant = dn.balance(to, MERCHANT).await;
    let id = done["intent_id"].as_str().unwrap();
    let (s, _) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 409);
    assert_eq!(dn.balance(to, MERCHANT).await, merchant);
    // Its every status, in order, from the events written with each change.
    use stablerail::store::transition::{events_of, Subject};
    let events = events_of(&dn.state.db, Subject::Intent, id).await.unwrap();
    let path: Vec<&str> = events.iter().map(|(_, _, to, _)| to.as_str()).collect();
    assert_eq!(path, ["AWAITING_PAYMENT", "PENDING", "SOURCE_SETTLED", "TARGET_SETTLING", "TARGET_SETTLED"], "{events:?}");
    assert!(events.windows(2).all(|w| w[0].0 < w[1].0 && w[1].1.as_deref() == Some(w[0].2.as_str())), "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn public_flow_settles_across_chains() {
    let dn = Devnet::start(21545, "base,arbitrum,polygon,bsc", "").await;
    public_payment(&dn, "base", "arbitrum", "10", 0).await;
    public_payment(&dn, "base", "base", "2.5", 1).await;
    public_payment(&dn, "polygon", "bsc", "7.123456", 2).await;

    // What an operator scrapes after those payments.
    use tower::ServiceExt;
    let resp = stablerail::api::router(dn.state.clone())
        .oneshot(
            axum::http::Request::get("/metrics")
                .header("authorization", format!("Bearer {}", common::devnet::METRICS_TOKEN))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = String::from_utf8(http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes().to_vec()).unwrap();
    let value = |name: &str, labels: &[&str]| -> f64 {
        text.lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']) && labels.iter().all(|f| l.contains(f)))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!(value("stablerail_intents", &["status=\"TARGET_SETTLED\""]), 3.0, "{text}");
    assert_eq!(value("stablerail_settlement_queue_depth", &[]), 0.0);
    assert!(
        value("stablerail_http_requests_total", &["route=\"/api/intents/{id}\"", "method=\"POST\"", "status=\"200\""]) >= 3.0,
        "{text}"
    );
    assert!(value("stablerail_http_request_duration_seconds_count", &["route=\"/api/intents\""]) >= 3.0, "{text}");
    for (chain, leg) in [("base", "source"), ("arbitrum", "target"), ("polygon", "source"), ("bsc", "target")] {
        let (c, l) = (format!("chain=\"{chain}\""), format!("leg=\"{leg}\""));
        assert!(value("stablerail_settlement_legs_total", &[&c, &l, "outcome=\"settled\""]) >= 1.0, "{chain} {leg}: {text}");
        assert!(value("stablerail_settlement_leg_seconds_count", &[&c, &l]) >= 1.0, "{chain} {leg}: {text}");
    }
    assert!(
        value("stablerail_rpc_calls_total", &["chain=\"base\"", "method=\"eth_sendRawTransaction\"", "outcome=\"ok\""]) >= 1.0,
        "{text}"
    );
    assert!(value("stablerail_adapter_calls_total", &["function=\"verify\"", "outcome=\"ok\""]) >= 3.0, "{text}");
    assert!(text.contains("stablerail_rpc_call_duration_seconds_bucket{"), "histograms have buckets: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn agent_execute_settles_from_its_hosted_wallet() {
    let dn = Devnet::start(21645, "base,arbitrum", "").await;
    let (agent, auth) = dn.agent().await;
    let wallet = dn.state.keys.address(&keys::agent_key(&agent)).await.unwrap();
    dn.mint("base", &wallet, U256::from(100_000_000u64)).await;
    dn.mint("arbitrum", &wallet, U256::from(100_000_000u64)).await;
    let (_, me) = dn.call("GET", "/v2/me", None, &[("authorization", &auth)]).await;
    assert_eq!(me["wallet_address"], wallet.as_str());
    let (s, b) = dn.call("GET", "/v2/agents/balances", None, &[("authorization", &auth)]).await;
    assert_eq!(s, 200, "{b}");
    let w = &b["wallets"][0];
    assert_eq!(w["address"], wallet.as_str());
    assert_eq!(w["chain_type"], "ethereum");
    let rows = w["balances"].as_array().unwrap();
    let usdc = rows.iter().find(|r| r["chain"] == "base" && r["asset"] == "usdc").unwrap();
    assert_eq!(usdc["raw_value"], "100000000");
    assert_eq!(usdc["raw_value_decimals"], 6);
    assert_eq!(usdc["display_values"]["usdc"], "100");
    assert!(rows.iter().any(|r| r["chain"] == "arbitrum" && r["asset"] == "eth" && r["raw_value"] == "0"), "native rows too: {rows:?}");

    let (s, intent) = dn
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "5", "payer_chain": "base", "target_chain": "arbitrum" })),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(s, 201, "{intent}");
    let id = intent["intent_id"].as_str().unwrap();
    let merchant_before = dn.balance("arbitrum", MERCHANT).await;
    let proxy = dn.state.keys.address(keys::PROXY).await.unwrap();
    let proxy_before = dn.balance("arbitrum", &proxy).await;
    let (s, r) = dn.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["status"], "TARGET_SETTLED", "execute waits for the settlement: {r}");
    dn.wait_status(id, "TARGET_SETTLED").await;
    let sending = units(&intent["payment_requirements"]["amount"]);
    // The agent pays once, on the payer chain; the proxy pays the merchant.
    assert_eq!(dn.balance("base", &wallet).await, U256::from(100_000_000u64) - sending);
    assert_eq!(dn.balance("arbitrum", MERCHANT).await, merchant_before + U256::from(5_000_000u64));
    assert_eq!(dn.balance("arbitrum", &wallet).await, U256::from(100_000_000u64), "the agent's target-chain wallet is not touched");
    assert_eq!(dn.balance("arbitrum", &proxy).await, proxy_before - U256::from(5_000_000u64), "payout from the proxy wallet");

    // An agent without the funds gets 402, no money moves, and the intent
    // still awaits payment: the agent funds its wallet and executes again.
    let (s, big) = dn
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "500", "payer_chain": "base", "target_chain": "arbitrum" })),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(s, 201);
    let big_id = big["intent_id"].as_str().unwrap();
    let before = dn.balance("base", &wallet).await;
    let (s, e) = dn.call("POST", &format!("/v2/intents/{big_id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!(s, 402, "{e}");
    assert_eq!(e["message"], "agent wallet has insufficient balance on payer chain");
    assert_eq!(dn.balance("base", &wallet).await, before);
    let (_, v) = dn.call("GET", &format!("/v2/intents/{big_id}"), None, &[("authorization", &auth)]).await;
    assert_eq!(v["status"], "AWAITING_PAYMENT", "{v}");
    assert_eq!(v["error_code"], "agent_wallet_short", "{v}");
    // The operator's devnet CLI funds the agent's wallet.
    let out = std::process::Command::new(common::stablerail_bin())
        .args(["devnet", "fund", &wallet, big["sending_amount"].as_str().unwrap(), "--chain", "base", "--asset", "usdc", "--dir"])
        .arg(dn.dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "devnet fund: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(dn.balance("base", &wallet).await, before + units(&big["payment_requirements"]["amount"]));
    let merchant_before = dn.balance("arbitrum", MERCHANT).await;
    let (s, r) = dn.call("POST", &format!("/v2/intents/{big_id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["status"], "TARGET_SETTLED", "{r}");
    assert_eq!(dn.balance("base", &wallet).await, before, "debited exactly the funded sending amount, once");
    assert_eq!(dn.balance("arbitrum", MERCHANT).await, merchant_before + U256::from(500_000_000u64));
    assert_eq!(dn.balance("arbitrum", &wallet).await, U256::from(100_000_000u64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_intents_share_one_relayer() {
    let dn = Arc::new(Devnet::start(21745, "base,arbitrum", "").await);
    let merchant_before = dn.balance("arbitrum", MERCHANT).await;
    // Payer 7 signs the last intent, then spends its USDC before the proof
    // goes in: that one call must fail on its own, whatever it is sent with.
    let (drained, _) = dn.payer(7);
    let signed = dn.sign_all(20, |k| if k == 19 { 7 } else { k % 7 }).await;
    let all = dn.balance("base", &drained).await;
    let data = alloy_sol_types::SolCall::abi_encode(&transferCall { to: MERCHANT.parse().unwrap(), value: all });
    dn.send_as("base", &drained, &dn.token("base", "usdc"), data).await;
    dn.submit_all(&signed).await;
    let ids: Vec<String> = signed.into_iter().map(|(id, _)| id).collect();
    for id in &ids[..19] {
        dn.wait_status(id, "TARGET_SETTLED").await;
    }
    let failed = dn.wait_status(&ids[19], "VERIFICATION_FAILED").await;
    assert!(failed["error_message"].as_str().unwrap().contains("insufficient"), "{failed}");
    assert_eq!(dn.balance("arbitrum", MERCHANT).await, merchant_before + U256::from(19_000_000u64));
    // One relayer on each chain: every mined transaction is one the service
    // recorded, none lost to a nonce collision, never more than one per
    // settlement. The 19 proofs went in together, so their source legs went
    // out together (Multicall3): fewer transactions than intents on base.
    // The payouts become ready as their source legs confirm, so how many
    // share a batch on arbitrum is the machine's timing, not a rule.
    for (chain, batched) in [("base", true), ("arbitrum", false)] {
        let (mined, recorded) = dn.relayer_txs(chain).await;
        assert_eq!(mined, recorded, "{chain}");
        assert!(mined <= 19, "{chain}: {mined} transactions for 19 settlements");
        if batched {
            assert!(mined < 19, "{chain}: {mined} transactions for 19 settlements: nothing was batched");
        }
    }
    let rows: i64 =
        sqlx::Row::get(&sqlx::query("SELECT COUNT(*) AS n FROM chain_transactions").fetch_one(&dn.state.db.pool).await.unwrap(), "n");
    assert_eq!(rows, 38, "one row per settled leg");
    // Each intent can find the exact signed bytes of its transaction again
    // (what a restart re-broadcasts), batched or not.
    for id in &ids[..19] {
        for leg in ["source", "target"] {
            let txs = stablerail::store::settlement::list_txs(&dn.state.db, id, leg).await.unwrap();
            assert_eq!(txs.len(), 1);
            assert_eq!(format!("{:#x}", alloy_primitives::keccak256(&txs[0].raw)), txs[0].tx_hash, "{id} {leg}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unfunded_payer_fails_verification_and_sanctioned_payer_is_blocked() {
    let list_dir = tempfile::tempdir().unwrap();
    let list = list_dir.path().join("sdn.txt");
    // the devnet payer at mnemonic index 7 (payers[6])
    std::fs::write(&list, "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955\n").unwrap();
    let dn = Devnet::start(21845, "base", &format!("\n[compliance]\nsanctions_files = [{:?}]\n", list.display().to_string())).await;

    let broke = alloy_signer_local::PrivateKeySigner::random();
    let (_, intent) =
        dn.call("POST", "/api/intents", Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base" })), &[]).await;
    let id = intent["intent_id"].as_str().unwrap();
    let key = alloy_primitives::hex::encode_prefixed(broke.credential().to_bytes());
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, _) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "offline checks pass; the chain says no");
    let failed = dn.wait_status(id, "VERIFICATION_FAILED").await;
    assert!(failed["error_message"].as_str().unwrap().contains("insufficient"), "{failed}");

    let (addr, key) = dn.payer(6);
    assert_eq!(addr, "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955");
    let before = dn.balance("base", &addr).await;
    let (_, intent) =
        dn.call("POST", "/api/intents", Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base" })), &[]).await;
    let id = intent["intent_id"].as_str().unwrap();
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, _) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200);
    dn.wait_status(id, "BLOCKED").await;
    assert_eq!(dn.balance("base", &addr).await, before, "no funds moved");
}

/// `/v2` execute from a hosted wallet on a sanctions list: 403 with the
/// generic `payment declined`, the intent ends BLOCKED, nothing moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn execute_from_a_sanctioned_wallet_is_declined_and_blocked() {
    let dn = Devnet::start_with(25445, "base", "", 0, None).await;
    let (agent, auth) = dn.agent().await;
    let wallet = dn.state.keys.address(&keys::agent_key(&agent)).await.unwrap();
    dn.mint("base", &wallet, U256::from(10_000_000u64)).await;
    let list = dn.dir.path().join("sdn.txt");
    std::fs::write(&list, format!("{wallet}\n")).unwrap();
    dn.set("compliance.sanctions_files", toml::Value::Array(vec![toml::Value::String(list.display().to_string())]));
    let state = dn.restate().await;
    Engine::new(state.engine_deps()).spawn(1);
    let body = json!({ "recipient": MERCHANT, "amount": "2", "payer_chain": "base" });
    let (s, intent) = common::devnet::call_state(&state, "POST", "/v2/intents", Some(body), &[("authorization", &auth)]).await;
    assert_eq!(s, 201, "{intent}");
    let id = intent["intent_id"].as_str().unwrap();
    let (s, e) = common::devnet::call_state(&state, "POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!((s, e["message"].as_str(), e["error"].as_str()), (403, Some("payment declined"), Some("Forbidden")), "{e}");
    let (_, now) = common::devnet::call_state(&state, "GET", &format!("/v2/intents/{id}"), None, &[("authorization", &auth)]).await;
    assert_eq!(now["status"], "BLOCKED", "{now}");
    assert_eq!(dn.balance("base", &wallet).await, U256::from(10_000_000u64), "nothing moved");
}

use common::process::{anvil, http, kill, serve};

/// The target chain goes down after the source leg, the server is killed
/// with SIGKILL while the payout is pending, both come back: the merchant is
/// paid exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn payout_survives_a_chain_outage_and_a_crash() {
    let dn = Devnet::start_with(21945, "base,arbitrum", "", 0, None).await;
    let port = common::process::free_port();
    // The service starts with both chains up (a chain down at start-up is
    // withheld), the intent is created, then arbitrum goes down (SIGTERM:
    // anvil writes its state file and exits).
    let mut server = serve(&dn, port);
    let (s, intent) = http(
        port,
        "POST",
        "/api/intents",
        Some(json!({ "recipient": MERCHANT, "amount": "3", "payer_chain": "base", "target_chain": "arbitrum" })),
    );
    assert_eq!(s, 201, "{intent}");
    let arb_pid = dn.chain("arbitrum")["pid"].as_u64().unwrap() as u32;
    kill(arb_pid, "-TERM");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", dn.chain("arbitrum")["port"].as_u64().unwrap() as u16)).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let id = intent["intent_id"].as_str().unwrap().to_string();
    let (_, key) = dn.payer(3);
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, r) = http(port, "POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })));
    assert_eq!(s, 200, "{r}");

    // The source leg settles; the payout cannot be dispatched, so the intent
    // is rolled back TARGET_SETTLING → SOURCE_SETTLED (with the reason) and
    // retried. The rollback is the only writer of error_message here.
    let mut rolled_back = Value::Null;
    for _ in 0..200 {
        let (_, v) = http(port, "GET", &format!("/api/intents/{id}"), None);
        if v["status"] == "SOURCE_SETTLED" && v["error_message"].is_string() {
            rolled_back = v;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(rolled_back["source_payment"]["tx_hash"].is_string(), "{rolled_back}");
    assert!(rolled_back.get("target_payment").is_none());

    kill(server.0.id(), "-KILL");
    let _ = server.0.wait();
    let arb = anvil(&dn, "arbitrum");
    common::wait_for_port(dn.chain("arbitrum")["port"].as_u64().unwrap() as u16);
    let merchant_before = dn.balance("arbitrum", MERCHANT).await;
    let mut server = serve(&dn, port);
    let mut done = Value::Null;
    for _ in 0..600 {
        let (_, v) = http(port, "GET", &format!("/api/intents/{id}"), None);
        if v["status"] == "TARGET_SETTLED" {
            done = v;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(done["status"], "TARGET_SETTLED", "{done}");
    assert_eq!(dn.balance("arbitrum", MERCHANT).await, merchant_before + U256::from(3_000_000u64), "paid exactly once");
    let relayer = dn.state.keys.address(keys::RELAYER).await.unwrap();
    let sent = rpc(dn.chain("arbitrum")["rpc"].as_str().unwrap(), "eth_getTransactionCount", json!([relayer, "latest"])).await;
    assert_eq!(sent, "0x1", "one payout transaction on the target chain");
    kill(server.0.id(), "-TERM");
    assert!(server.0.wait().unwrap().success(), "graceful shutdown");
    drop(arb);
}

/// Three replicas (three engines, four workers each) on one Postgres: every
/// intent is settled once, and the shared relayer's nonces never collide.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_on_one_postgres_settle_each_intent_once() {
    let scratch = tempfile::tempdir().unwrap();
    let (url, schema) = common::app::database(common::app::Backend::Postgres, scratch.path()).await;
    let dn = Devnet::start_with(22045, "base,arbitrum", "", 3, Some(url)).await;
    // These chains have no Multicall3: calls ready together go out one by one.
    for chain in ["base", "arbitrum"] {
        rpc(&dn.rpc_url(chain), "anvil_setCode", json!([dn.info["multicall3"], "0x"])).await;
    }
    let merchant_before = dn.balance("arbitrum", MERCHANT).await;
    dn.pay_and_settle(12).await;
    assert_eq!(dn.balance("arbitrum", MERCHANT).await, merchant_before + U256::from(12_000_000u64));
    for chain in ["base", "arbitrum"] {
        let (mined, recorded) = dn.relayer_txs(chain).await;
        assert_eq!(mined, recorded, "{chain}: every relayer transaction is one the replicas recorded");
        assert_eq!(mined, 12, "{chain}: one transaction per intent without Multicall3");
    }
    let rows: i64 =
        sqlx::Row::get(&sqlx::query("SELECT COUNT(*) AS n FROM chain_transactions").fetch_one(&dn.state.db.pool).await.unwrap(), "n");
    assert_eq!(rows, 24);
    drop(dn);
    if let Some((base, schema)) = schema {
        let admin = stablerail::db::Db::connect_unmigrated(&base).await.unwrap();
        let _ = sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin.pool).await;
    }
}

/// With `confirmations = 3` the engine waits for two more blocks on each leg
/// before it records the leg as settled.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn legs_wait_for_their_confirmations() {
    let dn = Devnet::start_with(22145, "base", "", 0, None).await;
    dn.set("chains.base.confirmations", 3);
    let cfg = dn.config_path();
    let db_url = format!("sqlite://{}", dn.dir.path().join("sr.db").display());
    let state = stablerail::server::build_state(&cfg, &db_url, system_clock()).await.unwrap();
    Engine::new(state.engine_deps()).spawn(2);

    let (s, intent) =
        dn.call("POST", "/api/intents", Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base" })), &[]).await;
    assert_eq!(s, 201);
    let id = intent["intent_id"].as_str().unwrap().to_string();
    let (_, key) = dn.payer(0);
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, _) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200);
    // Automine gives the settlement its own block; no more come by themselves.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (_, v) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(v["status"], "PENDING", "one confirmation is not three: {v}");
    let rpc_url = dn.chain("base")["rpc"].as_str().unwrap().to_string();
    let miner = tokio::spawn(async move {
        for _ in 0..100 {
            rpc(&rpc_url, "evm_mine", json!([])).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    dn.wait_status(&id, "TARGET_SETTLED").await;
    miner.abort();
}

/// A payout that landed while the intent said PARTIAL_SETTLEMENT (an
/// operator gave up on it, or a gap was filled by hand) is reconciled to
/// TARGET_SETTLED with its transaction; an operator's retry of such an
/// intent, even run twice, pays nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn landed_payouts_are_reconciled_and_retries_never_pay_twice() {
    use stablerail::store::transition::intents::{self as repo, Retry};
    let dn = Devnet::start(22645, "base", "").await;
    let (done, _) = dn.settle_public(("base", "usdc"), ("base", "usdc"), "2", 4, x402_pay).await;
    let id = done["intent_id"].as_str().unwrap().to_string();
    let paid_tx = done["target_payment"]["tx_hash"].as_str().unwrap().to_string();
    let merchant = dn.balance("base", MERCHANT).await;
    let forget = || {
        sqlx::query("UPDATE intents SET status = 'PARTIAL_SETTLEMENT', target_tx_hash = NULL, target_settled_at = NULL WHERE id = $1")
            .bind(&id)
    };

    // The operator gives up on it (as `stablerail intent partial` does).
    let why = stablerail::failure::Reason::from(stablerail::failure::Failure::NeedsReconciliation);
    sqlx::query("UPDATE intents SET status = 'TARGET_SETTLING', target_tx_hash = NULL, target_settled_at = NULL WHERE id = $1")
        .bind(&id)
        .execute(&dn.state.db.pool)
        .await
        .unwrap();
    assert!(repo::give_up(&dn.state.db, &id, &why, stablerail::clock::now_ms()).await.unwrap());
    let (_, v) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!((v["status"].as_str(), v["error_code"].as_str()), (Some("PARTIAL_SETTLEMENT"), Some("needs_reconciliation")), "{v}");
    let engine = Engine::new(dn.state.engine_deps());
    engine.reconcile().await.unwrap();
    let (_, v) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(v["status"], "TARGET_SETTLED", "{v}");
    assert_eq!(v["target_payment"]["tx_hash"], paid_tx.as_str());
    assert_eq!(
        repo::retry(&dn.state.db, &id, stablerail::clock::now_ms()).await.unwrap(),
        Retry::NotRetriable(stablerail::intent::Status::TargetSettled)
    );

    forget().execute(&dn.state.db.pool).await.unwrap();
    assert_eq!(repo::retry(&dn.state.db, &id, stablerail::clock::now_ms()).await.unwrap(), Retry::Reopened);
    assert_eq!(repo::retry(&dn.state.db, &id, stablerail::clock::now_ms()).await.unwrap(), Retry::Requeued, "safe to run twice");
    dn.state.work.notify_one();
    let again = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(again["target_payment"]["tx_hash"], paid_tx.as_str(), "the stored payout is found again, not re-sent");
    assert_eq!(dn.balance("base", MERCHANT).await, merchant, "paid once");
}

/// The public flow takes no money the payout cannot match: with the proxy
/// wallet on the target chain short, `POST /api/intents/{id}` answers 503
/// (the fixed sentence) before verifying anything, the payer keeps the
/// funds and the intent still awaits payment; once funded, the same proof
/// is taken. What is already promised counts: of two proofs racing for the
/// last of the float, one is taken and one answered 503. Every accepted
/// intent is paid once (balances on chain).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_short_payout_float_refuses_the_proof_and_the_payer_keeps_the_money() {
    let dn = Devnet::start_with(22745, "base,arbitrum", "", 0, None).await;
    dn.service_setting("retry_max_backoff_seconds", 1);
    let proxy = dn.state.keys.address(keys::PROXY).await.unwrap();
    let arb = dn.rpc_url("arbitrum");
    let held = dn.balance("arbitrum", &proxy).await;
    rpc(&arb, "anvil_impersonateAccount", json!([proxy])).await;
    let sink = "0x000000000000000000000000000000000000dEaD";
    dn.send_as(
        "arbitrum",
        &proxy,
        &dn.token("arbitrum", "usdc"),
        alloy_sol_types::SolCall::abi_encode(&transferCall { to: sink.parse().unwrap(), value: held }),
    )
    .await;
    let intent = |amount: &'static str| {
        let dn = &dn;
        async move {
            let body = json!({ "recipient": MERCHANT, "amount": amount, "payer_chain": "base", "target_chain": "arbitrum" });
            let (s, v) = dn.call("POST", "/api/intents", Some(body), &[]).await;
            assert_eq!(s, 201, "{v}");
            v
        }
    };
    let submit = |id: String, proof: String| {
        let dn = &dn;
        async move { dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await }
    };
    let merchant = dn.balance("arbitrum", MERCHANT).await;
    let payers: Vec<(String, U256)> = {
        let mut v = Vec::new();
        for n in [5, 6, 7] {
            let who = dn.payer(n).0;
            let before = dn.balance("base", &who).await;
            v.push((who, before));
        }
        v
    };

    // Short: 503 before anything is verified or taken.
    let a = intent("2").await;
    let a_id = a["intent_id"].as_str().unwrap().to_string();
    let a_proof = x402_pay(&a["payment_requirements"], &dn.payer(5).1);
    let (s, e) = submit(a_id.clone(), a_proof.clone()).await;
    assert_eq!((s, e["message"].as_str()), (503, Some("service temporarily unavailable: payment wallet has insufficient balance")), "{e}");
    let (_, now) = dn.call("GET", &format!("/api/intents/{a_id}"), None, &[]).await;
    assert_eq!(now["status"], "AWAITING_PAYMENT", "{now}");
    assert_eq!(dn.balance("base", &payers[0].0).await, payers[0].1, "the payer keeps the money");

    // Funded with 3: the same proof is taken (once the few-second balance cache is past).
    dn.mint("arbitrum", &proxy, U256::from(3_000_000u64)).await;
    let mut taken = (0, Value::Null);
    for _ in 0..50 {
        taken = submit(a_id.clone(), a_proof.clone()).await;
        if taken.0 != 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(taken.0, 200, "{}", taken.1);

    // 2 of 3 promised: two proofs of 1 each race for the last 1; one wins.
    let (d, e_) = (intent("1").await, intent("1").await);
    let d_proof = x402_pay(&d["payment_requirements"], &dn.payer(6).1);
    let e_proof = x402_pay(&e_["payment_requirements"], &dn.payer(7).1);
    let (rd, re) = tokio::join!(
        submit(d["intent_id"].as_str().unwrap().to_string(), d_proof),
        submit(e_["intent_id"].as_str().unwrap().to_string(), e_proof)
    );
    let mut statuses = [rd.0, re.0];
    statuses.sort();
    assert_eq!(statuses, [200, 503], "exactly one takes the last of the float: {} / {}", rd.1, re.1);
    let (winner, loser) = if rd.0 == 200 { (&d, &payers[2]) } else { (&e_, &payers[1]) };

    // The engine pays every accepted intent once; the refused payer keeps the money.
    let cfg = dn.dir.path().join("chains.toml");
    let db_url = format!("sqlite://{}", dn.dir.path().join("sr.db").display());
    let state = stablerail::server::build_state(&cfg, &db_url, system_clock()).await.unwrap();
    Engine::new(state.engine_deps()).spawn(2);
    dn.wait_status(&a_id, "TARGET_SETTLED").await;
    dn.wait_status(winner["intent_id"].as_str().unwrap(), "TARGET_SETTLED").await;
    assert_eq!(dn.balance("arbitrum", MERCHANT).await, merchant + U256::from(3_000_000u64), "paid once each");
    assert_eq!(dn.balance("arbitrum", &proxy).await, U256::ZERO);
    assert_eq!(dn.balance("base", &loser.0).await, loser.1, "the refused payer keeps the money");
}

/// `/healthz` and `/readyz` answer outside the rate limiter; `/readyz`
/// checks the database and each chain's id; a node on another chain than
/// configured stops `serve` at start-up, naming the chain and both ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readiness_probes_and_a_wrong_chain_id() {
    let dn = Devnet::start_with(22845, "base,arbitrum", "", 0, None).await;
    let check = |cfg: &std::path::Path, env: &[(&str, &str)]| {
        let mut c = std::process::Command::new(common::stablerail_bin());
        c.args(["config", "check", "--config"]).arg(cfg);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    // `config check` with the base RPC URL taken from the environment.
    let cfg = dn.dir.path().join("chains.toml");
    let by_env = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace(&format!("rpc_urls = [{:?}]", dn.rpc_url("base")), "rpc_urls = [\"${STABLERAIL_TEST_BASE_RPC}\"]");
    let env_cfg = dn.dir.path().join("by-env.toml");
    std::fs::write(&env_cfg, by_env).unwrap();
    let out = check(&env_cfg, &[("STABLERAIL_TEST_BASE_RPC", &dn.rpc_url("base"))]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["chains"], json!({ "arbitrum": "ok", "base": "ok" }));
    let out = check(&env_cfg, &[]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("chains.base.rpc_urls: environment variable `STABLERAIL_TEST_BASE_RPC` is not set"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // `stablerail wallets`: every wallet of the keystore, balances per chain.
    let wallets = || dn.cli(&["wallets"])["wallets"].as_array().unwrap().clone();
    let listed = wallets();
    let named =
        |list: &[Value], name: &str| list.iter().find(|w| w["name"] == name).cloned().unwrap_or_else(|| panic!("{name} in {list:?}"));
    let proxy = named(&listed, "proxy:evm");
    assert_eq!(proxy["address"], dn.state.keys.address(keys::PROXY).await.unwrap().as_str());
    assert_eq!(proxy["balances"]["arbitrum"]["usdc"], "1000000", "{proxy}");
    assert_ne!(named(&listed, "relayer:evm")["balances"]["base"]["eth"], "0", "the relayer has gas");

    let (s, v) = dn.call("GET", "/readyz", None, &[]).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["checks"],
        json!({
            "database": "ok", "chains": { "arbitrum": "ok", "base": "ok" }, "wallets": {}, "relayer_unfunded": [],
            "assets_withheld": {}, "books": { "unexplained_outgoing": 0, "unmatched_incoming": 0, "unseen_credits": 0, "stalled_wallets": 0 },
        })
    );
    let pid = dn.chain("arbitrum")["pid"].as_u64().unwrap() as u32;
    common::process::stop_chain(&dn, "arbitrum", pid);
    // The chains are asked at most once per probe_cache_seconds.
    let (s, v) = dn.ready_until(|v| v["checks"]["chains"]["arbitrum"] != "ok").await;
    assert_eq!((s, v["statusCode"].as_u64()), (503, Some(503)), "{v}");
    assert_eq!(v["checks"]["chains"]["arbitrum"], "unreachable", "{v}");
    assert_eq!(
        named(&wallets(), "proxy:evm")["balances"]["arbitrum"],
        json!({ "error": "chain unavailable" }),
        "one chain down is said, not fatal"
    );
    for _ in 0..5 {
        assert_eq!(dn.call("GET", "/healthz", None, &[]).await.0, 200);
    }

    let wrong = std::fs::read_to_string(&cfg).unwrap().replacen("chain_id = 8453", "chain_id = 1", 1);
    let wrong_cfg = dn.dir.path().join("wrong.toml");
    std::fs::write(&wrong_cfg, wrong).unwrap();
    let out = std::process::Command::new(common::stablerail_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&wrong_cfg)
        .arg("--database")
        .arg(format!("sqlite://{}", dn.dir.path().join("sr.db").display()))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("chain `base`: its RPC answers chain id 8453, but chains.toml says 1"), "{err}");
    let out = check(&wrong_cfg, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("chain `base`: its RPC answers chain id 8453, but the config says 1"), "{err}");
    assert!(err.contains("chain `arbitrum`: its RPC does not answer"), "{err}");
}

/// `[service] settlement_batch_window_ms`: proofs that arrive one by one,
/// 40 ms apart, still go out together when a batch waits for more calls
/// after its first (as on slow-block chains), and each settles once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_window_gathers_calls_that_arrive_apart() {
    let dn = Devnet::start(30645, "base,arbitrum", "[service]\nsettlement_batch_window_ms = 1500\n").await;
    let merchant_before = dn.balance("arbitrum", MERCHANT).await;
    let signed = dn.sign_all(8, |k| k % 7).await;
    for (id, proof) in &signed {
        let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
        assert_eq!(s, 200, "{r}");
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    for (id, _) in &signed {
        dn.wait_status(id, "TARGET_SETTLED").await;
    }
    assert_eq!(dn.balance("arbitrum", MERCHANT).await, merchant_before + U256::from(8_000_000u64), "each paid once");
    let (mined, recorded) = dn.relayer_txs("base").await;
    assert_eq!(mined, recorded);
    assert!(mined <= 2, "{mined} source transactions for 8 proofs sent 40 ms apart: the window gathered nothing");
}
