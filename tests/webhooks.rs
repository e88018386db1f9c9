//! Webhooks: an agent's endpoint receives every status change of its
//! intents once, in order, signed as Standard Webhooks (checked by the npm
//! `standardwebhooks` library in devnet/clients/webhook-receiver.mjs); a
//! rotated secret and the previous one both verify; a receiver that is down
//! gets everything in order once it is back. The endpoints API refuses
//! URLs that are not https or point into private networks, on both engines.

use crate::common;
use crate::on_both_engines;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use common::app::{App, Backend, MERCHANT};
use common::devnet::{devnet_script, x402_pay, Devnet};
use common::process::{free_port, Reaped};

on_both_engines!(endpoints_api_refuses_what_it_must, a_later_change_waits_for_an_earlier_one_another_replica_holds);

/// `devnet/clients/webhook-receiver.mjs`, verifying with `standardwebhooks`.
pub(crate) struct Receiver {
    port: u16,
    pub secrets: PathBuf,
    pub out: PathBuf,
}

impl Receiver {
    pub(crate) fn new(dir: &Path) -> Receiver {
        Receiver { port: free_port(), secrets: dir.join("secrets.json"), out: dir.join("received.jsonl") }
    }

    pub(crate) fn start(&self) -> Reaped {
        self.start_slow(0)
    }

    /// Each answer held `delay_ms` after the request is logged.
    fn start_slow(&self, delay_ms: u64) -> Reaped {
        let (port, secrets, out) = (self.port.to_string(), self.secrets.display().to_string(), self.out.display().to_string());
        let child = Command::new("node")
            .arg(devnet_script("webhook-receiver.mjs"))
            .args(["--port", &port, "--secrets", &secrets, "--out", &out, "--delay-ms", &delay_ms.to_string()])
            .spawn()
            .unwrap();
        common::wait_for_port(self.port);
        Reaped(child)
    }

    pub(crate) fn secrets(&self, list: &[&str]) {
        std::fs::write(&self.secrets, serde_json::to_string(list).unwrap()).unwrap();
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks", self.port)
    }

    /// What it received for one intent, in arrival order.
    pub(crate) fn of(&self, intent: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["subject"] == intent).collect()
    }

    pub(crate) async fn until(&self, intent: &str, last: &str) -> Vec<Value> {
        for _ in 0..600 {
            let got = self.of(intent);
            if got.iter().any(|v| v["status"] == last) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{intent}: no {last} delivery; got {:?}", self.of(intent));
    }
}

/// An intent of the agent's, paid through the public flow.
pub(crate) async fn pay(dn: &Devnet, bearer: &str, payer: usize) -> String {
    let (s, intent) = dn
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base" })),
            &[("authorization", bearer)],
        )
        .await;
    assert_eq!(s, 201, "{intent}");
    let id = intent["intent_id"].as_str().unwrap().to_string();
    let (_, key) = dn.payer(payer);
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{r}");
    dn.wait_status(&id, "TARGET_SETTLED").await;
    id
}

/// Each of the intent's recorded changes was received, once per id, in
/// version order, and each verified with the secrets `with`.
pub(crate) async fn check_in_order(dn: &Devnet, rx: &Receiver, intent: &str, with: &[i64]) {
    let got = rx.until(intent, "TARGET_SETTLED").await;
    let events =
        stablerail::store::transition::events_of(&dn.state.db, stablerail::store::transition::Subject::Intent, intent).await.unwrap();
    // Accepted deliveries (2xx), first of each id.
    let mut seen = std::collections::BTreeSet::new();
    let accepted: Vec<&Value> =
        got.iter().filter(|v| !v["verified"].as_array().unwrap().is_empty()).filter(|v| seen.insert(v["id"].to_string())).collect();
    let statuses: Vec<&str> = accepted.iter().map(|v| v["status"].as_str().unwrap()).collect();
    let recorded: Vec<&str> = events.iter().map(|(_, _, to, _)| to.as_str()).collect();
    assert_eq!(statuses, recorded, "every change, once, in order: {got:?}");
    let versions: Vec<i64> = accepted.iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    for v in &accepted {
        assert!(v["id"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(v["type"].as_str().unwrap(), format!("intent.{}", v["status"].as_str().unwrap().to_lowercase()));
        let verified: Vec<i64> = v["verified"].as_array().unwrap().iter().map(|n| n.as_i64().unwrap()).collect();
        assert_eq!(verified, with, "{v}");
    }
    // Nothing arrived out of order, retries included.
    let arrival: Vec<i64> = got.iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert!(arrival.windows(2).all(|w| w[0] <= w[1]), "arrival order {arrival:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agents_endpoint_gets_every_change_signed_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::new(tmp.path());
    let mut running = rx.start();
    let dn = Devnet::start(29145, "base", "").await;
    let (_, bearer) = dn.agent().await;
    let auth = [("authorization", bearer.as_str())];
    let (s, made) = dn.call("POST", "/v2/webhook_endpoints", Some(json!({ "url": rx.url() })), &auth).await;
    assert_eq!(s, 201, "{made}");
    let endpoint = made["id"].as_str().unwrap().to_string();
    let first = made["secret"].as_str().unwrap().to_string();
    assert!(first.starts_with("whsec_"));
    rx.secrets(&[&first]);
    let (_, listed) = dn.call("GET", "/v2/webhook_endpoints", None, &auth).await;
    assert!(listed["data"][0].get("secret").is_none(), "the secret is shown once: {listed}");

    let one = pay(&dn, &bearer, 1).await;
    check_in_order(&dn, &rx, &one, &[0]).await;

    // Rotated: deliveries carry both signatures for the overlap.
    let (s, rotated) = dn.call("POST", &format!("/v2/webhook_endpoints/{endpoint}/rotate_secret"), None, &auth).await;
    assert_eq!(s, 200, "{rotated}");
    let second = rotated["secret"].as_str().unwrap().to_string();
    rx.secrets(&[&first, &second]);
    let two = pay(&dn, &bearer, 2).await;
    check_in_order(&dn, &rx, &two, &[0, 1]).await;

    // The receiver down while an intent settles, then back: everything
    // arrives, in order, under the same ids.
    drop(running);
    let three = pay(&dn, &bearer, 3).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(rx.of(&three).is_empty());
    running = rx.start();
    check_in_order(&dn, &rx, &three, &[0, 1]).await;
    drop(running);

    // The endpoint's deliveries, as its owner reads them.
    let (s, deliveries) = dn.call("GET", &format!("/v2/webhook_endpoints/{endpoint}/deliveries"), None, &auth).await;
    assert_eq!(s, 200);
    let rows = deliveries["data"].as_array().unwrap();
    assert!(rows.iter().all(|d| d["status"] == "delivered"), "{deliveries}");
    assert!(rows.iter().any(|d| d["attempts"].as_i64().unwrap() > 1), "some were retried: {deliveries}");
    // Redelivered on request: the same id again.
    let event = rows[0]["event_id"].as_str().unwrap().to_string();
    let before = std::fs::read_to_string(&rx.out).unwrap().matches(&event).count();
    let _running = rx.start();
    let (s, r) = dn.call("POST", &format!("/v2/events/{event}/redeliver"), None, &auth).await;
    assert_eq!(s, 200, "{r}");
    for _ in 0..100 {
        if std::fs::read_to_string(&rx.out).unwrap().matches(&event).count() > before {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{event} was not redelivered");
}

async fn endpoints_api_refuses_what_it_must(backend: Backend) {
    let app = App::start(backend, "").await;
    let (_, alice) = app.agent("alice", None).await;
    let (_, bob) = app.agent("bob", None).await;
    let post = |auth: String, body: Value| {
        let app = &app;
        async move { app.call("POST", "/v2/webhook_endpoints", Some(body), &[("authorization", &auth)]).await }
    };
    for url in [
        "http://hooks.example.com/x",
        "ftp://hooks.example.com/x",
        "https://user:pw@hooks.example.com/x",
        "https://10.1.2.3/x",
        "https://127.0.0.1/x",
        "https://localhost/x",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/x",
        "https://[fd00:ec2::254]/x",
        "https://[::ffff:192.168.1.1]/x",
        "https://100.64.0.1/x",
        "not a url",
    ] {
        let (s, e) = post(alice.clone(), json!({ "url": url })).await;
        assert_eq!(s, 400, "{url}: {e}");
        assert_eq!(e["statusCode"], 400);
        assert!(e["message"].as_str().unwrap().starts_with("url "), "{e}");
    }
    let (s, e) = post(alice.clone(), json!({ "url": "https://hooks.example.com/x", "events": ["intent.nope"] })).await;
    assert_eq!((s.as_u16(), e["message"].as_str()), (400, Some("events names an unknown event type")));
    let (s, e) = post(alice.clone(), json!({ "url": "https://hooks.example.com/x", "extra": 1 })).await;
    assert_eq!(s, 400, "{e}");
    let mut ids = vec![];
    for n in 0..10 {
        let (s, made) =
            post(alice.clone(), json!({ "url": format!("https://hooks.example.com/{n}"), "events": ["intent.target_settled"] })).await;
        assert_eq!(s, 201, "{made}");
        ids.push(made["id"].as_str().unwrap().to_string());
    }
    let (s, _) = post(alice.clone(), json!({ "url": "https://hooks.example.com/11" })).await;
    assert_eq!(s, 409, "an eleventh endpoint");
    // Another agent's endpoint is not found, whatever the verb.
    let id = &ids[0];
    for (method, path) in [
        ("DELETE", format!("/v2/webhook_endpoints/{id}")),
        ("POST", format!("/v2/webhook_endpoints/{id}/rotate_secret")),
        ("GET", format!("/v2/webhook_endpoints/{id}/deliveries")),
    ] {
        let (s, _) = app.call(method, &path, None, &[("authorization", &bob)]).await;
        assert_eq!(s, 404, "{method} {path}");
    }
    let (_, listed) = app.call("GET", "/v2/webhook_endpoints", None, &[("authorization", &bob)]).await;
    assert_eq!(listed["data"], json!([]));
    let (s, _) = app.call("DELETE", &format!("/v2/webhook_endpoints/{id}"), None, &[("authorization", &alice)]).await;
    assert_eq!(s, 200);
    let (_, listed) = app.call("GET", "/v2/webhook_endpoints", None, &[("authorization", &alice)]).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 9);
    // The secret is sealed at rest.
    let sealed: String = sqlx::query_scalar("SELECT secret FROM webhook_endpoints LIMIT 1").fetch_one(&app.state.db.pool).await.unwrap();
    assert!(sealed.starts_with("v1:") && !sealed.contains("whsec_"));
    app.close().await;
}

/// A host name is checked by what it resolves to, at delivery.
#[tokio::test]
async fn names_are_checked_by_their_addresses() {
    use stablerail::webhooks::guard;
    let strict = stablerail::config::Webhooks::default();
    let open = stablerail::config::Webhooks { allow_private_networks: true, allow_plain_http_loopback: true, ..Default::default() };
    let url = reqwest::Url::parse("https://localhost:9/x").unwrap();
    assert_eq!(guard::resolve(&strict, &url).await, Err(guard::Refusal::Address));
    assert!(guard::resolve(&open, &url).await.is_ok());
    assert_eq!(guard::check_url(&strict, "http://127.0.0.1:9/x"), Err(guard::Refusal::NotHttps));
    assert!(guard::check_url(&open, "http://127.0.0.1:9/x").is_ok());
    assert_eq!(guard::check_url(&open, "http://example.com/x"), Err(guard::Refusal::NotHttps));
    for ip in ["8.8.8.8", "2606:4700::1111"] {
        assert!(guard::allowed(&strict, ip.parse().unwrap()), "{ip}");
    }
    for ip in ["0.0.0.0", "172.16.0.1", "192.168.0.1", "169.254.169.254", "fe80::1", "fc00::1", "::ffff:10.0.0.1", "64:ff9b::a00:1"] {
        assert!(!guard::allowed(&strict, ip.parse().unwrap()), "{ip}");
    }
}

/// Two replicas on one Postgres, each fanning out and delivering: every
/// change of every intent arrives, in order, none lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_on_postgres_deliver_every_event() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::new(tmp.path());
    let _running = rx.start();
    let (url, schema) = common::app::database(Backend::Postgres, tmp.path()).await;
    let dn = Devnet::start_with(29245, "base", "", 2, Some(url)).await;
    let (_, bearer) = dn.agent().await;
    let (s, made) = dn.call("POST", "/v2/webhook_endpoints", Some(json!({ "url": rx.url() })), &[("authorization", &bearer)]).await;
    assert_eq!(s, 201, "{made}");
    rx.secrets(&[made["secret"].as_str().unwrap()]);
    let paid = futures::future::join_all((1..=4).map(|n| pay(&dn, &bearer, n))).await;
    for id in &paid {
        check_in_order(&dn, &rx, id, &[0]).await;
    }
    drop(dn);
    if let Some((base, schema)) = schema {
        let admin = stablerail::db::Db::connect_unmigrated(&base).await.unwrap();
        let _ = sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin.pool).await;
    }
}

/// The SSE stream of one intent: a browser's EventSource (Chromium)
/// follows it to TARGET_SETTLED, each change once and in order; a stream
/// resumed with `Last-Event-ID` sends every change after it and ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_browser_follows_an_intent_and_a_stream_resumes_without_a_gap() {
    let dn = Devnet::start(29345, "base", "").await;
    let port = free_port();
    let _service = common::process::serve(&dn, port);
    let (_, intent) = dn.create_public(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base" })).await;
    let id = intent["intent_id"].as_str().unwrap().to_string();
    let mut browser = Command::new("node")
        .arg(devnet_script("event-source.mjs"))
        .args([&format!("http://127.0.0.1:{port}"), &id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Pay only once the browser's stream is open: it starts with the status
    // of that moment, so a payment before it would skip changes.
    let mut lines = std::io::BufReader::new(browser.stdout.take().unwrap());
    let opened = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        while std::io::BufRead::read_line(&mut lines, &mut line).unwrap() > 0 {
            if line.trim() == "open" {
                return Some(lines);
            }
            line.clear();
        }
        None
    });
    let mut lines = tokio::time::timeout(Duration::from_secs(60), opened).await.unwrap().unwrap().expect("the browser's stream opens");
    let (_, key) = dn.payer(1);
    let proof = x402_pay(&intent["payment_requirements"], &key);
    let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
    assert_eq!(s, 200, "{r}");
    let (out, text) = tokio::task::spawn_blocking(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut lines, &mut text).unwrap();
        (browser.wait_with_output().unwrap(), text)
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: Vec<Value> = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let recorded =
        stablerail::store::transition::recorded_of(&dn.state.db, stablerail::store::transition::Subject::Intent, &id).await.unwrap();
    let ids: Vec<&str> = recorded.iter().map(|r| r.id.as_str()).collect();
    let seen: Vec<&str> = got.iter().map(|v| v["id"].as_str().unwrap()).collect();
    assert_eq!(seen, ids, "the browser saw every change once, in order: {got:?}");
    assert_eq!(got.last().unwrap()["status"], "TARGET_SETTLED");
    assert_eq!(got[0]["type"], "intent.awaiting_payment");

    // Resumed after the first change: the rest, then the stream ends.
    let first = recorded[0].id.clone();
    let rest: Vec<String> = ids[1..].iter().map(|s| s.to_string()).collect();
    let resumed = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(c, "GET /api/intents/{id}/events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: {}\r\nConnection: close\r\n\r\n", first).unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap();
    assert!(resumed.to_ascii_lowercase().contains("content-type: text/event-stream"), "{resumed}");
    let resumed_ids: Vec<String> =
        resumed.lines().filter_map(|l| l.strip_prefix("id: ").or_else(|| l.strip_prefix("id:"))).map(|s| s.trim().to_string()).collect();
    assert_eq!(resumed_ids, rest, "{resumed}");
    // An unknown intent is 404 in the envelope.
    let (s, e) = common::process::http(port, "GET", "/api/intents/int_nothing/events", None);
    assert_eq!((s, e["statusCode"].as_i64()), (404, Some(404)));
}

/// `kill -9` of the only replica while deliveries are in flight, then a
/// restart: every change of every intent is delivered, at least once, in
/// order, under the ids it was first sent with.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_while_deliveries_are_in_flight_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::new(tmp.path());
    let _running = rx.start_slow(700);
    // No in-process workers: the service process is the only replica.
    let dn = Devnet::start_with(29445, "base", "", 0, None).await;
    dn.set("webhooks.timeout_seconds", 2);
    let (_, bearer) = dn.agent().await;
    let (s, made) = dn.call("POST", "/v2/webhook_endpoints", Some(json!({ "url": rx.url() })), &[("authorization", &bearer)]).await;
    assert_eq!(s, 201, "{made}");
    rx.secrets(&[made["secret"].as_str().unwrap()]);
    let port = free_port();
    let mut first = common::process::serve(&dn, port);
    let mut ids = vec![];
    for n in 1..=3 {
        let (s, intent) = dn
            .call(
                "POST",
                "/v2/intents",
                Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base" })),
                &[("authorization", &bearer)],
            )
            .await;
        assert_eq!(s, 201, "{intent}");
        let id = intent["intent_id"].as_str().unwrap().to_string();
        let (_, key) = dn.payer(n);
        let proof = x402_pay(&intent["payment_requirements"], &key);
        let (s, r) = dn.call("POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })), &[]).await;
        assert_eq!(s, 200, "{r}");
        ids.push(id);
    }
    // The first request is at the receiver, its answer held: kill -9.
    for _ in 0..300 {
        if std::fs::read_to_string(&rx.out).is_ok_and(|t| !t.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.0.kill().unwrap();
    first.0.wait().unwrap();
    let _second = common::process::serve(&dn, port);
    for id in &ids {
        dn.wait_status(id, "TARGET_SETTLED").await;
        check_in_order(&dn, &rx, id, &[0]).await;
    }
}

/// Read a Server-Sent Events stream until `stop` holds for an (id, event)
/// pair: the pairs read, in order.
fn read_stream(port: u16, path: &str, headers: &[(&str, &str)], stop: impl Fn(&str, &str) -> bool) -> Vec<(String, String)> {
    read_events(open_stream(port, path, headers), stop)
}

/// Send the request and read the answer's head: once it is here the
/// stream is open, and what changes after it is on it.
fn open_stream(port: u16, path: &str, headers: &[(&str, &str)]) -> std::io::BufReader<std::net::TcpStream> {
    use std::io::{BufRead, BufReader, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n").unwrap();
    let mut reader = BufReader::new(c);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    while line.trim() != "" {
        line.clear();
        reader.read_line(&mut line).unwrap();
    }
    reader
}

fn read_events(reader: std::io::BufReader<std::net::TcpStream>, stop: impl Fn(&str, &str) -> bool) -> Vec<(String, String)> {
    use std::io::BufRead;
    let mut got = vec![];
    let (mut id, mut event) = (String::new(), String::new());
    for line in reader.lines() {
        let line = line.expect("the stream goes on until the test has what it waits for");
        if let Some(v) = line.strip_prefix("id:") {
            id = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("event:") {
            event = v.trim().to_string();
        } else if line.starts_with("data:") && !id.is_empty() {
            got.push((id.clone(), event.clone()));
            if stop(&id, &event) {
                break;
            }
        }
    }
    got
}

/// `GET /v2/events`: the agent's stream carries each change of its intents
/// (and nothing of another agent's); resumed with `Last-Event-ID`, it sends
/// the changes after that event.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agents_stream_carries_its_intents_and_resumes() {
    let dn = Devnet::start(29545, "base", "").await;
    let port = free_port();
    let _service = common::process::serve(&dn, port);
    let (_, bearer) = dn.agent().await;
    let (_, other) = dn.agent().await;
    let auth = bearer.clone();
    let stream = tokio::task::spawn_blocking(move || open_stream(port, "/v2/events", &[("Authorization", &auth)])).await.unwrap();
    let reader = std::thread::spawn(move || read_events(stream, |_, e| e == "intent.target_settled"));
    // Another agent's intent first: not on this stream.
    let (s, _) = dn
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "1", "payer_chain": "base" })),
            &[("authorization", &other)],
        )
        .await;
    assert_eq!(s, 201);
    let id = pay(&dn, &bearer, 4).await;
    let got = tokio::task::spawn_blocking(move || reader.join().unwrap()).await.unwrap();
    let recorded =
        stablerail::store::transition::recorded_of(&dn.state.db, stablerail::store::transition::Subject::Intent, &id).await.unwrap();
    let ids: Vec<String> = recorded.iter().map(|r| r.id.clone()).collect();
    let seen: Vec<String> = got.iter().map(|(i, _)| i.clone()).collect();
    assert_eq!(seen, ids, "only this agent's intent, each change once, in order");
    // Resumed after the first: the rest.
    let (auth, first, last) = (bearer.clone(), ids[0].clone(), ids.last().unwrap().clone());
    let resumed = tokio::task::spawn_blocking(move || {
        read_stream(port, "/v2/events", &[("Authorization", &auth), ("Last-Event-ID", &first)], |i, _| i == last)
    })
    .await
    .unwrap();
    assert_eq!(resumed.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(), ids[1..].to_vec());
    let (s, _) = common::process::http(port, "GET", "/v2/events", None);
    assert_eq!(s, 401);
}

/// A facilitator key's endpoint, added with the CLI as an operator would:
/// a settlement whose broadcast the chain holds past the bound is announced
/// `x402.settlement.pending`, then `.succeeded` with the transaction that
/// landed, both signed; a keyless settlement is nobody's to announce; the
/// endpoint is listed and removed by the CLI, and a key's name that is not
/// live gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_facilitator_keys_endpoint_hears_pending_then_succeeded() {
    use crate::facilitator::{facilitator_key, payload, requirements};
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::new(tmp.path());
    let _running = rx.start();
    let dn = Devnet::start(29645, "base", "[facilitator]\npublic = true\n").await;
    dn.set("facilitator.settle_wait_seconds", 2);
    let key = facilitator_key(&dn, "shop");
    let made =
        dn.cli(&["facilitator", "webhook", "add", "shop", &rx.url(), "--events", "x402.settlement.pending,x402.settlement.succeeded"]);
    let secret = made["secret"].as_str().unwrap_or_else(|| panic!("{made}"));
    assert!(secret.starts_with("whsec_"), "{made}");
    rx.secrets(&[secret]);
    let listed = dn.cli(&["facilitator", "webhook", "list", "shop"]);
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    assert!(listed["data"][0].get("secret").is_none(), "{listed}");
    let refused = Command::new(common::stablerail_bin())
        .args(["facilitator", "webhook", "add", "nobody", &rx.url(), "--config"])
        .arg(dn.config_path())
        .arg("--database")
        .arg(format!("sqlite://{}", dn.dir.path().join("sr.db").display()))
        .output()
        .unwrap();
    assert!(!refused.status.success(), "no live key `nobody`");

    let base = dn.rpc_url("base");
    common::devnet::rpc(&base, "evm_setAutomine", json!([false])).await;
    let req = requirements(&dn, "25000");
    let body = json!({ "x402Version": 2, "paymentPayload": payload(&req, &dn.payer(0).1), "paymentRequirements": req });
    let (s, first) = dn.call("POST", "/x402/settle", Some(body), &[("authorization", &format!("Bearer {key}"))]).await;
    assert_eq!((s, first["errorReason"].as_str()), (200, Some("settlement_pending")), "{first}");
    common::devnet::rpc(&base, "evm_setAutomine", json!([true])).await;
    common::devnet::rpc(&base, "evm_mine", json!([])).await;

    let found =
        dn.call("GET", &format!("/x402/settlements?payer={}", dn.payer(0).0), None, &[("authorization", &format!("Bearer {key}"))]).await.1;
    let id = found[0]["id"].as_str().unwrap_or_else(|| panic!("{found}")).to_string();
    let got = rx.until(&id, "settled").await;
    let types: Vec<&str> = got.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["x402.settlement.pending", "x402.settlement.succeeded"], "{got:?}");
    assert!(got.iter().all(|v| v["verified"] == json!([0])), "{got:?}");

    // Keyless: settled, announced to nobody.
    let req = requirements(&dn, "26000");
    let body = json!({ "x402Version": 2, "paymentPayload": payload(&req, &dn.payer(1).1), "paymentRequirements": req });
    let (s, r) = dn.call("POST", "/x402/settle", Some(body), &[]).await;
    assert_eq!((s, r["success"].as_bool()), (200, Some(true)), "{r}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let text = std::fs::read_to_string(&rx.out).unwrap();
    assert_eq!(text.lines().count(), 2, "only the key's settlement: {text}");

    let endpoint = listed["data"][0]["id"].as_str().unwrap();
    let removed = dn.cli(&["facilitator", "webhook", "remove", "shop", endpoint]);
    assert_eq!(removed["deleted"], true, "{removed}");
    assert!(dn.cli(&["facilitator", "webhook", "list", "shop"])["data"].as_array().unwrap().is_empty());
}

/// An account's endpoint (as the dashboard adds it) receives the events of
/// every one of its agents' intents, and another account's endpoint none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_accounts_endpoint_hears_all_its_agents() {
    use stablerail::ops::webhooks::{create, Owner};
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::new(tmp.path());
    let _running = rx.start();
    std::fs::create_dir(tmp.path().join("other")).unwrap();
    let other = Receiver::new(&tmp.path().join("other"));
    let _other_running = other.start();
    let dn = Devnet::start(29745, "base", "").await;
    let (agent, bearer) = dn.agent().await;
    let account = stablerail::store::agents::agents(&dn.state.db, None, Some(&agent)).await.unwrap()[0].account_id.clone().unwrap();
    let made = create((&*dn.state).into(), &Owner::account(&account), &rx.url(), None).await.unwrap();
    rx.secrets(&[&made.secret]);
    let (stranger, _) = dn.agent().await;
    let theirs = stablerail::store::agents::agents(&dn.state.db, None, Some(&stranger)).await.unwrap()[0].account_id.clone().unwrap();
    let made = create((&*dn.state).into(), &Owner::account(&theirs), &other.url(), None).await.unwrap();
    other.secrets(&[&made.secret]);
    let one = pay(&dn, &bearer, 1).await;
    check_in_order(&dn, &rx, &one, &[0]).await;
    assert!(other.of(&one).is_empty(), "another account hears nothing of it");
    // The read the SDKs model: when the merchant was paid.
    let (_, read) = dn.call("GET", &format!("/api/intents/{one}"), None, &[]).await;
    assert_eq!(read["completed_at"], read["target_payment"]["settled_at"], "{read}");
    assert!(read["completed_at"].is_string(), "{read}");
}

/// A swap the agent's hosted wallet sent, registered for tracking, is
/// announced `swap.done` to the agent and its account; a registration that
/// names the agent's wallet as payer of a transaction the chain never saw
/// ends FAILED and is announced to nobody (anyone may register any payer).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_swap_from_the_agents_wallet_is_announced_and_a_forged_one_is_not() {
    use crate::swaps::{receipt_of, wait_swap};
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::new(tmp.path());
    let _running = rx.start();
    let dn = Devnet::start_swaps(29945, "base", "cancel_after_seconds = 4").await;
    let (usdc, usdt) = (dn.token("base", "usdc"), dn.token("base", "usdt"));
    let (_, auth, wallet) = crate::swaps::funded_agent(&dn).await;
    let bearer = [("authorization", auth.as_str())];
    let (s, made) =
        dn.call("POST", "/v2/webhook_endpoints", Some(json!({ "url": rx.url(), "events": ["swap.done", "swap.failed"] })), &bearer).await;
    assert_eq!(s, 201, "{made}");
    rx.secrets(&[made["secret"].as_str().unwrap()]);

    let body = json!({ "chain": "base", "from_token": usdc, "to_token": usdt, "from_amount": 1_000_000 });
    let (s, swapped) = dn.call("POST", "/v2/swap/execute", Some(body), &bearer).await;
    assert_eq!(s, 200, "{swapped}");
    let hash = swapped["tx_hash"].as_str().unwrap();
    assert_eq!(receipt_of(&dn.rpc_url("base"), hash).await["status"], "0x1");
    let register = json!({
        "source_tx_hash": hash, "from_chain": "base", "to_chain": "base", "from_token": usdc, "to_token": usdt,
        "payer_address": wallet, "recipient_address": wallet, "sending_token_amount": "1000000",
    });
    let (s, r) = dn.call("POST", "/api/swap/intents", Some(register.clone()), &[]).await;
    assert_eq!(s, 201, "{r}");
    let id = r["intent_id"].as_str().unwrap().to_string();
    let got = rx.until(&id, "DONE").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((&got[0]["type"], &got[0]["verified"]), (&json!("swap.done"), &json!([0])), "{got:?}");

    let mut forged = register;
    forged["source_tx_hash"] = json!(format!("0x{}", "ab".repeat(32)));
    let (s, r) = dn.call("POST", "/api/swap/intents", Some(forged), &[]).await;
    assert_eq!(s, 201, "{r}");
    let forged_id = r["intent_id"].as_str().unwrap().to_string();
    wait_swap(&dn, &forged_id, "FAILED").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(rx.of(&forged_id).is_empty(), "a swap the wallet never sent is not the agent's");
}

/// Order per subject across replicas: a later change's delivery, fanned
/// out by one replica, is not leased while an earlier change of the same
/// subject is not fanned out yet (another replica is at it), nor while the
/// earlier one's delivery is pending.
async fn a_later_change_waits_for_an_earlier_one_another_replica_holds(backend: Backend) {
    use stablerail::store::webhooks::{self as repo, NewDelivery, NewEvent, Owner};
    let app = App::start(backend, "[webhooks]\nallow_private_networks = true\nallow_plain_http_loopback = true\n").await;
    let made =
        stablerail::ops::webhooks::create((&*app.state).into(), &Owner::agent("agent-1"), "http://127.0.0.1:9/hooks", None).await.unwrap();
    let now = stablerail::clock::now_ms();
    let event = |v: i64| NewEvent {
        id: format!("evt_order_{v}"),
        subject_kind: "intent".into(),
        subject_id: "int_order".into(),
        version: v,
        to_status: "PENDING".into(),
        created_at: now + v,
        trace: None,
    };
    for v in [1, 2] {
        sqlx::query("INSERT INTO events (id, subject_kind, subject_id, version, to_status, created_at) VALUES ($1, 'intent', 'int_order', $2, 'PENDING', $3)")
            .bind(format!("evt_order_{v}"))
            .bind(v)
            .bind(now + v)
            .execute(&app.state.db.pool)
            .await
            .unwrap();
    }
    let delivery = || vec![NewDelivery { endpoint_id: made.endpoint.id.clone(), body: "{}".into() }];
    // One replica fanned out version 2; version 1 is still another's to fan out.
    assert_eq!(repo::fan_out(&app.state.db, &[(event(2), delivery())], now, 1000).await.unwrap(), 1);
    assert!(repo::claim(&app.state.db, "r1", now + 10, 30_000, 10).await.unwrap().is_empty(), "v2 waits for v1's fan-out");
    assert_eq!(repo::fan_out(&app.state.db, &[(event(1), delivery())], now, 1000).await.unwrap(), 1);
    let leased = repo::claim(&app.state.db, "r1", now + 10, 30_000, 10).await.unwrap();
    assert_eq!(leased.len(), 1, "v1 first, then v2");
    let first = repo::delivery_by_id(&app.state.db, &leased[0]).await.unwrap().unwrap();
    assert_eq!(first.event_id, "evt_order_1");
    // The same event again (a replica that lost the race) writes nothing.
    assert_eq!(repo::fan_out(&app.state.db, &[(event(1), delivery())], now, 1000).await.unwrap(), 0);
    app.close().await;
}

/// An HTTP server that takes requests and never answers until it is told
/// to recover; then it answers 204 (closing each connection) and keeps
/// what it was sent: (path, subject, version).
struct BlackHole {
    port: u16,
    recovered: std::sync::Arc<std::sync::atomic::AtomicBool>,
    got: std::sync::Arc<std::sync::Mutex<Vec<(String, String, i64)>>>,
}

impl BlackHole {
    async fn start() -> BlackHole {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hole = BlackHole { port, recovered: Default::default(), got: Default::default() };
        let (recovered, got) = (hole.recovered.clone(), hole.got.clone());
        tokio::spawn(async move {
            let mut held = vec![];
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                if !recovered.load(Ordering::SeqCst) {
                    held.push(socket);
                    continue;
                }
                let got = got.clone();
                tokio::spawn(async move {
                    let mut buf = vec![];
                    let mut chunk = [0u8; 8192];
                    let (head, body) = loop {
                        let Ok(n) = socket.read(&mut chunk).await else { return };
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&buf).to_string();
                        let Some((head, body)) = text.split_once("\r\n\r\n") else { continue };
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            break (head.to_string(), body.to_string());
                        }
                    };
                    let path = head.split_whitespace().nth(1).unwrap_or_default().to_string();
                    let event: Value = serde_json::from_str(&body).unwrap_or_default();
                    let subject = event["data"]["intent_id"].as_str().unwrap_or_default().to_string();
                    got.lock().unwrap().push((path, subject, event["version"].as_i64().unwrap_or(-1)));
                    let _ = socket.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
                });
            }
        });
        hole
    }
}

/// Milliseconds from each of the intents' events to its arrival at `rx`.
fn latencies(rx: &Receiver, intents: &[String]) -> Vec<i64> {
    let mut out: Vec<i64> = intents
        .iter()
        .flat_map(|id| rx.of(id))
        .map(|v| {
            let made = chrono::DateTime::parse_from_rfc3339(v["created_at"].as_str().unwrap()).unwrap().timestamp_millis();
            v["at"].as_i64().unwrap() - made
        })
        .collect();
    out.sort_unstable();
    out
}

/// One stranger's ten endpoints that take requests and never answer,
/// beside an agent's healthy one: each endpoint is its own lane, so the
/// healthy one's deliveries keep their latency (the slowest within twice
/// the slowest alone), and the stranger's arrive, in order, once its
/// server answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_endpoint_that_never_answers_delays_only_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let rx = Receiver::new(tmp.path());
    let _running = rx.start();
    let dn = Devnet::start(31745, "base", "").await;
    let (_, a) = dn.agent().await;
    let (s, made) = dn.call("POST", "/v2/webhook_endpoints", Some(json!({ "url": rx.url() })), &[("authorization", &a)]).await;
    assert_eq!(s, 201, "{made}");
    rx.secrets(&[made["secret"].as_str().unwrap()]);
    let mut alone_ids = vec![];
    for _ in 0..3 {
        let id = pay(&dn, &a, 1).await;
        rx.until(&id, "TARGET_SETTLED").await;
        alone_ids.push(id);
    }
    let alone = latencies(&rx, &alone_ids);

    // The stranger: another agent's ten endpoints at a server that never
    // answers, and its intents' changes flowing to them.
    let hole = BlackHole::start().await;
    let (_, b) = dn.agent().await;
    for k in 0..10 {
        let url = format!("http://127.0.0.1:{}/{k}", hole.port);
        let (s, made) = dn.call("POST", "/v2/webhook_endpoints", Some(json!({ "url": url })), &[("authorization", &b)]).await;
        assert_eq!(s, 201, "{made}");
    }
    let mut theirs = vec![];
    for _ in 0..4 {
        theirs.push(pay(&dn, &b, 2).await);
    }
    // The slots the stranger's endpoints hold now, while A pays again.
    let mut flooded_ids = vec![];
    for _ in 0..3 {
        let id = pay(&dn, &a, 1).await;
        rx.until(&id, "TARGET_SETTLED").await;
        flooded_ids.push(id);
    }
    for id in &flooded_ids {
        check_in_order(&dn, &rx, id, &[0]).await;
    }
    let flooded = latencies(&rx, &flooded_ids);
    let (alone_max, flooded_max) = (*alone.last().unwrap(), *flooded.last().unwrap());
    // Twice the slowest alone; a floor of 500 ms for a busy machine's noise.
    assert!(flooded_max <= 2 * alone_max.max(500), "alone {alone:?}, beside the stranger {flooded:?}");
    assert!(hole.got.lock().unwrap().is_empty(), "the stranger's server answered nothing yet");

    // The stranger's server answers again: each of its endpoints gets every
    // change of every intent, in order per intent.
    hole.recovered.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut want = std::collections::BTreeMap::new();
    for id in &theirs {
        let events =
            stablerail::store::transition::events_of(&dn.state.db, stablerail::store::transition::Subject::Intent, id).await.unwrap();
        want.insert(id.clone(), events.len());
    }
    let total: usize = want.values().sum::<usize>() * 10;
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    loop {
        let got = hole.got.lock().unwrap().clone();
        let mut first = std::collections::BTreeSet::new();
        let unique = got.iter().filter(|g| first.insert((*g).clone())).count();
        if unique >= total {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{unique} of {total} arrived");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let got = hole.got.lock().unwrap().clone();
    for k in 0..10 {
        for (id, n) in &want {
            let versions: Vec<i64> = got.iter().filter(|(p, s, _)| *p == format!("/{k}") && s == id).map(|(_, _, v)| *v).collect();
            let mut once = versions.clone();
            once.dedup();
            assert_eq!(once.len(), *n, "endpoint {k}, intent {id}: every change: {versions:?}");
            assert!(versions.windows(2).all(|w| w[0] <= w[1]), "endpoint {k}, intent {id}: in order: {versions:?}");
        }
    }
}
