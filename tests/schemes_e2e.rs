//! Every EVM transfer scheme end to end on the devnet: Permit2 through the
//! x402 proxy with both gas-sponsoring extensions (signed by the real
//! @x402/evm client), the salted domain (signed by hand with viem), USDT's
//! reset-before-approve rule, USDT0's names, and Permit2 payloads with one
//! fault each, which must move no money.

use crate::common;

use alloy_primitives::U256;
use serde_json::{json, Value};
use stablerail::family::keys;

use common::app::MERCHANT;
use common::devnet::{craft, decode_proof, rpc, x402_pay, x402_pay_on, Devnet};

const PERMIT2: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

/// Rows stored for one leg of an intent: (label, sender).
async fn txs(dn: &Devnet, id: &str, leg: &str) -> Vec<(String, String)> {
    sqlx::query("SELECT label, sender FROM chain_transactions WHERE intent_id = $1 AND leg = $2 ORDER BY step")
        .bind(id)
        .bind(leg)
        .fetch_all(&dn.state.db.pool)
        .await
        .unwrap()
        .iter()
        .map(|r| (sqlx::Row::get(r, "label"), sqlx::Row::get(r, "sender")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn permit2_payments_signed_by_the_x402_client() {
    let dn = Devnet::start(22245, "bsc,monad,base", "").await;
    let proxy = dn.state.keys.address(keys::PROXY).await.unwrap();

    // Plain Permit2: the payer approved Permit2 earlier, so the client signs
    // no extension. The payout lands on bsc, a Permit2-only chain: the engine
    // first approves Permit2 from the proxy wallet, once, and records it.
    let on = |chain: &str| {
        let url = dn.rpc_url(chain);
        move |req: &Value, key: &str| x402_pay_on(req, key, &url)
    };
    let (payer, _) = dn.payer(0);
    dn.approve("bsc", "usdc", &payer, PERMIT2, U256::MAX).await;
    assert_eq!(dn.allowance("bsc", "usdc", &proxy, PERMIT2).await, U256::ZERO);
    let (done, proof) = dn.settle_public(("bsc", "usdc"), ("bsc", "usdc"), "3.5", 0, on("bsc")).await;
    let p = decode_proof(&proof);
    assert_eq!(p["accepted"]["extra"]["assetTransferMethod"], "permit2");
    assert!(p.get("extensions").is_none(), "allowance was there: no extension {p}");
    assert_eq!(p["payload"]["permit2Authorization"]["spender"], "0x402085c248EeA27D92E8b30b2C58ed07f9E20001");
    let id = done["intent_id"].as_str().unwrap();
    assert_eq!(txs(&dn, id, "source").await, vec![("settle".into(), dn.state.keys.address(keys::RELAYER).await.unwrap())]);
    let setup = txs(&dn, id, "target-setup").await;
    assert_eq!(setup.len(), 1, "one approval from the proxy wallet: {setup:?}");
    assert_eq!(setup[0].1, proxy);
    assert_eq!(dn.allowance("bsc", "usdc", &proxy, PERMIT2).await, U256::MAX);
    // A second payout there needs no new approval.
    let (again, _) = dn.settle_public(("base", "usdc"), ("bsc", "usdc"), "1", 1, x402_pay).await;
    assert!(txs(&dn, again["intent_id"].as_str().unwrap(), "target-setup").await.is_empty());

    // erc20ApprovalGasSponsoring: base USDT, no allowance yet. The payer's
    // signed approve is broadcast, then the relayer settles.
    let (payer, _) = dn.payer(2);
    assert_eq!(dn.allowance("base", "usdt", &payer, PERMIT2).await, U256::ZERO);
    let (done, proof) = dn.settle_public(("base", "usdt"), ("monad", "usdc"), "2", 2, on("base")).await;
    let p = decode_proof(&proof);
    assert_eq!(p["accepted"]["extra"]["extensions"], json!(["eip2612GasSponsoring", "erc20ApprovalGasSponsoring"]));
    assert!(p["extensions"]["erc20ApprovalGasSponsoring"]["info"]["signedTransaction"].is_string(), "{p}");
    let labels: Vec<String> = txs(&dn, done["intent_id"].as_str().unwrap(), "source").await.into_iter().map(|t| t.0).collect();
    assert_eq!(labels, ["approve", "settle"]);
    assert_eq!(dn.allowance("base", "usdt", &payer, PERMIT2).await, U256::MAX, "the payer's own approval landed");

    // eip2612GasSponsoring: monad USDC has a permit; the service submits it
    // through settleWithPermit. The payer spends no gas.
    let (payer, _) = dn.payer(3);
    let nonce_before = rpc(&dn.rpc_url("monad"), "eth_getTransactionCount", json!([payer, "latest"])).await;
    let (done, proof) = dn.settle_public(("monad", "usdc"), ("base", "usdc"), "4.25", 3, on("monad")).await;
    let p = decode_proof(&proof);
    let info = &p["extensions"]["eip2612GasSponsoring"]["info"];
    assert_eq!(info["spender"], PERMIT2);
    assert_eq!(info["amount"], p["accepted"]["amount"]);
    let labels: Vec<String> = txs(&dn, done["intent_id"].as_str().unwrap(), "source").await.into_iter().map(|t| t.0).collect();
    assert_eq!(labels, ["settleWithPermit"]);
    assert_eq!(rpc(&dn.rpc_url("monad"), "eth_getTransactionCount", json!([payer, "latest"])).await, nonce_before, "payer sent nothing");

    // `/v2` from a Permit2 chain to a Permit2 chain: the agent's hosted
    // wallet approves Permit2 itself on bsc, then signs; it pays once, there.
    // The merchant on monad is paid by the proxy wallet (which approves
    // Permit2 on monad once, if it has not yet).
    let now = stablerail::clock::now_ms();
    let agent = stablerail::store::agents::create_agent(&dn.state.db, None, "bot", now).await.unwrap();
    let creds = stablerail::auth::issue_keys(&dn.state.db, &dn.state.pepper, &agent.id, now).await.unwrap();
    let auth = format!("Bearer {}", creds.bearer());
    let wallet = dn.state.keys.address(&keys::agent_key(&agent.id)).await.unwrap();
    let ten = U256::from(10u64).pow(U256::from(19u64));
    for chain in ["bsc", "monad"] {
        rpc(&dn.rpc_url(chain), "anvil_setBalance", json!([wallet, format!("{ten:#x}")])).await;
    }
    dn.mint_asset("bsc", "usdc", &wallet, ten * U256::from(100u64)).await;
    dn.mint_asset("monad", "usdc", &wallet, U256::from(50_000_000u64)).await;
    let body = json!({ "recipient": MERCHANT, "amount": "3", "payer_chain": "bsc", "target_chain": "monad" });
    let (s, intent) = dn.call("POST", "/v2/intents", Some(body), &[("authorization", &auth)]).await;
    assert_eq!(s, 201, "{intent}");
    let id = intent["intent_id"].as_str().unwrap();
    let merchant = dn.balance_of("monad", "usdc", MERCHANT).await;
    let (s, r) = dn.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!(s, 200, "{r}");
    dn.wait_status(id, "TARGET_SETTLED").await;
    assert_eq!(dn.balance_of("monad", "usdc", MERCHANT).await, merchant + U256::from(3_000_000u64));
    assert_eq!(dn.balance_of("monad", "usdc", &wallet).await, U256::from(50_000_000u64), "the agent's target-chain wallet is not touched");
    let sending = common::devnet::units(&intent["payment_requirements"]["amount"]);
    assert_eq!(dn.balance_of("bsc", "usdc", &wallet).await, ten * U256::from(100u64) - sending);
    let rows = txs(&dn, id, "source-setup").await;
    assert_eq!(rows.len(), 1, "source-setup: {rows:?}");
    assert_eq!(rows[0].1, wallet, "source-setup sent by the agent's wallet");
    let proxy = dn.state.keys.address(keys::PROXY).await.unwrap();
    let rows = txs(&dn, id, "target-setup").await;
    assert!(rows.len() <= 1 && rows.iter().all(|r| r.1 == proxy), "target-setup by the proxy, once at most: {rows:?}");
    let agent_txs = rpc(&dn.rpc_url("monad"), "eth_getTransactionCount", json!([wallet, "latest"])).await;
    assert_eq!(agent_txs, "0x0", "the agent sends nothing on the target chain");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn salted_domain_usdt0_names_and_the_usdt_reset_rule() {
    let dn = Devnet::start(22345, "polygon,arbitrum,ethereum", "").await;
    let polygon = dn.rpc_url("polygon");

    // polygon USDT0: Permit2 + an EIP-2612 permit over the salted domain,
    // signed with viem; paid out in arbitrum USDT0 (EIP-3009, "USD₮0").
    let (done, proof) = dn.settle_public(("polygon", "usdt0"), ("arbitrum", "usdt0"), "6", 0, |r, k| craft(r, k, &polygon, "permit")).await;
    let extra = &decode_proof(&proof)["accepted"]["extra"];
    assert_eq!(extra["domainType"], "salted");
    assert_eq!(extra["name"], "USDT0");
    assert!(done["target_payment"]["tx_hash"].is_string());

    // usdt is the same contract as usdt0 there, and a chainId-in-domain
    // permit is refused with the reason, before anything is sent.
    let (payer, key) = dn.payer(1);
    let before = dn.balance_of("polygon", "usdt", &payer).await;
    assert_eq!(dn.token("polygon", "usdt"), dn.token("polygon", "usdt0"));
    let (id, intent) =
        dn.create_public(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "polygon", "payer_asset": "usdt" })).await;
    let bad = craft(&intent["payment_requirements"], &key, &polygon, "chainid-domain");
    let (s, e) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": bad })), &[]).await;
    assert_eq!(s, 400, "{e}");
    assert!(e["message"].as_str().unwrap().contains("salted"), "{e}");
    let (_, still) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(still["status"], "AWAITING_PAYMENT");
    // ...and the salted one for the same intent goes through.
    let good = craft(&intent["payment_requirements"], &key, &polygon, "permit");
    let (s, e) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": good })), &[]).await;
    assert_eq!(s, 200, "{e}");
    dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(dn.balance_of("polygon", "usdt", &payer).await, before - common::devnet::units(&intent["payment_requirements"]["amount"]));

    // arbitrum USDT0 / usdt as a payer: EIP-3009 under the name "USD₮0",
    // signed by the x402 client from `extra`.
    let (_, proof) = dn.settle_public(("arbitrum", "usdt"), ("polygon", "usdt0"), "2", 2, x402_pay).await;
    assert_eq!(decode_proof(&proof)["accepted"]["extra"]["name"], "USD\u{20ae}0");

    // ethereum USDT: a partial, non-zero Permit2 allowance cannot be raised
    // in one approve. The service refuses the payment (no money moves and
    // the payer's approve is not broadcast); after the payer resets it to 0
    // the same kind of payment settles.
    let ethereum = dn.rpc_url("ethereum");
    let (payer, key) = dn.payer(3);
    dn.approve("ethereum", "usdt", &payer, PERMIT2, U256::from(1000u64)).await;
    let before = dn.balance_of("ethereum", "usdt", &payer).await;
    let (id, intent) =
        dn.create_public(json!({ "recipient": MERCHANT, "amount": "5", "payer_chain": "ethereum", "payer_asset": "usdt" })).await;
    let proof = x402_pay_on(&intent["payment_requirements"], &key, &ethereum);
    assert!(decode_proof(&proof)["extensions"]["erc20ApprovalGasSponsoring"].is_object());
    let (s, e) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "offline checks pass: {e}");
    let failed = dn.wait_status(&id, "VERIFICATION_FAILED").await;
    assert!(failed["error_message"].as_str().unwrap().contains("approve(Permit2, 0)"), "{failed}");
    assert_eq!(dn.balance_of("ethereum", "usdt", &payer).await, before);
    assert_eq!(dn.allowance("ethereum", "usdt", &payer, PERMIT2).await, U256::from(1000u64));
    dn.approve("ethereum", "usdt", &payer, PERMIT2, U256::ZERO).await;
    dn.settle_public(("ethereum", "usdt"), ("arbitrum", "usdc"), "5", 3, |r, k| x402_pay_on(r, k, &ethereum)).await;
    assert_eq!(dn.allowance("ethereum", "usdt", &payer, PERMIT2).await, U256::MAX);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn faulty_permit2_payloads_are_refused_and_move_no_money() {
    let dn = Devnet::start(22445, "base,monad", "").await;
    let cases = [
        ("base", "usdt", "wrong-spender", "must be the x402 Permit2 proxy"),
        ("base", "usdt", "wrong-to", "wrong recipient"),
        ("base", "usdt", "wrong-amount", "wrong amount"),
        ("base", "usdt", "expired", "expired"),
        ("base", "usdt", "other-signer", "signature is not the payer's"),
        ("base", "usdt", "approval-wrong-token", "not the token"),
        ("base", "usdt", "approval-wrong-spender", "not Permit2"),
        ("base", "usdt", "approval-garbage", "malformed payment payload: approval transaction does not decode"),
        ("monad", "usdc", "permit-value", "EIP-2612 permit value"),
    ];
    let (payer, key) = dn.payer(4);
    for (chain, asset, case, says) in cases {
        let before = dn.balance_of(chain, asset, &payer).await;
        let body = json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": chain, "payer_asset": asset });
        let (id, intent) = dn.create_public(body).await;
        let proof = craft(&intent["payment_requirements"], &key, &dn.rpc_url(chain), case);
        let (s, e) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
        assert_eq!(s, 400, "{case}: {e}");
        assert_eq!(e["error"], "Bad Request");
        let message = e["message"].as_str().unwrap();
        assert!(message.starts_with("proof validation failed") && message.contains(says), "{case}: {message}");
        let (_, still) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
        assert_eq!(still["status"], "AWAITING_PAYMENT", "{case}");
        assert_eq!(dn.balance_of(chain, asset, &payer).await, before, "{case}: no funds moved");
        assert_eq!(dn.allowance(chain, asset, &payer, PERMIT2).await, U256::ZERO, "{case}: no approval broadcast");
    }
    // The same payer and intent shape, signed correctly, settles.
    let monad = dn.rpc_url("monad");
    dn.settle_public(("monad", "usdc"), ("base", "usdc"), "1", 4, |r, k| craft(r, k, &monad, "permit")).await;
}

/// `/v2` execute on a Permit2 asset from an agent wallet that holds no
/// native coin (monad USDC, which has an EIP-2612 permit): the wallet signs
/// a permit to Permit2 and the relayer submits it with the settlement
/// (`settleWithPermit`); the wallet sends nothing. Two executes at once pay
/// one after the other (they would share the permit's nonce), both once.
/// Permit2 tokens without EIP-2612 (base USDT, bsc USDC and USDT,
/// ethereum USDT): an agent wallet with no native coin cannot sign a permit
/// and cannot pay for its one approval of Permit2, so the relayer sends it
/// exactly what that approval may cost, then the wallet approves once; its
/// next payment needs nothing. Every merchant paid once, on chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_wallet_without_gas_pays_permit2_tokens_without_a_permit() {
    let dn = Devnet::start(30445, "base,bsc,ethereum", "").await;
    let (agent, auth) = dn.agent().await;
    let wallet = dn.agent_wallet(&agent, stablerail::config::Family::Evm).await;
    let relayer = dn.state.keys.address(keys::RELAYER).await.unwrap();
    let bearer = [("authorization", auth.as_str())];
    for (chain, asset, target, target_decimals) in
        [("base", "usdt", "bsc", 18u32), ("bsc", "usdc", "base", 6), ("bsc", "usdt", "base", 6), ("ethereum", "usdt", "base", 6)]
    {
        let decimals = if chain == "bsc" { 18 } else { 6 };
        let held = U256::from(20u64) * U256::from(10u64).pow(U256::from(decimals));
        dn.mint_asset(chain, asset, &wallet, held).await;
        // bsc's second token finds the dust of the first one's top-up.
        let approvals_before = u64::from(chain == "bsc" && asset == "usdt");
        if approvals_before == 0 {
            assert_eq!(rpc(&dn.rpc_url(chain), "eth_getBalance", json!([wallet, "latest"])).await, "0x0", "{chain}: no native coin");
        }
        assert_eq!(dn.allowance(chain, asset, &wallet, PERMIT2).await, U256::ZERO);
        let merchant = dn.balance_of(target, "usdc", MERCHANT).await;
        let relayer_before = rpc(&dn.rpc_url(chain), "eth_getBalance", json!([relayer, "latest"])).await;
        let mut sent = U256::ZERO;
        let mut ids = vec![];
        for amount in ["2", "3"] {
            let body =
                json!({ "recipient": MERCHANT, "amount": amount, "payer_chain": chain, "payer_asset": asset, "target_chain": target });
            let (s, intent) = dn.call("POST", "/v2/intents", Some(body), &bearer).await;
            assert_eq!(s, 201, "{intent}");
            sent += common::devnet::units(&intent["payment_requirements"]["amount"]);
            let id = intent["intent_id"].as_str().unwrap().to_string();
            let (s, r) = dn.call("POST", &format!("/v2/intents/{id}/execute"), None, &bearer).await;
            assert_eq!(s, 200, "{chain}/{asset}: {r}");
            dn.wait_status(&id, "TARGET_SETTLED").await;
            ids.push(id);
        }
        let labels = |id: String, leg: &'static str| {
            let dn = &dn;
            async move { txs(dn, &id, leg).await.into_iter().map(|t| t.0).collect::<Vec<_>>() }
        };
        assert_eq!(labels(ids[0].clone(), "source-fund").await, ["fund-0"], "{chain}/{asset}: the relayer funded the approval");
        assert_eq!(labels(ids[0].clone(), "source-setup").await.len(), 1, "{chain}/{asset}: the wallet approved once");
        assert!(labels(ids[1].clone(), "source-fund").await.is_empty() && labels(ids[1].clone(), "source-setup").await.is_empty());
        assert_eq!(dn.allowance(chain, asset, &wallet, PERMIT2).await, U256::MAX);
        let sent_by_wallet = rpc(&dn.rpc_url(chain), "eth_getTransactionCount", json!([wallet, "latest"])).await;
        assert_eq!(sent_by_wallet, json!(format!("{:#x}", approvals_before + 1)), "one approval, nothing else");
        assert_eq!(dn.balance_of(chain, asset, &wallet).await, held - sent, "{chain}/{asset}: each paid once");
        let five = U256::from(5u64) * U256::from(10u64).pow(U256::from(target_decimals));
        assert_eq!(dn.balance_of(target, "usdc", MERCHANT).await, merchant + five, "{chain}/{asset}: the merchant paid once");
        assert_ne!(rpc(&dn.rpc_url(chain), "eth_getBalance", json!([relayer, "latest"])).await, relayer_before, "the relayer paid");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_wallet_without_gas_pays_a_permit2_asset() {
    let dn = Devnet::start(30045, "monad,base", "").await;
    let (agent, auth) = dn.agent().await;
    let wallet = dn.agent_wallet(&agent, stablerail::config::Family::Evm).await;
    dn.mint_asset("monad", "usdc", &wallet, U256::from(20_000_000u64)).await;
    let monad = dn.rpc_url("monad");
    assert_eq!(rpc(&monad, "eth_getBalance", json!([wallet, "latest"])).await, "0x0", "no native coin");
    assert_eq!(dn.allowance("monad", "usdc", &wallet, PERMIT2).await, U256::ZERO);
    let merchant = dn.balance_of("base", "usdc", MERCHANT).await;
    let bearer = [("authorization", auth.as_str())];
    let mut ids = vec![];
    let mut sent = U256::ZERO;
    for amount in ["2", "3"] {
        let body = json!({ "recipient": MERCHANT, "amount": amount, "payer_chain": "monad", "target_chain": "base" });
        let (s, intent) = dn.call("POST", "/v2/intents", Some(body), &bearer).await;
        assert_eq!(s, 201, "{intent}");
        sent += common::devnet::units(&intent["payment_requirements"]["amount"]);
        ids.push(intent["intent_id"].as_str().unwrap().to_string());
    }
    let paths: Vec<String> = ids.iter().map(|id| format!("/v2/intents/{id}/execute")).collect();
    let executes = paths.iter().map(|path| dn.call("POST", path, None, &bearer));
    for (s, r) in futures::future::join_all(executes).await {
        assert_eq!(s, 200, "{r}");
    }
    for id in &ids {
        dn.wait_status(id, "TARGET_SETTLED").await;
        assert_eq!(txs(&dn, id, "source").await.into_iter().map(|t| t.0).collect::<Vec<_>>(), ["settleWithPermit"]);
        assert!(txs(&dn, id, "source-setup").await.is_empty(), "no approval from the wallet");
        let (_, read) = dn.call("GET", &format!("/v2/intents/{id}"), None, &bearer).await;
        let proof: Value = serde_json::from_str(read["source_payment"]["settle_proof"].as_str().unwrap()).unwrap();
        assert_eq!(proof["extensions"]["eip2612GasSponsoring"]["info"]["from"], json!(wallet), "{proof}");
    }
    assert_eq!(rpc(&monad, "eth_getTransactionCount", json!([wallet, "latest"])).await, "0x0", "the wallet sent nothing");
    assert_eq!(dn.balance_of("monad", "usdc", &wallet).await, U256::from(20_000_000u64) - sent, "each paid once");
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, merchant + U256::from(5_000_000u64));
}
