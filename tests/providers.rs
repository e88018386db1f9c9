//! A chain's providers as a pool, against providers that fail the ways
//! real ones do. Each stand-in speaks JSON-RPC in front of the devnet's
//! anvil and writes down what it was asked: one lags the head, one
//! throttles (`429` with `Retry-After`) and has a request budget in the
//! config, one never answers receipts, one is on another chain.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use crate::common;
use common::devnet::{x402_pay, Devnet};
use common::process::{free_port, http, serve, wait_status};
use stablerail::config::{Family, RpcUrl};
use stablerail::family::chain::ChainClient;

#[derive(Clone, Copy)]
enum Fault {
    /// Says the head is this many blocks back; receipts of newer blocks are not there yet.
    Lags(u64),
    /// Every `n`-th request starts a rest of `secs` seconds: `429` with `Retry-After` until it ends.
    Throttles { n: usize, secs: u64 },
    /// Never answers this method.
    Hangs(&'static str),
    /// Says the head is this many blocks further than it is.
    Ahead(u64),
    /// Answers a batch with its first call's answer twice, the rest not.
    Repeats,
    /// Answers with 80 MiB.
    Floods,
    /// Answers everything.
    Honest,
}

struct Provider {
    upstream: String,
    fault: Fault,
    /// (arrival, method) of every request.
    seen: Mutex<Vec<(Instant, String)>>,
    /// The current rest, when throttling: (started, ends).
    rest: Mutex<Option<(Instant, Instant)>>,
    /// Requests that came in a rest, after the one that started it had its answer.
    in_rest: AtomicUsize,
    refused: AtomicUsize,
}

impl Provider {
    fn methods(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(_, m)| m.clone()).collect()
    }

    fn count(&self, method: &str) -> usize {
        self.methods().iter().filter(|m| *m == method).count()
    }
}

async fn upstream(p: &Provider, req: &Value) -> Value {
    reqwest::Client::new().post(&p.upstream).json(req).send().await.unwrap().json().await.unwrap()
}

fn quantity(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16).unwrap_or(0)
}

async fn answer(State(p): State<Arc<Provider>>, body: Bytes) -> (StatusCode, HeaderMap, String) {
    let req: Value = serde_json::from_slice(&body).unwrap();
    // A batch is its calls, each written down and answered alone.
    let calls: Vec<Value> = req.as_array().cloned().unwrap_or_else(|| vec![req.clone()]);
    let now = Instant::now();
    for call in &calls {
        p.seen.lock().unwrap().push((now, call["method"].as_str().unwrap_or("").to_string()));
    }
    let mut headers = HeaderMap::new();
    headers.insert("content-type", "application/json".parse().unwrap());
    if let Fault::Floods = p.fault {
        let padding = " ".repeat(80 << 20);
        return (StatusCode::OK, headers, format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x1\"{padding}}}"));
    }
    if let Fault::Throttles { n, secs } = p.fault {
        let count = p.seen.lock().unwrap().len();
        let mut rest = p.rest.lock().unwrap();
        let refuse = match *rest {
            Some((started, ends)) if now < ends => {
                // Requests already on their way when the rest began are forgiven.
                if now.duration_since(started) > Duration::from_millis(100) {
                    p.in_rest.fetch_add(1, Ordering::SeqCst);
                }
                true
            }
            // Every n-th call starts a rest.
            _ if count / n > (count - calls.len()) / n => {
                *rest = Some((now, now + Duration::from_secs(secs)));
                p.refused.fetch_add(1, Ordering::SeqCst);
                true
            }
            _ => false,
        };
        if refuse {
            headers.insert("retry-after", secs.to_string().parse().unwrap());
            return (StatusCode::TOO_MANY_REQUESTS, headers, "{}".into());
        }
    }
    let mut answers = Vec::new();
    for call in &calls {
        answers.push(one(&p, call).await);
    }
    if matches!(p.fault, Fault::Repeats) && answers.len() > 1 {
        answers = vec![answers[0].clone(), answers[0].clone()];
    }
    let out = if req.is_array() { Value::from(answers) } else { answers.remove(0) };
    (StatusCode::OK, headers, out.to_string())
}

/// One call's answer, with the provider's fault.
async fn one(p: &Provider, call: &Value) -> Value {
    let method = call["method"].as_str().unwrap_or("");
    match p.fault {
        Fault::Hangs(m) if m == method => {
            tokio::time::sleep(Duration::from_secs(600)).await;
            upstream(p, call).await
        }
        Fault::Lags(blocks) if method == "eth_blockNumber" || method == "eth_getTransactionReceipt" => {
            let head = upstream(p, &json!({ "jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": [] })).await;
            let behind = quantity(&head["result"]).saturating_sub(blocks);
            if method == "eth_blockNumber" {
                return json!({ "jsonrpc": "2.0", "id": call["id"], "result": format!("0x{behind:x}") });
            }
            let mut a = upstream(p, call).await;
            if quantity(&a["result"]["blockNumber"]) > behind {
                a["result"] = Value::Null;
            }
            a
        }
        Fault::Ahead(blocks) if method == "eth_blockNumber" => {
            let head = upstream(p, call).await;
            json!({ "jsonrpc": "2.0", "id": call["id"], "result": format!("0x{:x}", quantity(&head["result"]) + blocks) })
        }
        _ => upstream(p, call).await,
    }
}

async fn start(upstream: String, fault: Fault) -> (Arc<Provider>, String) {
    let p = Arc::new(Provider {
        upstream,
        fault,
        seen: Mutex::new(vec![]),
        rest: Mutex::new(None),
        in_rest: AtomicUsize::new(0),
        refused: AtomicUsize::new(0),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(answer).with_state(p.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (p, url)
}

/// The most requests that arrived within any `window`.
fn busiest(seen: &[(Instant, String)], window: Duration) -> usize {
    let times: Vec<Instant> = seen.iter().map(|(t, _)| *t).collect();
    (0..times.len()).map(|i| times[i..].iter().take_while(|t| t.duration_since(times[i]) < window).count()).max().unwrap_or(0)
}

const BUDGET: usize = 12;

/// A merchant address no other test pays.
fn fresh_merchant(tag: &str) -> String {
    let key = alloy_primitives::keccak256(format!("providers-{tag}"));
    alloy_primitives::Address::from_slice(&key[12..]).to_checksum(None)
}

/// Intents paid on a chain whose providers lag, throttle, hang one method
/// and name another chain: each merchant is paid exactly once (balances
/// read on chain), no finality read goes to the lagging node, the
/// throttling one never gets more than its budget nor anything while it
/// asked to be left alone, broadcasts reach every usable provider, and
/// the one on another chain gets nothing but the question of its chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn payments_settle_once_through_providers_that_lag_throttle_and_hang() {
    let dn = Devnet::start_with(32345, "base,arbitrum", "", 0, None).await;
    let base = dn.rpc_url("base");
    // The lagging node first: as configured, it would be asked first.
    let (lagging, lagging_url) = start(base.clone(), Fault::Lags(50)).await;
    let (throttling, throttling_url) = start(base.clone(), Fault::Throttles { n: 5, secs: 2 }).await;
    let (hanging, hanging_url) = start(base.clone(), Fault::Hangs("eth_getTransactionReceipt")).await;
    let (elsewhere, elsewhere_url) = start(dn.rpc_url("arbitrum"), Fault::Honest).await;
    let (ahead, ahead_url) = start(base.clone(), Fault::Ahead(1_000_000)).await;
    let budget = toml::Value::try_from(json!({ "url": throttling_url, "max_requests_per_second": BUDGET })).unwrap();
    dn.set(
        "chains.base.rpc_urls",
        toml::Value::Array(vec![lagging_url.into(), budget, hanging_url.into(), elsewhere_url.clone().into(), ahead_url.into()]),
    );
    let metrics_port = free_port();
    dn.set("service.metrics_listen", format!("127.0.0.1:{metrics_port}"));
    let port = free_port();
    let _service = serve(&dn, port);

    let mut paid = Vec::new();
    for k in 0..4 {
        let merchant = fresh_merchant(&format!("providers-{k}"));
        let body = json!({ "recipient": merchant, "amount": format!("1.{k}0"), "payer_chain": "base", "target_chain": "arbitrum" });
        let (s, intent) = http(port, "POST", "/api/intents", Some(body));
        assert_eq!(s, 201, "{intent}");
        let id = intent["intent_id"].as_str().unwrap().to_string();
        let receiving = common::devnet::scaled(intent["receiving_amount"].as_str().unwrap(), 6);
        let proof = x402_pay(&intent["payment_requirements"], &dn.payer(k).1);
        let (s, r) = http(port, "POST", &format!("/api/intents/{id}"), Some(json!({ "settle_proof": proof })));
        assert_eq!(s, 200, "{r}");
        paid.push((id, merchant, receiving));
    }
    for (id, ..) in &paid {
        wait_status(port, id, "TARGET_SETTLED", Duration::from_secs(180));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for (id, merchant, receiving) in &paid {
        assert_eq!(dn.balance("arbitrum", merchant).await, *receiving, "{id}: paid exactly once");
    }

    for (name, p) in
        [("lagging", &lagging), ("throttling", &throttling), ("hanging", &hanging), ("elsewhere", &elsewhere), ("ahead", &ahead)]
    {
        let mut by: std::collections::BTreeMap<String, usize> = Default::default();
        for m in p.methods() {
            *by.entry(m).or_default() += 1;
        }
        eprintln!("{name}: {by:?}, refused {}", p.refused.load(Ordering::SeqCst));
    }
    // Neither the lagging node nor the one that claims a head far ahead
    // was asked how far the chain has got.
    for m in ["eth_getTransactionReceipt", "eth_getLogs"] {
        assert_eq!(lagging.count(m), 0, "the lagging node was asked {m}");
        assert_eq!(ahead.count(m), 0, "the node ahead was asked {m}");
    }
    // The throttling one: within its budget in every second, nothing in its rests.
    let seen = throttling.seen.lock().unwrap().clone();
    assert!(throttling.refused.load(Ordering::SeqCst) >= 1, "it rested at least once ({} requests)", seen.len());
    assert!(
        busiest(&seen, Duration::from_millis(950)) <= BUDGET,
        "more than {BUDGET} requests in a second: {}",
        busiest(&seen, Duration::from_millis(950))
    );
    assert_eq!(throttling.in_rest.load(Ordering::SeqCst), 0, "requests sent while it asked to be left alone");
    // Broadcasts went to every provider that could take them.
    assert!(
        lagging.count("eth_sendRawTransaction") >= 1 && hanging.count("eth_sendRawTransaction") >= 1,
        "broadcast to every usable provider"
    );
    // The hanging method was given up on: its breaker opened after a few
    // requests (a batch's calls arrive together: one request).
    let asked: std::collections::BTreeSet<Instant> =
        hanging.seen.lock().unwrap().iter().filter(|(_, m)| m == "eth_getTransactionReceipt").map(|(t, _)| *t).collect();
    assert!(asked.len() <= 8, "receipts asked of the hanging node in {} requests", asked.len());
    // The provider on another chain was asked which chain it is on, and nothing else.
    let asked = elsewhere.methods();
    assert!(!asked.is_empty() && asked.iter().all(|m| m == "eth_chainId"), "the provider on another chain was asked {asked:?}");
    // Each provider has its metrics, under its label (the stand-ins' URLs
    // hold no secret; the label rule is `units::chains::chain`'s).
    let metrics = reqwest::get(format!("http://127.0.0.1:{metrics_port}/metrics")).await.unwrap().text().await.unwrap();
    let label = throttling_url.trim_end_matches('/');
    assert!(metrics.lines().any(|l| l.starts_with("stablerail_rpc_endpoint_requests_total") && l.contains(label)), "per-endpoint metrics");
    assert!(metrics.contains("stablerail_rpc_endpoint_lag_blocks"), "lag metrics");

    // A burst of reads at one provider with a budget: all answered, never
    // more than the budget in a second, nothing sent while it rests.
    let (burst, burst_url) = start(base.clone(), Fault::Throttles { n: 25, secs: 1 }).await;
    let budget = std::num::NonZeroU32::new(10);
    let client =
        Arc::new(ChainClient::lagging_at_most("base", Family::Evm, vec![RpcUrl { url: burst_url, max_requests_per_second: budget }], 1));
    let reads = (0..40).map(|k| {
        let client = client.clone();
        tokio::spawn(async move { client.rpc("eth_getBalance", json!([format!("0x{:040x}", k + 1), "latest"])).await })
    });
    for answer in futures::future::join_all(reads).await {
        answer.unwrap().expect("every read is answered in the end");
    }
    let seen = burst.seen.lock().unwrap().clone();
    assert!(burst.refused.load(Ordering::SeqCst) >= 1, "the provider asked for a rest");
    assert!(busiest(&seen, Duration::from_millis(950)) <= 10, "more than 10 requests in a second");
    assert_eq!(burst.in_rest.load(Ordering::SeqCst), 0, "requests sent while it asked to be left alone");

    // A batch answered with one call's answer twice: neither call is taken
    // from it (the driver asks such calls alone).
    let (_repeats, repeats_url) = start(base.clone(), Fault::Repeats).await;
    let client = ChainClient::new("base", Family::Evm, vec![repeats_url]);
    let calls = [json!([format!("0x{:040x}", 1), "latest"]), json!([format!("0x{:040x}", 2), "latest"])];
    let answers = client.rpc_batch("eth_getBalance", &calls).await.unwrap();
    assert!(answers.iter().all(Result::is_err), "a repeated or missing answer is no answer: {answers:?}");

    // An answer longer than the bound is a failure of that provider, not a
    // read into memory without end; the honest one behind it answers.
    let (flood, flood_url) = start(base.clone(), Fault::Floods).await;
    let (_honest, honest_url) = start(base.clone(), Fault::Honest).await;
    let client = ChainClient::new("base", Family::Evm, vec![flood_url, honest_url]);
    let head = client.rpc("eth_blockNumber", json!([])).await.expect("the second provider answers");
    assert!(quantity(&head) > 1, "the flood's 0x1 was not taken: {head}");
    assert_eq!(flood.count("eth_blockNumber"), 1, "the flooding provider was asked once");
}
