//! What an operator watches: an unfunded relayer (its own failure code,
//! WARN, `/readyz`, and the payment completing once funded), wallet floors
//! and balance gauges, and a chain that is withheld until its node answers.

use crate::common;

use std::time::{Duration, Instant};

use common::devnet::{rpc, Devnet};
use common::process::{anvil, free_port, http, serve, stop_chain};
use serde_json::json;
use stablerail::family::keys;

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
    let (_, ready) = dn.ready_until(|v| v["checks"]["relayer_unfunded"] == json!(["base"])).await;
    assert_eq!(ready["checks"]["relayer_unfunded"], json!(["base"]), "{ready}");

    // Funded, it completes; the code is gone and readiness no longer names it.
    rpc(&base, "anvil_setBalance", json!([relayer, "0x56bc75e2d63100000"])).await;
    let done = dn.wait_status(id, "TARGET_SETTLED").await;
    assert!(done.get("error_code").is_none(), "{done}");
    let (_, ready) = dn.ready_until(|v| v["checks"]["relayer_unfunded"] == json!([])).await;
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

/// Each served EVM token's facts are read from its chain before the chain
/// is exposed: an asset whose chain disagrees with chains.toml (EIP-712
/// name through `eip712Domain()` or through `DOMAIN_SEPARATOR()`, decimals,
/// a contract without code) is withheld with one log line, `/readyz` names
/// it, and a chain that was down at start is checked when it comes back.
#[tokio::test(flavor = "multi_thread")]
async fn assets_whose_chain_disagrees_with_the_config_are_withheld() {
    let dn = Devnet::start(25545, "arbitrum,monad,polygon", "").await;
    dn.service_setting("chain_probe_seconds", 1);
    // The devnet's USDT0 is "USD₮0" with eip712Domain(); its USDC is "USD
    // Coin" with only DOMAIN_SEPARATOR(). Polygon's salted USDT0 agrees, and
    // so does arbitrum's usdt (the devnet writes it out in full, as "USD₮0").
    dn.set("chains.arbitrum.assets.usdt0.eip712_name", "USDT0");
    dn.set("chains.arbitrum.assets.usdc.eip712_name", "USDC");
    dn.set("chains.monad.assets.usdt0.decimals", 18);
    let nowhere = "0x00000000000000000000000000000000000f1e1d";
    common::config::merge_into_file(&dn.config_path(), &format!("[chains.monad.assets.usdc.params]\nproxy-address = \"{nowhere}\"\n"));
    let monad = dn.chain("monad")["pid"].as_u64().unwrap() as u32;
    stop_chain(&dn, "monad", monad);
    let (port, log) = (free_port(), dn.dir.path().join("serve.log"));
    let _service = common::process::serve_logged(&dn, port, Some(&log), "warn");

    let (s, ready) = http(port, "GET", "/readyz", None);
    assert_eq!((s, &ready["checks"]["chains"]["monad"]), (503, &json!("unreachable")), "{ready}");
    let withheld = &ready["checks"]["assets_withheld"];
    assert_eq!(
        withheld,
        &json!({
            "arbitrum usdc": "eip712_name: chains.toml says \"USDC\", the token says \"USD Coin\"",
            "arbitrum usdt0": "eip712_name: chains.toml says \"USDT0\", the token's domain says \"USD₮0\"",
        }),
        "{ready}"
    );
    let create = |payer_chain: &str, payer_asset: &str| {
        http(
            port,
            "POST",
            "/api/intents",
            Some(json!({
                "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": payer_chain,
                "payer_asset": payer_asset, "target_chain": "polygon",
            })),
        )
    };
    let (s, e) = create("arbitrum", "usdt0");
    assert_eq!((s, e["message"].as_str()), (503, Some("usdt0 on arbitrum is temporarily unavailable")), "{e}");
    for (chain, asset) in [("polygon", "usdt0"), ("polygon", "usdc")] {
        let (s, created) = create(chain, asset);
        assert_eq!(s, 201, "{chain} {asset} agrees with its chain: {created}");
    }

    // Monad answers again: its tokens are read before it is exposed.
    let _monad = anvil(&dn, "monad");
    let deadline = Instant::now() + Duration::from_secs(20);
    let ready = loop {
        let (_, ready) = http(port, "GET", "/readyz", None);
        if ready["checks"]["chains"]["monad"] == "ok" && ready["checks"]["assets_withheld"].get("monad usdt0").is_some() {
            break ready;
        }
        assert!(Instant::now() < deadline, "monad's tokens were never checked: {ready}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let withheld = &ready["checks"]["assets_withheld"];
    assert_eq!(withheld["monad usdt0"], "decimals: chains.toml says 18, the token says 6", "{ready}");
    assert_eq!(withheld["monad usdc"], format!("no contract code at the x402 proxy address {}", checksum(nowhere)), "{ready}");
    assert_eq!(withheld.as_object().unwrap().len(), 4, "{ready}");
    let (s, e) = create("monad", "usdc");
    assert_eq!((s, e["message"].as_str()), (503, Some("usdc on monad is temporarily unavailable")), "{e}");

    // One ERROR line per withheld asset, naming it and the difference.
    let text = std::fs::read_to_string(&log).unwrap();
    for at in ["arbitrum usdc", "arbitrum usdt0", "monad usdt0", "monad usdc"] {
        let lines = text.lines().filter(|l| l.contains("asset withheld") && l.contains(&format!("asset={at} "))).count();
        assert_eq!(lines, 1, "{at}: {text}");
    }
}

fn checksum(address: &str) -> String {
    address.parse::<alloy_primitives::Address>().unwrap().to_checksum(None)
}

/// A TRON asset is checked on its chain before the chain is exposed: the
/// token, the Permit2 and the x402 proxy the config names must each hold a
/// contract (the node's `/wallet/getcontract`). A proxy address with none
/// withholds the asset, says why on `/readyz`, and refuses intents on it.
#[tokio::test(flavor = "multi_thread")]
async fn a_tron_asset_whose_proxy_holds_no_contract_is_withheld() {
    let dn = Devnet::start(28845, "base,tron", "").await;
    // TRON's zero address: valid base58check, no contract.
    let nowhere = "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb";
    common::config::merge_into_file(&dn.config_path(), &format!("[chains.tron.assets.usdt.params]\nproxy-address = \"{nowhere}\"\n"));
    let port = free_port();
    let _service = serve(&dn, port);
    let (_, ready) = http(port, "GET", "/readyz", None);
    assert_eq!(
        ready["checks"]["assets_withheld"],
        json!({ "tron usdt": format!("no contract at the x402 proxy address {nowhere}") }),
        "{ready}"
    );
    let (s, e) = http(
        port,
        "POST",
        "/api/intents",
        Some(
            json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" }),
        ),
    );
    assert_eq!((s, e["message"].as_str()), (503, Some("usdt on tron is temporarily unavailable")), "{e}");
    // Its only asset withheld, the chain is not listed (in either role).
    let (_, chains) = http(port, "GET", "/api/chains", None);
    let listed = |role: &str| chains[role].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert!(listed("chains").contains(&"base".to_string()) && !listed("chains").contains(&"tron".to_string()), "{chains}");
    assert!(!listed("target_chains").contains(&"tron".to_string()), "{chains}");
}
