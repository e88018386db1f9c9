//! What a stranger with a script tries against the money, done by the test
//! itself on the devnet with the real `@x402/evm` client, balances read on
//! chain: a settled payload replayed under other requirements, a payer's
//! authorization landed first by a front-runner (EIP-3009 and Permit2, on
//! its own and inside a Multicall3 batch; Permit2 on TRON), a payload that
//! would expire before its block, a
//! keyless caller paying itself, and a listed recipient.

use crate::common;
use crate::facilitator::{facilitator_key, payload, requirements, MERCHANT};

use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_sol_types::{sol, SolCall};
use common::devnet::{call_state, decode_proof, rpc, units, x402_pay, Devnet};
use serde_json::{json, Value};

sol! {
    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature
    ) external;
}

/// The x402 exact Permit2 proxy's entry point, which anyone may call.
mod exact_proxy {
    alloy_sol_types::sol! {
        struct TokenPermissions { address token; uint256 amount; }
        struct PermitTransferFrom { TokenPermissions permitted; uint256 nonce; uint256 deadline; }
        struct Witness { address to; uint256 validAfter; }
        function settle(PermitTransferFrom permit, address owner, Witness witness, bytes signature) external;
    }
}

/// The x402 exact Permit2 proxy (the same address on every chain).
const PERMIT2_PROXY: &str = "0x402085c248EeA27D92E8b30b2C58ed07f9E20001";
const PERMIT2: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

fn body(p: &Value, r: &Value) -> Value {
    json!({ "x402Version": 2, "paymentPayload": p, "paymentRequirements": r })
}

/// The payer's EIP-3009 authorization inside an x402 PaymentPayload, as the
/// calldata anyone may send to the token.
fn front_run_call(p: &Value) -> String {
    let a = &p["payload"]["authorization"];
    let n = |k: &str| U256::from_str_radix(a[k].as_str().unwrap(), 10).unwrap();
    let call = transferWithAuthorizationCall {
        from: a["from"].as_str().unwrap().parse::<Address>().unwrap(),
        to: a["to"].as_str().unwrap().parse::<Address>().unwrap(),
        value: n("value"),
        validAfter: n("validAfter"),
        validBefore: n("validBefore"),
        nonce: a["nonce"].as_str().unwrap().parse::<B256>().unwrap(),
        signature: Bytes::from(alloy_primitives::hex::decode(p["payload"]["signature"].as_str().unwrap()).unwrap()),
    };
    alloy_primitives::hex::encode_prefixed(call.abi_encode())
}

/// The payer's Permit2 authorization inside an x402 PaymentPayload, as
/// the proxy's `settle` call, its addresses read by `parse` (EVM hex, or
/// TRON base58check).
fn permit2_settle(p: &Value, parse: impl Fn(&str) -> Address) -> exact_proxy::settleCall {
    use exact_proxy::*;
    let a = &p["payload"]["permit2Authorization"];
    let n = |v: &Value| U256::from_str_radix(v.as_str().unwrap(), 10).unwrap();
    let addr = |v: &Value| parse(v.as_str().unwrap());
    settleCall {
        permit: PermitTransferFrom {
            permitted: TokenPermissions { token: addr(&a["permitted"]["token"]), amount: n(&a["permitted"]["amount"]) },
            nonce: n(&a["nonce"]),
            deadline: n(&a["deadline"]),
        },
        owner: addr(&a["from"]),
        witness: Witness { to: addr(&a["witness"]["to"]), validAfter: n(&a["witness"]["validAfter"]) },
        signature: Bytes::from(alloy_primitives::hex::decode(p["payload"]["signature"].as_str().unwrap()).unwrap()),
    }
}

/// The same, as calldata for an EVM transaction.
fn front_run_permit2_call(p: &Value) -> String {
    alloy_primitives::hex::encode_prefixed(permit2_settle(p, |a| a.parse().unwrap()).abi_encode())
}

/// The front-runner (the devnet's deployer, an unlocked account that pays
/// nothing here) sends `data` to `to` with a tip far above the relayer's,
/// so the node orders it first.
async fn front_run(dn: &Devnet, chain: &str, to: &str, data: &str) -> String {
    let runner = dn.info["deployer"].as_str().unwrap();
    let tx = json!({
        "from": runner, "to": to, "data": data, "gas": "0x30000",
        "maxPriorityFeePerGas": "0xba43b7400", "maxFeePerGas": "0x2e90edd000",
    });
    rpc(&dn.rpc_url(chain), "eth_sendTransaction", json!([tx])).await.as_str().unwrap().to_string()
}

/// Wait until the node's pool holds at least `n` transactions.
pub(crate) async fn pool_holds(dn: &Devnet, chain: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = rpc(&dn.rpc_url(chain), "txpool_status", json!([])).await;
        let pending = u64::from_str_radix(status["pending"].as_str().unwrap_or("0x0").trim_start_matches("0x"), 16).unwrap_or(0);
        if pending >= n {
            return;
        }
        assert!(Instant::now() < deadline, "the pool never held {n} transactions: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn units_hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

pub(crate) async fn receipt_status(dn: &Devnet, chain: &str, tx: &str) -> String {
    let r = rpc(&dn.rpc_url(chain), "eth_getTransactionReceipt", json!([tx])).await;
    r["status"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_settled_payload_is_never_the_answer_for_other_requirements() {
    let dn = Devnet::start(27145, "base", "").await;
    let key = facilitator_key(&dn, "shop");
    let auth = format!("Bearer {key}");
    let headers = [("authorization", auth.as_str())];
    let (payer, payer_key) = dn.payer(0);
    // 0.001 USDC to the payer's own address, settled.
    let mut own = requirements(&dn, "1000");
    own["payTo"] = json!(payer);
    let p = payload(&own, &payer_key);
    let (s, first) = call_state(&dn.state, "POST", "/x402/settle", Some(body(&p, &own)), &headers).await;
    assert_eq!((s, &first["success"]), (200, &json!(true)), "{first}");
    let tx = first["transaction"].as_str().unwrap().to_string();

    // The same payload to another server selling for 10 USDC to itself.
    let shop = "0x0000000000000000000000000000000000005b0b";
    let mut other = requirements(&dn, "10000000");
    other["payTo"] = json!(shop);
    let before = dn.balance_of("base", "usdc", shop).await;
    let (s, second) = call_state(&dn.state, "POST", "/x402/settle", Some(body(&p, &other)), &headers).await;
    assert_eq!((s, &second["success"]), (200, &json!(false)), "{second}");
    assert_eq!(second["transaction"], "", "nothing of the first settlement: {second}");
    // The payload does not answer these requirements: x402's refusal for it.
    assert_eq!(second["errorReason"], "invalid_payload", "{second}");
    let (_, verified) = call_state(&dn.state, "POST", "/x402/verify", Some(body(&p, &other)), &headers).await;
    assert_eq!(verified["isValid"], false, "{verified}");
    assert_eq!(dn.balance_of("base", "usdc", shop).await, before, "the second server was not paid");

    // Under its own requirements it is still the first settlement.
    let (_, again) = call_state(&dn.state, "POST", "/x402/settle", Some(body(&p, &own)), &headers).await;
    assert_eq!((&again["success"], again["transaction"].as_str()), (&json!(true), Some(tx.as_str())), "{again}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_front_run_authorization_settles_the_intent_with_the_transaction_that_moved_the_money() {
    let dn = Devnet::start(27245, "base,arbitrum", "").await;
    let base = dn.rpc_url("base");
    let (payer, key) = dn.payer(2);
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "2", "payer_chain": "base", "target_chain": "arbitrum" });
    let (id, intent) = dn.create_public(body).await;
    let sending = units(&intent["payment_requirements"]["amount"]);
    let receiving = common::devnet::scaled(intent["receiving_amount"].as_str().unwrap(), 6);
    let before = (dn.balance_of("base", "usdc", &payer).await, dn.balance_of("arbitrum", "usdc", common::app::MERCHANT).await);
    let relayer = dn.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    let nonce = || rpc(&base, "eth_getTransactionCount", json!([relayer, "latest"]));
    let sent_before = units_hex(&nonce().await);

    // The engine's transaction waits in the pool; the front-runner, who
    // read the authorization, outbids it into the same block.
    rpc(&base, "evm_setAutomine", json!([false])).await;
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, ok) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{ok}");
    pool_holds(&dn, "base", 1).await;
    let token = dn.token("base", "usdc");
    let front = front_run(&dn, "base", &token, &front_run_call(&decode_proof(&proof))).await;
    rpc(&base, "evm_mine", json!([])).await;
    rpc(&base, "evm_setAutomine", json!([true])).await;
    assert_eq!(receipt_status(&dn, "base", &front).await, "0x1", "the front-runner's transfer landed");

    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(done["source_payment"]["tx_hash"], json!(front), "settled with the transaction that moved the money: {done}");
    assert_eq!(dn.balance_of("base", "usdc", &payer).await, before.0 - sending, "the payer was charged once");
    assert_eq!(dn.balance_of("arbitrum", "usdc", common::app::MERCHANT).await, before.1 + receiving, "the merchant was paid once");
    assert_eq!(units_hex(&nonce().await), sent_before + 1, "the relayer sent one transaction (which reverted), nothing more");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_front_run_permit2_authorization_settles_the_intent_with_the_transaction_that_moved_the_money() {
    let dn = Devnet::start(28045, "bsc,base", "").await;
    let bsc = dn.rpc_url("bsc");
    let (payer, key) = dn.payer(3);
    dn.approve("bsc", "usdc", &payer, PERMIT2, U256::MAX).await;
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "2", "payer_chain": "bsc", "target_chain": "base" });
    let (id, intent) = dn.create_public(body).await;
    let sending = units(&intent["payment_requirements"]["amount"]);
    let before = (dn.balance_of("bsc", "usdc", &payer).await, dn.balance_of("base", "usdc", common::app::MERCHANT).await);

    rpc(&bsc, "evm_setAutomine", json!([false])).await;
    let proof = common::devnet::x402_pay_on(&intent["payment_requirements"], &key, &bsc);
    let (s, ok) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{ok}");
    pool_holds(&dn, "bsc", 1).await;
    let front = front_run(&dn, "bsc", PERMIT2_PROXY, &front_run_permit2_call(&decode_proof(&proof))).await;
    rpc(&bsc, "evm_mine", json!([])).await;
    rpc(&bsc, "evm_setAutomine", json!([true])).await;
    assert_eq!(receipt_status(&dn, "bsc", &front).await, "0x1", "the front-runner's settle landed");

    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(done["source_payment"]["tx_hash"], json!(front), "settled with the transaction that moved the money: {done}");
    assert_eq!(dn.balance_of("bsc", "usdc", &payer).await, before.0 - sending, "the payer was charged once");
    assert_eq!(dn.balance_of("base", "usdc", common::app::MERCHANT).await, before.1 + U256::from(2_000_000u64), "paid once");
}

/// The payer's TRON Permit2 authorization (base58check addresses) as the
/// ABI parameters of the x402 proxy's `settle`, without its selector.
fn front_run_tron_parameter(p: &Value) -> String {
    alloy_primitives::hex::encode(&permit2_settle(p, |a| tron_wire::address::parse(a).unwrap()).abi_encode()[4..])
}

/// How many broadcasts the devnet's TRON node holds unexecuted, once it
/// holds at least `n`.
async fn tron_holds(api: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let held = common::devnet::post_json(&format!("{api}/devnet/held"), json!({})).await;
        if held["held"].as_u64().unwrap_or(0) >= n {
            return;
        }
        assert!(Instant::now() < deadline, "the node never held {n} broadcasts: {held}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_front_run_tron_permit2_authorization_settles_the_intent_with_the_transaction_that_moved_the_money() {
    use common::devnet::{post_json, trc20_balance, tron_pay, tron_send, tron_sign};
    let dn = Devnet::start(28145, "base,tron", "").await;
    let t = dn.info["tron"].clone();
    let api = dn.tron_api();
    let token = t["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let (payer, key) = (t["payers"][0]["address"].as_str().unwrap(), t["payers"][0]["private_key"].as_str().unwrap());
    let (runner, runner_key) = (t["payers"][1]["address"].as_str().unwrap(), t["payers"][1]["private_key"].as_str().unwrap());
    let approved = tron_send(&api, key, &token, "", u64::MAX, &["--approve", t["permit2"].as_str().unwrap()]);
    assert_eq!(approved["info"]["receipt"]["result"], "SUCCESS", "{approved}");
    let body =
        json!({ "recipient": common::app::MERCHANT, "amount": "3", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" });
    let (id, intent) = dn.create_public(body).await;
    let req = &intent["payment_requirements"];
    let sending: u128 = req["amount"].as_str().unwrap().parse().unwrap();
    let collection = req["payTo"].as_str().unwrap().to_string();
    let before = (
        trc20_balance(&api, &token, payer).await,
        trc20_balance(&api, &token, &collection).await,
        dn.balance("base", common::app::MERCHANT).await,
    );

    // The node holds the engine's settlement; the front-runner, who read the
    // authorization, calls the proxy with it, and lands first.
    post_json(&format!("{api}/devnet/hold"), json!({})).await;
    let proof = tron_pay(req, key);
    let (s, ok) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{ok}");
    tron_holds(&api, 1).await;
    let built = post_json(
        &format!("{api}/wallet/triggersmartcontract"),
        json!({
            "owner_address": runner, "contract_address": t["permit2_proxy"], "visible": true, "fee_limit": 100_000_000,
            "function_selector": "settle(((address,uint256),uint256,uint256),address,(address,uint256),bytes)",
            "parameter": front_run_tron_parameter(&decode_proof(&proof)),
        }),
    )
    .await;
    let tx = &built["transaction"];
    let signature =
        tron_sign(&json!({ "tx_id": tx["txID"], "raw_data": tx["raw_data"], "raw_data_hex": tx["raw_data_hex"] }), runner_key, false);
    let sent =
        post_json(&format!("{api}/wallet/broadcasttransaction"), json!({ "raw_data_hex": tx["raw_data_hex"], "signature": [signature] }))
            .await;
    assert_eq!(sent["result"], true, "{sent}");
    let front = tx["txID"].as_str().unwrap().to_string();
    let released = post_json(&format!("{api}/devnet/release"), json!({ "mode": "land", "order": "newest-first" })).await;
    assert_eq!(released["landed"], 2, "{released}");
    let info = post_json(&format!("{api}/wallet/gettransactioninfobyid"), json!({ "value": front })).await;
    assert_eq!(info["receipt"]["result"], "SUCCESS", "the front-runner's settle landed: {info}");

    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(done["source_payment"]["tx_hash"], json!(front), "settled with the transaction that moved the money: {done}");
    assert_eq!(trc20_balance(&api, &token, payer).await, before.0 - sending, "the payer was charged once");
    assert_eq!(trc20_balance(&api, &token, &collection).await, before.1 + sending, "into the collection wallet");
    assert_eq!(dn.balance("base", common::app::MERCHANT).await, before.2 + U256::from(3_000_000u64), "the merchant was paid once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_fails_inside_a_batch_fails_alone_and_a_front_run_settlement_answers_success() {
    let dn = Devnet::start(27345, "base", "").await;
    let base = dn.rpc_url("base");
    let key = facilitator_key(&dn, "shop");
    let auth = format!("Bearer {key}");
    let payers = 7;
    let signed: Vec<(Value, Value)> = (0..payers)
        .map(|n| {
            let req = requirements(&dn, &(10_000 + n).to_string());
            (payload(&req, &dn.payer(n as usize).1), req)
        })
        .collect();
    let merchant_before = dn.balance_of("base", "usdc", MERCHANT).await;
    rpc(&base, "evm_setAutomine", json!([false])).await;
    let mut answers = vec![];
    for (p, r) in &signed {
        let (state, b, a) = (dn.state.clone(), body(p, r), auth.clone());
        answers.push(tokio::spawn(async move { call_state(&state, "POST", "/x402/settle", Some(b), &[("authorization", &a)]).await }));
    }
    // Every settlement's call is stored and out; some share a transaction.
    let deadline = Instant::now() + Duration::from_secs(30);
    let rows = loop {
        let rows: Vec<(String, String)> =
            sqlx::query("SELECT intent_id, tx_hash FROM chain_transactions WHERE leg = 'x402' ORDER BY intent_id")
                .fetch_all(&dn.state.db.pool)
                .await
                .unwrap()
                .iter()
                .map(|r| (sqlx::Row::get(r, "intent_id"), sqlx::Row::get(r, "tx_hash")))
                .collect();
        if rows.len() == payers as usize || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(rows.len(), payers as usize, "{rows:?}");
    let batch = rows.iter().map(|(_, t)| t).max_by_key(|t| rows.iter().filter(|(_, o)| o == *t).count()).unwrap().clone();
    let in_batch: Vec<&String> = rows.iter().filter(|(_, t)| *t == batch).map(|(id, _)| id).collect();
    assert!(in_batch.len() >= 2, "the calls were batched: {rows:?}");
    let distinct = rows.iter().map(|(_, t)| t).collect::<std::collections::HashSet<_>>().len() as u64;
    pool_holds(&dn, "base", distinct).await;

    // Front-run one call of the batch.
    let victim: (String,) =
        sqlx::query_as("SELECT payload FROM x402_settlements WHERE id = $1").bind(in_batch[0]).fetch_one(&dn.state.db.pool).await.unwrap();
    let victim: Value = serde_json::from_str(&victim.0).unwrap();
    let front = front_run(&dn, "base", &dn.token("base", "usdc"), &front_run_call(&victim)).await;
    rpc(&base, "evm_mine", json!([])).await;
    rpc(&base, "evm_setAutomine", json!([true])).await;
    assert_eq!(receipt_status(&dn, "base", &front).await, "0x1", "the front-runner's transfer landed");
    assert_eq!(receipt_status(&dn, "base", &batch).await, "0x1", "the batch landed with its other calls");

    let mut total = U256::ZERO;
    for (n, a) in answers.into_iter().enumerate() {
        let (s, answer) = a.await.unwrap();
        assert_eq!((s, &answer["success"]), (200, &json!(true)), "payer {n}: {answer}");
        total += U256::from(10_000 + n as u64);
        let tx = answer["transaction"].as_str().unwrap();
        let victim_payer = victim["payload"]["authorization"]["from"].as_str().unwrap();
        if dn.payer(n).0.eq_ignore_ascii_case(victim_payer) {
            assert_eq!(tx, front, "the front-run settlement answers with the transaction that paid");
        } else {
            assert_eq!(receipt_status(&dn, "base", tx).await, "0x1", "{answer}");
        }
    }
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, merchant_before + total, "every payment reached payTo once");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_public_relayer_refuses_what_expires_before_its_block_and_payers_paying_themselves() {
    // A 12-second chain: three blocks are 36 s.
    let dn = Devnet::start(
        27445,
        "base",
        "[chains.base]\nblock_time_ms = 12000\n[facilitator]\npublic = true\npublic_settlements_per_minute = 2\n",
    )
    .await;
    let port = common::process::free_port();
    let _service = common::process::serve(&dn, port);
    let relayer = dn.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    let url = dn.rpc_url("base");
    let nonce = || rpc(&url, "eth_getTransactionCount", json!([relayer, "latest"]));
    let sent_before = nonce().await;
    let (payer, payer_key) = dn.payer(0);

    // Valid for 7 s by the client's own clock: it would be mined expired.
    let mut short = requirements(&dn, "20000");
    short["maxTimeoutSeconds"] = json!(7);
    let p = payload(&short, &payer_key);
    let (s, v) = common::process::http(port, "POST", "/x402/verify", Some(body(&p, &short)));
    assert_eq!((s, &v["isValid"]), (200, &json!(false)), "{v}");
    assert_eq!(v["invalidReason"], "invalid_exact_evm_payload_authorization_valid_before", "{v}");
    let (_, settled) = common::process::http(port, "POST", "/x402/settle", Some(body(&p, &short)));
    assert_eq!(settled["errorReason"], "invalid_exact_evm_payload_authorization_valid_before", "{settled}");

    // A keyless payer paying itself.
    let mut to_self = requirements(&dn, "20000");
    to_self["payTo"] = json!(payer);
    let p = payload(&to_self, &payer_key);
    let (_, settled) = common::process::http(port, "POST", "/x402/settle", Some(body(&p, &to_self)));
    assert_eq!(settled["success"], false, "{settled}");
    assert_eq!(nonce().await, sent_before, "the relayer sent nothing");

    // The same payment, valid long enough, is settled; a payer's keyless
    // budget (2 a minute here) holds whatever address it calls from.
    for (n, want) in [(0, true), (1, true), (2, false)] {
        let fine = requirements(&dn, &(20_000 + n).to_string());
        let p = payload(&fine, &payer_key);
        let (_, settled) = common::process::http(port, "POST", "/x402/settle", Some(body(&p, &fine)));
        assert_eq!(settled["success"], want, "settlement {n}: {settled}");
        if !want {
            assert_eq!(settled["errorReason"], "payment_not_allowed", "{settled}");
        }
    }
    assert_eq!(units_hex(&nonce().await), units_hex(&sent_before) + 2, "two settlements sent, nothing for the third");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listed_recipient_is_declined_at_create_and_by_the_facilitator() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("sdn.txt");
    let listed = "0x00000000000000000000000000000000000E1234";
    std::fs::write(&list, format!("{}\n", listed.to_lowercase())).unwrap();
    let dn = Devnet::start(27545, "base,arbitrum", &format!("[compliance]\nsanctions_files = [{:?}]\n", list.display().to_string())).await;
    let (s, e) = dn
        .call(
            "POST",
            "/api/intents",
            Some(json!({ "recipient": listed, "amount": "1", "payer_chain": "base", "target_chain": "arbitrum" })),
            &[],
        )
        .await;
    assert_eq!((s, e["statusCode"].as_u64(), e["message"].as_str()), (403, Some(403), Some("payment declined")), "{e}");
    let key = facilitator_key(&dn, "shop");
    let auth = format!("Bearer {key}");
    let req = requirements(&dn, "30000"); // payTo is the listed merchant
    assert!(req["payTo"].as_str().unwrap().eq_ignore_ascii_case(listed));
    let p = payload(&req, &dn.payer(0).1);
    let before = dn.balance_of("base", "usdc", listed).await;
    let (_, v) = call_state(&dn.state, "POST", "/x402/verify", Some(body(&p, &req)), &[("authorization", &auth)]).await;
    assert_eq!(v["isValid"], false, "{v}");
    let (_, settled) = call_state(&dn.state, "POST", "/x402/settle", Some(body(&p, &req)), &[("authorization", &auth)]).await;
    assert_eq!(settled["success"], false, "{settled}");
    assert_eq!(dn.balance_of("base", "usdc", listed).await, before, "nothing paid to a listed address");
}
