//! The devnet's TRON node (devnet/nodes/tron.mjs: the full node's HTTP API over an
//! anvil with TRON's chain id), driven by tronweb as a wallet would: the node
//! builds a TriggerSmartContract, tronweb signs and broadcasts it, and the
//! node executes it as its owner. It refuses what a real node refuses, with
//! TRON's codes.

use crate::common;

use serde_json::{json, Value};
use sha2::Digest;

use common::devnet::{tron_send, Devnet};

async fn post(url: &str, body: Value) -> Value {
    reqwest::Client::new().post(url).json(&body).send().await.unwrap().json().await.unwrap()
}

fn refusal(answer: &Value) -> (String, String) {
    let text = hex::decode(answer["message"].as_str().unwrap_or("")).unwrap_or_default();
    (answer["code"].as_str().unwrap_or("").to_string(), String::from_utf8(text).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tron_node_executes_signed_transactions_and_refuses_what_tron_refuses() {
    let dn = Devnet::start(24445, "base,tron", "").await;
    let t = &dn.info["tron"];
    assert_eq!(t["chain_id"], 728126428);
    let api = t["http"].as_str().unwrap().to_string();
    let token = t["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let key = t["payers"][0]["private_key"].as_str().unwrap().to_string();
    let other = t["payers"][1]["private_key"].as_str().unwrap().to_string();
    let to = "TPBivseBCFmG8AEL38DJ4hxrFMQteENxDz";
    let balance = |who: &str| {
        let (api, token, who) = (api.clone(), token.clone(), who.to_string());
        async move {
            let hex_of = |a: &str| hex::encode(&bs58::decode(a).with_check(None).into_vec().unwrap()[1..]);
            let v = post(
                &format!("{api}/wallet/triggerconstantcontract"),
                json!({
                    "owner_address": who, "contract_address": token, "function_selector": "balanceOf(address)",
                    "parameter": format!("{:0>64}", hex_of(&who)), "visible": true,
                }),
            )
            .await;
            u128::from_str_radix(v["constant_result"][0].as_str().unwrap(), 16).unwrap()
        }
    };
    let from = t["payers"][0]["address"].as_str().unwrap();
    let (from_before, to_before) = (balance(from).await, balance(to).await);

    let sent = tron_send(&api, &key, &token, to, 1_500_000, &[]);
    assert_eq!(sent["broadcast"]["result"], true, "{sent}");
    let tx = &sent["transaction"];
    let id = tx["txID"].as_str().unwrap();
    let raw = hex::decode(tx["raw_data_hex"].as_str().unwrap()).unwrap();
    assert_eq!(hex::encode(sha2::Sha256::digest(&raw)), id, "txID = sha256(raw_data)");
    let info = &sent["info"];
    assert_eq!(info["receipt"]["result"], "SUCCESS", "{info}");
    let log = &info["log"][0];
    assert_eq!(log["topics"][0], "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef", "a Transfer log");
    assert_eq!(u128::from_str_radix(log["data"].as_str().unwrap(), 16).unwrap(), 1_500_000);
    assert_eq!(balance(from).await, from_before - 1_500_000);
    assert_eq!(balance(to).await, to_before + 1_500_000);

    let endpoint = format!("{api}/wallet/broadcasttransaction");
    let broadcast = |body: Value| post(&endpoint, body);
    assert_eq!(refusal(&broadcast(tx.clone()).await).0, "DUP_TRANSACTION_ERROR", "the same transaction twice");
    // Other bytes under the same signature: the id is recomputed, the signer differs.
    let mut tampered = tx.clone();
    let raw_hex = tx["raw_data_hex"].as_str().unwrap();
    tampered["raw_data_hex"] = json!(raw_hex.replace("16e360", "16e361"));
    assert_eq!(refusal(&broadcast(tampered).await).0, "SIGERROR");
    for (extra, code) in [
        (vec!["--signer", other.as_str()], "SIGERROR"),
        (vec!["--local", "expired"], "TRANSACTION_EXPIRATION_ERROR"),
        (vec!["--local", "unknown-block"], "TAPOS_ERROR"),
    ] {
        let r = tron_send(&api, &key, &token, to, 1, &extra);
        assert_eq!(refusal(&r["broadcast"]).0, code, "{extra:?}: {r}");
    }
    assert_eq!(balance(from).await, from_before - 1_500_000, "nothing refused moved funds");
    assert_eq!(post(&format!("{api}/wallet/gettransactioninfobyid"), json!({ "value": "00".repeat(32) })).await, json!({}));
    assert_eq!(
        post(&format!("{api}/wallet/getaccount"), json!({ "address": "TTJxU3P8rHycAyFY4kVtGNfmnMH4ezcuM9", "visible": true })).await,
        json!({})
    );
    let account = post(&format!("{api}/wallet/getaccount"), json!({ "address": from, "visible": true })).await;
    assert_eq!(account["address"], from);
}
