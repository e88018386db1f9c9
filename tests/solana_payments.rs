//! Solana on both legs, end to end on the devnet (anvil beside a Solana node
//! over LiteSVM): payers sign with the real `@x402/svm` client, the service
//! co-signs as fee payer, pays Solana merchants from its proxy wallet, and
//! `/v2` agents pay from their hosted Solana wallets. Balances are read on
//! chain.

use crate::common;

use alloy_primitives::U256;
use serde_json::{json, Value};
use stablerail::config::Family;
use stablerail::family::keys::Role;

use common::app::MERCHANT;
use common::devnet::{sol_pay, units, Devnet};

/// A Solana address with no account at all: paying it creates its token account.
const SOL_MERCHANT: &str = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";

async fn wallet(dn: &Devnet, role: Role) -> String {
    dn.state.keys.address(&role.key_name(Family::Solana)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn solana_pays_and_is_paid() {
    let dn = Devnet::start(24145, "base,solana", "").await;
    let rpc = dn.sol_rpc();
    let (_, chains) = dn.call("GET", "/api/chains", None, &[]).await;
    for list in ["chains", "target_chains"] {
        assert!(chains[list].as_array().unwrap().iter().any(|c| c == "solana"), "{list}: {chains}");
    }
    let collection = wallet(&dn, Role::Collection).await;
    let relayer = wallet(&dn, Role::Relayer).await;
    let proxy = wallet(&dn, Role::Proxy).await;

    // Solana → base: the payer's own transaction, co-signed by the relayer.
    let (payer, seed) = dn.sol_payer(0);
    let body = json!({ "recipient": MERCHANT, "amount": "3", "payer_chain": "solana", "payer_asset": "usdc", "target_chain": "base" });
    let (id, intent) = dn.create_public(body.clone()).await;
    let req = &intent["payment_requirements"];
    assert_eq!(req["network"], "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp");
    assert_eq!(req["asset"], "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
    assert_eq!(req["payTo"], collection.as_str(), "payTo is the collection wallet's owner address");
    assert_eq!(req["extra"]["feePayer"], relayer.as_str());
    assert_eq!((&req["extra"]["asset"], &req["extra"]["amount"]), (&req["asset"], &req["amount"]), "extra names the asset and amount");
    assert_eq!(req["extra"]["decimals"], 6);
    let sending: u64 = req["amount"].as_str().unwrap().parse().unwrap();

    // Each fault is refused before anything is sent; the intent still waits.
    for case in ["amount", "recipient", "fee-payer-pays", "extra-instruction", "price", "unsigned", "fee-payer-signed"] {
        let bad = sol_pay(req, &seed, &rpc, Some(case));
        let (s, e) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": bad })), &[]).await;
        assert_eq!(s, 400, "{case}: {e}");
        assert_eq!(e["statusCode"], 400);
        let (_, now) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
        assert_eq!(now["status"], "AWAITING_PAYMENT", "{case}");
    }

    let before = (dn.sol_balance("usdc", &payer).await, dn.sol_balance("usdc", &collection).await, dn.balance("base", MERCHANT).await);
    let proof = sol_pay(req, &seed, &rpc, None);
    let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{r}");
    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    let source_tx = done["source_payment"]["tx_hash"].as_str().unwrap();
    assert_eq!(bs58::decode(source_tx).into_vec().unwrap().len(), 64, "a Solana signature: {source_tx}");
    assert_eq!(dn.sol_balance("usdc", &payer).await, before.0 - sending, "the payer paid exactly sending_amount");
    assert_eq!(dn.sol_balance("usdc", &collection).await, before.1 + sending, "into the collection wallet");
    assert_eq!(dn.balance("base", MERCHANT).await, before.2 + U256::from(3_000_000u64), "the merchant got the amount");
    let status = common::devnet::rpc(&rpc, "getSignatureStatuses", json!([[source_tx], { "searchTransactionHistory": true }])).await;
    assert!(status["value"][0]["err"].is_null(), "{status}");

    // The same signed transaction cannot pay a second intent.
    let (again, _) = dn.create_public(body).await;
    let (s, e) = dn.call("POST", &format!("/api/intents/{again}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_ne!(s, 200, "a replayed transaction is refused: {e}");
    let (_, still) = dn.call("GET", &format!("/api/intents/{again}"), None, &[]).await;
    assert_eq!(still["status"], "AWAITING_PAYMENT");

    // base → Solana: the proxy pays a merchant with no token account; it is
    // created (the proxy pays its rent) and receives exactly the amount.
    let (s, e) = dn.call("POST", "/api/intents", Some(json!({ "recipient": "0x1111111111111111111111111111111111111111", "amount": "1", "payer_chain": "base", "target_chain": "solana" })), &[]).await;
    assert_eq!((s, e["message"].as_str()), (400, Some("invalid recipient address format")), "{e}");
    let (bpayer, key) = dn.payer(1);
    let (id, intent) = dn
        .create_public(
            json!({ "recipient": SOL_MERCHANT, "amount": "2.5", "payer_chain": "base", "target_chain": "solana", "target_asset": "usdc" }),
        )
        .await;
    // Opening the merchant's token account costs the proxy its rent: the
    // quote charges it in the target fee (solana's 0.01 + the account's 1.00).
    let fb = &intent["fee_breakdown"];
    assert_eq!((fb["recipient_account_fee"].as_str(), fb["target_chain_fee"].as_str()), (Some("1"), Some("1.01")), "{fb}");
    let lamports = |who: String| {
        let rpc = rpc.clone();
        async move { common::devnet::rpc(&rpc, "getBalance", json!([who])).await["value"].as_u64().unwrap() }
    };
    let proxy_sol = lamports(proxy.clone()).await;
    let proxy_before = dn.sol_balance("usdc", &proxy).await;
    let payer_before = dn.balance("base", &bpayer).await;
    let proof = common::devnet::x402_pay(&intent["payment_requirements"], &key);
    let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{r}");
    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(dn.sol_balance("usdc", SOL_MERCHANT).await, 2_500_000, "the merchant got exactly 2.5 USDC");
    assert_eq!(dn.sol_balance("usdc", &proxy).await, proxy_before - 2_500_000, "from the proxy wallet");
    assert_eq!(dn.balance("base", &bpayer).await, payer_before - units(&intent["payment_requirements"]["amount"]));
    let payout = done["target_payment"]["tx_hash"].as_str().unwrap();
    let tx =
        common::devnet::rpc(&rpc, "getTransaction", json!([payout, { "encoding": "json", "maxSupportedTransactionVersion": 0 }])).await;
    assert_eq!(tx["transaction"]["message"]["accountKeys"][0], relayer.as_str(), "the relayer paid the fee");
    assert_eq!(
        proxy_sol - lamports(proxy.clone()).await,
        2_039_280,
        "the proxy paid exactly the account's rent, which the payer was charged"
    );

    // Paid again, the merchant's account exists: no account fee.
    let (_, again) = dn
        .create_public(
            json!({ "recipient": SOL_MERCHANT, "amount": "2.5", "payer_chain": "base", "target_chain": "solana", "target_asset": "usdc" }),
        )
        .await;
    let fb = &again["fee_breakdown"];
    assert_eq!((fb.get("recipient_account_fee"), fb["target_chain_fee"].as_str()), (None, Some("0.01")), "{fb}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_pays_once_from_its_hosted_solana_wallet() {
    let dn = Devnet::start(24245, "base,solana", "").await;
    let (agent, auth) = dn.agent().await;
    let sol_wallet = wallet(&dn, Role::Agent(agent)).await;
    let (_, me) = dn.call("GET", "/v2/me", None, &[("authorization", &auth)]).await;
    assert_eq!(me["solana_wallet_address"], sol_wallet.as_str());
    dn.sol_fund(&sol_wallet, "usdc", 10_000_000);

    let (s, b) = dn.call("GET", "/v2/agents/balances", None, &[("authorization", &auth)]).await;
    assert_eq!(s, 200, "{b}");
    let w = b["wallets"].as_array().unwrap().iter().find(|w| w["chain_type"] == "solana").cloned().unwrap_or(Value::Null);
    assert_eq!(w["address"], sol_wallet.as_str(), "{b}");
    let rows = w["balances"].as_array().unwrap();
    let row = |asset: &str| rows.iter().find(|r| r["chain"] == "solana" && r["asset"] == asset).cloned().unwrap_or(Value::Null);
    assert_eq!(row("usdc")["raw_value"], "10000000", "{rows:?}");
    assert_eq!(row("usdt")["raw_value"], "0", "zero rows too: {rows:?}");
    assert_eq!(row("sol")["raw_value_decimals"], 9, "{rows:?}");

    let (s, intent) = dn
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "4", "payer_chain": "solana", "target_chain": "base" })),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(s, 201, "{intent}");
    let id = intent["intent_id"].as_str().unwrap();
    let sending: u64 = intent["payment_requirements"]["amount"].as_str().unwrap().parse().unwrap();
    let merchant_before = dn.balance("base", MERCHANT).await;
    let (s, r) = dn.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!(s, 200, "{r}");
    dn.wait_status(id, "TARGET_SETTLED").await;
    assert_eq!(dn.sol_balance("usdc", &sol_wallet).await, 10_000_000 - sending, "the agent paid once, on Solana");
    assert_eq!(dn.balance("base", MERCHANT).await, merchant_before + U256::from(4_000_000u64));

    // Short: 402, nothing moves, the intent waits for the agent to fund.
    let (_, intent) = dn
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "50", "payer_chain": "solana", "target_chain": "base" })),
            &[("authorization", &auth)],
        )
        .await;
    let id = intent["intent_id"].as_str().unwrap();
    let (s, e) = dn.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!(s, 402, "{e}");
    assert_eq!(e["message"], "agent wallet has insufficient balance on payer chain");
    assert_eq!(dn.sol_balance("usdc", &sol_wallet).await, 10_000_000 - sending);
}
