//! The intents API over HTTP, on SQLite and on Postgres.

use crate::common;
use crate::on_both_engines;

use alloy_primitives::{B256, U256};
use alloy_signer_local::PrivateKeySigner;
use axum::http::StatusCode;
use base64::Engine as _;
use serde_json::{json, Value};

use common::app::{App, Backend, COLLECTOR_BASE, MERCHANT};
use common::eip3009::{self as signer, TransferWithAuthorization};

on_both_engines!(
    create_public_intent,
    create_agent_intent_and_ownership,
    create_validation_messages,
    asset_gates_and_tron_flag,
    fees_in_both_modes_and_eighteen_decimals,
    email_recipients,
    authentication,
    listing_and_pagination,
    proof_moves_to_pending_once,
    proofs_that_do_not_fit_change_nothing,
    replayed_authorization_is_refused,
    expiry,
    execute_flow,
    execute_answers_from_the_failure_code,
    concurrent_proofs_make_one_transition,
    concurrent_executes_make_one_transition,
    idempotency_keys,
    malformed_bodies,
    sanctions_screen,
    recipients_that_cannot_receive,
    http_layer_rejections_and_strictness,
    the_fields_the_public_sdks_read,
);

fn body(amount: &str) -> Value {
    json!({ "recipient": MERCHANT, "amount": amount, "payer_chain": "base" })
}

async fn create(app: &App, v: Value) -> Value {
    let (status, resp) = app.call("POST", "/api/intents", Some(v), &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{resp}");
    resp
}

fn message(resp: &Value) -> &str {
    resp["message"].as_str().unwrap_or("")
}

fn assert_error(status: StatusCode, resp: &Value, want: StatusCode, contains: &str) {
    assert_eq!(status, want, "{resp}");
    assert_eq!(resp["statusCode"], want.as_u16(), "{resp}");
    assert_eq!(resp["error"], want.canonical_reason().unwrap(), "{resp}");
    assert!(message(resp).contains(contains), "expected {contains:?} in {resp}");
}

/// The payer signs the intent's requirements with an independent signer and
/// returns the base64 settle_proof.
fn pay(req_json: &Value, payer: &PrivateKeySigner, nonce: u8, value_override: Option<u64>) -> String {
    let req: stablerail::payment::PaymentRequirements = serde_json::from_value(req_json.clone()).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let value: u64 = value_override.unwrap_or_else(|| req.amount.parse().unwrap());
    let auth = TransferWithAuthorization {
        from: payer.address(),
        to: req.pay_to.parse().unwrap(),
        value: U256::from(value),
        validAfter: U256::from(now - 30),
        validBefore: U256::from(now + 600),
        nonce: B256::repeat_byte(nonce),
    };
    let chain_id: u64 = req.network.trim_start_matches("eip155:").parse().unwrap();
    let token: alloy_primitives::Address = req.asset.parse().unwrap();
    let domain =
        alloy_sol_types::Eip712Domain::new(Some("USD Coin".into()), Some("2".into()), Some(U256::from(chain_id)), Some(token), None);
    let proof = signer::proof(&req, &auth, &signer::sign(payer, &auth, &domain));
    base64::engine::general_purpose::STANDARD.encode(proof.to_string())
}

async fn create_public_intent(b: Backend) {
    let app = App::start(b, "").await;
    let before = chrono::Utc::now();
    let r = create(&app, body("10")).await;
    assert!(r["intent_id"].as_str().unwrap().starts_with("int_"));
    assert!(r.get("agent_id").is_none(), "no agent_id on /api: {r}");
    assert_eq!(r["status"], "AWAITING_PAYMENT");
    assert_eq!(r["payer_chain"], "base");
    assert_eq!(r["target_chain"], "base", "target defaults to base");
    let expires = chrono::DateTime::parse_from_rfc3339(r["expires_at"].as_str().unwrap()).unwrap();
    let lifetime = expires.signed_duration_since(before).num_seconds();
    assert!((599..=601).contains(&lifetime), "{lifetime}");
    let fb = &r["fee_breakdown"];
    for k in
        ["source_chain", "source_chain_fee", "target_chain", "target_chain_fee", "platform_fee", "platform_fee_percentage", "total_fee"]
    {
        assert!(fb[k].is_string(), "{k} in {fb}");
    }
    let pr = &r["payment_requirements"];
    assert_eq!(pr["scheme"], "exact");
    assert_eq!(pr["network"], "eip155:8453");
    assert_eq!(pr["payTo"], COLLECTOR_BASE.parse::<alloy_primitives::Address>().unwrap().to_checksum(None));
    assert_eq!(pr["amount"], "10050000", "10 + 0.01 + 0.01 + 0.3% of 10 = 10.05 USDC");
    assert_eq!(pr["extra"]["decimals"], 6);
    assert_eq!(pr["extra"]["name"], "USD Coin");
    assert!(pr["maxTimeoutSeconds"].as_u64().unwrap() <= 600);

    // Both read forms give the same body; the payment is still owed.
    let id = r["intent_id"].as_str().unwrap();
    let (s1, a) = app.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    let (s2, c) = app.call("GET", &format!("/api/intents?intent_id={id}"), None, &[]).await;
    assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK));
    assert_eq!(a, c);
    assert_eq!(a["merchant_recipient"], "0x000000000000000000000000000000000000bEEF");
    assert_eq!(a["sending_amount"], "10.05");
    assert_eq!(a["receiving_amount"], "10");
    assert_eq!(a["estimated_fee"], "0.05");
    assert!(a.get("target_payment").is_none() && a.get("base_payment").is_none());
    let (s, e) = app.call("GET", "/api/intents/int_nope", None, &[]).await;
    assert_error(s, &e, StatusCode::NOT_FOUND, "payment intent not found");
    let (s, e) = app.call("GET", "/api/intents", None, &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "intent_id is required");
    app.close().await;
}

async fn create_agent_intent_and_ownership(b: Backend) {
    let app = App::start(b, "").await;
    let (alice, alice_auth) = app.agent("alice", None).await;
    let (_, bob_auth) = app.agent("bob", None).await;
    let (s, r) = app.call("POST", "/v2/intents", Some(body("5")), &[("authorization", &alice_auth)]).await;
    assert_eq!(s, StatusCode::CREATED, "{r}");
    assert_eq!(r["agent_id"], alice);
    let id = r["intent_id"].as_str().unwrap().to_string();

    let (s, mine) = app.call("GET", &format!("/v2/intents/{id}"), None, &[("authorization", &alice_auth)]).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(mine["agent_id"], alice);
    let (s, q) = app.call("GET", &format!("/v2/intents?intent_id={id}"), None, &[("authorization", &alice_auth)]).await;
    assert_eq!((s, &q), (StatusCode::OK, &mine));
    // Public reads are open and do not name the owner (agent_id is /v2's).
    let (s, public) = app.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(s, StatusCode::OK);
    assert!(public.get("agent_id").is_none(), "{public}");
    assert_eq!(public["intent_id"], mine["intent_id"]);

    // Another agent, or a public-flow intent, is "not found" on /v2 — never 403.
    let (s, e) = app.call("GET", &format!("/v2/intents/{id}"), None, &[("authorization", &bob_auth)]).await;
    assert_error(s, &e, StatusCode::NOT_FOUND, "payment intent not found");
    let public_id = create(&app, body("5")).await["intent_id"].as_str().unwrap().to_string();
    let (s, e) = app.call("GET", &format!("/v2/intents/{public_id}"), None, &[("authorization", &alice_auth)]).await;
    assert_error(s, &e, StatusCode::NOT_FOUND, "payment intent not found");
    let (s, e) = app.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &bob_auth)]).await;
    assert_error(s, &e, StatusCode::NOT_FOUND, "payment intent not found");

    // Paid through the public flow, an agent's intent still names its owner
    // in the submit-proof answer (SPEC: omitted only for /api-created ones).
    let proof = pay(&r["payment_requirements"], &PrivateKeySigner::random(), 7, None);
    let (s, ok) = app.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, StatusCode::OK, "{ok}");
    assert_eq!(ok["agent_id"], alice, "{ok}");
    app.close().await;
}

async fn create_validation_messages(b: Backend) {
    let app = App::start(b, "").await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({ "amount": "1", "payer_chain": "base" }), "either email or recipient is required"),
        (
            json!({ "email": "a@b.co", "recipient": MERCHANT, "amount": "1", "payer_chain": "base" }),
            "cannot provide both email and recipient",
        ),
        (json!({ "recipient": MERCHANT, "payer_chain": "base" }), "either amount or to_amount is required"),
        (
            json!({ "recipient": MERCHANT, "amount": "1", "to_amount": "1", "payer_chain": "base" }),
            "cannot provide both amount and to_amount",
        ),
        (json!({ "recipient": MERCHANT, "amount": "0.01", "payer_chain": "base" }), "amount out of range"),
        (json!({ "recipient": MERCHANT, "amount": "1000000.01", "payer_chain": "base" }), "amount out of range"),
        (json!({ "recipient": MERCHANT, "to_amount": "0.019999", "payer_chain": "base" }), "amount out of range"),
        (
            json!({ "recipient": MERCHANT, "amount": "1.1234567", "payer_chain": "base" }),
            "invalid amount: must be a positive number with up to 6 decimal places",
        ),
        (json!({ "recipient": MERCHANT, "amount": "-1", "payer_chain": "base" }), "invalid amount"),
        (json!({ "recipient": MERCHANT, "amount": "1e3", "payer_chain": "base" }), "invalid amount"),
        (json!({ "recipient": MERCHANT, "amount": "1" }), "payer_chain is required"),
        (json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "dogechain" }), "invalid payer_chain"),
        (
            json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "skale-base" }),
            "invalid target_chain: accepted target chains are arbitrum, base, bsc, polygon",
        ),
        (
            json!({ "recipient": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "amount": "1", "payer_chain": "base", "target_chain": "arbitrum" }),
            "invalid recipient address format",
        ),
        (
            json!({ "recipient": "0x000000000000000000000000000000000000bEEf", "amount": "1", "payer_chain": "base" }),
            "invalid recipient address format",
        ),
        (json!({ "recipient": "0x1234", "amount": "1", "payer_chain": "base" }), "invalid recipient address format"),
        (json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base", "payer_asset": "dai" }), "invalid payer_asset"),
        (json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base", "payer_address": "nope" }), "invalid payer_address"),
        (json!({ "email": "not-an-email", "amount": "1", "payer_chain": "base" }), "invalid email"),
    ];
    for (req, want) in cases {
        let (s, e) = app.call("POST", "/api/intents", Some(req.clone()), &[]).await;
        assert_error(s, &e, StatusCode::BAD_REQUEST, want);
    }
    // A skale-base payer is fine as a payer; it has no collection wallet here.
    let (s, e) =
        app.call("POST", "/api/intents", Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "skale-base" })), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "payer_asset not configured on chain");
    app.close().await;
}

async fn asset_gates_and_tron_flag(b: Backend) {
    let app = App::start(b, "").await;
    let with = |extra: Value| {
        let mut v = body("1");
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let (s, e) = app.call("POST", "/api/intents", Some(with(json!({ "payer_asset": "usdt" }))), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "invalid payer_asset");
    assert_eq!(message(&e), "invalid payer_asset", "a gated pair says exactly this");
    let (s, e) = app.call("POST", "/api/intents", Some(with(json!({ "payer_chain": "polygon", "payer_asset": "usdt0" }))), &[]).await;
    assert_eq!(message(&e), "payer_asset not configured on chain");
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, e) = app.call("POST", "/api/intents", Some(with(json!({ "payer_asset": "usdt0" }))), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "payer_asset not configured on chain");
    let (s, e) = app.call("POST", "/api/intents", Some(with(json!({ "target_asset": "usdt" }))), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "invalid target_asset");
    let (s, e) = app.call("POST", "/api/intents", Some(with(json!({ "payer_chain": "tron" }))), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "TRON is not enabled");
    let (s, e) = app.call("POST", "/api/intents", Some(with(json!({ "target_chain": "tron" }))), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "TRON is not enabled");
    // Omitted assets are usdc on both legs, with the same response shape.
    let r = create(&app, with(json!({ "payer_asset": "USDC", "target_asset": "usdc" }))).await;
    assert_eq!(r["payer_asset"], "usdc");
    app.close().await;
}

async fn fees_in_both_modes_and_eighteen_decimals(b: Backend) {
    let app = App::start(b, "").await;
    // ExactOut base → arbitrum: 100 + 0.01 + 0.02 + 0.3 = 100.33.
    let out = create(&app, json!({ "recipient": MERCHANT, "amount": "100", "payer_chain": "base", "target_chain": "arbitrum" })).await;
    assert_eq!(out["receiving_amount"], "100");
    assert_eq!(out["sending_amount"], "100.33");
    assert_eq!(out["estimated_fee"], "0.33");
    assert_eq!(
        out["fee_breakdown"],
        json!({
            "source_chain": "base", "source_chain_fee": "0.01", "target_chain": "arbitrum",
            "target_chain_fee": "0.02", "platform_fee": "0.3", "platform_fee_percentage": "0.3", "total_fee": "0.33",
        })
    );
    assert_eq!(out["payment_requirements"]["amount"], "100330000");
    // ExactIn: the payer sends exactly 100.33; the merchant gets exactly 100.
    let inn =
        create(&app, json!({ "recipient": MERCHANT, "to_amount": "100.33", "payer_chain": "base", "target_chain": "arbitrum" })).await;
    assert_eq!(inn["sending_amount"], "100.33");
    assert_eq!(inn["receiving_amount"], "100");
    assert_eq!(inn["payment_requirements"]["amount"], "100330000");
    // Too small to cover the network fees.
    let (s, e) = app
        .call(
            "POST",
            "/api/intents",
            Some(json!({ "recipient": MERCHANT, "to_amount": "0.03", "payer_chain": "base", "target_chain": "arbitrum" })),
            &[],
        )
        .await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "does not cover the fees");
    // bsc USDC has 18 decimals: 1 + 0.05 + 0.01 + 0.003 = 1.063.
    let bsc = create(&app, json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "bsc" })).await;
    assert_eq!(bsc["sending_amount"], "1.063");
    assert_eq!(bsc["payment_requirements"]["amount"], "1063000000000000000");
    assert_eq!(bsc["payment_requirements"]["extra"]["decimals"], 18);
    app.close().await;
}

async fn email_recipients(b: Backend) {
    let app = App::start(b, "").await;
    stablerail::store::agents::set_recipient(&app.state.db, "Shop@Example.com", "arbitrum", MERCHANT).await.unwrap();
    let r = create(&app, json!({ "email": "shop@example.COM", "amount": "1", "payer_chain": "base", "target_chain": "arbitrum" })).await;
    // A public answer shows the email, never the wallet registered for it.
    assert_eq!(r["merchant_recipient"], "shop@example.com", "{r}");
    let (_, read) = app.call("GET", &format!("/api/intents/{}", r["intent_id"].as_str().unwrap()), None, &[]).await;
    assert_eq!(read["merchant_recipient"], "shop@example.com", "{read}");
    // Nor whether one is registered: an email without a wallet on base is
    // created alike (its wallet is looked up when a proof comes).
    let unknown = create(&app, json!({ "email": "shop@example.com", "amount": "1", "payer_chain": "base" })).await;
    assert_eq!((&unknown["merchant_recipient"], &unknown["status"]), (&json!("shop@example.com"), &json!("AWAITING_PAYMENT")));
    assert_eq!(
        unknown.as_object().unwrap().keys().collect::<Vec<_>>(),
        r.as_object().unwrap().keys().collect::<Vec<_>>(),
        "the same fields either way"
    );
    // An agent (authenticated, accountable) is told.
    let (_, bearer) = app.agent("payer-bot", None).await;
    let (s, e) = app
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "email": "shop@example.com", "amount": "1", "payer_chain": "base" })),
            &[("authorization", &bearer)],
        )
        .await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "no wallet on base is registered for this email");
    app.close().await;
}

async fn authentication(b: Backend) {
    let app = App::start(b, "").await;
    let (s, e) = app.call("GET", "/v2/me", None, &[]).await;
    assert_error(s, &e, StatusCode::UNAUTHORIZED, "api key required");
    for bad in ["Bearer", "Bearer !!!", "Basic abc", "Bearer c3JfeDp5"] {
        let (s, e) = app.call("GET", "/v2/me", None, &[("authorization", bad)]).await;
        assert_error(s, &e, StatusCode::UNAUTHORIZED, "invalid credentials");
    }
    let (_, ownerless) = app.agent("stray", None).await;
    let (s, e) = app.call("GET", "/v2/agents/balances", None, &[("authorization", &ownerless)]).await;
    assert_error(s, &e, StatusCode::FORBIDDEN, "agent owner not set");
    let account = stablerail::store::agents::create_account(&app.state.db, "acme", 0).await.unwrap();
    let (id, auth) = app.agent("shopper", Some(&account)).await;
    let (s, me) = app.call("GET", "/v2/me", None, &[("authorization", &auth)]).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(me["agent_id"], id);
    assert_eq!(me["name"], "shopper");
    assert_eq!(me["status"], "active");
    assert!(me["agent_number"].is_string());
    assert!(me.get("wallet_address").is_none());

    // A wrong secret for a real key fails; rotation revokes the old pair.
    let token = base64::engine::general_purpose::STANDARD.decode(auth.trim_start_matches("Bearer ")).unwrap();
    let (key, _) = std::str::from_utf8(&token).unwrap().split_once(':').unwrap();
    let forged = format!("Bearer {}", base64::engine::general_purpose::STANDARD.encode(format!("{key}:srsk_wrong")));
    let (s, _) = app.call("GET", "/v2/me", None, &[("authorization", &forged)]).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let fresh = stablerail::auth::issue_keys(&app.state.db, &app.state.pepper, &id, 1).await.unwrap();
    let (s, _) = app.call("GET", "/v2/me", None, &[("authorization", &auth)]).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "rotated-out key");
    let (s, _) = app.call("GET", "/v2/me", None, &[("authorization", &format!("Bearer {}", fresh.bearer()))]).await;
    assert_eq!(s, StatusCode::OK);

    // At most 10 agents per account.
    for n in 1..10 {
        stablerail::store::agents::create_agent(&app.state.db, Some(&account), &format!("a{n}"), 0).await.unwrap();
    }
    let eleventh = stablerail::store::agents::create_agent(&app.state.db, Some(&account), "a10", 0).await;
    assert!(matches!(eleventh, Err(stablerail::store::agents::AgentError::TooMany(_))), "{eleventh:?}");
    app.close().await;
}

async fn listing_and_pagination(b: Backend) {
    let app = App::start(b, "").await;
    let (alice, auth) = app.agent("alice", None).await;
    let (_, other) = app.agent("bob", None).await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let (s, r) = app.call("POST", "/v2/intents", Some(body(&format!("{}", n + 1))), &[("authorization", &auth)]).await;
        assert_eq!(s, StatusCode::CREATED);
        ids.push(r["intent_id"].as_str().unwrap().to_string());
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    app.call("POST", "/v2/intents", Some(body("1")), &[("authorization", &other)]).await;
    create(&app, body("1")).await;

    let (s, l) = app.call("GET", "/v2/intents/list?page=1&page_size=2", None, &[("authorization", &auth)]).await;
    assert_eq!(s, StatusCode::OK, "{l}");
    assert_eq!(l["total"], 5);
    assert_eq!(l["page"], 1);
    assert_eq!(l["page_size"], 2);
    let got: Vec<&str> = l["intents"].as_array().unwrap().iter().map(|r| r["intent_id"].as_str().unwrap()).collect();
    assert_eq!(got, vec![ids[4].as_str(), ids[3].as_str()], "newest first");
    let row = &l["intents"][0];
    assert_eq!(row["agent_id"], alice);
    for k in [
        "merchant_recipient",
        "sending_amount",
        "receiving_amount",
        "estimated_fee",
        "payer_chain",
        "target_chain",
        "status",
        "created_at",
        "expires_at",
    ] {
        assert!(row[k].is_string(), "{k} in {row}");
    }
    let (_, p3) = app.call("GET", "/v2/intents/list?page=3&page_size=2", None, &[("authorization", &auth)]).await;
    assert_eq!(p3["intents"].as_array().unwrap().len(), 1);
    let (_, d) = app.call("GET", "/v2/intents/list", None, &[("authorization", &auth)]).await;
    assert_eq!((d["page"].clone(), d["page_size"].clone()), (json!(1), json!(20)));
    let (_, c) = app.call("GET", "/v2/intents/list?page_size=1000", None, &[("authorization", &auth)]).await;
    assert_eq!(c["page_size"], 100, "clamped");
    for bad in ["page=0", "page=-1", "page=abc", "page=1.5", "page_size=0", "page_size=x", "page=1000001", "page=+2"] {
        let (s, e) = app.call("GET", &format!("/v2/intents/list?{bad}"), None, &[("authorization", &auth)]).await;
        assert_error(s, &e, StatusCode::BAD_REQUEST, "invalid page");
    }
    // A parameter given twice is ambiguous: refused in the envelope, not read as either.
    let (s, e) = app.call("GET", "/v2/intents/list?page=1&page=2", None, &[("authorization", &auth)]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "invalid query");
    let (s, e) = app.call("GET", "/api/intents?intent_id=a&intent_id=b", None, &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "invalid query");
    let (s, _) = app.call("GET", "/v2/intents/list", None, &[]).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    app.close().await;
}

async fn proof_moves_to_pending_once(b: Backend) {
    let app = App::start(b, "").await;
    let r = create(&app, body("3")).await;
    let id = r["intent_id"].as_str().unwrap();
    let payer = PrivateKeySigner::random();
    let proof = pay(&r["payment_requirements"], &payer, 1, None);
    let (s, ok) = app.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, StatusCode::OK, "{ok}");
    assert_eq!(ok["status"], "PENDING");
    assert_eq!(ok["intent_id"], id);
    assert!(ok.get("agent_id").is_none());
    let (_, read) = app.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(read["status"], "PENDING");
    assert!(read.get("payment_requirements").is_none());
    assert!(stablerail::store::intents::queued(&app.state.db, id).await.unwrap(), "handed to settlement");
    let stored = stablerail::store::intents::get(&app.state.db, id).await.unwrap().unwrap();
    assert_eq!(stored.payer.as_deref(), Some(payer.address().to_checksum(None).as_str()));

    // The same proof again: the intent is no longer awaiting payment.
    let (s, e) = app.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_error(s, &e, StatusCode::CONFLICT, "invalid intent status for this operation");

    // Raw JSON proofs are accepted too.
    let r2 = create(&app, body("3")).await;
    let b64 = pay(&r2["payment_requirements"], &payer, 2, None);
    let raw = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap();
    let (s, _) =
        app.call("POST", &format!("/api/intents/{}", r2["intent_id"].as_str().unwrap()), Some(json!({ "settle_proof": raw })), &[]).await;
    assert_eq!(s, StatusCode::OK);
    let (s, e) = app.call("POST", "/api/intents/int_missing", Some(json!({ "settle_proof": proof })), &[]).await;
    assert_error(s, &e, StatusCode::NOT_FOUND, "payment intent not found");
    app.close().await;
}

async fn proofs_that_do_not_fit_change_nothing(b: Backend) {
    let app = App::start(b, "").await;
    let r = create(&app, body("3")).await;
    let id = r["intent_id"].as_str().unwrap();
    let payer = PrivateKeySigner::random();
    let url = format!("/api/intents/{id}");
    let cases = vec![
        (json!({ "settle_proof": "%%%not base64%%%" }), "neither base64"),
        (json!({ "settle_proof": base64::engine::general_purpose::STANDARD.encode("[1,2]") }), "neither base64"),
        (json!({ "settle_proof": pay(&r["payment_requirements"], &payer, 3, Some(1)) }), "proof validation failed: wrong amount"),
        (
            json!({ "settle_proof": base64::engine::general_purpose::STANDARD.encode("{\"x402Version\":2}") }),
            "proof validation failed: malformed",
        ),
        (json!({}), "settle_proof is required"),
        (json!({ "settle_proof": "" }), "settle_proof is required"),
    ];
    for (req, want) in cases {
        let (s, e) = app.call("POST", &url, Some(req), &[]).await;
        assert_error(s, &e, StatusCode::BAD_REQUEST, want);
    }
    // A proof for another intent's requirements (another amount) does not fit.
    let other = create(&app, body("4")).await;
    let (s, e) = app.call("POST", &url, Some(json!({ "settle_proof": pay(&other["payment_requirements"], &payer, 4, None) })), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "does not match the intent");
    let (_, read) = app.call("GET", &url, None, &[]).await;
    assert_eq!(read["status"], "AWAITING_PAYMENT", "nothing changed");
    assert!(!stablerail::store::intents::queued(&app.state.db, id).await.unwrap());
    app.close().await;
}

async fn replayed_authorization_is_refused(b: Backend) {
    let app = App::start(b, "").await;
    let a = create(&app, body("2")).await;
    let b2 = create(&app, body("2")).await;
    let payer = PrivateKeySigner::random();
    let proof = pay(&a["payment_requirements"], &payer, 9, None);
    let (s, _) =
        app.call("POST", &format!("/api/intents/{}", a["intent_id"].as_str().unwrap()), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, StatusCode::OK);
    // Same amount, same collection wallet: the signature is valid for B too,
    // but the authorization (payer, nonce) was already taken.
    let (s, e) =
        app.call("POST", &format!("/api/intents/{}", b2["intent_id"].as_str().unwrap()), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_error(s, &e, StatusCode::CONFLICT, "already used");
    let (_, read) = app.call("GET", &format!("/api/intents/{}", b2["intent_id"].as_str().unwrap()), None, &[]).await;
    assert_eq!(read["status"], "AWAITING_PAYMENT");
    app.close().await;
}

async fn expiry(b: Backend) {
    let app = App::start(b, "").await;
    let (_, auth) = app.agent("alice", None).await;
    let (_, r) = app.call("POST", "/v2/intents", Some(body("2")), &[("authorization", &auth)]).await;
    let id = r["intent_id"].as_str().unwrap();
    let proof = pay(&r["payment_requirements"], &PrivateKeySigner::random(), 1, None);
    sqlx::query("UPDATE intents SET expires_at = $1 WHERE id = $2")
        .bind(stablerail::clock::now_ms() - 1)
        .bind(id)
        .execute(&app.state.db.pool)
        .await
        .unwrap();
    // Reported EXPIRED before the sweeper has run.
    let (_, read) = app.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(read["status"], "EXPIRED");
    let (s, e) = app.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "payment intent has expired");
    let (s, e) = app.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "payment intent has expired");
    stablerail::sweeper::sweep(&app.state.db, 900_000).await;
    let stored = stablerail::store::intents::get(&app.state.db, id).await.unwrap().unwrap();
    assert_eq!(stored.status, stablerail::intent::Status::Expired);
    app.close().await;
}

async fn execute_flow(b: Backend) {
    let app = App::start(b, "").await;
    let (alice, auth) = app.agent("alice", None).await;
    let (_, r) = app.call("POST", "/v2/intents", Some(body("2")), &[("authorization", &auth)]).await;
    let id = r["intent_id"].as_str().unwrap();
    let (s, ok) = app.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_eq!(s, StatusCode::OK, "{ok}");
    assert_eq!(ok["status"], "PENDING");
    assert_eq!(ok["agent_id"], alice);
    assert!(stablerail::store::intents::queued(&app.state.db, id).await.unwrap());
    let (s, e) = app.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
    assert_error(s, &e, StatusCode::CONFLICT, "invalid intent status for this operation");
    let (s, _) = app.call("POST", &format!("/v2/intents/{id}/execute"), None, &[]).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    app.close().await;
}

/// Execute's 402 comes from the code the engine stored, never from the
/// stored text: the engine (played here by the store calls it makes) puts
/// the intent back with `agent_wallet_short` and a message in other words,
/// and the agent gets 402 with the code's fixed sentence; a failure whose
/// message mentions a short balance but whose code says otherwise is not a 402.
async fn execute_answers_from_the_failure_code(b: Backend) {
    use stablerail::failure::{Failure, Reason};
    use stablerail::intent::Status;
    use stablerail::store::transition::intents as repo;
    let app = std::sync::Arc::new(App::start_with(b, "", 10).await);
    let (_, auth) = app.agent("carol", None).await;
    let engine_says = |why: Reason, to: Option<Status>| {
        let (app, auth) = (app.clone(), auth.clone());
        async move {
            let (_, r) = app.call("POST", "/v2/intents", Some(body("2")), &[("authorization", &auth)]).await;
            let id = r["intent_id"].as_str().unwrap().to_string();
            let db = app.state.db.clone();
            let (id2, why2) = (id.clone(), why.clone());
            let engine = tokio::spawn(async move {
                loop {
                    let done = match to {
                        None => repo::back_to_awaiting(&db, &id2, &why2, 1).await.unwrap(),
                        Some(to) => repo::transition(&db, &id2, Status::Pending, to, Some(&why2), 1).await.unwrap(),
                    };
                    if done {
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
            });
            let answer = app.call("POST", &format!("/v2/intents/{id}/execute"), None, &[("authorization", &auth)]).await;
            engine.await.unwrap();
            answer
        }
    };
    let short = Reason { code: Failure::AgentWalletShort, message: "the wallet needs topping up (wording of the day)".into() };
    let (s, e) = engine_says(short, None).await;
    assert_error(s, &e, StatusCode::PAYMENT_REQUIRED, Failure::AgentWalletShort.sentence());
    let other = Reason { code: Failure::ProofInvalid, message: "insufficient balance".into() };
    let (s, ok) = engine_says(other, Some(Status::VerificationFailed)).await;
    assert_eq!(s, StatusCode::OK, "{ok}");
    assert_eq!(ok["status"], "VERIFICATION_FAILED");
    std::sync::Arc::into_inner(app).unwrap().close().await;
}

/// Exactly one request moved the intent; every other one lost the
/// compare-and-set and was told so.
fn assert_one_winner(answers: &[(StatusCode, Value)]) {
    assert_eq!(answers.iter().filter(|(s, _)| *s == StatusCode::OK).count(), 1, "{answers:?}");
    for (s, body) in answers.iter().filter(|(s, _)| *s != StatusCode::OK) {
        assert_eq!(*s, StatusCode::CONFLICT, "{body}");
        assert_eq!(message(body), "invalid intent status for this operation", "{body}");
    }
}

async fn concurrent_proofs_make_one_transition(b: Backend) {
    let app = App::start(b, "").await;
    let r = create(&app, body("2")).await;
    let id = r["intent_id"].as_str().unwrap().to_string();
    let payer = PrivateKeySigner::random();
    // 50 distinct, individually valid proofs (different nonces) at once.
    let proofs: Vec<String> = (0..50).map(|n| pay(&r["payment_requirements"], &payer, n as u8 + 1, None)).collect();
    let app = std::sync::Arc::new(app);
    let calls = proofs.into_iter().map(|p| {
        let app = app.clone();
        let url = format!("/api/intents/{id}");
        tokio::spawn(async move { app.call("POST", &url, Some(json!({ "settle_proof": p })), &[]).await })
    });
    let answers: Vec<(StatusCode, Value)> = futures::future::join_all(calls).await.into_iter().map(Result::unwrap).collect();
    assert_one_winner(&answers);
    let n: i64 =
        sqlx::Row::get(&sqlx::query("SELECT COUNT(*) AS n FROM settlement_queue").fetch_one(&app.state.db.pool).await.unwrap(), "n");
    assert_eq!(n, 1);
    std::sync::Arc::into_inner(app).unwrap().close().await;
}

async fn concurrent_executes_make_one_transition(b: Backend) {
    let app = App::start(b, "").await;
    let (_, auth) = app.agent("alice", None).await;
    let (_, r) = app.call("POST", "/v2/intents", Some(body("2")), &[("authorization", &auth)]).await;
    let url = format!("/v2/intents/{}/execute", r["intent_id"].as_str().unwrap());
    let app = std::sync::Arc::new(app);
    let calls = (0..50).map(|_| {
        let (app, url, auth) = (app.clone(), url.clone(), auth.clone());
        tokio::spawn(async move { app.call("POST", &url, None, &[("authorization", &auth)]).await })
    });
    let answers: Vec<(StatusCode, Value)> = futures::future::join_all(calls).await.into_iter().map(Result::unwrap).collect();
    assert_one_winner(&answers);
    std::sync::Arc::into_inner(app).unwrap().close().await;
}

async fn idempotency_keys(b: Backend) {
    let app = App::start(b, "").await;
    let key = [("idempotency-key", "order-42")];
    let (s1, first) = app.call("POST", "/api/intents", Some(body("7")), &key).await;
    let (s2, again) = app.call("POST", "/api/intents", Some(body("7")), &key).await;
    assert_eq!((s1, s2), (StatusCode::CREATED, StatusCode::CREATED));
    assert_eq!(first, again, "the original response, not a second intent");
    let n: i64 = sqlx::Row::get(&sqlx::query("SELECT COUNT(*) AS n FROM intents").fetch_one(&app.state.db.pool).await.unwrap(), "n");
    assert_eq!(n, 1);
    let (s, e) = app.call("POST", "/api/intents", Some(body("8")), &key).await;
    assert_error(s, &e, StatusCode::UNPROCESSABLE_ENTITY, "different request body");
    // A refused request is remembered as refused.
    let bad_key = [("idempotency-key", "bad-1")];
    let (s, e1) = app.call("POST", "/api/intents", Some(body("0.001")), &bad_key).await;
    let (_, e2) = app.call("POST", "/api/intents", Some(body("0.001")), &bad_key).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(e1, e2);
    // Keys are per agent on /v2: the same key from an agent is a new request.
    let (_, auth) = app.agent("alice", None).await;
    let (s, mine) = app.call("POST", "/v2/intents", Some(body("7")), &[("idempotency-key", "order-42"), ("authorization", &auth)]).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_ne!(mine["intent_id"], first["intent_id"]);
    app.close().await;
}

async fn malformed_bodies(b: Backend) {
    let app = App::start(b, "").await;
    let mut unknown = body("1");
    unknown["tip"] = json!("5");
    let (s, e) = app.call("POST", "/api/intents", Some(unknown), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "unknown field `tip`");
    let mut typed = body("1");
    typed["amount"] = json!(1.5);
    let (s, e) = app.call("POST", "/api/intents", Some(typed), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "invalid type");
    let req = axum::http::Request::post("/api/intents")
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{not json"))
        .unwrap();
    let (s, e) = app.raw(req).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "invalid JSON body");
    let huge = json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base", "email": "x".repeat(100_000) });
    let (s, e) = app.call("POST", "/api/intents", Some(huge), &[]).await;
    assert_error(s, &e, StatusCode::PAYLOAD_TOO_LARGE, "too large");
    let (s, e) = app.call("POST", "/api/intents/int_x", Some(json!({ "settle_proof": "x", "more": 1 })), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "unknown field");
    let (s, e) = app.call("DELETE", "/api/intents", None, &[]).await;
    assert_error(s, &e, StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
    app.close().await;
}

async fn sanctions_screen(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("sdn.txt");
    std::fs::write(&list, "0xBAD0000000000000000000000000000000000bad\n").unwrap();
    let app = App::start(b, &format!("[compliance]\nsanctions_files = [{:?}]\n", list.display().to_string())).await;
    let mut req = body("1");
    req["payer_address"] = json!("0xbad0000000000000000000000000000000000bad");
    // Advisory at create (SPEC): the intent is created, the hit recorded for
    // operators and never shown; settlement screens the payer again.
    let (s, listed) = app.call("POST", "/api/intents", Some(req), &[]).await;
    assert_eq!(s, StatusCode::CREATED, "{listed}");
    assert!(!listed.to_string().contains("listed"), "not in the public answer: {listed}");
    let id = listed["intent_id"].as_str().unwrap();
    let stored = stablerail::store::intents::get(&app.state.db, id).await.unwrap().unwrap();
    assert!(stored.payer_listed, "recorded for operators");
    let (_, read) = app.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert!(!read.to_string().contains("listed"), "not in a read: {read}");
    let mut ok = body("1");
    ok["payer_address"] = json!("0x0000000000000000000000000000000000000abc");
    create(&app, ok).await;
    app.close().await;
}

async fn recipients_that_cannot_receive(b: Backend) {
    let app = App::start(b, "").await;
    let token = app.state.config.chains["base"].assets["usdc"].token.clone();
    let proxy = app.state.keys.address(stablerail::family::keys::PROXY).await.unwrap();
    let relayer = app.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    for (recipient, why) in [
        ("0x0000000000000000000000000000000000000000".to_string(), "zero address"),
        (token.to_lowercase(), "token contract"),
        (proxy, "wallet of this service"),
        (relayer.to_lowercase(), "wallet of this service"),
        (COLLECTOR_BASE.to_string(), "wallet of this service"),
    ] {
        let (s, e) =
            app.call("POST", "/api/intents", Some(json!({ "recipient": recipient, "amount": "1", "payer_chain": "base" })), &[]).await;
        assert_error(s, &e, StatusCode::BAD_REQUEST, "invalid recipient address format");
        assert!(message(&e).contains(why), "{recipient}: {e}");
    }
    let n: i64 = sqlx::Row::get(&sqlx::query("SELECT COUNT(*) AS n FROM intents").fetch_one(&app.state.db.pool).await.unwrap(), "n");
    assert_eq!(n, 0, "nothing written");
    app.close().await;
}

async fn http_layer_rejections_and_strictness(b: Backend) {
    let app = App::start(b, "").await;
    // A body that is not declared JSON.
    let req = axum::http::Request::post("/api/intents")
        .header("content-type", "text/plain")
        .body(axum::body::Body::from(body("1").to_string()))
        .unwrap();
    let (s, e) = app.raw(req).await;
    assert_error(s, &e, StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
    let req = axum::http::Request::post("/api/intents/int_x").body(axum::body::Body::from("{}")).unwrap();
    let (s, e) = app.raw(req).await;
    assert_error(s, &e, StatusCode::UNSUPPORTED_MEDIA_TYPE, "application/json");
    // A path that is not UTF-8, percent-encoded.
    let (s, e) = app.call("GET", "/api/intents/%FF%FE", None, &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "malformed request");
    // Control characters in the Idempotency-Key, or in a field.
    let (s, e) = app.call("POST", "/api/intents", Some(body("1")), &[("idempotency-key", "a\tb")]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "Idempotency-Key");
    let (s, e) =
        app.call("POST", "/api/intents", Some(json!({ "recipient": MERCHANT, "amount": "1\u{0}", "payer_chain": "base" })), &[]).await;
    assert_error(s, &e, StatusCode::BAD_REQUEST, "control characters");
    // Surrounding whitespace is ignored, an empty optional field is absent.
    let v = create(&app, json!({ "recipient": format!(" {MERCHANT} "), "amount": " 7 ", "payer_chain": " base ", "target_chain": "", "payer_asset": " USDC " })).await;
    assert_eq!((v["target_chain"].as_str(), v["receiving_amount"].as_str()), (Some("base"), Some("7")), "{v}");
    let n: i64 = sqlx::Row::get(&sqlx::query("SELECT COUNT(*) AS n FROM intents").fetch_one(&app.state.db.pool).await.unwrap(), "n");
    assert_eq!(n, 1, "only the valid request wrote anything");
    app.close().await;
}

#[tokio::test]
async fn rate_limit_answers_429_with_retry_after() {
    let app = App::start(Backend::Sqlite, "").await;
    common::config::set_in_file(&app.dir.path().join("chains.toml"), "limits.requests_per_minute", 3);
    let state =
        stablerail::server::build_state(&app.dir.path().join("chains.toml"), "sqlite::memory:", stablerail::adapter::system_clock())
            .await
            .unwrap();
    let state2 = state.clone();
    let router = stablerail::api::router(state);
    use tower::ServiceExt;
    let mut last = None;
    for _ in 0..4 {
        let resp = router.clone().oneshot(axum::http::Request::get("/api/chains").body(axum::body::Body::empty()).unwrap()).await.unwrap();
        last = Some(resp);
    }
    let resp = last.unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let body: Value = serde_json::from_slice(&http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["statusCode"], 429);

    // On /v2 the budget is per agent: one agent's burst leaves another's intact.
    let now = stablerail::clock::now_ms();
    let mut tokens = Vec::new();
    for name in ["a", "b"] {
        let a = stablerail::store::agents::create_agent(&state2.db, None, name, now).await.unwrap();
        let c = stablerail::auth::issue_keys(&state2.db, &state2.pepper, &a.id, now).await.unwrap();
        tokens.push(format!("Bearer {}", c.bearer()));
    }
    let me = |t: &str| axum::http::Request::get("/v2/me").header("authorization", t).body(axum::body::Body::empty()).unwrap();
    let mut codes = Vec::new();
    for _ in 0..4 {
        codes.push(router.clone().oneshot(me(&tokens[0])).await.unwrap().status());
    }
    assert_eq!(codes[..3], [StatusCode::OK; 3]);
    assert_eq!(codes[3], StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(router.clone().oneshot(me(&tokens[1])).await.unwrap().status(), StatusCode::OK);
    app.close().await;
}

/// The fields the public SDKs model: `email` and `source_recipient` on the
/// create answer, `receiver_email` and `payer_wallet` on the read, `agent_id`
/// on the proof's answer for an agent's intent paid through `/api`, and
/// `solana-mainnet-beta` meaning `solana`.
async fn the_fields_the_public_sdks_read(b: Backend) {
    let app = App::start(b, "").await;
    stablerail::store::agents::set_recipient(&app.state.db, "shop@example.com", "base", MERCHANT).await.unwrap();
    let r = create(&app, json!({ "email": "shop@example.com", "amount": "1", "payer_chain": "base" })).await;
    assert_eq!(r["email"], "shop@example.com", "{r}");
    assert_eq!(r["source_recipient"], r["payment_requirements"]["payTo"], "{r}");
    assert!(r.get("receiver_email").is_none() && r.get("completed_at").is_none(), "{r}");
    let id = r["intent_id"].as_str().unwrap();
    let (_, read) = app.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(read["receiver_email"], "shop@example.com", "{read}");
    assert!(read.get("payer_wallet").is_none(), "nobody paid yet: {read}");
    let plain = create(&app, body("1")).await;
    assert!(plain.get("email").is_none(), "{plain}");
    assert_eq!(plain["source_recipient"], plain["payment_requirements"]["payTo"]);

    // An agent's intent, paid through the public flow.
    let (agent, bearer) = app.agent("sdk-bot", None).await;
    let (s, mine) = app.call("POST", "/v2/intents", Some(body("2")), &[("authorization", &bearer)]).await;
    assert_eq!(s, StatusCode::CREATED, "{mine}");
    let id = mine["intent_id"].as_str().unwrap();
    let payer = PrivateKeySigner::random();
    let proof = pay(&mine["payment_requirements"], &payer, 7, None);
    let (s, ok) = app.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!((s, &ok["agent_id"]), (StatusCode::OK, &json!(agent)), "{ok}");
    let (_, read) = app.call("GET", &format!("/v2/intents/{id}"), None, &[("authorization", &bearer)]).await;
    assert_eq!(read["payer_wallet"], payer.address().to_checksum(None), "{read}");
    assert!(read.get("completed_at").is_none(), "not paid out yet: {read}");

    // An SDK's name for Solana is Solana: the same answer as our name gets.
    let ask = |chain: &str| json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": chain });
    let ours = app.call("POST", "/api/intents", Some(ask("solana")), &[]).await;
    let theirs = app.call("POST", "/api/intents", Some(ask("solana-mainnet-beta")), &[]).await;
    assert_eq!((ours.0, message(&ours.1)), (theirs.0, message(&theirs.1)), "{} / {}", ours.1, theirs.1);
    app.close().await;
}
