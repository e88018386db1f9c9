//! Durable before it leaves, on each family. A stand-in for the target
//! chain's node (a proxy speaking its protocol to the real node behind it)
//! takes a consistent copy of the database (`VACUUM INTO`) at the instant a
//! signed transaction reaches it, before passing it on: what a power cut at
//! that instant leaves when every commit that returned is on disk. The
//! service is then started on that copy, and the merchant, read on chain,
//! is paid once. Were a payout broadcast before its row was durable, the
//! copy would lack it, the restarted service would sign a second payout,
//! and Solana and TRON (no nonce to stop it) would pay twice.

use crate::common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{json, Value};

use common::devnet::{trc20_balance, x402_pay, Devnet};
use common::process::{free_port, http, serve_on, wait_status};

/// The node's stand-in: forwards everything; a request that sends a signed
/// transaction (`marker` in its path or body) first copies the database.
struct Proxy {
    upstream: String,
    db: String,
    copy: PathBuf,
    marker: &'static str,
    copies: AtomicUsize,
}

async fn forward(State(p): State<Arc<Proxy>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> (StatusCode, HeaderMap, Bytes) {
    if uri.path().contains(p.marker) || String::from_utf8_lossy(&body).contains(p.marker) {
        // The last send before the payout settles is the payout's: each
        // copy replaces the one before.
        let next = p.copy.with_extension("next");
        let _ = std::fs::remove_file(&next);
        let pool = sqlx::SqlitePool::connect(&p.db).await.unwrap();
        sqlx::query(&format!("VACUUM INTO '{}'", next.display())).execute(&pool).await.unwrap();
        pool.close().await;
        std::fs::rename(&next, &p.copy).unwrap();
        p.copies.fetch_add(1, Ordering::SeqCst);
    }
    let url = format!("{}{}", p.upstream.trim_end_matches('/'), uri.path_and_query().map_or("", |q| q.as_str()));
    let mut req = reqwest::Client::new().request(reqwest::Method::from_bytes(method.as_str().as_bytes()).unwrap(), url);
    if let Some(t) = headers.get("content-type").and_then(|v| v.to_str().ok()) {
        req = req.header("content-type", t);
    }
    let resp = req.body(body.to_vec()).send().await.unwrap();
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
    let mut out = HeaderMap::new();
    if let Some(t) = resp.headers().get("content-type").and_then(|v| v.to_str().ok()) {
        out.insert("content-type", t.parse().unwrap());
    }
    (status, out, resp.bytes().await.unwrap())
}

async fn start_proxy(p: Arc<Proxy>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(forward).with_state(p);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A merchant's balance of the asset paid on the target chain.
async fn merchant_balance(dn: &Devnet, target: &str, merchant: &str) -> u128 {
    match target {
        "solana" => u128::from(dn.sol_balance("usdc", merchant).await),
        "tron" => trc20_balance(&dn.tron_api(), dn.info["tron"]["assets"]["usdt"]["address"].as_str().unwrap(), merchant).await,
        chain => u128::try_from(dn.balance_of(chain, "usdc", merchant).await).unwrap(),
    }
}

async fn a_power_cut_at_the_payouts_broadcast_pays_once(port: u16, target: &str) {
    let dn = Devnet::start_with(port, &format!("base,{target}"), "", 0, None).await;
    dn.service_setting("claim_lease_seconds", 4);
    dn.service_setting("retry_max_backoff_seconds", 2);
    let (upstream, marker, asset, merchant) = match target {
        "solana" => (dn.sol_rpc(), "\"sendTransaction\"", "usdc", dn.sol_payer(3).0),
        "tron" => (dn.tron_api(), "/wallet/broadcasthex", "usdt", tron_wire::address::show(&alloy_primitives::Address::repeat_byte(0x7d))),
        _ => (dn.rpc_url(target), "eth_sendRawTransaction", "usdc", common::app::MERCHANT.to_string()),
    };
    let db = dn.dir.path().join("sr.db");
    let proxy = Arc::new(Proxy {
        upstream,
        db: format!("sqlite://{}", db.display()),
        copy: dn.dir.path().join("at-broadcast.db"),
        marker,
        copies: AtomicUsize::new(0),
    });
    dn.set(&format!("chains.{target}.rpc_urls"), vec![start_proxy(proxy.clone()).await]);

    let first = free_port();
    let service = serve_on(&dn, first, &db, None, "warn");
    let body = json!({ "recipient": merchant, "amount": "2", "payer_chain": "base", "target_chain": target, "target_asset": asset });
    let (s, intent) = http(first, "POST", "/api/intents", Some(body));
    assert_eq!(s, 201, "{target}: {intent}");
    let id = intent["intent_id"].as_str().unwrap().to_string();
    let receiving = u128::try_from(common::devnet::scaled(intent["receiving_amount"].as_str().unwrap(), 6)).unwrap();
    let before = merchant_balance(&dn, target, &merchant).await;
    let proof = x402_pay(&intent["payment_requirements"], &dn.payer(2).1);
    let (s, r) = http(first, "POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })));
    assert_eq!(s, 200, "{target}: {r}");
    let done = wait_status(first, &id, "TARGET_SETTLED", Duration::from_secs(120));
    drop(service);
    assert!(proxy.copies.load(Ordering::SeqCst) >= 1, "{target}: the payout went through the node's stand-in");
    assert_eq!(merchant_balance(&dn, target, &merchant).await, before + receiving, "{target}: paid");

    // The power comes back on the database as it was at the broadcast.
    let copy = dn.dir.path().join("restored.db");
    std::fs::copy(&proxy.copy, &copy).unwrap();
    let restored = sqlx::SqlitePool::connect(&format!("sqlite://{}", copy.display())).await.unwrap();
    let (status,): (String,) = sqlx::query_as("SELECT status FROM intents WHERE id = $1").bind(&id).fetch_one(&restored).await.unwrap();
    assert_eq!(status, "TARGET_SETTLING", "{target}: the copy is from the payout's broadcast");
    let stored: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM chain_transactions WHERE intent_id = $1 AND leg = 'target'")
        .bind(&id)
        .fetch_one(&restored)
        .await
        .unwrap();
    assert!(stored.0 >= 1, "{target}: the payout's signed bytes were durable before they left");
    restored.close().await;
    let second = free_port();
    let _service = serve_on(&dn, second, &copy, None, "warn");
    let again: Value = wait_status(second, &id, "TARGET_SETTLED", Duration::from_secs(120));
    assert_eq!(again["target_payment"]["tx_hash"], done["target_payment"]["tx_hash"], "{target}: the same payout, found again");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(merchant_balance(&dn, target, &merchant).await, before + receiving, "{target}: paid once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_power_cut_at_an_evm_payouts_broadcast_pays_once() {
    a_power_cut_at_the_payouts_broadcast_pays_once(27745, "arbitrum").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_power_cut_at_a_solana_payouts_broadcast_pays_once() {
    a_power_cut_at_the_payouts_broadcast_pays_once(27845, "solana").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_power_cut_at_a_tron_payouts_broadcast_pays_once() {
    a_power_cut_at_the_payouts_broadcast_pays_once(27945, "tron").await;
}
