//! TRON as a payer chain, end to end on the devnet (an anvil with TRON's
//! chain id behind the devnet's TRON node): the payer approves Permit2 once
//! and signs the x402 Permit2 witness transfer over TIP-712 with tronweb; the
//! service's relayer settles it with a TriggerSmartContract of the x402
//! proxy whose raw_data the adapter built and the host signed; the merchant
//! is paid on base. Balances are read on chain.

mod common;

use alloy_primitives::U256;
use serde_json::{json, Value};
use stablerail::config::Family;
use stablerail::keys::Role;

use common::app::MERCHANT;
use common::devnet::{decode_proof, tron_pay, tron_send, Devnet};

async fn trc20_balance(api: &str, token: &str, who: &str) -> u128 {
    let body = bs58::decode(who).with_check(None).into_vec().unwrap();
    let v: Value = reqwest::Client::new()
        .post(format!("{api}/wallet/triggerconstantcontract"))
        .json(&json!({ "owner_address": who, "contract_address": token, "function_selector": "balanceOf(address)", "parameter": format!("{:0>64}", hex::encode(&body[1..])), "visible": true }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    u128::from_str_radix(v["constant_result"][0].as_str().unwrap(), 16).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tron_payer_pays_a_base_merchant_through_permit2() {
    let dn = Devnet::start(24545, "base,tron", "").await;
    let t = dn.info["tron"].clone();
    let api = t["http"].as_str().unwrap().to_string();
    let token = t["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let (_, chains) = dn.call("GET", "/api/chains", None, &[]).await;
    assert!(chains["chains"].as_array().unwrap().iter().any(|c| c == "tron"), "{chains}");
    let collection = dn.state.keys.address(&Role::Collection.key_name(Family::Tron)).await.unwrap();
    let relayer = dn.state.keys.address(&Role::Relayer.key_name(Family::Tron)).await.unwrap();
    assert!(collection.starts_with('T') && relayer.starts_with('T'));

    let payer = t["payers"][0]["address"].as_str().unwrap().to_string();
    let key = t["payers"][0]["private_key"].as_str().unwrap().to_string();
    let body = json!({ "recipient": MERCHANT, "amount": "3", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" });
    let (id, intent) = dn.create_public(body.clone()).await;
    let req = &intent["payment_requirements"];
    assert_eq!(req["network"], "tron:0x2b6653dc");
    assert_eq!(req["asset"], token.as_str());
    assert_eq!(req["payTo"], collection.as_str());
    assert_eq!(req["extra"]["assetTransferMethod"], "permit2");
    assert_eq!(req["extra"]["permit2Address"], t["permit2"]);
    assert_eq!(req["extra"]["spender"], t["permit2_proxy"]);
    let sending: u128 = req["amount"].as_str().unwrap().parse().unwrap();

    // A proof whose amount was changed after signing is refused up front.
    let proof = tron_pay(req, &key);
    let mut forged = decode_proof(&proof);
    forged["payload"]["permit2Authorization"]["witness"]["to"] = json!(payer);
    let forged = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, forged.to_string());
    let (s, e) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": forged })), &[]).await;
    assert_eq!(s, 400, "{e}");

    // The one-time approval of Permit2, by the payer's own wallet.
    let approved = tron_send(&api, &key, &token, "", u64::MAX, &["--approve", t["permit2"].as_str().unwrap()]);
    assert_eq!(approved["info"]["receipt"]["result"], "SUCCESS", "{approved}");

    let before = (trc20_balance(&api, &token, &payer).await, trc20_balance(&api, &token, &collection).await, dn.balance("base", MERCHANT).await);
    let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{r}");
    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(trc20_balance(&api, &token, &payer).await, before.0 - sending, "the payer paid exactly sending_amount");
    assert_eq!(trc20_balance(&api, &token, &collection).await, before.1 + sending, "into the collection wallet");
    assert_eq!(dn.balance("base", MERCHANT).await, before.2 + U256::from(3_000_000u64), "the merchant got the amount");

    let txid = done["source_payment"]["tx_hash"].as_str().unwrap();
    assert_eq!(txid.len(), 64, "a TRON txID: {txid}");
    let tx: Value = reqwest::Client::new().post(format!("{api}/wallet/gettransactionbyid")).json(&json!({ "value": txid })).send().await.unwrap().json().await.unwrap();
    let owner = tx["raw_data"]["contract"][0]["parameter"]["value"]["owner_address"].as_str().unwrap().to_lowercase();
    let relayer_hex = hex::encode(bs58::decode(&relayer).with_check(None).into_vec().unwrap());
    assert_eq!(owner, relayer_hex, "the relayer sent the settlement");

    // The same authorization cannot pay a second intent.
    let (again, _) = dn.create_public(body).await;
    let (s, e) = dn.call("POST", &format!("/api/intents/{again}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_ne!(s, 200, "a replayed authorization is refused: {e}");
}
