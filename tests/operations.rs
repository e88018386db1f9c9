//! What an operator watches: an unfunded relayer (its own failure code,
//! WARN, `/readyz`, and the payment completing once funded), wallet floors
//! and balance gauges, and a chain that is withheld until its node answers.

use crate::common;

use std::time::{Duration, Instant};

use common::devnet::{rpc, Devnet};
use common::process::{anvil, free_port, http, serve, stop_chain};
use serde_json::json;
use stablerail::keys;

#[tokio::test(flavor = "multi_thread")]
async fn unfunded_relayer_waits_with_its_code_and_floors_show_in_readiness() {
    let floors = "\n[[floors]]\nwallet = \"relayer:evm\"\nchain = \"base\"\namount = \"1000000\"\n";
    let dn = Devnet::start(23445, "base,arbitrum", floors).await;
    let relayer = dn.state.keys.address(keys::RELAYER).await.unwrap();
    let base = dn.rpc_url("base");

    // Gauges for every service wallet, and the floor that is not met.
    stablerail::watch::check_balances(&dn.state.config, &dn.state.keys, &dn.state.drivers, &dn.state.watch).await;
    let (s, ready) = dn.call("GET", "/readyz", None, &[]).await;
    assert_eq!(s, 503, "{ready}");
    let wallets = ready["checks"]["wallets"].as_object().unwrap();
    assert_eq!(wallets.len(), 1, "{ready}");
    let (key, said) = wallets.iter().next().unwrap();
    assert!(key.starts_with("relayer:evm base ") && said == "below 1000000", "{ready}");
    let metrics = stablerail::telemetry::render();
    assert!(metrics.contains("stablerail_wallet_balance{wallet=\"proxy:evm\",chain=\"arbitrum\",asset=\"usdc\"} 1000000"), "{metrics}");

    // The relayer has no gas on base: the payment waits, and says why.
    rpc(&base, "anvil_setBalance", json!([relayer, "0x0"])).await;
    let signed = dn.sign_all(1, |_| 0).await;
    dn.submit_all(&signed).await;
    let id = &signed[0].0;
    let deadline = Instant::now() + Duration::from_secs(60);
    let waiting = loop {
        let (_, v) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
        if v["error_code"] == "relayer_unfunded" {
            break v;
        }
        assert!(Instant::now() < deadline, "the wait was never explained: {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(waiting["status"], "PENDING", "an unfunded relayer is not a failure: {waiting}");
    assert_eq!(waiting["error_message"], "the service's relayer cannot pay gas on this chain yet; the service keeps trying");
    let (_, ready) = dn.call("GET", "/readyz", None, &[]).await;
    assert_eq!(ready["checks"]["relayer_unfunded"], json!(["base"]), "{ready}");

    // Funded, it completes; the code is gone and readiness no longer names it.
    rpc(&base, "anvil_setBalance", json!([relayer, "0x56bc75e2d63100000"])).await;
    let done = dn.wait_status(id, "TARGET_SETTLED").await;
    assert!(done.get("error_code").is_none(), "{done}");
    let (_, ready) = dn.call("GET", "/readyz", None, &[]).await;
    assert_eq!(ready["checks"]["relayer_unfunded"], json!([]), "{ready}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_that_does_not_answer_is_withheld_until_it_does() {
    let dn = Devnet::start(23545, "base,arbitrum", "").await;
    dn.service_setting("chain_probe_seconds", 1);
    let pid = dn.chain("arbitrum")["pid"].as_u64().unwrap() as u32;
    stop_chain(&dn, "arbitrum", pid);
    let port = free_port();
    let _service = serve(&dn, port);

    let (_, chains) = http(port, "GET", "/api/chains", None);
    assert_eq!(chains, json!({ "chains": ["base"], "target_chains": ["base"] }), "arbitrum is withheld");
    let (s, e) = http(
        port,
        "POST",
        "/api/intents",
        Some(json!({
            "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "arbitrum",
        })),
    );
    assert_eq!((s, e["message"].as_str()), (503, Some("arbitrum is temporarily unavailable")), "{e}");
    let (s, ready) = http(port, "GET", "/readyz", None);
    assert_eq!((s, &ready["checks"]["chains"]["arbitrum"]), (503, &json!("unreachable")), "{ready}");

    let _arbitrum = anvil(&dn, "arbitrum");
    common::wait_for_port(dn.chain("arbitrum")["port"].as_u64().unwrap() as u16);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, chains) = http(port, "GET", "/api/chains", None);
        if chains["target_chains"] == json!(["arbitrum", "base"]) {
            break;
        }
        assert!(Instant::now() < deadline, "arbitrum was never exposed again: {chains}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (s, created) = http(
        port,
        "POST",
        "/api/intents",
        Some(json!({
            "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "arbitrum",
        })),
    );
    assert_eq!(s, 201, "{created}");
}
