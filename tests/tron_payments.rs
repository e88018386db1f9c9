//! TRON as a payer chain, end to end on the devnet (an anvil with TRON's
//! chain id behind the devnet's TRON node): the payer approves Permit2 once
//! and signs the x402 Permit2 witness transfer over TIP-712 with tronweb; the
//! service's relayer settles it with a TriggerSmartContract of the x402
//! proxy whose raw_data the adapter built and the host signed; the merchant
//! is paid on base. Balances are read on chain.

use crate::common;

use alloy_primitives::U256;
use serde_json::{json, Value};
use stablerail::config::Family;
use stablerail::family::keys::Role;

use common::app::MERCHANT;
use common::devnet::{call_state, decode_proof, trc20_balance, tron_pay, tron_send, tron_sign, Devnet};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tron_payer_pays_a_base_merchant_through_permit2() {
    let dn = Devnet::start(24545, "base,tron", "").await;
    let t = dn.info["tron"].clone();
    let api = t["http"].as_str().unwrap().to_string();
    let token = t["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let (_, chains) = dn.call("GET", "/api/chains", None, &[]).await;
    assert!(chains["chains"].as_array().unwrap().iter().any(|c| c == "tron"), "{chains}");
    assert_eq!(dn.state.registry.asset("tron", "usdt").unwrap().adapter.interface, "0.7.0", "served beside 0.1.0 (base)");
    let collection = dn.state.keys.address(&Role::Collection.key_name(Family::Tron)).await.unwrap();
    let relayer = dn.state.keys.address(&Role::Relayer.key_name(Family::Tron)).await.unwrap();
    assert!(collection.starts_with('T') && relayer.starts_with('T'));

    let payer = t["payers"][0]["address"].as_str().unwrap().to_string();
    let key = t["payers"][0]["private_key"].as_str().unwrap().to_string();
    let body = json!({ "recipient": MERCHANT, "amount": "3", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" });
    let (id, intent) = dn.create_public(body.clone()).await;
    let req = &intent["payment_requirements"];
    assert_eq!((&req["extra"]["asset"], &req["extra"]["amount"]), (&req["asset"], &req["amount"]), "extra names the asset and amount");
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

    let before =
        (trc20_balance(&api, &token, &payer).await, trc20_balance(&api, &token, &collection).await, dn.balance("base", MERCHANT).await);
    let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{r}");
    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(trc20_balance(&api, &token, &payer).await, before.0 - sending, "the payer paid exactly sending_amount");
    assert_eq!(trc20_balance(&api, &token, &collection).await, before.1 + sending, "into the collection wallet");
    assert_eq!(dn.balance("base", MERCHANT).await, before.2 + U256::from(3_000_000u64), "the merchant got the amount");

    let txid = done["source_payment"]["tx_hash"].as_str().unwrap();
    assert_eq!(txid.len(), 64, "a TRON txID: {txid}");
    let tx = common::devnet::post_json(&format!("{api}/wallet/gettransactionbyid"), json!({ "value": txid })).await;
    let owner = tx["raw_data"]["contract"][0]["parameter"]["value"]["owner_address"].as_str().unwrap().to_lowercase();
    let relayer_hex = hex::encode(bs58::decode(&relayer).with_check(None).into_vec().unwrap());
    assert_eq!(owner, relayer_hex, "the relayer sent the settlement");

    // The same authorization cannot pay a second intent.
    let (again, _) = dn.create_public(body.clone()).await;
    let (s, e) = dn.call("POST", &format!("/api/intents/{again}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_ne!(s, 200, "a replayed authorization is refused: {e}");

    // A relayer whose TRX is below the settlement's fee_limit sends nothing:
    // the payment waits and says why, then settles once the relayer is funded.
    dn.tron_fund(&relayer, 99, 0).await;
    let (id, intent) = dn.create_public(body).await;
    let (s, r) = dn
        .call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": tron_pay(&intent["payment_requirements"], &key) })), &[])
        .await;
    assert_eq!(s, 200, "{r}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let waiting = loop {
        let (_, v) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
        if v["error_code"] == "relayer_unfunded" {
            break v;
        }
        assert!(std::time::Instant::now() < deadline, "the wait was never explained: {v}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(waiting["status"], "PENDING", "{waiting}");
    let stored = node_post(&api, "/wallet/getaccount", json!({ "address": relayer, "visible": true })).await;
    assert_eq!(stored["balance"], 99_000_000, "nothing was spent");
    dn.tron_fund(&relayer, 1000, 0).await;
    dn.wait_status(&id, "TARGET_SETTLED").await;
}

/// 2^256 − 1: the allowance Permit2 gets.
const MAX: &str = "115792089237316195423570985008687907853269984665640564039457584007913129639935";

async fn node_post(api: &str, path: &str, body: Value) -> Value {
    reqwest::Client::new().post(format!("{api}{path}")).json(&body).send().await.unwrap().json().await.unwrap()
}

/// A submit body from a transaction tronweb built and signed.
fn submit_body(address: &str, built: &Value) -> Value {
    let tx = &built["transaction"];
    json!({ "address": address, "raw_data_hex": tx["raw_data_hex"], "raw_data": tx["raw_data"], "signature": tx["signature"][0] })
}

/// Prepare, sign with tronweb (64 bytes, the recovery byte left for the
/// service to find), submit, and wait for the node to execute it.
async fn approve_step(dn: &Devnet, address: &str, key: &str, want: &str) {
    let (s, p) = dn.call("POST", "/api/tron/permit2/approve/prepare", Some(json!({ "address": address })), &[]).await;
    assert_eq!((s, p["step"].as_str()), (200, Some(want)), "{p}");
    let signature = tron_sign(&p, key, false);
    let (s, r) = dn
        .call(
            "POST",
            "/api/tron/permit2/approve/submit",
            Some(
                json!({ "address": address, "raw_data_hex": p["raw_data_hex"], "raw_data": p["raw_data"], "signature": &signature[..128] }),
            ),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["tx_id"], p["tx_id"]);
    let info = node_post(&dn.tron_api(), "/wallet/gettransactioninfobyid", json!({ "value": r["tx_id"] })).await;
    assert_eq!(info["receipt"]["result"], "SUCCESS", "{info}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approval_helpers_prepare_check_and_broadcast_the_one_approve() {
    let dn = Devnet::start(24745, "base,tron", "").await;
    let t = dn.info["tron"].clone();
    let api = dn.tron_api();
    let (token, permit2, proxy) =
        (t["assets"]["usdt"]["address"].as_str().unwrap(), t["permit2"].as_str().unwrap(), t["permit2_proxy"].as_str().unwrap());
    let payer =
        |n: usize| (t["payers"][n]["address"].as_str().unwrap().to_string(), t["payers"][n]["private_key"].as_str().unwrap().to_string());
    let ((a, akey), (b, bkey)) = (payer(0), payer(1));

    let (s, e) = dn
        .call("POST", "/api/tron/permit2/approve/prepare", Some(json!({ "address": "0x1111111111111111111111111111111111111111" })), &[])
        .await;
    assert_eq!((s, e["message"].as_str()), (400, Some("address is not a TRON address")), "{e}");

    // A fresh payer: approve, with the pinned shape.
    let (s, p) = dn.call("POST", "/api/tron/permit2/approve/prepare", Some(json!({ "address": a })), &[]).await;
    assert_eq!((s, &p["needed"], &p["step"]), (200, &json!(true), &json!("approve")), "{p}");
    assert_eq!((p["usdt_contract"].as_str(), p["permit2_contract"].as_str()), (Some(token), Some(permit2)));
    let raw = hex::decode(p["raw_data_hex"].as_str().unwrap()).unwrap();
    assert_eq!(p["tx_id"].as_str().unwrap(), hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&raw)), "tx_id = sha256(raw_data)");
    let left = p["expiration"].as_i64().unwrap() - stablerail::clock::now_ms();
    assert!((50_000..=61_000).contains(&left), "about 60 s: {left}");
    assert!(p["raw_data"]["fee_limit"].as_i64().unwrap() <= 50_000_000);
    assert_eq!(p["raw_data"]["expiration"], p["expiration"]);

    // Every departure from that shape is refused, and nothing is broadcast.
    let approve = |key: &str, contract: &str, spender: &str, amount: &str, extra: &[&str]| {
        let mut args = vec!["--approve", spender, "--no-broadcast"];
        args.extend_from_slice(extra);
        tron_send(&api, key, contract, "", amount, &args)
    };
    let mut cases = vec![
        (submit_body(&a, &approve(&akey, token, proxy, MAX, &[])), "the approve's spender is not Permit2"),
        (submit_body(&a, &approve(&akey, proxy, permit2, MAX, &[])), "raw_data calls another contract than the USDT contract"),
        (submit_body(&a, &approve(&akey, token, permit2, "5", &[])), "the approve's amount is neither the maximum nor 0"),
        (submit_body(&a, &approve(&bkey, token, permit2, MAX, &[])), "raw_data's owner is not address"),
        (submit_body(&a, &approve(&akey, token, permit2, MAX, &["--fee-limit", "60000000"])), "fee_limit is above the 50 TRX cap"),
        (
            submit_body(&a, &approve(&akey, token, permit2, MAX, &["--local", "expired"])),
            "the transaction has expired; request a new prepare",
        ),
        (submit_body(&a, &tron_send(&api, &akey, token, &b, 5, &["--no-broadcast"])), "raw_data is not an approve call"),
    ];
    // Signed over a fresh prepare: building the cases above runs a node
    // process each, which on a loaded machine outlasts a prepare's 60 s.
    let (_, p) = dn.call("POST", "/api/tron/permit2/approve/prepare", Some(json!({ "address": a })), &[]).await;
    let mut bad_signer = json!({ "address": a, "raw_data_hex": p["raw_data_hex"], "raw_data": p["raw_data"] });
    bad_signer["signature"] = json!(tron_sign(&p, &bkey, true));
    let mut mismatched =
        json!({ "address": a, "raw_data_hex": p["raw_data_hex"], "raw_data": p["raw_data"], "signature": tron_sign(&p, &akey, false) });
    mismatched["raw_data"]["fee_limit"] = json!(1);
    cases.push((bad_signer, "the signature does not recover to address"));
    cases.push((mismatched, "raw_data does not match raw_data_hex"));
    for (body, message) in cases {
        let (s, e) = dn.call("POST", "/api/tron/permit2/approve/submit", Some(body.clone()), &[]).await;
        assert_eq!((s, e["message"].as_str()), (400, Some(message)), "{body}: {e}");
        let id = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(hex::decode(body["raw_data_hex"].as_str().unwrap()).unwrap()));
        assert_eq!(
            node_post(&api, "/wallet/gettransactioninfobyid", json!({ "value": id })).await,
            json!({}),
            "{message}: nothing broadcast"
        );
    }
    let (s, e) = dn.call("POST", "/api/tron/permit2/approve/submit", Some(json!({ "address": a })), &[]).await;
    assert_eq!(s, 400, "every field is required: {e}");

    // The prepared approve, signed by the payer's tronweb: broadcast and executed.
    approve_step(&dn, &a, &akey, "approve").await;
    let (_, done) = dn.call("POST", "/api/tron/permit2/approve/prepare", Some(json!({ "address": a })), &[]).await;
    assert_eq!(done, json!({ "needed": false, "usdt_contract": token, "permit2_contract": permit2 }));

    // A partial allowance: reset to 0 first, then approve.
    let partial = tron_send(&api, &bkey, token, "", 1000, &["--approve", permit2]);
    assert_eq!(partial["info"]["receipt"]["result"], "SUCCESS", "{partial}");
    approve_step(&dn, &b, &bkey, "reset").await;
    approve_step(&dn, &b, &bkey, "approve").await;

    // Both now pay by signature only: tron → base, exact balances on both chains.
    let collection = dn.state.keys.address(&Role::Collection.key_name(Family::Tron)).await.unwrap();
    for (who, key) in [(&a, &akey), (&b, &bkey)] {
        let (id, intent) = dn
            .create_public(
                json!({ "recipient": MERCHANT, "amount": "2", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" }),
            )
            .await;
        let req = &intent["payment_requirements"];
        let sending: u128 = req["amount"].as_str().unwrap().parse().unwrap();
        let before =
            (trc20_balance(&api, token, who).await, trc20_balance(&api, token, &collection).await, dn.balance("base", MERCHANT).await);
        let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": tron_pay(req, key) })), &[]).await;
        assert_eq!(s, 200, "{r}");
        dn.wait_status(&id, "TARGET_SETTLED").await;
        assert_eq!(trc20_balance(&api, token, who).await, before.0 - sending);
        assert_eq!(trc20_balance(&api, token, &collection).await, before.1 + sending);
        assert_eq!(dn.balance("base", MERCHANT).await, before.2 + U256::from(2_000_000u64));
    }

    let (_, doc) = dn.call("GET", "/api/openapi.json", None, &[]).await;
    assert!(doc["paths"]["/api/tron/permit2/approve/submit"]["post"].is_object(), "documented while routed");

    // TRON_ENABLED off: the helpers are not routed and TRON intents are refused.
    dn.set("flags.TRON_ENABLED", false);
    let off = dn.restate().await;
    for path in ["prepare", "submit"] {
        let (s, e) = call_state(&off, "POST", &format!("/api/tron/permit2/approve/{path}"), Some(json!({ "address": a })), &[]).await;
        assert_eq!((s, e["statusCode"].as_u64()), (404, Some(404)), "{e}");
    }
    let (s, e) = call_state(
        &off,
        "POST",
        "/api/intents",
        Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" })),
        &[],
    )
    .await;
    assert_eq!(s, 400, "{e}");
    let (_, chains) = call_state(&off, "GET", "/api/chains", None, &[]).await;
    assert!(!chains.to_string().contains("tron"), "{chains}");
    let (_, doc) = call_state(&off, "GET", "/api/openapi.json", None, &[]).await;
    assert!(doc["paths"].get("/api/tron/permit2/approve/submit").is_none(), "nor documented");
}

/// A Permit2 proof signed by `key` over requirements `tweak` changed, that
/// still claims to accept the issued ones.
fn crafted(req: &Value, key: &str, tweak: impl Fn(&mut Value)) -> String {
    let mut signed_for = req.clone();
    tweak(&mut signed_for);
    let mut proof = decode_proof(&tron_pay(&signed_for, key));
    proof["accepted"] = req.clone();
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, proof.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tron_is_paid_from_the_proxy_wallet_and_agents_pay_from_theirs() {
    let dn = Devnet::start(24845, "base,tron", "").await;
    let t = dn.info["tron"].clone();
    let api = dn.tron_api();
    let token = t["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let wallet = |role: Role| {
        let keys = dn.state.keys.clone();
        async move { keys.address(&role.key_name(Family::Tron)).await.unwrap() }
    };
    let (proxy, collection) = (wallet(Role::Proxy).await, wallet(Role::Collection).await);
    let (_, chains) = dn.call("GET", "/api/chains", None, &[]).await;
    assert!(chains["target_chains"].as_array().unwrap().iter().any(|c| c == "tron"), "{chains}");
    let merchant = tron_wire::address::show(&alloy_primitives::Address::repeat_byte(0x7e));
    // TRON's zero address (base58check of 0x41 and twenty zero bytes) cannot
    // receive a payout: refused at create, nothing written.
    let zero = json!({ "recipient": "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb", "amount": "1", "payer_chain": "base", "target_chain": "tron", "target_asset": "usdt" });
    let (s, e) = dn.call("POST", "/api/intents", Some(zero), &[]).await;
    assert_eq!(
        (s, e["message"].as_str()),
        (400, Some("invalid recipient address format: the zero address cannot receive payments")),
        "{e}"
    );

    // base → tron: the proxy wallet pays the merchant USDT on TRON.
    let (bpayer, bkey) = dn.payer(1);
    let (id, intent) = dn
        .create_public(
            json!({ "recipient": merchant, "amount": "2.5", "payer_chain": "base", "target_chain": "tron", "target_asset": "usdt" }),
        )
        .await;
    let proxy_before = trc20_balance(&api, &token, &proxy).await;
    let payer_before = dn.balance("base", &bpayer).await;
    let (s, r) = dn
        .call(
            "POST",
            &format!("/api/intents/{id}"),
            Some(json!({ "settle_proof": common::devnet::x402_pay(&intent["payment_requirements"], &bkey) })),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(trc20_balance(&api, &token, &merchant).await, 2_500_000, "the merchant got exactly 2.5 USDT");
    assert_eq!(trc20_balance(&api, &token, &proxy).await, proxy_before - 2_500_000, "from the proxy wallet");
    assert_eq!(dn.balance("base", &bpayer).await, payer_before - common::devnet::units(&intent["payment_requirements"]["amount"]));
    let payout = done["target_payment"]["tx_hash"].as_str().unwrap();
    let tx = node_post(&api, "/wallet/gettransactionbyid", json!({ "value": payout })).await;
    let owner = tx["raw_data"]["contract"][0]["parameter"]["value"]["owner_address"].as_str().unwrap().to_lowercase();
    assert_eq!(owner, hex::encode(bs58::decode(&proxy).with_check(None).into_vec().unwrap()), "the proxy wallet sent the payout");

    // tron → tron: a TRON payer's Permit2 payment, a TRON payout.
    let (payer, key) =
        (t["payers"][0]["address"].as_str().unwrap().to_string(), t["payers"][0]["private_key"].as_str().unwrap().to_string());
    approve_step(&dn, &payer, &key, "approve").await;
    let (id, intent) = dn.create_public(json!({ "recipient": merchant, "amount": "1", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "tron", "target_asset": "usdt" })).await;
    let req = intent["payment_requirements"].clone();
    let sending: u128 = req["amount"].as_str().unwrap().parse().unwrap();

    // Refused proofs: each a 400, the intent still waits, nothing moves.
    let (other_key, other) =
        (t["payers"][1]["private_key"].as_str().unwrap().to_string(), t["payers"][1]["address"].as_str().unwrap().to_string());
    let mut by_other = decode_proof(&tron_pay(&req, &other_key));
    by_other["payload"]["permit2Authorization"]["from"] = json!(payer);
    let by_other = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, by_other.to_string());
    let refused = [
        ("wrong spender", crafted(&req, &key, |r| r["extra"]["spender"] = json!(other))),
        ("wrong witness to", crafted(&req, &key, |r| r["payTo"] = json!(other))),
        ("wrong amount", crafted(&req, &key, |r| r["amount"] = json!((sending - 1).to_string()))),
        ("expired deadline", crafted(&req, &key, |r| r["maxTimeoutSeconds"] = json!(1))),
        ("signed by someone else", by_other),
    ];
    let payer_before = trc20_balance(&api, &token, &payer).await;
    for (what, proof) in refused {
        let (s, e) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
        assert_eq!(s, 400, "{what}: {e}");
        let (_, still) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
        assert_eq!(still["status"], "AWAITING_PAYMENT", "{what}");
    }
    assert_eq!(trc20_balance(&api, &token, &payer).await, payer_before, "nothing moved");

    let before = (trc20_balance(&api, &token, &collection).await, trc20_balance(&api, &token, &merchant).await);
    let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": tron_pay(&req, &key) })), &[]).await;
    assert_eq!(s, 200, "{r}");
    dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(trc20_balance(&api, &token, &payer).await, payer_before - sending);
    assert_eq!(trc20_balance(&api, &token, &collection).await, before.0 + sending);
    assert_eq!(trc20_balance(&api, &token, &merchant).await, before.1 + 1_000_000);

    // /v2: the agent's TRON wallet pays once; the merchant is paid on base.
    let (agent, auth) = dn.agent().await;
    let agent_wallet = wallet(Role::Agent(agent)).await;
    let (_, me) = dn.call("GET", "/v2/me", None, &[("authorization", &auth)]).await;
    assert_eq!(me["tron_wallet_address"], agent_wallet.as_str(), "{me}");
    dn.tron_fund(&agent_wallet, 200, 10_000_000).await;
    let (s, b) = dn.call("GET", "/v2/agents/balances", None, &[("authorization", &auth)]).await;
    assert_eq!(s, 200, "{b}");
    let w = b["wallets"].as_array().unwrap().iter().find(|w| w["chain_type"] == "tron").cloned().unwrap_or(Value::Null);
    assert_eq!(w["address"], agent_wallet.as_str(), "{b}");
    let rows = w["balances"].as_array().unwrap();
    let row = |asset: &str| rows.iter().find(|r| r["chain"] == "tron" && r["asset"] == asset).cloned().unwrap_or(Value::Null);
    assert_eq!(row("usdt")["raw_value"], "10000000", "{rows:?}");
    assert_eq!(row("trx")["raw_value"], "200000000", "{rows:?}");

    let (s, intent) = dn
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "4", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" })),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(s, 201, "{intent}");
    let id = intent["intent_id"].as_str().unwrap();
    let sending: u128 = intent["payment_requirements"]["amount"].as_str().unwrap().parse().unwrap();
    let (collection_before, merchant_before) = (trc20_balance(&api, &token, &collection).await, dn.balance("base", MERCHANT).await);
    let (s, r) = dn.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!(s, 200, "{r}");
    let done = dn.wait_status(id, "TARGET_SETTLED").await;
    assert_eq!(trc20_balance(&api, &token, &agent_wallet).await, 10_000_000 - sending, "the agent paid once, on TRON");
    assert_eq!(trc20_balance(&api, &token, &collection).await, collection_before + sending);
    assert_eq!(dn.balance("base", MERCHANT).await, merchant_before + U256::from(4_000_000u64));
    let source = done["source_payment"]["tx_hash"].as_str().unwrap();
    let tx = node_post(&api, "/wallet/gettransactionbyid", json!({ "value": source })).await;
    let owner = tx["raw_data"]["contract"][0]["parameter"]["value"]["owner_address"].as_str().unwrap().to_lowercase();
    assert_eq!(owner, hex::encode(bs58::decode(&agent_wallet).with_check(None).into_vec().unwrap()), "sent by the agent's wallet");
}
