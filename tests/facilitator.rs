//! The x402 facilitator (`/x402`) with real x402 parts: an `@x402/express`
//! resource server whose `HTTPFacilitatorClient` points at stablerail, paid
//! by `@x402/fetch`; bad payloads refused with x402's reasons and nothing
//! broadcast; one payload settled once however often it is sent.

use crate::common;

use std::process::{Command, Stdio};

use alloy_primitives::U256;
use base64::Engine as _;
use common::devnet::{devnet_script, rpc, x402_pay, Devnet};
use common::process::{free_port, serve, Reaped};
use serde_json::{json, Value};

pub(crate) const MERCHANT: &str = "0x00000000000000000000000000000000000e1234";

/// A facilitator key made with the CLI, as an operator would.
pub(crate) fn facilitator_key(dn: &Devnet, name: &str) -> String {
    dn.cli(&["facilitator", "create-key", name])["key"].as_str().unwrap().to_string()
}

pub(crate) fn requirements(dn: &Devnet, amount: &str) -> Value {
    json!({
        "scheme": "exact", "network": "eip155:8453", "amount": amount, "asset": dn.token("base", "usdc"),
        "payTo": MERCHANT, "maxTimeoutSeconds": 300, "extra": { "name": "USD Coin", "version": "2" },
    })
}

/// A PaymentPayload signed by `@x402/evm` for `req`.
pub(crate) fn payload(req: &Value, key: &str) -> Value {
    let b64 = x402_pay(req, key);
    serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap()
}

/// The `@x402/express` resource server (devnet/clients/x402-server.mjs) selling
/// `GET /paid` for `amount` of base's devnet USDC, its facilitator this
/// stablerail with `key`; answers on the returned port.
fn start_shop(dn: &Devnet, port: u16, key: &str, amount: &str) -> (u16, Reaped) {
    let sale = json!({
        "network": "eip155:8453", "asset": dn.token("base", "usdc"), "amount": amount, "payTo": MERCHANT,
        "name": "USD Coin", "version": "2",
    });
    start_shop_with(port, key, sale)
}

/// The resource server selling what `sale` says (network, asset, amount,
/// payTo, name, version, extra, extensions; scheme, unitPrice, storage).
pub(crate) fn start_shop_with(port: u16, key: &str, mut sale: Value) -> (u16, Reaped) {
    let shop_port = free_port();
    sale["port"] = json!(shop_port);
    // Stablerail's /x402 with `key`, unless the sale names another facilitator.
    if sale.get("facilitator").is_none() {
        sale["facilitator"] = json!(format!("http://127.0.0.1:{port}/x402"));
        sale["key"] = json!(key);
    }
    let mut shop = Command::new("node").arg(devnet_script("x402-server.mjs")).arg(sale.to_string()).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(shop.stdout.take().unwrap()), &mut line).unwrap();
    assert!(line.starts_with("ready"), "{line}");
    (shop_port, Reaped(shop))
}

/// `@x402/fetch` buys `url` (with chain access when `rpc` is given, as
/// Permit2 payments need); its printed `{status, body, payment}`.
pub(crate) fn buy(url: &str, payer_key: &str, asset: &str, rpc: Option<&str>) -> Value {
    let out = Command::new("node").arg(devnet_script("x402-fetch.mjs")).args([url, payer_key, asset]).args(rpc).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

pub(crate) async fn post(port: u16, path: &str, key: &str, body: Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}{path}"))
        .header("Authorization", format!("Bearer {key}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

async fn relayer_nonce_of(dn: &Devnet) -> Value {
    let relayer = dn.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    rpc(&dn.rpc_url("base"), "eth_getTransactionCount", json!([relayer, "latest"])).await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_x402_express_server_is_paid_through_stablerail_once() {
    let dn = Devnet::start(25645, "base", "").await;
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);

    // /supported: the network, the extensions, the relayer as signer.
    let (s, supported) = common::process::http(port, "GET", "/x402/supported", None);
    assert_eq!(s, 200, "{supported}");
    let kinds = json!([
        { "x402Version": 2, "scheme": "exact", "network": "eip155:8453" },
        { "x402Version": 1, "scheme": "exact", "network": "base" },
    ]);
    assert_eq!(supported["kinds"], kinds, "{supported}");
    let relayer = dn.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    assert_eq!(supported["signers"]["eip155:*"], json!([relayer]), "{supported}");
    assert!(supported["extensions"].as_array().unwrap().contains(&json!("payment-identifier")), "{supported}");

    let token = dn.token("base", "usdc");
    let (shop_port, _shop) = start_shop(&dn, port, &key, "25000");

    let before = dn.balance_of("base", "usdc", MERCHANT).await;
    let (_, payer_key) = dn.payer(0);
    let got = buy(&format!("http://127.0.0.1:{shop_port}/paid"), &payer_key, &token, None);
    assert_eq!((got["status"].as_u64(), &got["body"]["paid"]), (Some(200), &json!(true)), "{got}");
    let tx = got["payment"]["transaction"].as_str().unwrap().to_string();
    assert!(tx.starts_with("0x") && tx.len() == 66, "{got}");
    assert_eq!(got["payment"]["success"], true, "{got}");
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, before + U256::from(25000u64), "payTo credited once");
    let receipt = rpc(&dn.rpc_url("base"), "eth_getTransactionReceipt", json!([tx])).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");

    // The operator finds it by transaction, and the key's owner by payer.
    let (s, found) = common::http(port, "GET", &format!("/x402/settlements?transaction={tx}"), Some(&format!("Bearer {key}")), None);
    assert_eq!(s, 200, "{found}");
    assert_eq!((found[0]["status"].as_str(), found[0]["amount"].as_str()), (Some("settled"), Some("25000")), "{found}");
    assert_eq!(found[0]["client"], "shop", "{found}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_payloads_are_invalid_with_x402_reasons_and_one_payload_settles_once() {
    let dn = Devnet::start(25745, "base", "").await;
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let (_, payer_key) = dn.payer(0);
    let (other, _) = dn.payer(1);
    let req = requirements(&dn, "40000");
    let good = payload(&req, &payer_key);
    let body = |p: &Value, r: &Value| json!({ "x402Version": 2, "paymentPayload": p, "paymentRequirements": r });

    // Without a key: refused in the error envelope.
    let (s, e) = common::process::http(port, "POST", "/x402/verify", Some(body(&good, &req)));
    assert_eq!((s, e["statusCode"].as_u64()), (401, Some(401)), "{e}");
    // Not a facilitator request, no JSON at all, a lookup naming nothing:
    // 400 in the envelope, nothing recorded.
    let bearer = format!("Bearer {key}");
    for (method, path, sent) in [
        ("POST", "/x402/settle", Some(json!({ "x402Version": 2 }))),
        ("POST", "/x402/verify", Some(json!(["not", "a", "request"]))),
        ("GET", "/x402/settlements", None),
    ] {
        let (s, e) = common::http(port, method, path, Some(&bearer), sent);
        assert_eq!((s, e["statusCode"].as_u64(), e["error"].as_str()), (400, Some(400), Some("Bad Request")), "{path}: {e}");
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
    }

    let nonce_before = relayer_nonce_of(&dn).await;
    let mut cases: Vec<(&str, Value, Value)> = vec![];
    // The amount: requirements asking more than was signed.
    cases.push(("amount", good.clone(), requirements(&dn, "40001")));
    // payTo: requirements naming another recipient.
    let mut to_other = req.clone();
    to_other["payTo"] = json!(other);
    cases.push(("payTo", good.clone(), to_other));
    // The signer: the authorization claims another payer.
    let mut forged = good.clone();
    forged["payload"]["authorization"]["from"] = json!(other);
    cases.push(("signer", forged, req.clone()));
    // A network this facilitator does not serve.
    let mut elsewhere = req.clone();
    elsewhere["network"] = json!("eip155:12345");
    cases.push(("network", good.clone(), elsewhere));
    // Expired: signed for one second, presented later.
    let mut short = req.clone();
    short["maxTimeoutSeconds"] = json!(1);
    let expired = payload(&short, &payer_key);
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    cases.push(("expired", expired, short));

    let want = [
        ("amount", "invalid_payload"),
        ("payTo", "invalid_payload"),
        ("signer", "invalid_exact_evm_payload_signature"),
        ("network", "invalid_network"),
        ("expired", "invalid_exact_evm_payload_authorization_valid_before"),
    ];
    for (name, p, r) in &cases {
        let reason = want.iter().find(|(n, _)| n == name).unwrap().1;
        let (s, v) = post(port, "/x402/verify", &key, body(p, r)).await;
        assert_eq!((s, &v["isValid"], v["invalidReason"].as_str()), (200, &json!(false), Some(reason)), "{name}: {v}");
        let (s, v) = post(port, "/x402/settle", &key, body(p, r)).await;
        assert_eq!((s, &v["success"], v["errorReason"].as_str()), (200, &json!(false), Some(reason)), "{name}: {v}");
        assert_eq!(v["transaction"], "", "{name}: nothing broadcast: {v}");
    }
    assert_eq!(relayer_nonce_of(&dn).await, nonce_before, "no transaction was sent for a bad payload");

    // The good one verifies; fifty concurrent settles of it move money once
    // and all name the same transaction.
    let (s, v) = post(port, "/x402/verify", &key, body(&good, &req)).await;
    assert_eq!((s, &v["isValid"]), (200, &json!(true)), "{v}");
    let payer = v["payer"].clone();
    let before = dn.balance_of("base", "usdc", MERCHANT).await;
    let calls = (0..50).map(|_| {
        let b = body(&good, &req);
        let key = key.clone();
        tokio::spawn(async move { post(port, "/x402/settle", &key, b).await })
    });
    let answers: Vec<(u16, Value)> = futures::future::join_all(calls).await.into_iter().map(Result::unwrap).collect();
    let tx = answers[0].1["transaction"].clone();
    for (s, v) in &answers {
        assert_eq!((*s, &v["success"], &v["transaction"], &v["payer"]), (200, &json!(true), &tx, &payer), "{v}");
        assert_eq!(v["network"], "eip155:8453", "{v}");
    }
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, before + U256::from(40000u64), "one transfer");
    // Asked again later: the ledger answers the same transaction; a fresh
    // verify says the authorization is spent.
    let (_, again) = post(port, "/x402/settle", &key, body(&good, &req)).await;
    assert_eq!((&again["success"], &again["transaction"]), (&json!(true), &tx), "{again}");
    let (_, v) = post(port, "/x402/verify", &key, body(&good, &req)).await;
    assert_eq!(v["invalidReason"], "invalid_exact_evm_nonce_already_used", "{v}");
}

/// A payment the chain would refuse (its payer holds nothing) is answered
/// `insufficient_funds` with nothing sent, and lets go of its authorization:
/// the same payload settles, once, after the payer is funded. The operator
/// sees both attempts.
#[tokio::test(flavor = "multi_thread")]
async fn a_payment_refused_with_nothing_sent_settles_once_funded() {
    let dn = Devnet::start(26645, "base", "").await;
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let signer = alloy_signer_local::PrivateKeySigner::random();
    let payer = signer.address().to_checksum(None);
    let payer_key = alloy_primitives::hex::encode_prefixed(signer.to_bytes());
    let req = requirements(&dn, "40000");
    let body = json!({ "x402Version": 2, "paymentPayload": payload(&req, &payer_key), "paymentRequirements": req });

    let nonce_before = relayer_nonce_of(&dn).await;
    let (s, v) = post(port, "/x402/settle", &key, body.clone()).await;
    assert_eq!((s, &v["success"], v["errorReason"].as_str()), (200, &json!(false), Some("insufficient_funds")), "{v}");
    assert_eq!((&v["transaction"], &v["payer"]), (&json!(""), &json!(payer)), "{v}");
    assert_eq!(relayer_nonce_of(&dn).await, nonce_before, "nothing was sent for the refused payment");

    dn.mint("base", &payer, U256::from(40000u64)).await;
    let before = dn.balance_of("base", "usdc", MERCHANT).await;
    let (s, v) = post(port, "/x402/settle", &key, body.clone()).await;
    assert_eq!((s, &v["success"]), (200, &json!(true)), "{v}");
    let tx = v["transaction"].clone();
    assert!(tx.as_str().is_some_and(|t| t.len() == 66), "{v}");
    let (_, again) = post(port, "/x402/settle", &key, body).await;
    assert_eq!((&again["success"], &again["transaction"]), (&json!(true), &tx), "{again}");
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, before + U256::from(40000u64), "paid once");
    assert_eq!(dn.balance_of("base", "usdc", &payer).await, U256::ZERO);

    let (s, found) = common::http(port, "GET", &format!("/x402/settlements?payer={payer}"), Some(&format!("Bearer {key}")), None);
    assert_eq!(s, 200, "{found}");
    let seen: Vec<(&str, &str)> =
        found.as_array().unwrap().iter().map(|r| (r["status"].as_str().unwrap(), r["error_reason"].as_str().unwrap_or(""))).collect();
    assert_eq!(seen, [("settled", ""), ("failed", "insufficient_funds")], "newest first: {found}");
}

/// The chain holds the broadcast past the bound: the resource server's
/// first settle answers `settlement_pending` with the transaction, its one
/// retry (same payload) waits for the same settlement and gets `success`
/// with the same hash once a block includes it; the payer is charged once
/// and the route answers 200.
#[tokio::test(flavor = "multi_thread")]
async fn a_held_broadcast_is_pending_then_settled_by_the_retry() {
    let dn = Devnet::start(25845, "base", "").await;
    dn.set("facilitator.settle_wait_seconds", 2);
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let token = dn.token("base", "usdc");
    let (shop_port, _shop) = start_shop(&dn, port, &key, "30000");

    let base = dn.rpc_url("base");
    let before = dn.balance_of("base", "usdc", MERCHANT).await;
    rpc(&base, "evm_setAutomine", json!([false])).await;
    // The node takes transactions and mines none until the settle has
    // answered pending (2 s after its transaction went out) and its retry
    // is waiting.
    let miner = {
        let base = base.clone();
        tokio::spawn(async move {
            loop {
                let status = rpc(&base, "txpool_status", json!([])).await;
                if status["pending"].as_str().is_some_and(|p| p != "0x0") {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            tokio::time::sleep(std::time::Duration::from_secs(4)).await;
            rpc(&base, "evm_setAutomine", json!([true])).await;
            rpc(&base, "evm_mine", json!([])).await;
        })
    };
    let (_, payer_key) = dn.payer(0);
    let url = format!("http://127.0.0.1:{shop_port}/paid");
    let got = tokio::task::spawn_blocking(move || buy(&url, &payer_key, &token, None)).await.unwrap();
    miner.await.unwrap();
    assert_eq!((got["status"].as_u64(), &got["payment"]["success"]), (Some(200), &json!(true)), "{got}");
    let tx = got["payment"]["transaction"].as_str().unwrap().to_string();
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, before + U256::from(30000u64), "charged once");

    // The ledger saw one settlement, and its first answer was pending with this hash.
    let (_, found) = common::http(port, "GET", &format!("/x402/settlements?transaction={tx}"), Some(&format!("Bearer {key}")), None);
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    let metrics = common::devnet::metrics_text(port).await;
    let pending = metrics
        .lines()
        .find(|l| {
            l.starts_with("stablerail_facilitator_requests_total{")
                && l.contains("route=\"settle\"")
                && l.contains("outcome=\"settlement_pending\"")
        })
        .unwrap_or_else(|| panic!("no pending answer counted: {metrics}"));
    assert!(pending.ends_with(" 1"), "{pending}");
}

/// `kill -9` while a burst of `/settle` calls has transactions broadcast
/// and not yet mined; restart on the same database: every payload, settled
/// again, lands exactly once (balances on chain), and an answer given
/// before the kill names the transaction that landed.
#[tokio::test(flavor = "multi_thread")]
async fn kill_9_during_a_settle_burst_lands_each_payload_once() {
    let dn = Devnet::start(25945, "base", "").await;
    // The dead process's leases lapse quickly, so the restart takes over.
    dn.service_setting("claim_lease_seconds", 2);
    let key = facilitator_key(&dn, "shop");
    let base = dn.rpc_url("base");
    let req = requirements(&dn, "7000");
    let payloads: Vec<Value> = (0..16).map(|n| payload(&req, &dn.payer(n % 8).1)).collect();
    let body = |p: &Value| json!({ "x402Version": 2, "paymentPayload": p, "paymentRequirements": req });
    let before = dn.balance_of("base", "usdc", MERCHANT).await;

    let port = free_port();
    let mut first = serve(&dn, port);
    rpc(&base, "evm_setAutomine", json!([false])).await;
    let auth = format!("Bearer {key}");
    let calls: Vec<_> = payloads
        .iter()
        .map(|p| {
            let (b, auth) = (body(p), auth.clone());
            std::thread::spawn(move || common::try_http(port, "POST", "/x402/settle", Some(&auth), Some(b)))
        })
        .collect();
    // Broadcasts are out (the node holds them): now the process dies.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let status = rpc(&base, "txpool_status", json!([])).await;
        if status["pending"].as_str().is_some_and(|p| p != "0x0") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "nothing was broadcast: {status}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    common::process::kill(first.0.id(), "-KILL");
    let _ = first.0.wait();
    let early: Vec<Option<(u16, Value)>> = calls.into_iter().map(|c| c.join().unwrap()).collect();
    rpc(&base, "evm_setAutomine", json!([true])).await;
    rpc(&base, "evm_mine", json!([])).await;

    let port = free_port();
    let _second = serve(&dn, port);
    let mut landed = std::collections::BTreeSet::new();
    for (n, p) in payloads.iter().enumerate() {
        let (s, v) = post(port, "/x402/settle", &key, body(p)).await;
        assert_eq!((s, &v["success"]), (200, &json!(true)), "payload {n}: {v}");
        let tx = v["transaction"].as_str().unwrap().to_string();
        if let Some(Some((_, said))) = early.get(n) {
            if said["success"] == true || said["errorReason"] == "settlement_pending" && said["transaction"] != "" {
                assert_eq!(said["transaction"], tx.as_str(), "payload {n}: the answer before the kill named another transaction");
            }
        }
        landed.insert(tx);
    }
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, before + U256::from(16u64 * 7000), "each payload landed once");
    for tx in &landed {
        let receipt = rpc(&base, "eth_getTransactionReceipt", json!([tx])).await;
        assert_eq!(receipt["status"], "0x1", "{receipt}");
    }
}

/// Permit2 through the resource server, with each gas-sponsoring
/// extension: monad's USDC signs an EIP-2612 permit for Permit2
/// (`eip2612GasSponsoring`), bsc's USDC has no permit and the payer signs
/// an approve that stablerail broadcasts (`erc20ApprovalGasSponsoring`).
/// Each route answers 200 and payTo is credited once, on chain.
#[tokio::test(flavor = "multi_thread")]
async fn permit2_with_each_gas_sponsoring_extension_through_the_resource_server() {
    let dn = Devnet::start(26045, "monad,bsc", "").await;
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let (_, supported) = common::process::http(port, "GET", "/x402/supported", None);
    let extensions = supported["extensions"].as_array().unwrap();
    for e in ["eip2612GasSponsoring", "erc20ApprovalGasSponsoring", "payment-identifier"] {
        assert!(extensions.contains(&json!(e)), "{supported}");
    }
    for (chain, id, amount, extension, domain) in [
        ("monad", 143, "15000", "eip2612GasSponsoring", Some(("USDC", "2"))),
        ("bsc", 56, "2000000000000000", "erc20ApprovalGasSponsoring", None),
    ] {
        let token = dn.token(chain, "usdc");
        let mut sale = json!({
            "network": format!("eip155:{id}"), "asset": token, "amount": amount, "payTo": MERCHANT,
            "extra": { "assetTransferMethod": "permit2" }, "extensions": [extension],
        });
        if let Some((name, version)) = domain {
            sale["name"] = json!(name);
            sale["version"] = json!(version);
        }
        let (shop_port, _shop) = start_shop_with(port, &key, sale);
        let before = dn.balance_of(chain, "usdc", MERCHANT).await;
        let (_, payer_key) = dn.payer(3);
        let got = buy(&format!("http://127.0.0.1:{shop_port}/paid"), &payer_key, &token, Some(&dn.rpc_url(chain)));
        assert_eq!((got["status"].as_u64(), &got["payment"]["success"]), (Some(200), &json!(true)), "{chain}: {got}");
        let credited = dn.balance_of(chain, "usdc", MERCHANT).await - before;
        assert_eq!(credited, amount.parse::<U256>().unwrap(), "{chain}: payTo credited once");
    }
}

/// The salted domain (polygon USDT0), which no x402 client signs: a
/// viem-signed Permit2 payload with its EIP-2612 permit over the salted
/// domain, verified and settled through `HTTPFacilitatorClient`.
#[tokio::test(flavor = "multi_thread")]
async fn a_salted_domain_payload_settles_through_the_facilitator_client() {
    let dn = Devnet::start(26145, "polygon", "").await;
    let key = facilitator_key(&dn, "shop");
    let port = free_port();
    let _service = serve(&dn, port);
    let token = dn.token("polygon", "usdt0");
    let req = json!({
        "scheme": "exact", "network": "eip155:137", "amount": "12000", "asset": token, "payTo": MERCHANT,
        "maxTimeoutSeconds": 300,
        "extra": { "name": "USDT0", "version": "1", "assetTransferMethod": "permit2", "domainType": "salted", "extensions": ["eip2612GasSponsoring"] },
    });
    let (_, payer_key) = dn.payer(2);
    let b64 = common::devnet::craft(&req, &payer_key, &dn.rpc_url("polygon"), "permit");
    let payload: Value = serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap();
    let before = dn.balance_of("polygon", "usdt0", MERCHANT).await;
    let input = json!({ "url": format!("http://127.0.0.1:{port}/x402"), "key": key, "payload": payload, "requirements": req });
    let out = common::devnet::node("x402-facilitate.mjs", &[], &input.to_string());
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["verify"]["isValid"], true, "{got}");
    assert_eq!(got["settle"]["success"], true, "{got}");
    assert_eq!(got["supported"]["kinds"][0]["network"], "eip155:137", "{got}");
    assert_eq!(dn.balance_of("polygon", "usdt0", MERCHANT).await, before + U256::from(12000u64), "credited once");
}
