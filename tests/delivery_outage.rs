//! A webhook receiver down for two minutes (issue 50). Its own module so
//! that its two and a half minutes of waiting start early in the suite,
//! beside other tests, instead of ending it.

use crate::common;
use crate::webhooks::{check_in_order, pay, Receiver};

use std::time::Duration;

use common::devnet::Devnet;
use serde_json::json;

/// The receiver down for two minutes while intents settle, then up: each
/// change arrives (by the retry schedule: attempts 5, 15, 35, 75, 155 s
/// after the first), in order, under the ids they were first sent with.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_receiver_down_two_minutes_gets_everything_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::new(tmp.path());
    let dn = Devnet::start(29845, "base", "").await;
    let (_, bearer) = dn.agent().await;
    let (s, made) = dn.call("POST", "/v2/webhook_endpoints", Some(json!({ "url": rx.url() })), &[("authorization", &bearer)]).await;
    assert_eq!(s, 201, "{made}");
    rx.secrets(&[made["secret"].as_str().unwrap()]);
    let down = std::time::Instant::now();
    let intents = [pay(&dn, &bearer, 1).await, pay(&dn, &bearer, 2).await];
    let left = Duration::from_secs(120).saturating_sub(down.elapsed());
    tokio::time::sleep(left).await;
    assert!(!rx.out.exists(), "nothing could be received");
    let _running = rx.start();
    for id in &intents {
        check_in_order(&dn, &rx, id, &[0]).await;
    }
    // The ids sent while down are the ids received. The receiver can see a
    // body a moment before its attempt is recorded: the ledger is read until
    // it says so too (or 10 s pass).
    let read = || stablerail::store::webhooks::deliveries_of(&dn.state.db, made["id"].as_str().unwrap(), 100);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut ledger = read().await.unwrap();
    while !ledger.iter().all(|d| d.status == "delivered") && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ledger = read().await.unwrap();
    }
    assert!(ledger.iter().all(|d| d.status == "delivered"));
    // Each intent's first change was tried through the outage (0, 5, 15,
    // 35, 75 s, then delivered); the later ones waited behind it, once each.
    let retried: Vec<i64> = ledger.iter().map(|d| d.attempts).filter(|&n| n > 1).collect();
    assert_eq!(retried.len(), intents.len(), "{:?}", ledger.iter().map(|d| d.attempts).collect::<Vec<_>>());
    assert!(retried.iter().all(|&n| n >= 5), "{retried:?}");
    let text = std::fs::read_to_string(&rx.out).unwrap();
    assert!(ledger.iter().all(|d| text.contains(&d.event_id)));
}
