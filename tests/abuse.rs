//! What a stranger can do to keep the service from serving others, done by
//! the test itself against the real binary where the socket matters:
//! forged and rotated client addresses, slow headers and idle sockets,
//! scraping the probes, growing tables, paging past a key's own rows, and
//! asking who an email is.

use crate::common;
use crate::facilitator::facilitator_key;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::devnet::{x402_pay, Devnet, METRICS_TOKEN};
use common::process::{free_port, serve};
use serde_json::json;

/// `GET path` with extra headers; the status.
async fn status_of(port: u16, path: &str, headers: &[(&str, &str)]) -> u16 {
    let mut req = reqwest::Client::new().get(format!("http://127.0.0.1:{port}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap().status().as_u16()
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_count_the_client_a_trusted_proxy_forwarded_and_ipv6_clients_by_their_64() {
    let dn = Devnet::start(28245, "base", "").await;
    dn.set("limits.requests_per_minute", 3);
    dn.set("service.trusted_proxies", vec!["127.0.0.1/32".to_string()]);
    let port = free_port();
    let service = serve(&dn, port);
    let from = |xff: &'static str| async move { status_of(port, "/api/chains", &[("x-forwarded-for", xff)]).await };

    for _ in 0..3 {
        assert_eq!(from("198.51.100.1").await, 200);
    }
    assert_eq!(from("198.51.100.1").await, 429, "over its own rate");
    assert_eq!(from("203.0.113.9, 198.51.100.1").await, 429, "a hop the client wrote itself does not change who it is");
    assert_eq!(from("198.51.100.2").await, 200, "another client behind the same proxy has its own budget");
    // One /64 is one client, whichever of its addresses it uses.
    for a in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3"] {
        assert_eq!(from(a).await, 200, "{a}");
    }
    assert_eq!(from("2001:db8:1:2::4").await, 429, "the fourth address of the same /64");
    assert_eq!(from("2001:db8:1:3::1").await, 200, "the next /64 is another client");
    // But one /48 (one customer of a host: 65,536 /64s) has ten times a
    // client's budget in all, whichever /64s it rotates through.
    let mut site_limited = false;
    for n in 0x10..0x30 {
        let status = status_of(port, "/api/chains", &[("x-forwarded-for", &format!("2001:db8:1:{n:x}::1"))]).await;
        assert!(status == 200 || status == 429, "{status}");
        site_limited |= status == 429;
    }
    assert!(site_limited, "fresh /64s of one /48 ran into the site's limit");
    assert_eq!(from("2001:db8:2::1").await, 200, "another /48 is another site");
    // A client behind the proxy that writes its own `Forwarded: for=<random>`
    // on each request (the proxy passes it through, appending only
    // X-Forwarded-For) does not pick its own key: the real client's limit applies.
    let mut limited = 0;
    for n in 0..6u8 {
        let own = format!("for=192.0.2.{n}");
        let headers = [("x-forwarded-for", "198.51.100.50"), ("forwarded", own.as_str())];
        if status_of(port, "/api/chains", &headers).await == 429 {
            limited += 1;
        }
    }
    assert_eq!(limited, 3, "three of six over the real client's limit of three");
    drop(service);
    // Named `forwarded` (a proxy that writes RFC 7239), that header is read.
    dn.set("service.client_ip_header", "forwarded");
    let port = free_port();
    let service = serve(&dn, port);
    let forwarded = [("forwarded", r#"for="[2001:db8:9:9::1]:443";proto=https"#), ("x-forwarded-for", "198.51.100.1")];
    for _ in 0..3 {
        assert_eq!(status_of(port, "/api/chains", &forwarded).await, 200);
    }
    assert_eq!(status_of(port, "/api/chains", &forwarded).await, 429);
    drop(service);
    dn.set("service.client_ip_header", "x-forwarded-for");

    // Without trusted proxies the headers are ignored: everyone here is 127.0.0.1.
    dn.set("service.trusted_proxies", Vec::<String>::new());
    let port = free_port();
    let _service = serve(&dn, port);
    for xff in ["198.51.100.11", "198.51.100.12", "198.51.100.13"] {
        assert_eq!(status_of(port, "/api/chains", &[("x-forwarded-for", xff)]).await, 200);
    }
    assert_eq!(status_of(port, "/api/chains", &[("x-forwarded-for", "198.51.100.14")]).await, 429, "forged addresses buy nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_headers_are_cut_off_and_idle_connections_do_not_stop_anyone() {
    let dn = Devnet::start(28345, "base", "").await;
    dn.set("service.header_read_timeout_seconds", 3);
    let port = free_port();
    let _service = serve(&dn, port);
    let at = format!("127.0.0.1:{port}");

    // A thousand sockets that never send a byte, held open...
    let idle: Vec<TcpStream> = (0..1000).map(|_| TcpStream::connect(&at).unwrap()).collect();
    // ... while other clients are answered.
    for _ in 0..20 {
        assert_eq!(status_of(port, "/api/chains", &[]).await, 200);
    }
    // A client that starts its headers and never finishes them is closed.
    let mut slow = TcpStream::connect(&at).unwrap();
    slow.write_all(b"GET /api/chains HTTP/1.1\r\nHost: stablerail\r\nX-Slow: ").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 512];
    let read = slow.read(&mut buf);
    let answered = matches!(read, Ok(n) if n > 0).then(|| String::from_utf8_lossy(&buf).to_string());
    assert!(
        matches!(read, Ok(0) | Err(_)) || answered.as_deref().is_some_and(|a| a.starts_with("HTTP/1.1 408")),
        "the slow client was closed, not served: {read:?} {answered:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20), "closed by the header timeout, not by the test's own");
    // And so are the idle ones, by the same timeout.
    let mut first = idle.into_iter().next().unwrap();
    first.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    assert!(matches!(first.read(&mut buf), Ok(0) | Err(_)), "an idle socket is not held for ever");
    assert_eq!(status_of(port, "/api/chains", &[]).await, 200);

    // An HTTP/2 client that sends its preface and settings, then goes
    // quiet (reads nothing, answers no ping): closed, not held.
    let mut quiet = TcpStream::connect(&at).unwrap();
    quiet.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").unwrap();
    let started = Instant::now();
    let mut rest = vec![];
    quiet.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let read = quiet.read_to_end(&mut rest);
    assert!(read.is_ok() || started.elapsed() < Duration::from_secs(25), "the quiet connection was closed: {read:?}");
    assert!(started.elapsed() < Duration::from_secs(20), "closed by the ping timeout, not by the test's own: {:?}", started.elapsed());
    assert!(rest.len() >= 9 && rest[3] == 4, "it spoke HTTP/2 first (its SETTINGS)");
}

/// The sum of the metric lines that start with `name{` and hold `filter`.
fn metric(text: &str, name: &str, filter: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(filter))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_stay_off_the_public_port_and_probes_read_the_chain_once_per_interval() {
    let dn = Devnet::start(28445, "base", "").await;
    let metrics_port = free_port();
    dn.set("service.metrics_listen", format!("127.0.0.1:{metrics_port}"));
    dn.set("service.probe_cache_seconds", 120);
    let port = free_port();
    let service = serve(&dn, port);
    common::wait_for_port(metrics_port);

    let bearer = format!("Bearer {METRICS_TOKEN}");
    assert_eq!(status_of(port, "/metrics", &[]).await, 401, "the API's address wants the token");
    assert_eq!(status_of(port, "/metrics", &[("authorization", "Bearer guess")]).await, 401);
    assert_eq!(status_of(port, "/metrics", &[("authorization", &bearer)]).await, 200);
    let scrape = || async move { reqwest::get(format!("http://127.0.0.1:{metrics_port}/metrics")).await.unwrap().text().await.unwrap() };
    let first = scrape().await;
    assert!(first.contains("stablerail_http_requests_total"), "{first}");

    // Thirty readiness checks ask the chain once.
    let asked = |t: &str| metric(t, "stablerail_rpc_calls_total", "method=\"eth_chainId\"");
    let before = asked(&first);
    for _ in 0..30 {
        assert_eq!(status_of(port, "/readyz", &[]).await, 200);
    }
    let after = scrape().await;
    assert!(asked(&after) - before <= 1.0, "{} chain probes for 30 readiness checks", asked(&after) - before);

    // The database's view is read once per interval, not per scrape.
    let waiting = |t: &str| metric(t, "stablerail_intents", "status=\"AWAITING_PAYMENT\"");
    let seen = waiting(&after);
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "base" });
    let (s, created) = common::process::http(port, "POST", "/api/intents", Some(body));
    assert_eq!(s, 201, "{created}");
    for _ in 0..20 {
        assert_eq!(waiting(&scrape().await), seen, "the view of the last read, not a query per scrape");
    }
    drop(service);

    // No token configured: the API's address has no /metrics at all.
    dn.set("service.metrics_token", "");
    let port = free_port();
    let _service = serve(&dn, port);
    assert_eq!(status_of(port, "/metrics", &[("authorization", &bearer)]).await, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn retention_deletes_what_nobody_needs_and_nothing_else() {
    let dn = Devnet::start(28545, "base", "").await;
    let db = &dn.state.db.pool;
    let now = stablerail::clock::now_ms();
    let hour = 3_600_000i64;
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base", "target_chain": "base" });
    let (old, _) = dn.create_public(body.clone()).await;
    let (live, _) = dn.create_public(body).await;
    sqlx::query("UPDATE intents SET status = 'EXPIRED', updated_at = $1 WHERE id = $2")
        .bind(now - 3 * hour)
        .bind(&old)
        .execute(db)
        .await
        .unwrap();
    // Refused facilitator settlements: one an hour and a half old, one three hours; and one still queued.
    for (id, status, age) in [("xs_recent", "failed", 90 * 60_000), ("xs_old", "failed", 3 * hour), ("xs_queued", "queued", 3 * hour)] {
        sqlx::query(
            "INSERT INTO x402_settlements (id, replay_key, payload_hash, client, chain, asset, network, scheme, payer, pay_to, amount, \
             requirements, payload, status, available_at, created_at, updated_at) \
             VALUES ($1, $1, $1, 'shop', 'base', 'usdc', 'eip155:8453', 'exact', '0xpayer', '0xshop', '1', '{\"r\":1}', $2, $3, $4, $4, $4)",
        )
        .bind(id)
        .bind("x".repeat(60_000))
        .bind(status)
        .bind(now - age)
        .execute(db)
        .await
        .unwrap();
    }
    // A registered swap never seen on its chain, and one that completed.
    for (id, status, code) in [("swp_unseen", "FAILED", Some("source_not_confirmed")), ("swp_done", "DONE", None)] {
        sqlx::query(
            "INSERT INTO swap_intents (id, from_chain, to_chain, source_tx_hash, from_token, to_token, payer_address, recipient_address, \
             sending_token_amount, status, error_code, created_at, updated_at, next_check_at) \
             VALUES ($1, 'base', 'base', $1, 't', 't', 'p', 'r', '1', $2, $3, $4, $4, $4)",
        )
        .bind(id)
        .bind(status)
        .bind(code)
        .bind(now - 3 * hour)
        .execute(db)
        .await
        .unwrap();
    }
    let keep = stablerail::config::Retention {
        expired_intents_hours: 2,
        failed_settlement_payload_hours: 1,
        failed_settlements_hours: 2,
        unseen_swaps_hours: 2,
        webhook_deliveries_hours: 2,
    };
    let pruned = stablerail::store::retention::prune(&dn.state.db, &keep, now).await.unwrap();
    assert_eq!(
        pruned,
        stablerail::store::retention::Pruned {
            expired_intents: 1,
            payloads_dropped: 2,
            failed_settlements: 1,
            unseen_swaps: 1,
            webhook_deliveries: 0
        },
        "one batch of each kind"
    );
    let ids = |table: &'static str| async move {
        let rows: Vec<(String,)> = sqlx::query_as(&format!("SELECT id FROM {table} ORDER BY id")).fetch_all(db).await.unwrap();
        rows.into_iter().map(|r| r.0).collect::<Vec<_>>()
    };
    assert_eq!(ids("intents").await, vec![live.clone()], "the expired intent is gone, the live one stays");
    let (orphans,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM events WHERE subject_kind = 'intent' AND subject_id = $1")
        .bind(&old)
        .fetch_one(db)
        .await
        .unwrap();
    assert_eq!(orphans, 0, "its events went with it");
    assert_eq!(ids("x402_settlements").await, vec!["xs_queued".to_string(), "xs_recent".to_string()]);
    let (payload,): (String,) = sqlx::query_as("SELECT payload FROM x402_settlements WHERE id = 'xs_recent'").fetch_one(db).await.unwrap();
    assert_eq!(payload, "", "the refused payload is dropped before the row");
    let (queued,): (String,) = sqlx::query_as("SELECT payload FROM x402_settlements WHERE id = 'xs_queued'").fetch_one(db).await.unwrap();
    assert_eq!(queued.len(), 60_000, "a settlement in progress keeps everything");
    assert_eq!(ids("swap_intents").await, vec!["swp_done".to_string()]);
    let (_, read) = dn.call("GET", &format!("/api/intents/{live}"), None, &[]).await;
    assert_eq!(read["status"], "AWAITING_PAYMENT");
    assert_eq!(stablerail::store::retention::prune(&dn.state.db, &keep, now).await.unwrap(), Default::default(), "nothing more to do");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_finds_its_own_settlements_behind_anyone_elses_and_pages_through_them() {
    let dn = Devnet::start(28645, "base", "").await;
    let mine = format!("Bearer {}", facilitator_key(&dn, "mine"));
    let theirs = format!("Bearer {}", facilitator_key(&dn, "theirs"));
    let now = stablerail::clock::now_ms();
    let payer = "0x00000000000000000000000000000000000000aa";
    // Three of mine, then sixty of someone else's for the same payer, newer.
    for n in 0..63i64 {
        let client = if n < 3 { "mine" } else { "theirs" };
        sqlx::query(
            "INSERT INTO x402_settlements (id, replay_key, payload_hash, client, chain, asset, network, scheme, payer, pay_to, amount, \
             requirements, payload, status, tx_hash, available_at, created_at, updated_at) \
             VALUES ($1, $1, $1, $2, 'base', 'usdc', 'eip155:8453', 'exact', $3, '0xshop', '1', '{}', '{}', 'settled', $1, $4, $4, $4)",
        )
        .bind(format!("xs_{n:03}"))
        .bind(client)
        .bind(payer)
        .bind(now + n)
        .execute(&dn.state.db.pool)
        .await
        .unwrap();
    }
    let list = |auth: String, query: String| {
        let state = dn.state.clone();
        async move {
            let (s, v) = common::devnet::call_state(
                &state,
                "GET",
                &format!("/x402/settlements?payer={payer}{query}"),
                None,
                &[("authorization", &auth)],
            )
            .await;
            assert_eq!(s, 200, "{v}");
            v.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect::<Vec<_>>()
        }
    };
    assert_eq!(list(mine.clone(), String::new()).await, vec!["xs_002", "xs_001", "xs_000"], "behind sixty of another key's");
    let page = list(theirs.clone(), String::new()).await;
    assert_eq!((page.len(), page[0].as_str()), (50, "xs_062"), "newest first, 50 by default");
    let next = list(theirs.clone(), format!("&before={}", page[49])).await;
    assert_eq!((next.len(), next[0].as_str(), next[9].as_str()), (10, "xs_012", "xs_003"), "the rest, after the last one seen");
    assert_eq!(list(theirs.clone(), "&limit=5".into()).await.len(), 5);
    let (s, e) = common::devnet::call_state(
        &dn.state,
        "GET",
        &format!("/x402/settlements?payer={payer}&limit=101"),
        None,
        &[("authorization", &mine)],
    )
    .await;
    assert_eq!((s, e["message"].as_str()), (400, Some("limit must be 1 to 100")), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stranger_learns_nothing_of_an_email_and_its_payment_waits_for_a_wallet() {
    let dn = Devnet::start(28745, "base,arbitrum", "").await;
    let email = "pay-me@shop.test";
    let (payer, key) = dn.payer(4);
    let body = json!({ "email": email, "amount": "2", "payer_chain": "base", "target_chain": "arbitrum" });
    // Nobody registered this email: created all the same, showing the email.
    let (id, intent) = dn.create_public(body.clone()).await;
    assert_eq!(intent["merchant_recipient"], email, "{intent}");
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let before = dn.balance_of("base", "usdc", &payer).await;
    let (s, e) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!((s, e["message"].as_str()), (403, Some("payment declined")), "no wallet yet: declined like a listed recipient: {e}");
    let (_, still) = dn.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(still["status"], "AWAITING_PAYMENT", "{still}");
    assert_eq!(dn.balance_of("base", "usdc", &payer).await, before, "nothing moved");

    // Its owner names a wallet; the same signed payment now goes through.
    stablerail::store::agents::set_recipient(&dn.state.db, email, "arbitrum", common::app::MERCHANT).await.unwrap();
    let merchant_before = dn.balance_of("arbitrum", "usdc", common::app::MERCHANT).await;
    let (s, ok) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{ok}");
    let done = dn.wait_status(&id, "TARGET_SETTLED").await;
    assert_eq!(
        dn.balance_of("arbitrum", "usdc", common::app::MERCHANT).await,
        merchant_before + alloy_primitives::U256::from(2_000_000u64)
    );
    // Public answers name the email. Until its payout is on chain (where
    // anyone can read a transfer), nothing in them names the wallet.
    assert_eq!(done["merchant_recipient"], email);
    let wallet = common::app::MERCHANT.trim_start_matches("0x").to_lowercase();
    let (again, created) = dn.create_public(body).await;
    let (_, read) = dn.call("GET", &format!("/api/intents/{again}"), None, &[]).await;
    for shown in [&created, &read] {
        assert_eq!(shown["merchant_recipient"], email);
        assert!(!shown.to_string().to_lowercase().contains(&wallet), "the wallet is not shown: {shown}");
    }
}

/// Live streams are bounded per client and per agent, in pools of their
/// own: one client behind the proxy holding its streams gets 429 (in the
/// envelope) for one more, the next client's stream opens; an agent's
/// streams likewise.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_holds_its_own_share_of_streams_and_no_more() {
    let dn = Devnet::start(31845, "base", "[limits]\nstreams_per_client = 3\nstreams_per_agent = 2\n").await;
    dn.set("service.trusted_proxies", vec!["127.0.0.1/32".to_string()]);
    let port = free_port();
    let _service = serve(&dn, port);
    let (_, intent) = dn.create_public(json!({ "recipient": common::app::MERCHANT, "amount": "1", "payer_chain": "base" })).await;
    let id = intent["intent_id"].as_str().unwrap();
    let client = reqwest::Client::new();
    let open = |path: String, headers: Vec<(&'static str, String)>| {
        let client = client.clone();
        async move {
            let mut req = client.get(format!("http://127.0.0.1:{port}{path}"));
            for (k, v) in headers {
                req = req.header(k, v);
            }
            req.send().await.unwrap()
        }
    };
    let events = format!("/api/intents/{id}/events");
    let mut held = vec![];
    for _ in 0..3 {
        let r = open(events.clone(), vec![("x-forwarded-for", "203.0.113.7".into())]).await;
        assert_eq!(r.status(), 200);
        held.push(r);
    }
    let over = open(events.clone(), vec![("x-forwarded-for", "203.0.113.7".into())]).await;
    assert_eq!(over.status(), 429);
    let body: serde_json::Value = over.json().await.unwrap();
    assert_eq!((body["statusCode"].as_u64(), body["error"].as_str()), (Some(429), Some("Too Many Requests")), "{body}");
    // Another client behind the same proxy is not held up.
    let other = open(events.clone(), vec![("x-forwarded-for", "203.0.113.8".into())]).await;
    assert_eq!(other.status(), 200);
    // A stream that ends gives its place back.
    drop(held.pop());
    let mut again = 0;
    for _ in 0..50 {
        let r = open(events.clone(), vec![("x-forwarded-for", "203.0.113.7".into())]).await;
        if r.status() == 200 {
            again = 200;
            held.push(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(again, 200, "a closed stream's place is free again");

    // An agent: two streams, then 429.
    let (_, bearer) = dn.agent().await;
    for _ in 0..2 {
        let r = open("/v2/events".into(), vec![("authorization", bearer.clone())]).await;
        assert_eq!(r.status(), 200);
        held.push(r);
    }
    let over = open("/v2/events".into(), vec![("authorization", bearer.clone())]).await;
    assert_eq!(over.status(), 429);
}
