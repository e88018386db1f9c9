//! One on-chain movement, one credit (issue 68), each attack done by the
//! test itself on the devnet with the real `@x402/evm` client, balances
//! read on chain: a payer signs two authorizations of the same amount to
//! the same wallet, lets the service accept both, then front-runs the
//! relayer with one plain `transfer` whose calldata carries both
//! signatures. A plain transfer uses no authorization, so neither payment
//! is credited, the merchant is paid nothing, and each payment says so.

use crate::adversary::{pool_holds, receipt_status};
use crate::common;
use crate::facilitator::{facilitator_key, payload, requirements, MERCHANT};

use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use alloy_sol_types::{sol, SolCall};
use common::devnet::{call_state, decode_proof, rpc, units, x402_pay, x402_pay_on, Devnet};
use serde_json::{json, Value};

sol! {
    function transfer(address to, uint256 value) external returns (bool);
}

const PERMIT2: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

/// The payer moves whatever it holds beyond `keep` to the deployer, so that
/// one transfer of `keep` empties it.
async fn hold_only(dn: &Devnet, chain: &str, asset: &str, payer: &str, keep: U256) {
    let held = dn.balance_of(chain, asset, payer).await;
    rpc(&dn.rpc_url(chain), "anvil_impersonateAccount", json!([payer])).await;
    rpc(&dn.rpc_url(chain), "anvil_setBalance", json!([payer, "0xde0b6b3a7640000"])).await;
    if held > keep {
        let to: Address = dn.info["deployer"].as_str().unwrap().parse().unwrap();
        dn.send_as(chain, payer, &dn.token(chain, asset), transferCall { to, value: held - keep }.abi_encode()).await;
    }
    assert_eq!(dn.balance_of(chain, asset, payer).await, keep);
}

/// `transfer(to, value)` with the signatures of `payloads` appended: the
/// calldata an attacker copies signatures into. The token ignores the tail.
fn plain_transfer_carrying(to: &str, value: U256, payloads: &[Value]) -> String {
    let mut data = transferCall { to: to.parse().unwrap(), value }.abi_encode();
    for p in payloads {
        data.extend(alloy_primitives::hex::decode(p["payload"]["signature"].as_str().unwrap()).unwrap());
    }
    alloy_primitives::hex::encode_prefixed(data)
}

/// The payer (impersonated) sends `data` to the token with a tip far above
/// the relayer's, so the node orders it first.
async fn front_run_as(dn: &Devnet, chain: &str, payer: &str, to: &str, data: &str) -> String {
    let tx = json!({
        "from": payer, "to": to, "data": data, "gas": "0x30000",
        "maxPriorityFeePerGas": "0xba43b7400", "maxFeePerGas": "0x2e90edd000",
    });
    rpc(&dn.rpc_url(chain), "eth_sendTransaction", json!([tx])).await.as_str().unwrap().to_string()
}

/// Wait until the intent is in a terminal status, and answer it.
async fn settled_or_failed(dn: &Devnet, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, i) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
        let s = i["status"].as_str().unwrap_or_default().to_string();
        if ["TARGET_SETTLED", "VERIFICATION_FAILED", "PARTIAL_SETTLEMENT", "BLOCKED", "EXPIRED"].contains(&s.as_str()) {
            return i;
        }
        assert!(Instant::now() < deadline, "intent {id} never ended: {i}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Rows of the books credited to `owner`.
async fn credits_of(dn: &Devnet, owner: &str) -> i64 {
    let row =
        sqlx::query("SELECT COUNT(*) AS n FROM book_movements WHERE owner_id = $1").bind(owner).fetch_one(&dn.state.db.pool).await.unwrap();
    sqlx::Row::get(&row, "n")
}

/// Two intents of one payer and one amount, both proofs accepted; the
/// payer's one plain transfer into the collection wallet carries both
/// signatures. `permit2`: the asset pays with Permit2 (bsc USDC).
async fn two_intents_one_plain_transfer(dn: &Devnet, chain: &str, target: &str, payer_n: usize, permit2: bool) {
    let (payer, key) = dn.payer(payer_n);
    // The books open before anything moves.
    let opened = dn.cli(&["books", "check"]);
    assert_eq!(opened["differences"], 0, "{opened}");
    if permit2 {
        dn.approve(chain, "usdc", &payer, PERMIT2, U256::MAX).await;
    }
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "2", "payer_chain": chain, "target_chain": target });
    let (a, first) = dn.create_public(body.clone()).await;
    let (b, second) = dn.create_public(body).await;
    let sending = units(&first["payment_requirements"]["amount"]);
    assert_eq!(sending, units(&second["payment_requirements"]["amount"]), "the same amount twice");
    let collection = first["payment_requirements"]["payTo"].as_str().unwrap().to_string();
    hold_only(dn, chain, "usdc", &payer, sending).await;
    let before = (dn.balance_of(chain, "usdc", &collection).await, dn.balance_of(target, "usdc", common::app::MERCHANT).await);

    let url = dn.rpc_url(chain);
    rpc(&url, "evm_setAutomine", json!([false])).await;
    let mut payloads = vec![];
    for (id, intent) in [(&a, &first), (&b, &second)] {
        let req = &intent["payment_requirements"];
        let proof = if permit2 { x402_pay_on(req, &key, &url) } else { x402_pay(req, &key) };
        let (s, ok) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
        assert_eq!(s, 200, "both proofs are accepted (the payer holds one amount, each checks alone): {ok}");
        payloads.push(decode_proof(&proof));
    }
    pool_holds(dn, chain, 1).await;
    let data = plain_transfer_carrying(&collection, sending, &payloads);
    let front = front_run_as(dn, chain, &payer, &dn.token(chain, "usdc"), &data).await;
    rpc(&url, "evm_mine", json!([])).await;
    rpc(&url, "evm_setAutomine", json!([true])).await;
    assert_eq!(receipt_status(dn, chain, &front).await, "0x1", "the plain transfer landed");

    for id in [&a, &b] {
        let done = settled_or_failed(dn, id).await;
        assert_eq!(done["status"], "VERIFICATION_FAILED", "a plain transfer credits no authorization: {done}");
        assert!(done["source_payment"]["tx_hash"].is_null(), "no source transaction is claimed: {done}");
        // Why, plainly: the authorization was not used, or (when the
        // adapter can tell) the payer holds nothing left to pay it with.
        let said = done["error_message"].as_str().unwrap();
        assert!(said.contains("not used on chain") || done["error_code"] == "insufficient_funds", "the status says so: {done}");
        assert_eq!(credits_of(dn, id).await, 0, "nothing in the books for {id}");
    }
    assert_eq!(dn.balance_of(chain, "usdc", &payer).await, U256::ZERO, "the payer's one transfer left");
    assert_eq!(dn.balance_of(chain, "usdc", &collection).await, before.0 + sending, "it arrived once, uncredited");
    assert_eq!(dn.balance_of(target, "usdc", common::app::MERCHANT).await, before.1, "the merchant was paid nothing for it");
    // The money that did arrive belongs to no payment: the books list it
    // (once a block follows it: the books never read the head).
    rpc(&dn.rpc_url(chain), "evm_mine", json!([])).await;
    let listed = dn.cli(&["books", "unmatched"]);
    let rows = listed["unmatched"].as_array().unwrap_or_else(|| panic!("{listed}"));
    assert!(
        rows.iter()
            .any(|r| r["tx_id"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(&front)) && r["amount"] == json!(sending.to_string())),
        "books unmatched lists the plain transfer: {listed}"
    );
    // And the books still add up to what the chain holds.
    let checked = dn.cli(&["books", "check"]);
    assert_eq!(checked["differences"], 0, "{checked}");
    assert!(checked["wallets"].as_array().unwrap().iter().any(|w| w["role"] == "collection" && w["chain"] == chain), "{checked}");

    // The operator refunds it by hand and says so: not while a credit may
    // still be on its way (read under five minutes ago), then once.
    let row = rows.iter().find(|r| r["tx_id"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(&front))).unwrap();
    let index = row["log_index"].to_string();
    let tx_id = row["tx_id"].as_str().unwrap();
    let ack = ["books", "acknowledge", "--chain", chain, "--tx", tx_id, "--index", &index, "--note", "refunded by hand"];
    let (ok, answer, stderr) = dn.cli_answer(&ack);
    assert!(!ok && answer["acknowledged"] == false, "too young to acknowledge: {answer} {stderr}");
    sqlx::query("UPDATE book_movements SET seen_at = seen_at - 600000 WHERE tx_id = $1")
        .bind(tx_id)
        .execute(&dn.state.db.pool)
        .await
        .unwrap();
    assert_eq!(dn.cli(&ack)["acknowledged"], true);
    let (ok, _, _) = dn.cli_answer(&ack);
    assert!(!ok, "acknowledged once");
    let listed = dn.cli(&["books", "unmatched"]);
    assert!(!listed["unmatched"].as_array().unwrap().iter().any(|r| r["tx_id"] == json!(tx_id)), "no longer unmatched: {listed}");
    let row =
        sqlx::query("SELECT purpose, note FROM book_movements WHERE tx_id = $1").bind(tx_id).fetch_one(&dn.state.db.pool).await.unwrap();
    let (purpose, note): (String, String) = (sqlx::Row::get(&row, "purpose"), sqlx::Row::get(&row, "note"));
    assert_eq!((purpose.as_str(), note.as_str()), ("operator", "refunded by hand"));
}

#[tokio::test(flavor = "multi_thread")]
async fn one_plain_transfer_carrying_two_eip3009_signatures_credits_neither_intent() {
    let dn = Devnet::start(30745, "base,arbitrum", "").await;
    two_intents_one_plain_transfer(&dn, "base", "arbitrum", 4, false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_plain_transfer_carrying_two_permit2_signatures_credits_neither_intent() {
    let dn = Devnet::start(30845, "bsc,base", "").await;
    two_intents_one_plain_transfer(&dn, "bsc", "base", 5, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_plain_transfer_carrying_two_signatures_settles_neither_facilitator_request() {
    let dn = Devnet::start(30945, "base", "").await;
    let base = dn.rpc_url("base");
    let auth = format!("Bearer {}", facilitator_key(&dn, "shop"));
    let (payer, key) = dn.payer(6);
    let amount = U256::from(25_000u64);
    hold_only(&dn, "base", "usdc", &payer, amount).await;
    let merchant_before = dn.balance_of("base", "usdc", MERCHANT).await;
    let req = requirements(&dn, &amount.to_string());
    // Two payloads: the same amount to the same payTo, two nonces.
    let signed = [payload(&req, &key), payload(&req, &key)];
    assert_ne!(signed[0]["payload"]["authorization"]["nonce"], signed[1]["payload"]["authorization"]["nonce"]);

    rpc(&base, "evm_setAutomine", json!([false])).await;
    let mut answers = vec![];
    for p in &signed {
        let body = json!({ "x402Version": 2, "paymentPayload": p, "paymentRequirements": req });
        let (state, a) = (dn.state.clone(), auth.clone());
        answers.push(tokio::spawn(async move { call_state(&state, "POST", "/x402/settle", Some(body), &[("authorization", &a)]).await }));
    }
    pool_holds(&dn, "base", 1).await;
    let data = plain_transfer_carrying(MERCHANT, amount, &signed);
    let front = front_run_as(&dn, "base", &payer, &dn.token("base", "usdc"), &data).await;
    rpc(&base, "evm_mine", json!([])).await;
    rpc(&base, "evm_setAutomine", json!([true])).await;
    assert_eq!(receipt_status(&dn, "base", &front).await, "0x1", "the plain transfer landed");

    for a in answers {
        let (s, answer) = a.await.unwrap();
        assert_eq!(answer["success"], json!(false), "a plain transfer settles no authorization ({s}): {answer}");
        assert_ne!(answer["transaction"].as_str(), Some(front.as_str()), "never answered with someone's plain transfer: {answer}");
    }
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, merchant_before + amount, "payTo received the one transfer, once");
    let credited: i64 = sqlx::Row::get(
        &sqlx::query("SELECT COUNT(*) AS n FROM book_movements WHERE purpose = 'x402'").fetch_one(&dn.state.db.pool).await.unwrap(),
        "n",
    );
    assert_eq!(credited, 0, "no settlement holds the plain transfer");
}

/// Runtime code of a wallet whose `isValidSignature` (whatever it is asked)
/// burns about 5,000,000 gas in a loop, then accepts: `0x1626ba7e`.
const GAS_BURNING_WALLET: &str = "0x6202ef345b600190038060045750631626ba7e60e01b60005260206000f3";

#[tokio::test(flavor = "multi_thread")]
async fn a_contract_payer_that_burns_gas_is_refused_before_the_relayer_sends_anything() {
    use base64::Engine as _;
    let dn = Devnet::start(31045, "base", "").await;
    let base = dn.rpc_url("base");
    let wallet = "0x00000000000000000000000000000000000b0a7d";
    rpc(&base, "anvil_setCode", json!([wallet, GAS_BURNING_WALLET])).await;
    dn.mint("base", wallet, U256::from(10_000_000u64)).await;
    // The chain itself runs the wallet's check with the gas it is given.
    let probe = rpc(&base, "eth_estimateGas", json!([{ "to": wallet, "data": "0x1626ba7e" }])).await;
    let burns = u64::from_str_radix(probe.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert!(burns > 4_500_000, "the wallet burns about 5M gas: {probe}");

    let before = relayer_state(&dn, "base").await;
    // An EIP-3009 payload from the wallet: any signature, it accepts all.
    // A public intent: refused at submit, with its own code, unchanged.
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "base" });
    let (id, intent) = dn.create_public(body).await;
    let proof =
        base64::engine::general_purpose::STANDARD.encode(contract_payload(&intent["payment_requirements"], wallet, "11").to_string());
    let (s, refused) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 400, "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("needs more gas to check"), "{refused}");
    let (_, still) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(still["status"], "AWAITING_PAYMENT", "{still}");

    // A resource server's settle: refused with its own reason.
    let auth = format!("Bearer {}", facilitator_key(&dn, "shop"));
    let req = requirements(&dn, "10000");
    let body = json!({ "x402Version": 2, "paymentPayload": contract_payload(&req, wallet, "11"), "paymentRequirements": req });
    let (_, settled) = dn.call("POST", "/x402/settle", Some(body.clone()), &[("authorization", &auth)]).await;
    assert_eq!((&settled["success"], &settled["errorReason"]), (&json!(false), &json!("payer_gas_cap_exceeded")), "{settled}");
    let (_, verified) = dn.call("POST", "/x402/verify", Some(body), &[("authorization", &auth)]).await;
    assert_eq!((&verified["isValid"], &verified["invalidReason"]), (&json!(false), &json!("payer_gas_cap_exceeded")), "{verified}");

    assert_eq!(relayer_state(&dn, "base").await, before, "the relayer sent nothing and paid nothing");
    assert_eq!(dn.balance("base", wallet).await, U256::from(10_000_000u64), "nothing moved");
}

/// An EIP-3009 payload from a contract `wallet` that accepts any
/// signature: 65 bytes of `fill`.
fn contract_payload(req: &Value, wallet: &str, fill: &str) -> Value {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    json!({
        "x402Version": 2, "accepted": req,
        "payload": {
            "signature": format!("0x{}", fill.repeat(65)),
            "authorization": {
                "from": wallet, "to": req["payTo"], "value": req["amount"], "validAfter": (now - 60).to_string(),
                "validBefore": (now + 600).to_string(), "nonce": format!("0x{}", alloy_primitives::hex::encode(rand_bytes())),
            },
        },
    })
}

/// The relayer's native balance and nonce on `chain`.
async fn relayer_state(dn: &Devnet, chain: &str) -> (Value, Value) {
    let relayer = dn.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    let url = dn.rpc_url(chain);
    (rpc(&url, "eth_getBalance", json!([relayer, "latest"])).await, rpc(&url, "eth_getTransactionCount", json!([relayer, "latest"])).await)
}

fn rand_bytes() -> [u8; 32] {
    rand::random()
}

/// Runtime code of a wallet that accepts any signature cheaply when it is
/// given less than 1,000,000 gas (a simulation under the cap) and burns
/// about 5,000,000 when it is given more (the relayer's transaction).
const GAS_DEPENDENT_WALLET: &str =
    "0x5a620f424010601957631626ba7e60e01b60005260206000f35b6202ef345b6001900380601e5750631626ba7e60e01b60005260206000f3";

#[tokio::test(flavor = "multi_thread")]
async fn a_contract_payer_that_burns_only_in_the_relayers_transaction_is_refused_before_it_is_sent() {
    use base64::Engine as _;
    let dn = Devnet::start(31245, "base", "").await;
    let base = dn.rpc_url("base");
    let wallet = "0x00000000000000000000000000000000000b0a7e";
    rpc(&base, "anvil_setCode", json!([wallet, GAS_DEPENDENT_WALLET])).await;
    dn.mint("base", wallet, U256::from(10_000_000u64)).await;
    let cheap = rpc(&base, "eth_estimateGas", json!([{ "to": wallet, "data": "0x1626ba7e", "gas": "0x7a120" }])).await;
    let cheap = u64::from_str_radix(cheap.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert!(cheap < 100_000, "cheap under the cap: {cheap}");

    let before = relayer_state(&dn, "base").await;
    // The proof passes its capped checks; the relayer's own measurement
    // of the transaction finds the burn, and nothing is sent.
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "base" });
    let (id, intent) = dn.create_public(body).await;
    let proof =
        base64::engine::general_purpose::STANDARD.encode(contract_payload(&intent["payment_requirements"], wallet, "22").to_string());
    let (s, accepted) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{accepted}");
    let done = settled_or_failed(&dn, &id).await;
    assert_eq!((&done["status"], &done["error_code"]), (&json!("VERIFICATION_FAILED"), &json!("payer_gas_cap_exceeded")), "{done}");

    let auth = format!("Bearer {}", facilitator_key(&dn, "shop"));
    let req = requirements(&dn, "10000");
    let body = json!({ "x402Version": 2, "paymentPayload": contract_payload(&req, wallet, "22"), "paymentRequirements": req });
    let (_, settled) = dn.call("POST", "/x402/settle", Some(body), &[("authorization", &auth)]).await;
    assert_eq!((&settled["success"], &settled["errorReason"]), (&json!(false), &json!("payer_gas_cap_exceeded")), "{settled}");

    assert_eq!(relayer_state(&dn, "base").await, before, "the relayer sent nothing and paid nothing");
    assert_eq!(dn.balance("base", wallet).await, U256::from(10_000_000u64), "nothing moved");
}

#[tokio::test(flavor = "multi_thread")]
async fn one_plain_transfer_carrying_two_permit2_signatures_settles_neither_facilitator_request() {
    let dn = Devnet::start(31345, "bsc,base", "").await;
    let bsc = dn.rpc_url("bsc");
    let auth = format!("Bearer {}", facilitator_key(&dn, "shop"));
    let (payer, key) = dn.payer(6);
    dn.approve("bsc", "usdc", &payer, PERMIT2, U256::MAX).await;
    // bsc USDC's Permit2 requirements, as an intent states them, to the shop.
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "bsc", "target_chain": "base" });
    let (_, intent) = dn.create_public(body).await;
    let mut req = intent["payment_requirements"].clone();
    req["payTo"] = json!(MERCHANT);
    let amount = units(&req["amount"]);
    hold_only(&dn, "bsc", "usdc", &payer, amount).await;
    let merchant_before = dn.balance_of("bsc", "usdc", MERCHANT).await;
    let signed: Vec<Value> = (0..2).map(|_| decode_proof(&x402_pay_on(&req, &key, &bsc))).collect();
    assert_ne!(signed[0]["payload"]["permit2Authorization"]["nonce"], signed[1]["payload"]["permit2Authorization"]["nonce"]);

    rpc(&bsc, "evm_setAutomine", json!([false])).await;
    let mut answers = vec![];
    for p in &signed {
        let body = json!({ "x402Version": 2, "paymentPayload": p, "paymentRequirements": req });
        let (state, a) = (dn.state.clone(), auth.clone());
        answers.push(tokio::spawn(async move { call_state(&state, "POST", "/x402/settle", Some(body), &[("authorization", &a)]).await }));
    }
    pool_holds(&dn, "bsc", 1).await;
    let data = plain_transfer_carrying(MERCHANT, amount, &signed);
    let front = front_run_as(&dn, "bsc", &payer, &dn.token("bsc", "usdc"), &data).await;
    rpc(&bsc, "evm_mine", json!([])).await;
    rpc(&bsc, "evm_setAutomine", json!([true])).await;
    assert_eq!(receipt_status(&dn, "bsc", &front).await, "0x1", "the plain transfer landed");
    for a in answers {
        let (s, answer) = a.await.unwrap();
        assert_eq!(answer["success"], json!(false), "a plain transfer settles no permit ({s}): {answer}");
        let why = answer["errorReason"].as_str().unwrap_or_default();
        assert!(
            ["insufficient_funds", "invalid_transaction_state"].contains(&why),
            "refused for the payment itself, not its shape: {answer}"
        );
    }
    assert_eq!(dn.balance_of("bsc", "usdc", MERCHANT).await, merchant_before + amount, "payTo received the one transfer, once");
    let credited: i64 = sqlx::Row::get(
        &sqlx::query("SELECT COUNT(*) AS n FROM book_movements WHERE purpose = 'x402'").fetch_one(&dn.state.db.pool).await.unwrap(),
        "n",
    );
    assert_eq!(credited, 0, "no settlement holds the plain transfer");
}

/// TRON (Permit2 through the x402 proxy): two intents of one payer and one
/// amount, both proofs accepted; the node holds the relayer's settlements
/// while the payer broadcasts one plain TRC-20 transfer whose memo (inside
/// the `raw_data` its id covers) carries both signatures, and lands it
/// first. No permit was used: neither intent is credited.
#[tokio::test(flavor = "multi_thread")]
async fn one_plain_trc20_transfer_carrying_two_permit2_signatures_credits_neither_intent() {
    use common::devnet::{post_json, trc20_balance, tron_pay, tron_send};
    let dn = Devnet::start(31445, "base,tron", "").await;
    let t = dn.info["tron"].clone();
    let api = t["http"].as_str().unwrap().to_string();
    let token = t["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let (payer, key) =
        (t["payers"][0]["address"].as_str().unwrap().to_string(), t["payers"][0]["private_key"].as_str().unwrap().to_string());
    let approved = tron_send(&api, &key, &token, "", u64::MAX, &["--approve", t["permit2"].as_str().unwrap()]);
    assert_eq!(approved["info"]["receipt"]["result"], "SUCCESS", "{approved}");
    let opened = dn.cli(&["books", "check"]);
    assert_eq!(opened["differences"], 0, "{opened}");

    let body =
        json!({ "recipient": common::app::MERCHANT, "amount": "2", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" });
    let (a, first) = dn.create_public(body.clone()).await;
    let (b, second) = dn.create_public(body).await;
    let sending: u128 = first["payment_requirements"]["amount"].as_str().unwrap().parse().unwrap();
    assert_eq!(second["payment_requirements"]["amount"], first["payment_requirements"]["amount"], "the same amount twice");
    let collection = first["payment_requirements"]["payTo"].as_str().unwrap().to_string();
    // The payer keeps exactly one amount (the rest to another payer).
    let held = trc20_balance(&api, &token, &payer).await;
    let elsewhere = t["payers"][1]["address"].as_str().unwrap();
    tron_send(&api, &key, &token, elsewhere, held - sending, &[]);
    assert_eq!(trc20_balance(&api, &token, &payer).await, sending);
    let before = (trc20_balance(&api, &token, &collection).await, dn.balance_of("base", "usdc", common::app::MERCHANT).await);

    post_json(&format!("{api}/devnet/hold"), json!({})).await;
    let mut signatures = String::new();
    for (id, intent) in [(&a, &first), (&b, &second)] {
        let proof = tron_pay(&intent["payment_requirements"], &key);
        let (s, ok) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
        assert_eq!(s, 200, "both proofs are accepted (the payer holds one amount, each checks alone): {ok}");
        signatures.push_str(decode_proof(&proof)["payload"]["signature"].as_str().unwrap().trim_start_matches("0x"));
    }
    // The relayer's settlements reach the node and wait there.
    let deadline = Instant::now() + Duration::from_secs(30);
    while post_json(&format!("{api}/devnet/held"), json!({})).await["held"].as_u64().unwrap_or(0) < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let front = tron_send(&api, &key, &token, &collection, sending, &["--memo", &signatures]);
    assert_eq!(front["broadcast"]["result"], true, "{front}");
    let front_id = front["transaction"]["txID"].as_str().unwrap().to_string();
    assert!(front["transaction"]["raw_data_hex"].as_str().unwrap().contains(&signatures[..130]), "the memo carries the signatures");
    let out = post_json(&format!("{api}/devnet/release"), json!({ "mode": "land", "order": "newest-first" })).await;
    assert!(out["landed"].as_u64().unwrap() >= 2, "the plain transfer and at least one settlement: {out}");
    let info = post_json(&format!("{api}/wallet/gettransactioninfobyid"), json!({ "value": front_id })).await;
    assert_eq!(info["receipt"]["result"], "SUCCESS", "the plain transfer landed first: {info}");

    for id in [&a, &b] {
        let done = settled_or_failed(&dn, id).await;
        assert_eq!(done["status"], "VERIFICATION_FAILED", "a plain transfer credits no permit: {done}");
        assert!(done["source_payment"]["tx_hash"].is_null(), "no source transaction is claimed: {done}");
        let said = done["error_message"].as_str().unwrap();
        assert!(said.contains("not used on chain") || done["error_code"] == "insufficient_funds", "the status says so: {done}");
        assert_eq!(credits_of(&dn, id).await, 0, "nothing in the books for {id}");
    }
    assert_eq!(trc20_balance(&api, &token, &payer).await, 0, "the payer's one transfer left");
    assert_eq!(trc20_balance(&api, &token, &collection).await, before.0 + sending, "it arrived once, uncredited");
    assert_eq!(dn.balance_of("base", "usdc", common::app::MERCHANT).await, before.1, "the merchant was paid nothing for it");
    let listed = dn.cli(&["books", "unmatched"]);
    let rows = listed["unmatched"].as_array().unwrap_or_else(|| panic!("{listed}"));
    assert!(
        rows.iter().any(|r| r["chain"] == "tron" && r["tx_id"] == json!(front_id) && r["amount"] == json!(sending.to_string())),
        "books unmatched lists the plain transfer: {listed}"
    );
    let checked = dn.cli(&["books", "check"]);
    assert_eq!(checked["differences"], 0, "{checked}");
    assert!(checked["wallets"].as_array().unwrap().iter().any(|w| w["role"] == "collection" && w["chain"] == "tron"), "{checked}");
}

/// Keyless settlements spend the relayer's gas: the budget counts it. An
/// EOA's settlement counts a usual call (100,000); a payer that may run
/// code counts its chain's cap on top of a settlement's own gas, so a
/// fresh contract wallet each time cannot buy more than the budget.
#[tokio::test(flavor = "multi_thread")]
async fn the_keyless_budget_counts_gas_and_a_contract_payer_its_cap() {
    let dn =
        Devnet::start(31545, "base", "[facilitator]\npublic = true\npublic_settlements_per_minute = 100\npublic_gas_per_hour = 250000\n")
            .await;
    let port = common::process::free_port();
    let _service = common::process::serve(&dn, port);
    let settle = |p: &Value, r: &Value| {
        common::process::http(
            port,
            "POST",
            "/x402/settle",
            Some(json!({ "x402Version": 2, "paymentPayload": p, "paymentRequirements": r })),
        )
        .1
    };
    let base = dn.rpc_url("base");
    let wallet = "0x00000000000000000000000000000000000b0a7f";
    rpc(&base, "anvil_setCode", json!([wallet, GAS_DEPENDENT_WALLET])).await;
    dn.mint("base", wallet, U256::from(10_000_000u64)).await;
    let before = relayer_state(&dn, "base").await;

    // A contract payer (cheap to check here) counts 500,000 + 200,000: over
    // a 250,000 budget at once, nothing sent.
    let req = requirements(&dn, "10000");
    let settled = settle(&contract_payload(&req, wallet, "33"), &req);
    assert_eq!((&settled["success"], &settled["errorReason"]), (&json!(false), &json!("payment_not_allowed")), "{settled}");
    assert_eq!(relayer_state(&dn, "base").await, before, "the relayer sent nothing for it");

    // An EOA payer: two settlements fit, the third does not.
    let (_, key) = dn.payer(0);
    let merchant = dn.balance_of("base", "usdc", MERCHANT).await;
    for (n, want) in [(0u64, true), (1, true), (2, false)] {
        let req = requirements(&dn, &(20_000 + n).to_string());
        let settled = settle(&payload(&req, &key), &req);
        assert_eq!(settled["success"], json!(want), "settlement {n}: {settled}");
        if !want {
            assert_eq!(settled["errorReason"], "payment_not_allowed", "{settled}");
        }
    }
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, merchant + U256::from(40_001u64), "two settlements, not the third");
    assert_eq!(dn.balance("base", wallet).await, U256::from(10_000_000u64), "the contract payer's money did not move");
}

/// A payout copied from the public pool: a stranger sends the relayer's
/// pending payout calldata first, from its own account (the authorization
/// is the proxy wallet's; anyone may submit it). The merchant is paid once,
/// and the intent says so: TARGET_SETTLED with the stranger's transaction,
/// credited in the books (its fee not the relayer's).
#[tokio::test(flavor = "multi_thread")]
async fn a_payout_landed_by_a_stranger_settles_the_intent_with_the_strangers_transaction() {
    let dn = Devnet::start(31645, "base,arbitrum", "").await;
    let arb = dn.rpc_url("arbitrum");
    // The books open before anything moves: both legs' credits are then
    // inside what the reconciler reads, and must be the movements it finds.
    let opened = dn.cli(&["books", "check"]);
    assert_eq!(opened["differences"], 0, "{opened}");
    let (_, key) = dn.payer(0);
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "3", "payer_chain": "base", "target_chain": "arbitrum" });
    let (id, intent) = dn.create_public(body).await;
    let merchant = dn.balance_of("arbitrum", "usdc", common::app::MERCHANT).await;
    rpc(&arb, "evm_setAutomine", json!([false])).await;
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, ok) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{ok}");
    pool_holds(&dn, "arbitrum", 1).await;
    let pool = rpc(&arb, "txpool_content", json!([])).await;
    let pending: Vec<&Value> =
        pool["pending"].as_object().unwrap().values().flat_map(|by_nonce| by_nonce.as_object().unwrap().values()).collect();
    assert_eq!(pending.len(), 1, "the relayer's payout waits in the pool: {pool}");
    let (to, input) = (pending[0]["to"].as_str().unwrap(), pending[0]["input"].as_str().unwrap());
    let stranger = dn.info["deployer"].as_str().unwrap();
    rpc(&arb, "anvil_impersonateAccount", json!([stranger])).await;
    let front = front_run_as(&dn, "arbitrum", stranger, to, input).await;
    rpc(&arb, "evm_mine", json!([])).await;
    rpc(&arb, "evm_setAutomine", json!([true])).await;
    assert_eq!(receipt_status(&dn, "arbitrum", &front).await, "0x1", "the stranger's copy landed");

    let done = settled_or_failed(&dn, &id).await;
    assert_eq!(done["status"], "TARGET_SETTLED", "the merchant was paid, and the intent says so: {done}");
    assert!(done["target_payment"]["tx_hash"].as_str().unwrap().eq_ignore_ascii_case(&front), "by the stranger's transaction: {done}");
    let (whole, frac) =
        done["receiving_amount"].as_str().unwrap().split_once('.').unwrap_or((done["receiving_amount"].as_str().unwrap(), ""));
    let receiving = U256::from(format!("{whole}{frac:0<6}").parse::<u64>().unwrap());
    let paid = dn.balance_of("arbitrum", "usdc", common::app::MERCHANT).await - merchant;
    assert_eq!(paid, receiving, "the merchant was paid once");
    let row = sqlx::query("SELECT tx_id, fee FROM book_movements WHERE purpose = 'payout' AND owner_id = $1")
        .bind(&id)
        .fetch_one(&dn.state.db.pool)
        .await
        .unwrap();
    let (tx_id, fee): (String, Option<String>) = (sqlx::Row::get(&row, "tx_id"), sqlx::Row::get(&row, "fee"));
    assert!(tx_id.eq_ignore_ascii_case(&front) && fee.is_none(), "the stranger's movement, not the relayer's cost: {tx_id} {fee:?}");
    let checked = dn.cli(&["books", "check"]);
    assert_eq!(checked["differences"], 0, "{checked}");
}

/// Solana: the reconciler reads the collection wallet's finalized
/// transactions; a payment's credit is the movement it finds (seen), and
/// the books balance with the chain.
#[tokio::test(flavor = "multi_thread")]
async fn the_books_read_solana_wallets_and_balance() {
    use common::devnet::sol_pay;
    let dn = Devnet::start(31945, "base,solana", "").await;
    let rpc_url = dn.sol_rpc();
    let opened = dn.cli(&["books", "check"]);
    assert_eq!(opened["differences"], 0, "{opened}");
    let (_, seed) = dn.sol_payer(0);
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "3", "payer_chain": "solana", "payer_asset": "usdc", "target_chain": "base" });
    let (id, intent) = dn.create_public(body).await;
    let proof = sol_pay(&intent["payment_requirements"], &seed, &rpc_url, None);
    let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{r}");
    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    let signature = done["source_payment"]["tx_hash"].as_str().unwrap().to_string();
    // The payment's slot becomes final.
    rpc(&rpc_url, "devnet_advanceSlots", json!([40])).await;
    let checked = dn.cli(&["books", "check"]);
    assert_eq!(checked["differences"], 0, "{checked}");
    assert!(checked["wallets"].as_array().unwrap().iter().any(|w| w["role"] == "collection" && w["chain"] == "solana"), "{checked}");
    let row = sqlx::query("SELECT tx_id, seen_at FROM book_movements WHERE purpose = 'source' AND owner_id = $1")
        .bind(&id)
        .fetch_one(&dn.state.db.pool)
        .await
        .unwrap();
    let (tx_id, seen): (String, Option<i64>) = (sqlx::Row::get(&row, "tx_id"), sqlx::Row::get(&row, "seen_at"));
    assert_eq!(tx_id, signature, "the credit is the payer's transaction");
    assert!(seen.is_some(), "the reconciler read it on chain");
    let listed = dn.cli(&["books", "unmatched"]);
    assert!(!listed["unmatched"].as_array().unwrap().iter().any(|r| r["chain"] == "solana"), "nothing unclaimed: {listed}");
}

/// A node's state "at" its head number can already hold the next block's
/// transactions (anvil writes a block's state before its number). Books
/// opened while money lands at the collection wallet every moment must
/// still balance: the reconciler never reads state at the head itself.
#[tokio::test(flavor = "multi_thread")]
async fn books_opened_while_money_lands_every_block_balance() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    // No replica: only this test opens and reads the books.
    let dn = Devnet::start_with(32045, "base", "", 0, None).await;
    let deps = dn.state.engine_deps();
    let wallets = stablerail::settle::books::wallets(&deps).await;
    let collection = wallets.iter().find(|w| w.chain == "base" && w.role == "collection").expect("base collection wallet").clone();
    let (payer, _) = dn.payer(0);
    let url = dn.rpc_url("base");
    rpc(&url, "anvil_impersonateAccount", json!([payer])).await;
    rpc(&url, "anvil_setBalance", json!([payer, "0xde0b6b3a7640000"])).await;
    let data =
        alloy_primitives::hex::encode_prefixed(transferCall { to: collection.address.parse().unwrap(), value: U256::from(1) }.abi_encode());
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (stop, url, token, payer) = (stop.clone(), url.clone(), dn.token("base", "usdc"), payer.clone());
        tokio::spawn(async move {
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rpc(&url, "eth_sendTransaction", json!([{ "from": payer, "to": token, "data": data }])).await;
                sent += 1;
            }
            sent
        })
    };
    for round in 0..12 {
        sqlx::query("DELETE FROM book_cursors").execute(&dn.state.db.pool).await.unwrap();
        sqlx::query("DELETE FROM book_movements").execute(&dn.state.db.pool).await.unwrap();
        // The first pass opens the books, the second reads what moved since.
        for _ in 0..2 {
            stablerail::settle::books::reconcile(&deps).await.unwrap();
            let checked = stablerail::settle::books::check(&deps).await.unwrap();
            let off: Vec<_> = checked.iter().filter(|c| c.difference != "0").collect();
            assert!(off.is_empty(), "round {round}: the books do not balance: {off:?}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(sender.await.unwrap() > 24, "money landed throughout");
}

/// A provider that has not got a block yet answers no logs for it. The
/// books must not pass such a range by: the chain's balance at the last
/// block read does not add up, so the wallet is held back (an alarm once
/// it lasts) until the provider answers, and then the movement is read.
#[tokio::test(flavor = "multi_thread")]
async fn a_provider_that_answers_no_logs_does_not_make_the_books_skip_a_movement() {
    use stablerail::settle::books as reconciler;
    use stablerail::store::books;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    async fn forward(
        axum::extract::State((upstream, blind)): axum::extract::State<(String, Arc<AtomicBool>)>,
        body: axum::body::Bytes,
    ) -> axum::Json<Value> {
        let req: Value = serde_json::from_slice(&body).unwrap();
        if blind.load(Ordering::SeqCst) && req["method"] == "eth_getLogs" {
            return axum::Json(json!({ "jsonrpc": "2.0", "id": req["id"], "result": [] }));
        }
        let answer = reqwest::Client::new().post(&upstream).json(&req).send().await.unwrap().json().await.unwrap();
        axum::Json(answer)
    }
    let dn = Devnet::start_with(32145, "base", "", 0, None).await;
    let blind = Arc::new(AtomicBool::new(false));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(forward).with_state((dn.rpc_url("base"), blind.clone()));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    dn.set_rpc_url("base", &url);
    let db_url = format!("sqlite://{}", dn.dir.path().join("sr.db").display());
    let state = stablerail::server::build_state(&dn.config_path(), &db_url, stablerail::adapter::system_clock()).await.unwrap();
    let deps = state.engine_deps();
    let collection =
        reconciler::wallets(&deps).await.into_iter().find(|w| w.role == "collection" && w.asset == "usdc").expect("the collection wallet");
    reconciler::reconcile(&deps).await.unwrap();
    let opened = books::cursor(&state.db, "base", &collection.address, &collection.token).await.unwrap().expect("the books opened");

    // A stranger's transfer lands; a block follows it (the books never read the head).
    let (payer, _) = dn.payer(0);
    rpc(&dn.rpc_url("base"), "anvil_impersonateAccount", json!([payer])).await;
    rpc(&dn.rpc_url("base"), "anvil_setBalance", json!([payer, "0xde0b6b3a7640000"])).await;
    let to: Address = collection.address.parse().unwrap();
    let sent = dn.send_as("base", &payer, &dn.token("base", "usdc"), transferCall { to, value: U256::from(7_000_000) }.abi_encode()).await;
    assert_eq!(sent["status"], "0x1", "{sent}");
    rpc(&dn.rpc_url("base"), "evm_mine", json!([])).await;

    // The provider answers no logs: the books do not move past the transfer.
    blind.store(true, Ordering::SeqCst);
    reconciler::reconcile(&deps).await.unwrap();
    let held = books::cursor(&state.db, "base", &collection.address, &collection.token).await.unwrap().unwrap();
    assert_eq!(held.read_block, opened.read_block, "the books stay where they were");
    let alarms = books::alarms(&state.db, stablerail::clock::now_ms() + 1).await.unwrap();
    let stalled: Vec<(String, String)> =
        sqlx::query_as("SELECT wallet, token FROM book_cursors WHERE stalled_since IS NOT NULL").fetch_all(&state.db.pool).await.unwrap();
    // (Every wallet that moved since the books opened is held back: the
    // devnet's last funding can land after they open.)
    assert!(stalled.contains(&(collection.address.clone(), collection.token.clone())), "held back: {stalled:?}");
    assert_eq!(alarms.stalled_wallets, stalled.len() as i64, "and say so once it lasts: {alarms:?}");

    // The provider answers again: the movement is read, and the books balance.
    blind.store(false, Ordering::SeqCst);
    reconciler::reconcile(&deps).await.unwrap();
    let moved = books::cursor(&state.db, "base", &collection.address, &collection.token).await.unwrap().unwrap();
    assert!(moved.read_block > opened.read_block, "the books moved on");
    assert_eq!(books::alarms(&state.db, stablerail::clock::now_ms() + 1).await.unwrap().stalled_wallets, 0);
    let listed = books::unmatched(&state.db, 100).await.unwrap();
    assert!(listed.iter().any(|m| m.amount == "7000000" && m.to == collection.address), "the transfer is listed: {listed:?}");
    let checked = reconciler::check(&deps).await.unwrap();
    assert!(checked.iter().all(|c| c.difference == "0"), "{checked:?}");
}
