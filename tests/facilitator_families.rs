//! The x402 facilitator beyond EVM v2: Solana exact (`@x402/svm`, the
//! relayer as fee payer), TRON exact through Permit2 (tronweb-signed, with
//! base58 and with x402-rs's 0x-hex addresses), and x402 v1 bodies, each
//! with unmodified x402 packages on the devnet and balances read on chain.

use crate::common;
use crate::facilitator::{buy, facilitator_key, post, start_shop_with};

use alloy_primitives::U256;
use common::devnet::{decode_proof, node, rpc, sol_pay, trc20_balance, tron_pay, tron_send, Devnet};
use common::process::{free_port, serve};
use serde_json::{json, Value};
use stablerail::config::Family;
use stablerail::family::keys::Role;

const SOLANA: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
/// The shop's Solana owner; its token account is made at the start (an
/// exact payment does not create the recipient's account).
const SOL_SHOP: &str = "GokivDYuQXPZCWRkwMhdH2h91KpDQXBEmpgBgs55bnpH";
const MERCHANT: &str = "0x00000000000000000000000000000000000e5678";

/// verify then settle through `@x402/core`'s HTTPFacilitatorClient
/// (devnet/clients/x402-facilitate.mjs): {supported, verify, settle}.
fn facilitate(port: u16, key: &str, payload: &Value, requirements: &Value) -> Value {
    let input = json!({ "url": format!("http://127.0.0.1:{port}/x402"), "key": key, "payload": payload, "requirements": requirements });
    serde_json::from_str(&node("x402-facilitate.mjs", &[], &input.to_string())).unwrap()
}

fn body(payload: &Value, requirements: &Value) -> Value {
    json!({ "x402Version": payload["x402Version"], "paymentPayload": payload, "paymentRequirements": requirements })
}

fn sol_requirements(dn: &Devnet, fee_payer: &str, amount: &str) -> Value {
    json!({
        "scheme": "exact", "network": SOLANA, "amount": amount, "asset": dn.sol_mint("usdc"), "payTo": SOL_SHOP,
        "maxTimeoutSeconds": 60, "extra": { "feePayer": fee_payer, "decimals": 6 },
    })
}

/// An `@x402/express` route priced in Solana USDC, paid by `@x402/fetch`
/// with `@x402/svm`'s client; the same transaction offered again is
/// `duplicate_settlement` (by the ledger, whatever its `accepted` says);
/// faults get x402's SVM codes.
#[tokio::test(flavor = "multi_thread")]
async fn solana_exact_through_an_x402_express_server_and_a_duplicate_is_refused() {
    let dn = Devnet::start(26245, "base,solana", "").await;
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let relayer = dn.state.keys.address(&Role::Relayer.key_name(Family::Solana)).await.unwrap();
    dn.sol_fund(SOL_SHOP, "usdc", 0);

    // /supported: Solana in v2 and v1, its fee payer the relayer, beside base.
    let (_, supported) = common::process::http(port, "GET", "/x402/supported", None);
    let kinds = supported["kinds"].as_array().unwrap();
    for kind in [
        json!({ "x402Version": 2, "scheme": "exact", "network": SOLANA, "extra": { "feePayer": relayer } }),
        json!({ "x402Version": 1, "scheme": "exact", "network": "solana", "extra": { "feePayer": relayer } }),
        json!({ "x402Version": 2, "scheme": "exact", "network": "eip155:8453" }),
        json!({ "x402Version": 1, "scheme": "exact", "network": "base" }),
    ] {
        assert!(kinds.contains(&kind), "{kind} in {supported}");
    }
    assert_eq!(supported["signers"]["solana:*"], json!([relayer]), "{supported}");

    let mint = dn.sol_mint("usdc");
    let sale = json!({ "network": SOLANA, "asset": mint, "amount": "25000", "payTo": SOL_SHOP });
    let (shop_port, _shop) = start_shop_with(port, &key, sale);
    let (payer, seed) = dn.sol_payer(0);
    let before = (dn.sol_balance("usdc", &payer).await, dn.sol_balance("usdc", SOL_SHOP).await);
    let rpc_url = dn.sol_rpc();
    let got = buy(&format!("http://127.0.0.1:{shop_port}/paid"), &seed, &mint, Some(&rpc_url));
    assert_eq!((got["status"].as_u64(), &got["body"]["paid"]), (Some(200), &json!(true)), "{got}");
    assert_eq!(got["payment"]["success"], true, "{got}");
    let tx = got["payment"]["transaction"].as_str().unwrap().to_string();
    assert_eq!(bs58::decode(&tx).into_vec().unwrap().len(), 64, "a Solana signature: {tx}");
    assert_eq!(dn.sol_balance("usdc", SOL_SHOP).await, before.1 + 25000, "payTo credited once");
    assert_eq!(dn.sol_balance("usdc", &payer).await, before.0 - 25000);
    let status = rpc(&rpc_url, "getSignatureStatuses", json!([[tx], { "searchTransactionHistory": true }])).await;
    assert!(status["value"][0]["err"].is_null(), "{status}");

    // One transaction, offered twice through the facilitator client: settled
    // once, the second answer `duplicate_settlement`; again in v1 form, and
    // a verify of it, the same.
    let req = sol_requirements(&dn, &relayer, "11000");
    let payload = decode_proof(&sol_pay(&req, &dn.sol_payer(1).1, &rpc_url, None));
    let shop_before = dn.sol_balance("usdc", SOL_SHOP).await;
    let first = facilitate(port, &key, &payload, &req);
    assert_eq!((&first["verify"]["isValid"], &first["settle"]["success"]), (&json!(true), &json!(true)), "{first}");
    let second = facilitate(port, &key, &payload, &req);
    assert_eq!(second["verify"]["invalidReason"], "duplicate_settlement", "{second}");
    assert_eq!(second["settle"]["errorReason"], "duplicate_settlement", "{second}");
    assert_eq!(second["settle"]["transaction"], first["settle"]["transaction"], "the duplicate names the settled transaction: {second}");
    let v1_req = json!({
        "scheme": "exact", "network": "solana", "maxAmountRequired": "11000", "resource": "http://shop.test/r", "description": "",
        "mimeType": "application/json", "payTo": SOL_SHOP, "maxTimeoutSeconds": 60, "asset": mint, "extra": { "feePayer": relayer },
    });
    let v1_payload = json!({ "x402Version": 1, "scheme": "exact", "network": "solana", "payload": payload["payload"] });
    let (s, v) = post(port, "/x402/settle", &key, body(&v1_payload, &v1_req)).await;
    assert_eq!(
        (s, &v["success"], v["errorReason"].as_str(), v["network"].as_str()),
        (200, &json!(false), Some("duplicate_settlement"), Some("solana")),
        "{v}"
    );
    assert_eq!(dn.sol_balance("usdc", SOL_SHOP).await, shop_before + 11000, "one settlement");

    // Faults: x402's SVM codes, nothing sent.
    let fresh = sol_requirements(&dn, &relayer, "12000");
    let mut foreign = fresh.clone();
    foreign["extra"]["feePayer"] = json!(payer);
    let mut no_account = fresh.clone();
    no_account["payTo"] = json!(bs58::encode([5u8; 32]).into_string());
    let cases = [
        (
            "amount",
            sol_pay(&fresh, &dn.sol_payer(2).1, &rpc_url, Some("amount")),
            fresh.clone(),
            "invalid_exact_svm_payload_amount_mismatch",
        ),
        (
            "recipient",
            sol_pay(&fresh, &dn.sol_payer(2).1, &rpc_url, Some("recipient")),
            fresh.clone(),
            "invalid_exact_svm_payload_recipient_mismatch",
        ),
        (
            "unsigned",
            sol_pay(&fresh, &dn.sol_payer(2).1, &rpc_url, Some("unsigned")),
            fresh.clone(),
            "invalid_exact_svm_payload_signature_invalid",
        ),
        (
            "fee payer",
            sol_pay(&fresh, &dn.sol_payer(2).1, &rpc_url, None),
            foreign,
            "invalid_exact_svm_fee_payer_not_managed_by_facilitator",
        ),
        // Price under x402's cap, but price × limit above this chain's
        // `max_priority_fee_microlamports`: the fee payer would pay it.
        (
            "priority fee",
            sol_pay(&fresh, &dn.sol_payer(2).1, &rpc_url, Some("priority")),
            fresh.clone(),
            "invalid_exact_svm_payload_transaction",
        ),
        // A payTo without a token account: the transfer would fail on chain
        // and the fee payer pay for it.
        (
            "payTo without a token account",
            sol_pay(&no_account, &dn.sol_payer(2).1, &rpc_url, None),
            no_account.clone(),
            "invalid_exact_svm_payload_transaction_receiver_ata_not_found",
        ),
    ];
    for (name, proof, r, code) in cases {
        let p = decode_proof(&proof);
        let (s, v) = post(port, "/x402/verify", &key, body(&p, &r)).await;
        assert_eq!((s, &v["isValid"], v["invalidReason"].as_str()), (200, &json!(false), Some(code)), "{name}: {v}");
        let (s, v) = post(port, "/x402/settle", &key, body(&p, &r)).await;
        assert_eq!(
            (s, &v["success"], v["errorReason"].as_str(), &v["transaction"]),
            (200, &json!(false), Some(code), &json!("")),
            "{name}: {v}"
        );
    }
    assert_eq!(dn.sol_balance("usdc", SOL_SHOP).await, shop_before + 11000, "no fault moved money");
}

/// TRON exact through Permit2: a payment signed by tronweb over TIP-712,
/// verified and settled through HTTPFacilitatorClient, once with base58
/// addresses and once with x402-rs's 0x-hex addresses inside
/// `permit2Authorization`; each credits payTo once, on chain.
#[tokio::test(flavor = "multi_thread")]
async fn tron_permit2_through_the_facilitator_client_in_base58_and_hex() {
    let dn = Devnet::start(26345, "base,tron", "").await;
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let t = dn.info["tron"].clone();
    let api = t["http"].as_str().unwrap().to_string();
    let token = t["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let relayer = dn.state.keys.address(&Role::Relayer.key_name(Family::Tron)).await.unwrap();
    let (_, supported) = common::process::http(port, "GET", "/x402/supported", None);
    let kinds = supported["kinds"].as_array().unwrap();
    assert!(kinds.contains(&json!({ "x402Version": 2, "scheme": "exact", "network": "tron:0x2b6653dc" })), "{supported}");
    assert!(kinds.contains(&json!({ "x402Version": 1, "scheme": "exact", "network": "tron" })), "{supported}");
    assert_eq!(supported["signers"]["tron:*"], json!([relayer]), "{supported}");

    let payer_key = t["payers"][0]["private_key"].as_str().unwrap().to_string();
    let approved = tron_send(&api, &payer_key, &token, "", u64::MAX, &["--approve", t["permit2"].as_str().unwrap()]);
    assert_eq!(approved["info"]["receipt"]["result"], "SUCCESS", "{approved}");
    // The shop: another TRON payer's address.
    let shop = t["payers"][1]["address"].as_str().unwrap().to_string();
    let req = json!({
        "scheme": "exact", "network": "tron:0x2b6653dc", "amount": "3000000", "asset": token, "payTo": shop, "maxTimeoutSeconds": 300,
        "extra": { "assetTransferMethod": "permit2", "permit2Address": t["permit2"], "spender": t["permit2_proxy"] },
    });
    for form in ["base58", "hex"] {
        let proof = if form == "hex" {
            node("tron-pay.mjs", &[&payer_key, "728126428", "hex"], &req.to_string())
        } else {
            tron_pay(&req, &payer_key)
        };
        let payload = decode_proof(&proof);
        let from = payload["payload"]["permit2Authorization"]["from"].as_str().unwrap().to_string();
        assert_eq!(from.starts_with("0x"), form == "hex", "{form}: {from}");
        let before = trc20_balance(&api, &token, &shop).await;
        let got = facilitate(port, &key, &payload, &req);
        assert_eq!(got["verify"]["isValid"], true, "{form}: {got}");
        assert_eq!(got["verify"]["payer"], t["payers"][0]["address"], "{form}: the payer in base58: {got}");
        assert_eq!(got["settle"]["success"], true, "{form}: {got}");
        assert_eq!(got["settle"]["network"], "tron:0x2b6653dc");
        let tx = got["settle"]["transaction"].as_str().unwrap();
        let info = common::devnet::post_json(&format!("{api}/wallet/gettransactioninfobyid"), json!({ "value": tx })).await;
        assert_eq!(info["receipt"]["result"], "SUCCESS", "{form}: {info}");
        assert_eq!(trc20_balance(&api, &token, &shop).await, before + 3_000_000, "{form}: payTo credited once");
    }
}

/// An x402 v1 body (network `base`, `maxAmountRequired`, a payload with
/// top-level scheme and network) signed by `@x402/evm`'s v1 client,
/// through HTTPFacilitatorClient: answered in v1 terms, credited once.
#[tokio::test(flavor = "multi_thread")]
async fn a_v1_payload_through_the_facilitator_client_is_credited_once() {
    let dn = Devnet::start(26445, "base", "").await;
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let req = json!({
        "scheme": "exact", "network": "base", "maxAmountRequired": "21000", "resource": "http://shop.test/report",
        "description": "a report", "mimeType": "application/json", "payTo": MERCHANT, "maxTimeoutSeconds": 300,
        "asset": dn.token("base", "usdc"), "extra": { "name": "USD Coin", "version": "2" },
    });
    let (_, payer_key) = dn.payer(4);
    let payload: Value = serde_json::from_str(&node("x402-pay-v1.mjs", &[&payer_key], &req.to_string())).unwrap();
    assert_eq!((payload["x402Version"].as_u64(), payload["network"].as_str()), (Some(1), Some("base")), "{payload}");
    let before = dn.balance_of("base", "usdc", MERCHANT).await;
    let got = facilitate(port, &key, &payload, &req);
    assert!(
        got["supported"]["kinds"].as_array().unwrap().contains(&json!({ "x402Version": 1, "scheme": "exact", "network": "base" })),
        "{got}"
    );
    assert_eq!(got["verify"]["isValid"], true, "{got}");
    assert_eq!((&got["settle"]["success"], got["settle"]["network"].as_str()), (&json!(true), Some("base")), "{got}");
    let tx = got["settle"]["transaction"].as_str().unwrap().to_string();
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, before + U256::from(21000u64), "credited once");
    // The same v1 body again: the same settlement, nothing new sent.
    let (s, again) = post(port, "/x402/settle", &key, body(&payload, &req)).await;
    assert_eq!((s, &again["success"], again["transaction"].as_str()), (200, &json!(true), Some(tx.as_str())), "{again}");
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, before + U256::from(21000u64), "still once");
    // A v1 network name nobody serves, and a payload for another network.
    let mut elsewhere = req.clone();
    elsewhere["network"] = json!("avalanche");
    let (_, v) = post(port, "/x402/verify", &key, body(&payload, &elsewhere)).await;
    assert_eq!(v["invalidReason"], "invalid_payload", "the payload says base: {v}");
    let mut moved = payload.clone();
    moved["network"] = json!("avalanche");
    let (_, v) = post(port, "/x402/verify", &key, body(&moved, &elsewhere)).await;
    assert_eq!(v["invalidReason"], "invalid_network", "{v}");
}

/// `kill -9` while a burst of Solana settles has transactions with the
/// node (held, unprocessed); the node then lands what it holds; restart on
/// the same database: every payload is answered `success` once (its second
/// settle `duplicate_settlement` naming the same transaction), and the
/// shop's balance on chain is exactly one transfer per payload.
#[tokio::test(flavor = "multi_thread")]
async fn kill_9_during_a_solana_burst_lands_each_payload_once() {
    let dn = Devnet::start(26545, "base,solana", "").await;
    dn.service_setting("claim_lease_seconds", 2);
    let key = facilitator_key(&dn, "shop");
    let relayer = dn.state.keys.address(&Role::Relayer.key_name(Family::Solana)).await.unwrap();
    let sol = dn.sol_rpc();
    dn.sol_fund(SOL_SHOP, "usdc", 0);
    let req = sol_requirements(&dn, &relayer, "4000");
    let payloads: Vec<Value> = (0..12).map(|n| decode_proof(&sol_pay(&req, &dn.sol_payer(n % 4).1, &sol, None))).collect();
    let before = dn.sol_balance("usdc", SOL_SHOP).await;

    let port = free_port();
    let mut first = serve(&dn, port);
    rpc(&sol, "devnet_hold", json!([])).await;
    let auth = format!("Bearer {key}");
    let calls: Vec<_> = payloads
        .iter()
        .map(|p| {
            let (b, auth) = (body(p, &req), auth.clone());
            std::thread::spawn(move || common::try_http(port, "POST", "/x402/settle", Some(&auth), Some(b)))
        })
        .collect();
    // Some co-signed transactions are with the node: now the process dies.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while rpc(&sol, "devnet_held", json!([])).await["held"].as_u64().unwrap_or(0) < 4 {
        assert!(std::time::Instant::now() < deadline, "nothing was broadcast");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    common::process::kill(first.0.id(), "-KILL");
    let _ = first.0.wait();
    for c in calls {
        let _ = c.join().unwrap();
    }
    rpc(&sol, "devnet_release", json!(["land"])).await;

    let port = free_port();
    let _second = serve(&dn, port);
    let mut landed = std::collections::BTreeSet::new();
    for (n, p) in payloads.iter().enumerate() {
        let (s, v) = post(port, "/x402/settle", &key, body(p, &req)).await;
        assert_eq!((s, &v["success"]), (200, &json!(true)), "payload {n}: {v}");
        let tx = v["transaction"].as_str().unwrap().to_string();
        let (_, again) = post(port, "/x402/settle", &key, body(p, &req)).await;
        assert_eq!(
            (again["errorReason"].as_str(), again["transaction"].as_str()),
            (Some("duplicate_settlement"), Some(tx.as_str())),
            "{again}"
        );
        landed.insert(tx);
    }
    assert_eq!(landed.len(), payloads.len(), "one transaction per payload");
    assert_eq!(dn.sol_balance("usdc", SOL_SHOP).await, before + 12 * 4000, "each payload landed once");
    let statuses =
        rpc(&sol, "getSignatureStatuses", json!([landed.iter().collect::<Vec<_>>(), { "searchTransactionHistory": true }])).await;
    for s in statuses["value"].as_array().unwrap() {
        assert!(s["err"].is_null() && !s.is_null(), "{statuses}");
    }
}
