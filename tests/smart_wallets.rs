//! Smart-wallet payers on Circle's FiatToken (the devnet's USDC) and on
//! Permit2, from published contracts (devnet/setup/smart-wallets.mjs): a
//! MockERC1271Wallet, a deployed Safe 1.4.1, a counterfactual Safe
//! (ERC-6492, through an allowed factory and through one that is not), and
//! an EOA delegated under EIP-7702 to Simple7702Account. Each signs with
//! `@x402/evm`'s client (devnet/clients/smart-signer.mjs) and pays an intent
//! on the public flow and a resource server through `/x402/settle`
//! (`@x402/express` paid by `@x402/fetch`); balances are read on chain.

use crate::common;

use std::process::Command;

use alloy_primitives::U256;
use base64::Engine as _;
use common::devnet::{devnet_script, rpc, Devnet};
use common::process::{free_port, serve};
use serde_json::{json, Value};

use crate::facilitator::{buy, facilitator_key, post, start_shop_with, MERCHANT};

fn setup_wallets(dn: &Devnet) -> Value {
    let out = Command::new("node")
        .arg(devnet_script("smart-wallets.mjs"))
        .args([&dn.rpc_url("base"), "8453", &dn.token("base", "usdc"), &dn.token("base", "usdt"), dn.info["permit2"].as_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The payer argument devnet/clients take for a smart wallet.
fn smart(wallet: &Value) -> String {
    format!("smart:{}", base64::engine::general_purpose::STANDARD.encode(wallet.to_string()))
}

async fn code(dn: &Devnet, address: &str) -> String {
    rpc(&dn.rpc_url("base"), "eth_getCode", json!([address, "latest"])).await.as_str().unwrap().to_string()
}

async fn relayer_nonce(dn: &Devnet) -> Value {
    let relayer = dn.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    rpc(&dn.rpc_url("base"), "eth_getTransactionCount", json!([relayer, "latest"])).await
}

/// A public intent paid in `asset` on base by `wallet`, to MERCHANT on base.
/// Returns the intent's id, the amount it asks (base units) and the submit answer.
fn pay_public(port: u16, wallet: &Value, asset: &str, rpc_url: &str) -> (String, U256, (u16, Value)) {
    let body = json!({ "recipient": MERCHANT, "amount": "1.25", "payer_chain": "base", "payer_asset": asset, "target_chain": "base", "target_asset": "usdc" });
    let (s, intent) = common::process::http(port, "POST", "/api/intents", Some(body));
    assert_eq!(s, 201, "{intent}");
    let id = intent["intent_id"].as_str().unwrap().to_string();
    let proof = common::devnet::node("pay.mjs", &[&smart(wallet), rpc_url], &intent["payment_requirements"].to_string());
    let sent = common::devnet::units(&intent["payment_requirements"]["amount"]);
    (id.clone(), sent, common::process::http(port, "POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof }))))
}

async fn wait_settled(port: u16, id: &str) -> Value {
    for _ in 0..300 {
        let (_, v) = common::process::http(port, "GET", &format!("/api/intents/{id}"), None);
        match v["status"].as_str().unwrap_or("") {
            "TARGET_SETTLED" => return v,
            "VERIFICATION_FAILED" | "BLOCKED" | "PARTIAL_SETTLEMENT" | "EXPIRED" => panic!("intent ended: {v}"),
            _ => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    panic!("intent {id} did not settle");
}

#[tokio::test(flavor = "multi_thread")]
async fn smart_wallets_pay_intents_and_resource_servers_as_the_chain_checks_them() {
    // No in-process replica: it would settle on the config as it was before
    // the factory was allowed below (the served binary reads it after).
    let dn = Devnet::start_with(28945, "base", "", 0, None).await;
    let w = setup_wallets(&dn);
    let wallets = &w["wallets"];
    let factory = w["factory"].as_str().unwrap();
    // The operator allows one factory; the other Safe factory is not on the list.
    dn.set("chains.base.erc6492_factories", vec![factory.to_string()]);
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let base = dn.rpc_url("base");
    let counterfactual = wallets["counterfactual"]["address"].as_str().unwrap();
    assert_eq!(code(&dn, counterfactual).await, "0x", "not deployed yet");

    // The public flow: each kind pays an intent with EIP-3009 on FiatToken,
    // the counterfactual Safe deployed first through the allowed factory.
    for kind in ["erc1271", "safe", "eip7702", "counterfactual"] {
        let wallet = &wallets[kind];
        let payer = wallet["address"].as_str().unwrap();
        let before = dn.balance_of("base", "usdc", payer).await;
        let (id, sent, (s, answer)) = pay_public(port, wallet, "usdc", &base);
        assert_eq!(s, 200, "{kind}: {answer}");
        wait_settled(port, &id).await;
        assert_eq!(dn.balance_of("base", "usdc", payer).await, before - sent, "{kind}: the wallet paid exactly the sending amount");
    }
    assert!(code(&dn, counterfactual).await.len() > 2, "the counterfactual Safe was deployed by the payment");

    // Permit2 (base USDT, TetherLike) from the wallets that approved it.
    for kind in ["safe", "eip7702"] {
        let wallet = &wallets[kind];
        let payer = wallet["address"].as_str().unwrap();
        let before = dn.balance_of("base", "usdt", payer).await;
        let (id, sent, (s, answer)) = pay_public(port, wallet, "usdt", &base);
        assert_eq!(s, 200, "{kind} on Permit2: {answer}");
        wait_settled(port, &id).await;
        assert_eq!(dn.balance_of("base", "usdt", payer).await, before - sent, "{kind}: Permit2 moved exactly the sending amount");
    }

    // Refused, and nothing sent: a signature by someone other than the
    // wallet's owner, and a counterfactual wallet whose factory is not allowed.
    let nonce = relayer_nonce(&dn).await;
    let mut stranger = wallets["erc1271"].clone();
    stranger["key"] = json!("0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba");
    let (_, _, (s, e)) = pay_public(port, &stranger, "usdc", &base);
    assert_eq!((s, e["error"].as_str()), (400, Some("Bad Request")), "{e}");
    assert!(e["message"].as_str().unwrap().contains("does not accept this signature"), "{e}");
    let elsewhere = &wallets["counterfactual_elsewhere"];
    let (_, _, (s, e)) = pay_public(port, elsewhere, "usdc", &base);
    assert_eq!((s, e["error"].as_str()), (400, Some("Bad Request")), "{e}");
    assert!(e["message"].as_str().unwrap().contains("factory"), "{e}");
    assert_eq!(code(&dn, elsewhere["address"].as_str().unwrap()).await, "0x", "never deployed");
    assert_eq!(relayer_nonce(&dn).await, nonce, "the relayer sent nothing for the refused payments");

    // The facilitator: `@x402/express` paid by `@x402/fetch` through /x402/settle.
    let usdc = dn.token("base", "usdc");
    let sale = json!({ "network": "eip155:8453", "asset": usdc, "amount": "20000", "payTo": MERCHANT, "name": "USD Coin", "version": "2" });
    let (shop_port, _shop) = start_shop_with(port, &key, sale);
    let shop_wallet = wallets["counterfactual_shop"]["address"].as_str().unwrap();
    assert_eq!(code(&dn, shop_wallet).await, "0x", "not deployed yet");
    for kind in ["erc1271", "eip7702", "safe", "counterfactual_shop"] {
        let before = dn.balance_of("base", "usdc", MERCHANT).await;
        let got = buy(&format!("http://127.0.0.1:{shop_port}/paid"), &smart(&wallets[kind]), &usdc, None);
        assert_eq!((got["status"].as_u64(), &got["payment"]["success"]), (Some(200), &json!(true)), "{kind}: {got}");
        assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, before + U256::from(20000u64), "{kind}: payTo credited once");
    }
    let usdt = dn.token("base", "usdt");
    let sale = json!({ "network": "eip155:8453", "asset": usdt, "amount": "30000", "payTo": MERCHANT, "extra": { "assetTransferMethod": "permit2" } });
    let (permit2_shop, _shop2) = start_shop_with(port, &key, sale);
    assert!(code(&dn, shop_wallet).await.len() > 2, "the facilitator deployed the counterfactual Safe it was paid by");
    for kind in ["safe", "eip7702"] {
        let before = dn.balance_of("base", "usdt", MERCHANT).await;
        let got = buy(&format!("http://127.0.0.1:{permit2_shop}/paid"), &smart(&wallets[kind]), &usdt, Some(&base));
        assert_eq!((got["status"].as_u64(), &got["payment"]["success"]), (Some(200), &json!(true)), "{kind} on Permit2: {got}");
        assert_eq!(dn.balance_of("base", "usdt", MERCHANT).await, before + U256::from(30000u64), "{kind}: payTo credited once");
    }

    // /x402/verify names x402's reasons: the factory not allowed (EIP-3009),
    // a wallet not deployed on Permit2, a stranger's signature.
    let req = |asset: &str, extra: Value| json!({ "scheme": "exact", "network": "eip155:8453", "amount": "10000", "asset": asset, "payTo": MERCHANT, "maxTimeoutSeconds": 300, "extra": extra });
    let eip3009 = req(&usdc, json!({ "name": "USD Coin", "version": "2" }));
    let permit2 = req(&usdt, json!({ "assetTransferMethod": "permit2" }));
    for (wallet, r, reason) in [
        (elsewhere, &eip3009, "eip6492_factory_not_allowed"),
        (&wallets["counterfactual_elsewhere"], &permit2, "invalid_exact_evm_payload_undeployed_smart_wallet"),
        (&stranger, &eip3009, "invalid_exact_evm_payload_signature"),
    ] {
        let b64 = common::devnet::node("pay.mjs", &[&smart(wallet)], &r.to_string());
        let payload: Value = serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap();
        let (s, v) =
            post(port, "/x402/verify", &key, json!({ "x402Version": 2, "paymentPayload": payload, "paymentRequirements": r })).await;
        assert_eq!((s, v["isValid"].as_bool(), v["invalidReason"].as_str()), (200, Some(false), Some(reason)), "{v}");
    }
    assert_eq!(code(&dn, elsewhere["address"].as_str().unwrap()).await, "0x");
}
