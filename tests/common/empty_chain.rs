//! A JSON-RPC node of an EVM chain on which nothing is deployed: every
//! address answers `eth_getCode` with no code (an EOA), anything else is
//! "method not found", which adapters read as an unreachable chain. The
//! offline tests' chain (`BASE_USDC`): a payer's code is read before its
//! signature is checked (WIT 0.5.0), and their payers are fresh keys.

use std::sync::LazyLock;

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// Where it answers; `BASE_USDC` names it.
pub const URL: &str = "http://127.0.0.1:21445";

async fn answer(Json(req): Json<Value>) -> Json<Value> {
    let id = req["id"].clone();
    Json(match req["method"].as_str() {
        Some("eth_getCode") => json!({ "jsonrpc": "2.0", "id": id, "result": "0x" }),
        _ => json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "method not found" } }),
    })
}

static STARTED: LazyLock<()> = LazyLock::new(|| {
    let listener = std::net::TcpListener::bind("127.0.0.1:21445").expect("the empty chain's port is free");
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, Router::new().route("/", post(answer))).await.unwrap();
        });
    });
});

/// Start it once per test binary (idempotent).
pub fn ensure() {
    LazyLock::force(&STARTED);
}
