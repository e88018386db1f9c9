//! Swaps on the devnet: Uniswap V2 pools deployed from npm's bytecode and
//! the devnet's LI.FI-shaped provider over them. A user's wallet (viem)
//! approves when the service says so, signs the quoted transaction, and the
//! registered swap is followed to DONE, on one chain and across two (the
//! devnet's bridge); balances are read on chain. Every
//! rule of the spec's swap error table, the tracker's FAILED and CANCELED,
//! the discovery cache, and a stalled or absent provider (502, the rest of
//! the service unaffected).

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use alloy_primitives::U256;
use serde_json::{json, Value};

use common::devnet::{call_state, send_tx, trc20_balance, Devnet};

/// An agent whose hosted EVM wallet holds 5 USDC and 100 ETH on base:
/// its id, its Bearer header value and the wallet.
pub(crate) async fn funded_agent(dn: &Devnet) -> (String, String, String) {
    let (agent, auth) = dn.agent().await;
    let wallet = dn.agent_wallet(&agent, stablerail::config::Family::Evm).await;
    dn.mint("base", &wallet, U256::from(5_000_000u64)).await;
    common::devnet::rpc(&dn.rpc_url("base"), "anvil_setBalance", json!([wallet, "0x56bc75e2d63100000"])).await;
    (agent, auth, wallet)
}

/// A transaction's receipt, once the node has one.
pub(crate) async fn receipt_of(rpc: &str, hash: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = common::devnet::rpc(rpc, "eth_getTransactionReceipt", json!([hash])).await;
        if !r.is_null() {
            return r;
        }
        assert!(Instant::now() < deadline, "{hash} never landed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn wait_swap(dn: &Devnet, id: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (s, v) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
        assert_eq!(s, 200, "{v}");
        if v["status"] == want {
            return v;
        }
        assert!(Instant::now() < deadline, "swap intent never reached {want}: {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_quoted_swap_signed_by_the_users_wallet_is_followed_to_done() {
    let dn = Devnet::start_swaps(24945, "base,arbitrum", "cancel_after_seconds = 6").await;
    let rpc = dn.rpc_url("base");
    let (usdc, usdt) = (dn.token("base", "usdc"), dn.token("base", "usdt"));
    let (user, key) = dn.payer(2);
    let get = |uri: String| {
        let dn = &dn;
        async move { dn.call("GET", &uri, None, &[]).await }
    };

    // A quote without a signer: prices only.
    let (s, q) = get(format!("/api/swap/quote?chain=base&input_token={usdc}&output_token={usdt}&from_amount=1000000")).await;
    assert_eq!(s, 200, "{q}");
    assert!(q.get("swap_transaction").is_none(), "{q}");
    let out: u64 = q["quote"]["output_amount"].as_str().unwrap().parse().unwrap();
    let min: u64 = q["quote"]["min_output_amount"].as_str().unwrap().parse().unwrap();
    assert!(out < 1_000_000 && out > 990_000, "a 0.3% pool fee and a little price impact: {q}");
    assert_eq!(min, out * 9950 / 10000, "50 bps default slippage");
    assert_eq!(q["quote"]["input_amount"], "1000000");
    // ExactOut, and the deprecated alias.
    let (s, exact_out) = get(format!("/api/swap/quote?chain=base&input_token={usdc}&output_token={usdt}&to_amount=500000")).await;
    assert_eq!((s, &exact_out["quote"]["output_amount"]), (200, &json!("500000")), "{exact_out}");
    assert!(exact_out["quote"]["input_amount"].as_str().unwrap().parse::<u64>().unwrap() > 500_000);
    let (s, alias) = get(format!("/api/swap/quote?chain=base&input_token={usdc}&output_token={usdt}&amount=1000000")).await;
    assert_eq!((s, &alias["quote"]["output_amount"]), (200, &q["quote"]["output_amount"]));

    // The allowance is read on chain: approve first, as told.
    let approval_uri =
        format!("/api/swap/approval?chain=base&token={usdc}&token_out={usdt}&amount=1000000&user_address={user}&include_gas_info=true");
    let (s, a) = get(approval_uri.clone()).await;
    assert_eq!((s, &a["needs_approval"]), (200, &json!(true)), "{a}");
    assert_eq!(a["approval"]["to"], usdc.as_str());
    assert!(a["approval"]["data"].as_str().unwrap().starts_with("0x095ea7b3"), "an approve: {a}");
    assert_eq!(a["approval"]["chain_id"], 8453);
    assert!(a["gas_fee"].as_str().unwrap().parse::<u128>().unwrap() > 0, "{a}");
    assert!(a.get("cancel").is_none(), "USDC needs no reset: {a}");
    let approved = send_tx(
        &rpc,
        &key,
        a["approval"]["to"].as_str().unwrap(),
        a["approval"]["data"].as_str().unwrap(),
        "0x0",
        a["approval"]["gas_limit"].as_str(),
    );
    assert_eq!(approved["status"], "success", "{approved}");
    let (_, a) = get(approval_uri).await;
    assert_eq!(a["needs_approval"], false, "{a}");
    assert!(a.get("approval").is_none());

    // The quote with the signer carries the transaction; the user's wallet sends it.
    let (s, q) =
        get(format!("/api/swap/quote?chain=base&input_token={usdc}&output_token={usdt}&from_amount=1000000&user_address={user}")).await;
    assert_eq!(s, 200, "{q}");
    let tx = &q["swap_transaction"];
    assert!(tx["transaction"].as_str().unwrap().starts_with("0x38ed1739"), "swapExactTokensForTokens calldata: {q}");
    assert!(tx["expires_at"].as_i64().unwrap() > stablerail::clock::now_ms() / 1000);
    let quoted: u128 = q["quote"]["output_amount"].as_str().unwrap().parse().unwrap();
    let before = (dn.balance_of("base", "usdc", &user).await, dn.balance_of("base", "usdt", &user).await);
    let sent = send_tx(
        &rpc,
        &key,
        tx["to"].as_str().unwrap(),
        tx["transaction"].as_str().unwrap(),
        tx["value"].as_str().unwrap(),
        tx["gas_limit"].as_str(),
    );
    assert_eq!(sent["status"], "success", "{sent}");
    let hash = sent["hash"].as_str().unwrap().to_string();

    // Registered (twice: the same intent), then followed to DONE.
    let body = json!({
        "source_tx_hash": hash, "from_chain": "base", "to_chain": "base", "from_token": usdc, "to_token": usdt,
        "payer_address": user, "recipient_address": user, "sending_token_amount": "1000000",
    });
    let (s, r) = dn.call("POST", "/api/swap/intents", Some(body.clone()), &[]).await;
    assert_eq!((s, &r["status"]), (201, &json!("PENDING")), "{r}");
    let id = r["intent_id"].as_str().unwrap().to_string();
    let (s, again) = dn.call("POST", "/api/swap/intents", Some(body.clone()), &[]).await;
    assert_eq!((s, &again["intent_id"]), (201, &json!(id)), "the same transaction, the same intent");
    let done = wait_swap(&dn, &id, "DONE").await;
    assert_eq!(done["received_amount"], json!(quoted.to_string()), "{done}");
    assert_eq!(done["kind"], "swap");
    assert_eq!(dn.balance_of("base", "usdc", &user).await, before.0 - U256::from(1_000_000u64), "exactly the input left the wallet");
    assert_eq!(
        dn.balance_of("base", "usdt", &user).await,
        before.1 + U256::from(quoted),
        "the quoted output arrived (no trade in between)"
    );
    let (_, auth) = dn.agent().await;
    let (s, v2) = dn.call("GET", &format!("/v2/intents/{id}"), None, &[("authorization", &auth)]).await;
    assert_eq!((s, &v2["status"]), (200, &json!("DONE")), "{v2}");

    // The provider's status of it; an unknown transaction is 404.
    let (s, st) = get(format!("/api/swap/status?tx_hash={hash}&from_chain=base")).await;
    assert_eq!((s, &st["status"], &st["source_tx_hash"]), (200, &json!("DONE"), &json!(hash)), "{st}");
    let (s, e) = get(format!("/api/swap/status?tx_hash=0x{}", "ab".repeat(32))).await;
    assert_eq!((s, e["message"].as_str()), (404, Some("transfer not found")), "{e}");

    // Across chains: base USDC → arbitrum USDC through the devnet's bridge,
    // followed through the provider's status to the destination's credit.
    let arb_usdc = dn.token("arbitrum", "usdc");
    let (s, cq) = get(format!(
        "/api/swap/quote?chain=base&to_chain=arbitrum&input_token={usdc}&output_token={arb_usdc}&from_amount=2000000&user_address={user}"
    ))
    .await;
    assert_eq!(s, 200, "{cq}");
    assert_eq!(cq["quote"]["output_amount"], "1999000", "a 5 bps bridge fee: {cq}");
    let (_, ca) = get(format!(
        "/api/swap/approval?chain=base&to_chain=arbitrum&token={usdc}&token_out={arb_usdc}&amount=2000000&user_address={user}"
    ))
    .await;
    assert_eq!(ca["needs_approval"], true, "{ca}");
    let approved = send_tx(&rpc, &key, ca["approval"]["to"].as_str().unwrap(), ca["approval"]["data"].as_str().unwrap(), "0x0", None);
    assert_eq!(approved["status"], "success", "{approved}");
    let (_, cq) = get(format!(
        "/api/swap/quote?chain=base&to_chain=arbitrum&input_token={usdc}&output_token={arb_usdc}&from_amount=2000000&user_address={user}"
    ))
    .await;
    let ctx = &cq["swap_transaction"];
    let arb_before = dn.balance_of("arbitrum", "usdc", &user).await;
    let base_before = dn.balance_of("base", "usdc", &user).await;
    let bridged = send_tx(
        &rpc,
        &key,
        ctx["to"].as_str().unwrap(),
        ctx["transaction"].as_str().unwrap(),
        ctx["value"].as_str().unwrap(),
        ctx["gas_limit"].as_str(),
    );
    assert_eq!(bridged["status"], "success", "{bridged}");
    let mut b = body.clone();
    b["source_tx_hash"] = bridged["hash"].clone();
    b["to_chain"] = json!("arbitrum");
    b["to_token"] = json!(arb_usdc);
    b["sending_token_amount"] = json!("2000000");
    let (s, r) = dn.call("POST", "/api/swap/intents", Some(b), &[]).await;
    assert_eq!(s, 201, "{r}");
    let crossed = wait_swap(&dn, r["intent_id"].as_str().unwrap(), "DONE").await;
    assert_eq!(crossed["received_amount"], "1999000", "{crossed}");
    let dest = crossed["dest_tx_hash"].as_str().unwrap().to_string();
    assert_ne!(dest, bridged["hash"].as_str().unwrap(), "released by another transaction, on arbitrum");
    assert_eq!(dn.balance_of("arbitrum", "usdc", &user).await, arb_before + U256::from(1_999_000u64), "credited on the destination");
    assert_eq!(dn.balance_of("base", "usdc", &user).await, base_before - U256::from(2_000_000u64));
    let receipt = receipt_of(&dn.rpc_url("arbitrum"), &dest).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    let (s, st) = get(format!("/api/swap/status?tx_hash={}&from_chain=base&to_chain=arbitrum", bridged["hash"].as_str().unwrap())).await;
    assert_eq!(
        (s, &st["status"], &st["dest_tx_hash"], &st["received_amount"]),
        (200, &json!("DONE"), &json!(dest), &json!("1999000")),
        "{st}"
    );

    // A swap whose transaction reverted (its allowance is spent) is FAILED.
    let reverted = send_tx(&rpc, &key, tx["to"].as_str().unwrap(), tx["transaction"].as_str().unwrap(), "0x0", Some("0x3d090"));
    assert_eq!(reverted["status"], "reverted", "{reverted}");
    let mut b = body.clone();
    b["source_tx_hash"] = reverted["hash"].clone();
    let (_, r) = dn.call("POST", "/api/swap/intents", Some(b), &[]).await;
    let failed = wait_swap(&dn, r["intent_id"].as_str().unwrap(), "FAILED").await;
    assert_eq!(failed["error_code"], "source_reverted");
    // One that never reaches the chain is FAILED after cancel_after_seconds.
    let mut b = body.clone();
    b["source_tx_hash"] = json!(format!("0x{}", "cd".repeat(32)));
    let (_, r) = dn.call("POST", "/api/swap/intents", Some(b), &[]).await;
    let unconfirmed = wait_swap(&dn, r["intent_id"].as_str().unwrap(), "FAILED").await;
    assert_eq!(unconfirmed["error_code"], "source_not_confirmed");
    // A squatter registers the owner's transaction with other details
    // (recipient, amount, output token): the chain contradicts each, so
    // each is refused and stored nowhere, and the owner's registration
    // still answers, the same intent.
    for (field, value) in
        [("recipient_address", json!(common::app::MERCHANT)), ("sending_token_amount", json!("999999")), ("to_token", json!(usdc))]
    {
        let mut other = body.clone();
        other[field] = value;
        let (s, e) = dn.call("POST", "/api/swap/intents", Some(other), &[]).await;
        assert_eq!((s, e["message"].as_str()), (400, Some("the transaction does not match the registration")), "{field}: {e}");
    }
    let (s, owner) = dn.call("POST", "/api/swap/intents", Some(body.clone()), &[]).await;
    assert_eq!((s, &owner["intent_id"]), (201, &json!(id)), "the owner's registration is not blocked: {owner}");
    // A transaction on chain names its sender: another payer is refused.
    let mut forged = body.clone();
    forged["source_tx_hash"] = approved["hash"].clone();
    forged["payer_address"] = json!(common::app::MERCHANT);
    let (s, e) = dn.call("POST", "/api/swap/intents", Some(forged), &[]).await;
    assert_eq!((s, e["message"].as_str()), (400, Some("payer_address did not send this transaction")), "{e}");
    // Registrations the chain cannot judge yet cost the client's budget
    // (10 a minute; two are spent above: the cross-chain one, whose
    // destination only the provider can confirm, and the one never on
    // chain): random hashes are refused once it is gone. (The bucket
    // refills one every six seconds while the test runs.)
    let (mut accepted, mut limited) = (2, false);
    for n in 0..30u8 {
        let mut b = body.clone();
        b["source_tx_hash"] = json!(format!("0x{}", format!("{:02x}", 0xa0 + n).repeat(32)));
        let (s, e) = dn.call("POST", "/api/swap/intents", Some(b), &[]).await;
        match s {
            201 => accepted += 1,
            429 => {
                limited = true;
                break;
            }
            other => panic!("{other}: {e}"),
        }
    }
    assert!(limited && (10..=12).contains(&accepted), "ten unseen registrations a minute, then 429: {accepted} accepted");
    // The public helpers never resolve an email into its wallet.
    stablerail::store::agents::set_recipient(&dn.state.db, "swapper@shop.test", "base", &user).await.unwrap();
    let (s, q) = get(format!(
        "/api/swap/quote?chain=base&{}&from_amount=1000&email=swapper@shop.test",
        format_args!("input_token={usdc}&output_token={usdt}")
    ))
    .await;
    assert_eq!(s, 200, "{q}");
    assert!(q.get("swap_transaction").is_none(), "no transaction built for the email's wallet: {q}");
    let (s, e) = get(format!("/api/swap/approval?chain=base&token={usdc}&token_out={usdt}&amount=1000&email=swapper@shop.test")).await;
    assert_eq!((s, e["message"].as_str()), (400, Some("user_address parameter is required")), "{e}");

    // Every rule of the request, each its own 400.
    let base = format!("input_token={usdc}&output_token={usdt}");
    let weth = dn.chain("base")["uniswap"]["weth"].as_str().unwrap().to_string();
    let cases = [
        (format!("{base}&from_amount=1"), "chain parameter is required"),
        (format!("chain=base&output_token={usdt}&from_amount=1"), "input_token parameter is required"),
        (format!("chain=base&input_token={usdc}&from_amount=1"), "output_token parameter is required"),
        (format!("chain=base&{base}"), "from_amount or to_amount is required"),
        (format!("chain=base&{base}&from_amount=1&to_amount=1"), "from_amount and to_amount are mutually exclusive"),
        (format!("chain=base&{base}&amount=1&to_amount=1"), "from_amount and to_amount are mutually exclusive"),
        (format!("chain=base&{base}&from_amount=0"), "invalid amount: must be a positive integer"),
        (format!("chain=base&{base}&from_amount=1.5"), "invalid amount: must be a positive integer"),
        (format!("chain=base&{base}&from_amount=1&slippage_bps=501"), "slippage_bps exceeds maximum allowed value"),
        (format!("chain=solana&{base}&from_amount=1"), "unsupported chain for swaps: solana"),
        (format!("chain=base&input_token={usdt}&output_token={weth}&from_amount=1000"), "no swap route found"),
        (format!("chain=base&{base}&from_amount=10000000000000"), "insufficient liquidity for swap"),
        (format!("chain=base&{base}&to_amount=5000000000000"), "insufficient liquidity for swap"),
    ];
    for (query, message) in cases {
        let (s, e) = get(format!("/api/swap/quote?{query}")).await;
        assert_eq!((s, e["message"].as_str()), (400, Some(message)), "{query}: {e}");
    }
    let mut no_hash = body.clone();
    no_hash.as_object_mut().unwrap().remove("source_tx_hash");
    for (b, message) in [
        (no_hash, "source_tx_hash is required"),
        (
            {
                let mut b = body.clone();
                b["source_tx_hash"] = json!("0x12");
                b
            },
            "invalid source_tx_hash",
        ),
        (
            {
                let mut b = body.clone();
                b["sending_token_amount"] = json!("0");
                b
            },
            "invalid amount: must be a positive integer",
        ),
        (
            {
                let mut b = body.clone();
                b["to_chain"] = json!("nowhere");
                b
            },
            "unsupported chain for swaps: nowhere",
        ),
        (
            {
                let mut b = body.clone();
                b["recipient_address"] = json!("T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb");
                b
            },
            "invalid recipient_address",
        ),
    ] {
        let (s, e) = dn.call("POST", "/api/swap/intents", Some(b), &[]).await;
        assert_eq!((s, e["message"].as_str()), (400, Some(message)), "{e}");
    }

    // Discovery: passed through, served from the cache (one upstream call).
    let control = dn.info["swap"]["control"].as_str().unwrap().to_string();
    let (s, first) = get("/api/swap/tokens?chains=8453".into()).await;
    assert_eq!(s, 200, "{first}");
    assert!(first["tokens"]["8453"].as_array().unwrap().iter().any(|t| t["address"] == usdc.as_str()), "{first}");
    for _ in 0..5 {
        assert_eq!(get("/api/swap/tokens?chains=8453".into()).await.1, first);
    }
    let hits: Value = reqwest::get(format!("{control}/devnet/hits")).await.unwrap().json().await.unwrap();
    assert_eq!(hits["/v1/tokens"], 1, "six reads, one upstream call: {hits}");
    for path in ["chains", "connections"] {
        let (s, v) = get(format!("/api/swap/{path}")).await;
        assert_eq!(s, 200, "{path}: {v}");
    }

    // A stalled provider: 502 within the timeout (3 s here); the rest answers.
    reqwest::Client::new().post(format!("{control}/devnet/delay")).json(&json!({ "ms": 8000 })).send().await.unwrap();
    let started = Instant::now();
    let (s, e) = get(format!("/api/swap/quote?chain=base&{base}&from_amount=1000")).await;
    assert_eq!((s, e["message"].as_str()), (502, Some("swap service temporarily unavailable")), "{e}");
    assert!(started.elapsed() < Duration::from_millis(4500), "{:?}", started.elapsed());
    let (s, _) = get("/api/chains".into()).await;
    assert_eq!(s, 200);
    assert_eq!(get("/api/swap/tokens?chains=8453".into()).await.0, 200, "discovery still served from the cache");
    reqwest::Client::new().post(format!("{control}/devnet/delay")).json(&json!({ "ms": 0 })).send().await.unwrap();

    // No provider at all (the shipped default where it cannot be reached): 502, never 404.
    let closed = common::process::free_port();
    dn.set("swap.lifi_url", format!("http://127.0.0.1:{closed}/v1"));
    let gone = dn.restate().await;
    for uri in [
        format!("/api/swap/quote?chain=base&{base}&from_amount=1000"),
        format!("/api/swap/approval?chain=base&token={usdc}&token_out={usdt}&amount=1&user_address={user}"),
        format!("/api/swap/status?tx_hash={hash}"),
        "/api/swap/tokens".into(),
        "/api/swap/chains".into(),
        "/api/swap/connections".into(),
    ] {
        let (s, e) = call_state(&gone, "GET", &uri, None, &[]).await;
        assert_eq!((s, e["message"].as_str()), (502, Some("swap service temporarily unavailable")), "{uri}: {e}");
    }
    let (s, _) = call_state(&gone, "GET", "/api/chains", None, &[]).await;
    assert_eq!(s, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_swaps_from_its_hosted_wallet_once_per_idempotency_key() {
    let dn = Devnet::start_swaps(25045, "base", "").await;
    let (usdc, usdt) = (dn.token("base", "usdc"), dn.token("base", "usdt"));
    let (agent, auth, wallet) = funded_agent(&dn).await;
    let bearer = [("authorization", auth.as_str())];

    // Balances priced from the provider's token list, fetched in the
    // background: the first read never waits for it; a later one has it.
    let mut priced = Value::Null;
    for _ in 0..100 {
        let (s, b) = dn.call("GET", "/v2/agents/balances", None, &bearer).await;
        assert_eq!(s, 200, "{b}");
        let rows = b["wallets"][0]["balances"].as_array().unwrap();
        let row = rows.iter().find(|r| r["chain"] == "base" && r["asset"] == "usdc").unwrap();
        if row.get("price_usd").is_some() {
            priced = row.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        (&priced["symbol"], &priced["price_usd"], &priced["value_usd"], &priced["raw_value"]),
        (&json!("USDC"), &json!("1"), &json!("5.00"), &json!("5000000")),
        "{priced}"
    );
    assert_eq!(priced["logo_uri"], "https://devnet.invalid/usdc.png");

    let body = json!({ "chain": "base", "from_token": usdc, "to_token": usdt, "from_amount": 1_000_000 });
    let keyed = [("authorization", auth.as_str()), ("idempotency-key", "swap-1")];

    let before = (dn.balance_of("base", "usdc", &wallet).await, dn.balance_of("base", "usdt", &wallet).await);
    let (s, first) = dn.call("POST", "/v2/swap/execute", Some(body.clone()), &keyed).await;
    assert_eq!(s, 200, "{first}");
    assert_eq!((&first["chain"], &first["from_amount"]), (&json!("base"), &json!("1000000")));
    let estimated: u64 = first["estimated_output"].as_str().unwrap().parse().unwrap();
    // The answer comes once the swap is broadcast; it lands right after.
    let receipt = receipt_of(&dn.rpc_url("base"), first["tx_hash"].as_str().unwrap()).await;
    assert_eq!(receipt["status"], "0x1", "the swap landed: {receipt}");
    assert_eq!(dn.balance_of("base", "usdc", &wallet).await, before.0 - U256::from(1_000_000u64));
    assert_eq!(
        dn.balance_of("base", "usdt", &wallet).await,
        before.1 + U256::from(estimated),
        "the estimate, exactly (no trade in between)"
    );

    // The same key and body: the first answer, and no second transaction.
    let (s, again) = dn.call("POST", "/v2/swap/execute", Some(body.clone()), &keyed).await;
    assert_eq!((s, &again), (200, &first));
    assert_eq!(dn.balance_of("base", "usdc", &wallet).await, before.0 - U256::from(1_000_000u64), "charged once");
    let run = stablerail::swap::execute::run_id(&agent, Some("swap-1"));
    let stored = stablerail::store::settlement::list_txs(&dn.state.db, &run, "swap").await.unwrap();
    let labels: Vec<&str> = stored.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels, ["approve", "swap"], "stored before broadcast, once each");
    assert_eq!(stored[1].tx_hash, first["tx_hash"].as_str().unwrap());
    // Another body under the same key: 422, nothing sent.
    let mut other = body.clone();
    other["from_amount"] = json!(2_000_000);
    let (s, e) = dn.call("POST", "/v2/swap/execute", Some(other), &keyed).await;
    assert_eq!(s, 422, "{e}");
    assert_eq!(dn.balance_of("base", "usdc", &wallet).await, before.0 - U256::from(1_000_000u64));
    // Without a key each request is its own swap.
    let (s, second) = dn.call("POST", "/v2/swap/execute", Some(body.clone()), &bearer).await;
    assert_eq!(s, 200, "{second}");
    assert_ne!(second["tx_hash"], first["tx_hash"]);
    assert_eq!(receipt_of(&dn.rpc_url("base"), second["tx_hash"].as_str().unwrap()).await["status"], "0x1");
    assert_eq!(dn.balance_of("base", "usdc", &wallet).await, before.0 - U256::from(2_000_000u64));

    // The spec's refusals.
    let with = |k: &str, v: Value| {
        let mut b = body.clone();
        b[k] = v;
        b
    };
    let without = |k: &str| {
        let mut b = body.clone();
        b.as_object_mut().unwrap().remove(k);
        b
    };
    for (b, status, message) in [
        (without("chain"), 400, "chain is required"),
        (without("from_token"), 400, "from_token is required"),
        (without("to_token"), 400, "to_token is required"),
        (with("from_amount", json!(0)), 400, "from_amount must be greater than 0"),
        (with("slippage_bps", json!(501)), 400, "slippage_bps exceeds maximum allowed value"),
        (with("chain", json!("solana")), 400, "solana has no CAIP-2 identifier"),
    ] {
        let (s, e) = dn.call("POST", "/v2/swap/execute", Some(b.clone()), &bearer).await;
        assert_eq!((s, e["message"].as_str()), (status, Some(message)), "{b}: {e}");
    }
    let (s, e) = dn.call("POST", "/v2/swap/execute", Some(body.clone()), &[]).await;
    assert_eq!((s, e["message"].as_str()), (401, Some("api key required")), "{e}");
    assert_eq!(dn.balance_of("base", "usdc", &wallet).await, before.0 - U256::from(2_000_000u64), "no refusal moved anything");
}

/// Solana same-chain swaps through the devnet's Jupiter-shaped provider
/// and its pool: a user's wallet (@solana/kit) signs the returned
/// transaction, which moves both sides; the registered swap reaches DONE
/// with what the chain credited; the agent's hosted Solana wallet swaps
/// once per Idempotency-Key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn solana_swaps_move_both_sides_through_the_pool() {
    let dn = Devnet::start_swaps(25145, "base,solana", "").await;
    let (usdc, usdt) = (dn.sol_mint("usdc"), dn.sol_mint("usdt"));
    let (user, seed) = dn.sol_payer(1);
    let get = |uri: String| {
        let dn = &dn;
        async move { dn.call("GET", &uri, None, &[]).await }
    };

    // Prices only, ExactIn then ExactOut.
    let (s, q) = get(format!("/api/swap/quote?chain=solana&input_token={usdc}&output_token={usdt}&from_amount=1000000")).await;
    assert_eq!(s, 200, "{q}");
    assert!(q.get("swap_transaction").is_none(), "{q}");
    let out: u64 = q["quote"]["output_amount"].as_str().unwrap().parse().unwrap();
    assert!(out < 1_000_000 && out > 990_000, "the pool's 0.3% fee: {q}");
    assert_eq!(q["quote"]["min_output_amount"], json!((out * 9_950 / 10_000).to_string()), "{q}");
    let (s, q) = get(format!("/api/swap/quote?chain=solana&input_token={usdc}&output_token={usdt}&to_amount=1000000")).await;
    assert_eq!(s, 200, "{q}");
    assert_eq!((&q["quote"]["output_amount"], &q["quote"]["min_output_amount"]), (&json!("1000000"), &json!("1000000")));
    assert!(q["quote"]["input_amount"].as_str().unwrap().parse::<u64>().unwrap() > 1_000_000);

    // With the signer: a partially signed v0 transaction and its lifetime.
    let now = chrono::Utc::now().timestamp();
    let (s, q) =
        get(format!("/api/swap/quote?chain=solana&input_token={usdc}&output_token={usdt}&from_amount=1000000&user_address={user}")).await;
    assert_eq!(s, 200, "{q}");
    let tx = &q["swap_transaction"];
    assert!(tx.get("to").is_none() && tx.get("gas_limit").is_none(), "{tx}");
    assert!(tx["last_valid_block_height"].as_u64().unwrap() > 0, "{tx}");
    assert!((now..=now + 61).contains(&tx["expires_at"].as_i64().unwrap()), "a blockhash lives about a minute: {tx}");
    let quoted: u64 = q["quote"]["output_amount"].as_str().unwrap().parse().unwrap();
    let before = (dn.sol_balance("usdc", &user).await, dn.sol_balance("usdt", &user).await);
    let (signature, err) = common::devnet::sol_send(tx["transaction"].as_str().unwrap(), &seed, &dn.sol_rpc());
    assert!(err.is_null(), "{err}");
    assert_eq!(dn.sol_balance("usdc", &user).await, before.0 - 1_000_000);
    assert_eq!(dn.sol_balance("usdt", &user).await, before.1 + quoted, "both sides moved in one transaction");
    let register = json!({
        "source_tx_hash": signature, "from_chain": "solana", "to_chain": "solana", "from_token": usdc, "to_token": usdt,
        "payer_address": user, "recipient_address": user, "sending_token_amount": "1000000",
    });
    let (s, r) = dn.call("POST", "/api/swap/intents", Some(register.clone()), &[]).await;
    assert_eq!(s, 201, "{r}");
    let id = r["intent_id"].as_str().unwrap().to_string();
    let done = wait_swap(&dn, &id, "DONE").await;
    assert_eq!(done["received_amount"], json!(quoted.to_string()), "{done}");
    let (s, again) = dn.call("POST", "/api/swap/intents", Some(register), &[]).await;
    assert_eq!((s, &again["intent_id"]), (201, &json!(id)));

    // Another recipient: its USDT token account is paid, the signer's is not.
    let (friend, _) = dn.sol_payer(2);
    let (s, q) = get(format!("/api/swap/quote?chain=solana&input_token={usdc}&output_token={usdt}&from_amount=500000&user_address={user}&to_user_address={friend}")).await;
    assert_eq!(s, 200, "{q}");
    let quoted: u64 = q["quote"]["output_amount"].as_str().unwrap().parse().unwrap();
    let (mine, theirs) = (dn.sol_balance("usdt", &user).await, dn.sol_balance("usdt", &friend).await);
    let (_, err) = common::devnet::sol_send(q["swap_transaction"]["transaction"].as_str().unwrap(), &seed, &dn.sol_rpc());
    assert!(err.is_null(), "{err}");
    assert_eq!((dn.sol_balance("usdt", &user).await, dn.sol_balance("usdt", &friend).await), (mine, theirs + quoted));

    // No pool for the pair, more than the pool holds, a malformed mint.
    let stranger = dn.sol_payer(3).0;
    for (query, message) in [
        (format!("input_token={usdc}&output_token={stranger}&from_amount=1000000"), "no swap route found"),
        (format!("input_token={usdc}&output_token={usdt}&from_amount=600000000000"), "insufficient liquidity for swap"),
        (format!("input_token=0x{}&output_token={usdt}&from_amount=1", "ab".repeat(20)), "invalid input_token"),
    ] {
        let (s, e) = get(format!("/api/swap/quote?chain=solana&{query}")).await;
        assert_eq!((s, e["message"].as_str()), (400, Some(message)), "{query}: {e}");
    }

    // The agent's hosted Solana wallet (fee payer and signer).
    let (agent, auth) = dn.agent().await;
    let wallet = dn.agent_wallet(&agent, stablerail::config::Family::Solana).await;
    let (s, me) = dn.call("GET", "/v2/me", None, &[("authorization", auth.as_str())]).await;
    assert_eq!((s, &me["solana_wallet_address"]), (200, &json!(wallet)), "{me}");
    dn.sol_fund(&wallet, "usdc", 5_000_000);
    common::devnet::rpc(&dn.sol_rpc(), "requestAirdrop", json!([wallet, 1_000_000_000u64])).await;
    let body = json!({ "chain": "solana", "from_token": usdc, "to_token": usdt, "from_amount": 1_000_000 });
    let keyed = [("authorization", auth.as_str()), ("idempotency-key", "sol-1")];
    let (s, first) = dn.call("POST", "/v2/swap/execute", Some(body.clone()), &keyed).await;
    assert_eq!(s, 200, "{first}");
    let estimated: u64 = first["estimated_output"].as_str().unwrap().parse().unwrap();
    let hash = first["tx_hash"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st = common::devnet::rpc(&dn.sol_rpc(), "getSignatureStatuses", json!([[hash], { "searchTransactionHistory": true }])).await;
        if !st["value"][0].is_null() {
            assert!(st["value"][0]["err"].is_null(), "{st}");
            break;
        }
        assert!(Instant::now() < deadline, "{hash} never landed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(dn.sol_balance("usdc", &wallet).await, 4_000_000);
    assert_eq!(dn.sol_balance("usdt", &wallet).await, estimated, "the estimate, exactly");
    let (s, again) = dn.call("POST", "/v2/swap/execute", Some(body), &keyed).await;
    assert_eq!((s, &again), (200, &first));
    let run = stablerail::swap::execute::run_id(&agent, Some("sol-1"));
    let stored = stablerail::store::settlement::list_txs(&dn.state.db, &run, "swap").await.unwrap();
    assert_eq!(stored.iter().map(|t| t.tx_hash.as_str()).collect::<Vec<_>>(), [hash.as_str()], "one transaction, stored");
    assert_eq!(dn.sol_balance("usdc", &wallet).await, 4_000_000, "charged once");

    // A provider gone bad builds a swap that takes twice the amount out of
    // the wallet: refused before it is signed, nothing moves.
    let mode = std::sync::Arc::new(std::sync::Mutex::new("more-in"));
    let honest = dn.info["jupiter"]["url"].as_str().unwrap().to_string();
    let url = hostile_provider(honest, mode, wallet.clone(), String::new()).await;
    dn.set("swap.jupiter_url", format!("{url}/swap/v1"));
    let bad = dn.restate().await;
    let body = json!({ "chain": "solana", "from_token": usdc, "to_token": usdt, "from_amount": 1_000_000 });
    let keyed = [("authorization", auth.as_str()), ("idempotency-key", "sol-bad")];
    let (s, e) = call_state(&bad, "POST", "/v2/swap/execute", Some(body), &keyed).await;
    assert_eq!((s, e["message"].as_str()), (502, Some("swap route refused")), "{e}");
    let run = stablerail::swap::execute::run_id(&agent, Some("sol-bad"));
    assert!(stablerail::store::settlement::list_txs(&bad.db, &run, "swap").await.unwrap().is_empty(), "nothing stored");
    let quote = format!("/api/swap/quote?chain=solana&input_token={usdc}&output_token={usdt}&from_amount=1000000&user_address={wallet}");
    let (s, e) = call_state(&bad, "GET", &quote, None, &[]).await;
    assert_eq!((s, e["message"].as_str()), (502, Some("swap route refused")), "quote: {e}");
    assert_eq!(dn.sol_balance("usdc", &wallet).await, 4_000_000, "nothing moved");
    assert_eq!(dn.sol_balance("usdt", &wallet).await, estimated);

    // The provider gone: 502, and the rest of the service answers.
    let pid = dn.info["jupiter"]["pid"].as_u64().unwrap();
    assert!(Command::new("kill").arg(pid.to_string()).status().unwrap().success());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (s, e) = get(format!("/api/swap/quote?chain=solana&input_token={usdc}&output_token={usdt}&from_amount=1000000")).await;
    assert_eq!((s, e["message"].as_str()), (502, Some("swap service temporarily unavailable")), "{e}");
    assert!(!e.to_string().contains("127.0.0.1"), "no upstream address in the answer: {e}");
    assert_eq!(get("/api/chains".into()).await.0, 200);
}

/// TRON routes are cross-chain only (as on LI.FI). The agent's hosted TRON
/// wallet swaps TRON USDT into base USDT through the devnet's bridge: an
/// approve, then the provider's TRON transaction, which the host signs only
/// after checking its owner and contract; then base back into TRON. Both
/// destinations are credited; one key, one run of transactions.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tron_swaps_cross_through_the_bridge_from_hosted_wallets() {
    use stablerail::config::Family;
    use stablerail::family::keys::Role;
    let dn = Devnet::start_swaps(25245, "base,tron", "").await;
    let api = dn.tron_api();
    let tron_usdt = dn.info["tron"]["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let bridge = dn.info["tron"]["uniswap"]["bridge"].as_str().unwrap().to_string();
    let base_usdt = dn.token("base", "usdt");
    let (agent, auth) = dn.agent().await;
    let role = Role::Agent(agent.clone());
    let tron_wallet = dn.state.keys.address(&role.key_name(Family::Tron)).await.unwrap();
    let evm_wallet = dn.state.keys.address(&role.key_name(Family::Evm)).await.unwrap();
    dn.tron_fund(&tron_wallet, 200, 5_000_000).await;
    let get = |uri: String| {
        let dn = &dn;
        async move { dn.call("GET", &uri, None, &[]).await }
    };
    let wait_for = || Instant::now() + Duration::from_secs(20);

    // No same-chain route on TRON.
    let (s, e) = get(format!("/api/swap/quote?chain=tron&input_token={tron_usdt}&output_token={tron_usdt}&from_amount=1000000")).await;
    assert_eq!((s, e["message"].as_str()), (400, Some("no swap route found")), "{e}");
    // Out of TRON with the signer: the bridge's TRON transaction.
    let now = chrono::Utc::now().timestamp();
    let (s, q) = get(format!("/api/swap/quote?chain=tron&to_chain=base&input_token={tron_usdt}&output_token={base_usdt}&from_amount=1000000&user_address={tron_wallet}&to_user_address={evm_wallet}")).await;
    assert_eq!(s, 200, "{q}");
    assert_eq!(q["quote"]["output_amount"], "999500", "{q}");
    let tx = &q["swap_transaction"];
    assert_eq!((&tx["to"], &tx["gas_limit"]), (&json!(bridge), &json!("0x2faf080")), "{tx}");
    assert!(tx["transaction"].as_str().unwrap().starts_with("0x"), "{tx}");
    assert!((now..=now + 121).contains(&tx["expires_at"].as_i64().unwrap()), "{tx}");

    // The agent: TRON → base.
    let keyed = [("authorization", auth.as_str()), ("idempotency-key", "tron-1")];
    let body = json!({ "chain": "tron", "to_chain": "base", "from_token": tron_usdt, "to_token": base_usdt, "from_amount": 1_000_000 });
    let (s, first) = dn.call("POST", "/v2/swap/execute", Some(body.clone()), &keyed).await;
    assert_eq!(s, 200, "{first}");
    assert_eq!(first["estimated_output"], "999500", "{first}");
    let hash = first["tx_hash"].as_str().unwrap().to_string();
    assert_eq!(trc20_balance(&api, &tron_usdt, &tron_wallet).await, 4_000_000, "the TRON side left the wallet");
    let deadline = wait_for();
    while dn.balance_of("base", "usdt", &evm_wallet).await != U256::from(999_500u64) {
        assert!(Instant::now() < deadline, "the bridge never credited base");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (s, again) = dn.call("POST", "/v2/swap/execute", Some(body), &keyed).await;
    assert_eq!((s, &again), (200, &first));
    let run = stablerail::swap::execute::run_id(&agent, Some("tron-1"));
    let stored = stablerail::store::settlement::list_txs(&dn.state.db, &run, "swap").await.unwrap();
    assert_eq!(stored.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), ["approve", "swap"], "stored before broadcast, once each");
    assert_eq!(stored[1].tx_hash, hash);
    assert_eq!(trc20_balance(&api, &tron_usdt, &tron_wallet).await, 4_000_000, "charged once");
    // Registered, it is followed to DONE through the provider's status.
    let register = json!({
        "source_tx_hash": hash, "from_chain": "tron", "to_chain": "base", "from_token": tron_usdt, "to_token": base_usdt,
        "payer_address": tron_wallet, "recipient_address": evm_wallet, "sending_token_amount": "1000000",
    });
    let (s, r) = dn.call("POST", "/api/swap/intents", Some(register), &[]).await;
    assert_eq!(s, 201, "{r}");
    let done = wait_swap(&dn, r["intent_id"].as_str().unwrap(), "DONE").await;
    assert_eq!(done["received_amount"], "999500", "{done}");
    assert!(done["dest_tx_hash"].as_str().is_some_and(|h| h.starts_with("0x")), "{done}");

    // The agent: base → TRON, into its TRON wallet.
    dn.mint_asset("base", "usdt", &evm_wallet, U256::from(2_000_000u64)).await;
    common::devnet::rpc(&dn.rpc_url("base"), "anvil_setBalance", json!([evm_wallet, "0x56bc75e2d63100000"])).await;
    let body = json!({ "chain": "base", "to_chain": "tron", "from_token": base_usdt, "to_token": tron_usdt, "from_amount": 2_000_000 });
    let (s, back) = dn.call("POST", "/v2/swap/execute", Some(body), &[("authorization", auth.as_str())]).await;
    assert_eq!(s, 200, "{back}");
    let deadline = wait_for();
    while trc20_balance(&api, &tron_usdt, &tron_wallet).await != 4_000_000 + 1_999_000 {
        assert!(Instant::now() < deadline, "the bridge never credited TRON");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(dn.balance_of("base", "usdt", &evm_wallet).await, U256::from(999_500u64), "base paid 2,000,000");

    // A provider gone bad answers with the wallet's own TRC-20 transfer of
    // the input to a stranger: refused, nothing signed, nothing moves.
    let stranger = "0x000000000000000000000000000000000000bad1";
    let mode = std::sync::Arc::new(std::sync::Mutex::new("tron-token-call"));
    let url =
        hostile_provider(dn.info["swap"]["url"].as_str().unwrap().to_string(), mode, String::new(), format!("{api}|{stranger}")).await;
    dn.set("swap.lifi_url", format!("{url}/v1"));
    let bad = dn.restate().await;
    let keyed = [("authorization", auth.as_str()), ("idempotency-key", "tron-bad")];
    let body = json!({ "chain": "tron", "to_chain": "base", "from_token": tron_usdt, "to_token": base_usdt, "from_amount": 1_000_000 });
    let (s, e) = call_state(&bad, "POST", "/v2/swap/execute", Some(body), &keyed).await;
    assert_eq!((s, e["message"].as_str()), (502, Some("swap route refused")), "{e}");
    let run = stablerail::swap::execute::run_id(&agent, Some("tron-bad"));
    assert!(stablerail::store::settlement::list_txs(&bad.db, &run, "swap").await.unwrap().is_empty(), "nothing stored");
    assert_eq!(trc20_balance(&api, &tron_usdt, &tron_wallet).await, 4_000_000 + 1_999_000, "nothing moved");
}

/// A provider gone bad: it forwards to the devnet's honest provider at
/// `origin` and rewrites what `mode` says, LI.FI's quotes or Jupiter's swap
/// requests. Answers the origin it listens on.
pub(crate) async fn hostile_provider(
    origin: String,
    mode: std::sync::Arc<std::sync::Mutex<&'static str>>,
    wallet: String,
    stranger: String,
) -> String {
    use axum::extract::{Request, State};
    type Shared = (String, std::sync::Arc<std::sync::Mutex<&'static str>>, String, String);
    async fn forward(State((origin, mode, wallet, stranger)): State<Shared>, req: Request) -> axum::Json<Value> {
        // TRON: `stranger` is "API|0xHEX20" (the TRON node's URL and who gets paid).
        let (tron_api, stranger) = match stranger.split_once('|') {
            Some((api, who)) => (Some(api.to_string()), who.to_string()),
            None => (None, stranger),
        };
        let path = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
        let post = req.method() == axum::http::Method::POST;
        let body = axum::body::to_bytes(req.into_body(), usize::MAX).await.unwrap();
        let mode = *mode.lock().unwrap();
        let url = format!("{origin}{path}");
        let mut v: Value = if post {
            let mut sent: Value = serde_json::from_slice(&body).unwrap();
            // Jupiter: a swap of twice what was quoted, out of the same wallet.
            if mode == "more-in" {
                let q = &mut sent["quoteResponse"];
                let doubled = |v: &Value| json!((v.as_str().unwrap().parse::<u64>().unwrap() * 2).to_string());
                q["inAmount"] = doubled(&q["inAmount"]);
                q["outAmount"] = doubled(&q["outAmount"]);
            }
            reqwest::Client::new().post(url).json(&sent).send().await.unwrap().json().await.unwrap()
        } else {
            reqwest::get(url).await.unwrap().json().await.unwrap()
        };
        if path.starts_with("/v1/quote") && v.get("transactionRequest").is_some() {
            let token = v["action"]["fromToken"]["address"].as_str().unwrap_or_default().to_string();
            let amount: u64 = v["estimate"]["fromAmount"].as_str().unwrap().parse().unwrap();
            let tx = &mut v["transactionRequest"];
            match mode {
                "approve-stranger" => v["estimate"]["approvalAddress"] = json!(stranger),
                // An ERC-20 transfer (0xa9059cbb) of the input to the stranger as the "swap".
                "transfer-to-stranger" => {
                    let to: alloy_primitives::Address = stranger.parse().unwrap();
                    tx["to"] = json!(token);
                    tx["data"] = json!(alloy_primitives::hex::encode_prefixed(
                        [&[0xa9u8, 0x05, 0x9c, 0xbb][..], &to.into_word()[..], &U256::from(amount).to_be_bytes::<32>()[..]].concat()
                    ));
                }
                // The router's own swap, paying the output to the stranger.
                "output-to-stranger" => {
                    let data = tx["data"].as_str().unwrap().to_lowercase();
                    let (me, them) = (wallet.trim_start_matches("0x").to_lowercase(), stranger.trim_start_matches("0x").to_lowercase());
                    assert!(data.contains(&me), "the router's calldata names the recipient");
                    tx["data"] = json!(data.replace(&me, &them));
                }
                "unknown-router" => tx["to"] = json!(stranger),
                // A TRON transfer of the input to the stranger, built by the
                // node as the wallet's own call of the token contract.
                "tron-token-call" => {
                    let api = tron_api.clone().expect("the TRON node");
                    let owner = v["action"]["fromAddress"].clone();
                    let parameter = format!("{:0>64}{amount:064x}", stranger.trim_start_matches("0x"));
                    let call = json!({ "owner_address": owner, "contract_address": token, "function_selector": "transfer(address,uint256)",
                                       "parameter": parameter, "fee_limit": 50_000_000, "call_value": 0, "visible": true });
                    let built = common::devnet::post_json(&format!("{api}/wallet/triggersmartcontract"), call).await;
                    let tx = &mut v["transactionRequest"];
                    tx["to"] = json!(token);
                    tx["data"] = json!(format!("0x{}", built["transaction"]["raw_data_hex"].as_str().expect("built")));
                }
                "native-value" => tx["value"] = json!("0x1"),
                // It claims more arrives than its transaction delivers.
                "min-output-inflated" => {
                    let out: u64 = v["estimate"]["toAmount"].as_str().unwrap().parse().unwrap();
                    v["estimate"]["toAmountMin"] = json!((out + out / 10).to_string());
                }
                _ => {}
            }
        }
        axum::Json(v)
    }
    let origin = reqwest::Url::parse(&origin).unwrap().origin().ascii_serialization();
    let app = axum::Router::new().fallback(forward).with_state((origin, mode, wallet, stranger));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A provider that answers every quote with something other than what was
/// asked is refused (502 `swap route refused`) before anything is signed:
/// nothing is stored, the wallet's balances and allowances on chain are
/// unchanged, and quotes and approvals for users are refused alike. The
/// honest provider still swaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_provider_gone_bad_gets_nothing_signed() {
    let dn = Devnet::start_swaps(25345, "base", "").await;
    let (usdc, usdt) = (dn.token("base", "usdc"), dn.token("base", "usdt"));
    let (agent, auth) = dn.agent().await;
    let wallet = dn.agent_wallet(&agent, stablerail::config::Family::Evm).await;
    dn.mint("base", &wallet, U256::from(10_000_000u64)).await;
    common::devnet::rpc(&dn.rpc_url("base"), "anvil_setBalance", json!([wallet, "0x56bc75e2d63100000"])).await;
    let stranger = dn.payer(3).0;
    let router = dn.info["chains"]["base"]["uniswap"]["router"].as_str().unwrap().to_string();
    let mode = std::sync::Arc::new(std::sync::Mutex::new("honest"));
    let honest = dn.info["swap"]["url"].as_str().unwrap().to_string();
    let url = hostile_provider(honest, mode.clone(), wallet.clone(), stranger.clone()).await;
    dn.set("swap.lifi_url", format!("{url}/v1"));
    let state = dn.restate().await;
    let body = json!({ "chain": "base", "from_token": usdc, "to_token": usdt, "from_amount": 5_000_000 });
    let allowance = |spender: String| {
        let (dn, wallet) = (&dn, wallet.clone());
        async move { dn.allowance("base", "usdc", &wallet, &spender).await }
    };
    let before = (dn.balance_of("base", "usdc", &wallet).await, dn.balance_of("base", "usdt", &wallet).await);
    let stranger_before = dn.balance_of("base", "usdc", &stranger).await;
    for bad in ["approve-stranger", "transfer-to-stranger", "output-to-stranger", "unknown-router", "native-value", "min-output-inflated"] {
        *mode.lock().unwrap() = bad;
        let key = format!("bad-{bad}");
        let headers = [("authorization", auth.as_str()), ("idempotency-key", key.as_str())];
        let (s, e) = call_state(&state, "POST", "/v2/swap/execute", Some(body.clone()), &headers).await;
        assert_eq!((s, e["message"].as_str()), (502, Some("swap route refused")), "{bad}: {e}");
        let run = stablerail::swap::execute::run_id(&agent, Some(&key));
        assert!(stablerail::store::settlement::list_txs(&state.db, &run, "swap").await.unwrap().is_empty(), "{bad}: nothing stored");
        // The same route handed to a user who signs it: refused alike.
        let quote = format!("/api/swap/quote?chain=base&input_token={usdc}&output_token={usdt}&from_amount=5000000&user_address={wallet}");
        let (s, e) = call_state(&state, "GET", &quote, None, &[]).await;
        assert_eq!((s, e["message"].as_str()), (502, Some("swap route refused")), "quote, {bad}: {e}");
    }
    *mode.lock().unwrap() = "approve-stranger";
    let approval = format!("/api/swap/approval?chain=base&token={usdc}&token_out={usdt}&amount=5000000&user_address={wallet}");
    let (s, e) = call_state(&state, "GET", &approval, None, &[]).await;
    assert_eq!((s, e["message"].as_str()), (502, Some("swap route refused")), "approval to a stranger: {e}");
    // Read on chain: nothing moved, nothing may be spent.
    assert_eq!((dn.balance_of("base", "usdc", &wallet).await, dn.balance_of("base", "usdt", &wallet).await), before);
    assert_eq!(dn.balance_of("base", "usdc", &stranger).await, stranger_before);
    assert_eq!(allowance(stranger.clone()).await, U256::ZERO);
    assert_eq!(allowance(router.clone()).await, U256::ZERO);

    // The honest provider behind the same proxy: the swap lands, with an
    // allowance of exactly the amount, spent by the swap.
    *mode.lock().unwrap() = "honest";
    let headers = [("authorization", auth.as_str())];
    let (s, done) = call_state(&state, "POST", "/v2/swap/execute", Some(body.clone()), &headers).await;
    assert_eq!(s, 200, "{done}");
    assert_eq!(receipt_of(&dn.rpc_url("base"), done["tx_hash"].as_str().unwrap()).await["status"], "0x1");
    assert_eq!(dn.balance_of("base", "usdc", &wallet).await, before.0 - U256::from(5_000_000u64));
    assert_eq!(allowance(router).await, U256::ZERO, "approved exactly what the swap spent");
}
