//! Exactly once on Solana under `kill -9`. The server (a separate process)
//! signs and stores a payout to a Solana merchant and sends it to a node that
//! holds it unprocessed; the server is killed before the payout is
//! confirmed. What the node then does with the payout decides the case:
//! - it was lost while its blockhash is still valid: the restarted server
//!   re-sends the stored bytes, which land;
//! - it was lost and its blockhash expired: the server sees the signature
//!   absent from the chain's history and the blockhash gone, and only then
//!   authorizes a new payout;
//! - it landed while the server was down and its blockhash expired since:
//!   the server finds it in the chain's history and builds nothing.
//!
//! Each way the merchant is paid once, and the proxy wallet pays once.

use crate::common;

use std::time::Duration;

use serde_json::json;
use stablerail::config::Family;
use stablerail::family::keys::Role;

use common::devnet::{rpc, x402_pay, Devnet};
use common::process::{free_port, http, kill, serve, stored_txs, wait_status};

/// Blocks a blockhash stays valid for, plus margin.
const EXPIRY_SLOTS: u64 = 160;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_after_a_solana_payout_is_stored_pays_the_merchant_once() {
    // No engine in this process: the server process is the only one.
    let dn = Devnet::start_with(24345, "base,solana", "", 0, None).await;
    dn.service_setting("retry_max_backoff_seconds", 2);
    dn.service_setting("receipt_timeout_seconds", 2);
    // The killed server's claims lapse after this.
    dn.service_setting("claim_lease_seconds", 6);
    let sol = dn.sol_rpc();
    let proxy = dn.state.keys.address(&Role::Proxy.key_name(Family::Solana)).await.unwrap();

    for (n, release) in ["drop", "expire", "land"].into_iter().enumerate() {
        let merchant = match n {
            0 => "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
            1 => "GokivDYuQXPZCWRkwMhdH2h91KpDQXBEmpgBgs55bnpH",
            _ => "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH",
        };
        let port = free_port();
        let server = serve(&dn, port);
        rpc(&sol, "devnet_hold", json!([])).await;
        let (s, intent) = http(
            port,
            "POST",
            "/api/intents",
            Some(json!({ "recipient": merchant, "amount": "2", "payer_chain": "base", "target_chain": "solana" })),
        );
        assert_eq!(s, 201, "{intent}");
        let id = intent["intent_id"].as_str().unwrap().to_string();
        let proof = x402_pay(&intent["payment_requirements"], &dn.payer(n).1);
        let (s, r) = http(port, "POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })));
        assert_eq!(s, 200, "{r}");
        wait_status(port, &id, "TARGET_SETTLING", Duration::from_secs(60));
        for _ in 0..100 {
            if !stored_txs(&dn, &id, "target").await.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let first = stored_txs(&dn, &id, "target").await;
        assert_eq!(first.len(), 1, "the payout is signed and stored");
        // Killed once the node holds it: stored and sent, not yet processed
        // (a busy machine may take a moment to send it).
        for _ in 0..200 {
            if rpc(&sol, "devnet_held", json!([])).await["held"].as_u64().unwrap_or(0) >= 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let proxy_before = dn.sol_balance("usdc", &proxy).await;
        kill(server.0.id(), "-KILL");
        drop(server);

        let outcome = match release {
            "drop" => rpc(&sol, "devnet_release", json!(["drop"])).await,
            "expire" => {
                let r = rpc(&sol, "devnet_release", json!(["drop"])).await;
                rpc(&sol, "devnet_advanceSlots", json!([EXPIRY_SLOTS])).await;
                r
            }
            _ => {
                let r = rpc(&sol, "devnet_release", json!(["land"])).await;
                rpc(&sol, "devnet_advanceSlots", json!([EXPIRY_SLOTS])).await;
                r
            }
        };
        assert!(outcome["held"].as_u64().unwrap() >= 1, "{release}: the node held the payout: {outcome}");
        if release == "land" {
            assert_eq!(dn.sol_balance("usdc", merchant).await, 2_000_000, "the held payout landed while the server was down");
        } else {
            assert_eq!(dn.sol_balance("usdc", merchant).await, 0, "{release}: nothing landed while the server was down");
        }

        let started = std::time::Instant::now();
        let port = free_port();
        let _server = serve(&dn, port);
        let done = wait_status(port, &id, "TARGET_SETTLED", Duration::from_secs(90));
        eprintln!("{release}: settled {} ms after the restart", started.elapsed().as_millis());
        assert_eq!(dn.sol_balance("usdc", merchant).await, 2_000_000, "{release}: the merchant is paid exactly once");
        assert_eq!(dn.sol_balance("usdc", &proxy).await, proxy_before - 2_000_000, "{release}: the proxy paid once");
        let payout = done["target_payment"]["tx_hash"].as_str().unwrap();
        let status = rpc(&sol, "getSignatureStatuses", json!([[payout], { "searchTransactionHistory": true }])).await;
        assert!(status["value"][0]["err"].is_null(), "{release}: the recorded payout is the one on chain: {status}");
        if release == "expire" {
            assert_ne!(payout, first[0], "a new payout, built once the first could never land");
        } else {
            assert_eq!(payout, first[0], "{release}: the stored payout, nothing built again");
        }
    }
}
