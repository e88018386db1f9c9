//! OpenTelemetry traces: the service (its own binary) exports OTLP over
//! HTTP to a collector in this test, which decodes the real protobuf. One
//! paid intent is one trace, begun by the caller's `traceparent`: the
//! request, each settlement pass, the adapter calls, every RPC request,
//! each signing, each database transaction and each webhook attempt, all
//! linked; the RPC providers (stand-ins in front of anvil) and the webhook
//! receiver see the same trace id. A caller that says "not sampled" gets
//! no spans, and no attribute carries a URL, key or signature.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;
use serde_json::{json, Value};

use crate::common;
use common::devnet::{x402_pay, Devnet};
use common::process::{free_port, serve, wait_status};

#[derive(Debug, Clone)]
struct Span {
    trace: String,
    id: String,
    parent: String,
    name: String,
    attributes: Vec<(String, String)>,
    /// Span events (log lines would be, if they were exported).
    events: usize,
}

/// What a collector, a provider or a receiver was sent.
#[derive(Default)]
struct Seen {
    spans: Mutex<Vec<Span>>,
    /// `traceparent` headers, with the JSON-RPC method (or webhook body).
    headers: Mutex<Vec<(String, String)>>,
    upstream: String,
}

fn hex_of(b: &[u8]) -> String {
    hex::encode(b)
}

async fn collect(State(seen): State<Arc<Seen>>, body: Bytes) -> ([(&'static str, &'static str); 1], Vec<u8>) {
    let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
    let mut spans = seen.spans.lock().unwrap();
    for r in request.resource_spans {
        for s in r.scope_spans.into_iter().flat_map(|s| s.spans) {
            let attributes = s
                .attributes
                .iter()
                .map(|kv| {
                    let v = match kv.value.as_ref().and_then(|v| v.value.clone()) {
                        Some(Any::StringValue(s)) => s,
                        Some(Any::IntValue(n)) => n.to_string(),
                        Some(Any::BoolValue(b)) => b.to_string(),
                        Some(Any::DoubleValue(d)) => d.to_string(),
                        other => format!("{other:?}"),
                    };
                    (kv.key.clone(), v)
                })
                .collect();
            spans.push(Span {
                trace: hex_of(&s.trace_id),
                id: hex_of(&s.span_id),
                parent: hex_of(&s.parent_span_id),
                name: s.name,
                attributes,
                events: s.events.len(),
            });
        }
    }
    ([("content-type", "application/x-protobuf")], vec![])
}

/// A provider in front of anvil that writes down each request's `traceparent`.
async fn provide(State(seen): State<Arc<Seen>>, headers: HeaderMap, body: Bytes) -> ([(&'static str, &'static str); 1], Bytes) {
    let req: Value = serde_json::from_slice(&body).unwrap();
    let method = req.as_array().and_then(|a| a.first()).unwrap_or(&req)["method"].as_str().unwrap_or("").to_string();
    if let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
        seen.headers.lock().unwrap().push((tp.to_string(), method));
    }
    let answer = reqwest::Client::new().post(&seen.upstream).body(body).header("content-type", "application/json").send().await.unwrap();
    ([("content-type", "application/json")], answer.bytes().await.unwrap())
}

async fn hooks(State(seen): State<Arc<Seen>>, headers: HeaderMap, body: String) -> &'static str {
    let tp = headers.get("traceparent").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    seen.headers.lock().unwrap().push((tp, body));
    "ok"
}

async fn listen(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

async fn stand_in(handler: axum::routing::MethodRouter<Arc<Seen>>, path: &str, upstream: String) -> (Arc<Seen>, String) {
    let seen = Arc::new(Seen { upstream, ..Default::default() });
    let url = listen(axum::Router::new().route(path, handler).with_state(seen.clone())).await;
    (seen, url)
}

/// The trace id in a `traceparent`, and whether it says sampled.
fn trace_of(traceparent: &str) -> (String, bool) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    (parts.get(1).unwrap_or(&"").to_string(), parts.get(3) == Some(&"01"))
}

/// Create an intent with the caller's `traceparent`, and pay it.
async fn pay(dn: &Devnet, port: u16, bearer: &str, traceparent: &str, payer: usize) -> String {
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let body = json!({ "recipient": common::app::MERCHANT, "amount": "1.25", "payer_chain": "base", "target_chain": "arbitrum" });
    let made: Value = http
        .post(format!("{base}/v2/intents"))
        .header("authorization", bearer)
        .header("traceparent", traceparent)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = made["intent_id"].as_str().unwrap_or_else(|| panic!("{made}")).to_string();
    let proof = x402_pay(&made["payment_requirements"], &dn.payer(payer).1);
    let paid = http.post(format!("{base}/api/intents/{id}")).json(&json!({ "settle_proof": proof })).send().await.unwrap();
    assert_eq!(paid.status(), 200, "{}", paid.text().await.unwrap());
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_paid_intent_is_one_trace_from_the_callers_request_to_its_webhook() {
    let webhooks = "[webhooks]\nallow_private_networks = true\nallow_plain_http_loopback = true\npoll_ms = 50\n";
    let dn = Devnet::start_with(32445, "base,arbitrum", webhooks, 0, None).await;
    let (collector, collector_url) = stand_in(axum::routing::post(collect), "/v1/traces", String::new()).await;
    let (base_rpc, base_url) = stand_in(axum::routing::post(provide), "/", dn.rpc_url("base")).await;
    let (arbitrum_rpc, arbitrum_url) = stand_in(axum::routing::post(provide), "/", dn.rpc_url("arbitrum")).await;
    let (receiver, receiver_url) = stand_in(axum::routing::post(hooks), "/hooks", String::new()).await;
    dn.set_rpc_url("base", &base_url);
    dn.set_rpc_url("arbitrum", &arbitrum_url);
    dn.set("telemetry.otlp_endpoint", format!("{collector_url}/v1/traces"));
    dn.set("telemetry.sample_ratio", 1.0);
    let port = free_port();
    let service = serve(&dn, port);

    let (_, bearer) = dn.agent().await;
    let (s, made) =
        common::http(port, "POST", "/v2/webhook_endpoints", Some(&bearer), Some(json!({ "url": format!("{receiver_url}/hooks") })));
    assert_eq!(s, 201, "{made}");

    // The caller's trace, sampled: the intent's whole life joins it.
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let id = pay(&dn, port, &bearer, &format!("00-{trace}-{caller_span}-01"), 1).await;
    wait_status(port, &id, "TARGET_SETTLED", Duration::from_secs(120));
    // The caller's trace, not sampled: nothing of it is exported. (One at
    // a time: a relayer batch of both would be in neither's trace.)
    let unsampled = "0af7651916cd43dd8448eb211c80319c";
    let quiet = pay(&dn, port, &bearer, &format!("00-{unsampled}-b7ad6b7169203331-00"), 2).await;
    wait_status(port, &quiet, "TARGET_SETTLED", Duration::from_secs(120));
    // Its webhook of the last change, then the exporter's next batch.
    let delivered =
        |intent: &str| receiver.headers.lock().unwrap().iter().any(|(_, body)| body.contains(intent) && body.contains("TARGET_SETTLED"));
    for _ in 0..300 {
        if delivered(&id) && delivered(&quiet) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(delivered(&id) && delivered(&quiet), "both intents' last changes were delivered");
    // The exporter sends a batch every few seconds.
    let names = |t: &str| -> std::collections::BTreeSet<String> {
        collector.spans.lock().unwrap().iter().filter(|s| s.trace == t).map(|s| s.name.clone()).collect()
    };
    for _ in 0..300 {
        if names(trace).contains("webhook attempt") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(service);
    let spans: Vec<Span> = collector.spans.lock().unwrap().iter().filter(|s| s.trace == trace).cloned().collect();
    let got = names(trace);
    eprintln!("{} spans in the trace: {got:?}", spans.len());
    for want in ["request", "settlement pass", "adapter call", "rpc", "sign", "db transaction", "webhook attempt"] {
        assert!(got.contains(want), "no `{want}` span in the intent's trace: {got:?}");
    }
    // Linked: every span's parent is the caller's span or another of the trace.
    let ids: std::collections::BTreeSet<&str> = spans.iter().map(|s| s.id.as_str()).collect();
    for s in &spans {
        assert!(s.parent == caller_span || ids.contains(s.parent.as_str()), "{} ({}) has a parent outside the trace", s.name, s.parent);
    }
    // The settlement's passes sent both legs' transactions in the trace.
    let rpc_methods: Vec<&str> = spans
        .iter()
        .filter(|s| s.name == "rpc")
        .filter_map(|s| s.attributes.iter().find(|(k, _)| k == "method").map(|(_, v)| v.as_str()))
        .collect();
    assert!(rpc_methods.contains(&"eth_sendRawTransaction"), "{rpc_methods:?}");
    // The providers and the webhook receiver saw the same trace.
    for (name, seen) in [("base", &base_rpc), ("arbitrum", &arbitrum_rpc)] {
        let sends: Vec<(String, bool)> =
            seen.headers.lock().unwrap().iter().filter(|(_, m)| m == "eth_sendRawTransaction").map(|(tp, _)| trace_of(tp)).collect();
        assert!(sends.contains(&(trace.to_string(), true)), "{name}'s provider got no broadcast in the trace: {sends:?}");
        assert!(sends.contains(&(unsampled.to_string(), false)), "{name}'s provider: the unsampled trace goes on unsampled: {sends:?}");
    }
    let hooked: Vec<(String, bool)> =
        receiver.headers.lock().unwrap().iter().filter(|(_, body)| body.contains(&id)).map(|(tp, _)| trace_of(tp)).collect();
    assert!(!hooked.is_empty() && hooked.iter().all(|t| *t == (trace.to_string(), true)), "the receiver's traceparents: {hooked:?}");
    // Not sampled: nothing exported under it.
    assert!(names(unsampled).is_empty(), "spans of an unsampled trace: {:?}", names(unsampled));
    // No attribute carries an RPC URL, a key or a signature, and no log
    // line went out as a span event.
    let payer_key = dn.payer(1).1.trim_start_matches("0x").to_lowercase();
    for s in collector.spans.lock().unwrap().iter() {
        assert_eq!(s.events, 0, "span {} carries log lines", s.name);
        for (k, v) in &s.attributes {
            let v = v.to_lowercase();
            for secret in [base_url.as_str(), arbitrum_url.as_str(), &payer_key, "signature", "whsec_"] {
                assert!(!v.contains(&secret.to_lowercase()), "span {} attribute {k} = {v} carries {secret}", s.name);
            }
        }
    }
}
