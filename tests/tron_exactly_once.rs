//! Exactly once on TRON under `kill -9`. The server (a separate process)
//! signs and stores the relayer's settlement of a TRON payer's Permit2
//! authorization and broadcasts it to a node that holds it unexecuted; the
//! server is killed before it is confirmed. Then the node either loses it
//! (the restarted server re-sends the stored bytes), or loses it and the
//! transaction expires (the server sees it unknown and expired, and only then
//! signs a new settlement), or executes it while the server is down (the
//! server finds it and builds nothing). Each way the payer pays once.

use crate::common;

use std::time::Duration;

use serde_json::json;
use stablerail::config::Family;
use stablerail::family::keys::Role;

use common::app::MERCHANT;
use common::devnet::{tron_pay, tron_send, Devnet};
use common::process::{free_port, http, kill, serve, stored_txs, wait_status};

use common::devnet::{post_json as post, trc20_balance as trc20};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_after_a_tron_settlement_is_stored_charges_the_payer_once() {
    let dn = Devnet::start_with(24645, "base,tron", "", 0, None).await;
    dn.service_setting("retry_max_backoff_seconds", 2);
    dn.service_setting("receipt_timeout_seconds", 2);
    dn.service_setting("claim_lease_seconds", 6);
    let t = dn.info["tron"].clone();
    let api = t["http"].as_str().unwrap().to_string();
    let token = t["assets"]["usdt"]["address"].as_str().unwrap().to_string();
    let collection = dn.state.keys.address(&Role::Collection.key_name(Family::Tron)).await.unwrap();

    for (n, release) in ["drop", "expire", "land"].into_iter().enumerate() {
        let payer = t["payers"][n]["address"].as_str().unwrap().to_string();
        let key = t["payers"][n]["private_key"].as_str().unwrap().to_string();
        let approved = tron_send(&api, &key, &token, "", u64::MAX, &["--approve", t["permit2"].as_str().unwrap()]);
        assert_eq!(approved["info"]["receipt"]["result"], "SUCCESS", "{release}: {approved}");
        let port = free_port();
        let server = serve(&dn, port);
        post(&format!("{api}/devnet/hold"), json!({})).await;
        let (s, intent) = http(
            port,
            "POST",
            "/api/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "2", "payer_chain": "tron", "payer_asset": "usdt", "target_chain": "base" })),
        );
        assert_eq!(s, 201, "{intent}");
        let id = intent["intent_id"].as_str().unwrap().to_string();
        let sending: u128 = intent["payment_requirements"]["amount"].as_str().unwrap().parse().unwrap();
        let before = (trc20(&api, &token, &payer).await, trc20(&api, &token, &collection).await);
        let (s, r) = http(
            port,
            "POST",
            &format!("/api/intents/{id}"),
            Some(json!({ "settle_proof": tron_pay(&intent["payment_requirements"], &key) })),
        );
        assert_eq!(s, 200, "{r}");
        for _ in 0..200 {
            if !stored_txs(&dn, &id, "source").await.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let first = stored_txs(&dn, &id, "source").await;
        let (_, now) = http(port, "GET", &format!("/api/intents/{id}"), None);
        assert_eq!(first.len(), 1, "{release}: the settlement is signed and stored: {now}");
        // Killed once the node holds the broadcast: stored and sent, not
        // yet executed (a busy machine may take a moment to send it).
        for _ in 0..200 {
            if post(&format!("{api}/devnet/held"), json!({})).await["held"].as_u64().unwrap_or(0) >= 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        kill(server.0.id(), "-KILL");
        drop(server);

        let mode = if release == "land" { "land" } else { "drop" };
        let out = post(&format!("{api}/devnet/release"), json!({ "mode": mode })).await;
        assert!(out["held"].as_u64().unwrap() >= 1, "{release}: the node held the settlement: {out}");
        if release != "drop" {
            post(&format!("{api}/devnet/advance_time"), json!({ "seconds": 120 })).await;
        }
        let moved = if release == "land" { sending } else { 0 };
        assert_eq!(trc20(&api, &token, &payer).await, before.0 - moved, "{release}: while the server was down");

        let port = free_port();
        let _server = serve(&dn, port);
        let done = wait_status(port, &id, "TARGET_SETTLED", Duration::from_secs(90));
        assert_eq!(trc20(&api, &token, &payer).await, before.0 - sending, "{release}: the payer paid exactly once");
        assert_eq!(trc20(&api, &token, &collection).await, before.1 + sending, "{release}: collected once");
        let recorded = done["source_payment"]["tx_hash"].as_str().unwrap();
        let info = post(&format!("{api}/wallet/gettransactioninfobyid"), json!({ "value": recorded })).await;
        assert_eq!(info["receipt"]["result"], "SUCCESS", "{release}: the recorded settlement is the executed one");
        if release == "expire" {
            assert_ne!(recorded, first[0], "a new settlement, signed once the first had expired unknown");
        } else {
            assert_eq!(recorded, first[0], "{release}: the stored settlement, nothing signed again");
        }
    }
}
