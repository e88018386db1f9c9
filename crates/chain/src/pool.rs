//! A chain's providers as a pool. Each endpoint keeps its health: per
//! method, how fast it answers and a circuit breaker (a method that hangs
//! or fails on one provider is not another's problem); a rest it asked for
//! (`429`/`503` with `Retry-After`); its request budget
//! (`max_requests_per_second`: never more in any one second); which chain
//! it says it is on; and its head in the last round of head reads.
//!
//! Reads go to the healthiest endpoint that may be sent one now, and on to
//! the next when it fails. Reads that decide finality (the head, receipts,
//! logs, blocks, balances and nonces) never go to an endpoint whose head is
//! out of line with the others' by more than the chain's confirmations: a
//! stale node would only say "not yet" for as long as it lags, one far
//! ahead would make a block look deeper than it is. Broadcasts go to every
//! endpoint that may be sent one, at once.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::{Family, RpcUrl};
use crate::error::ChainError;

/// A request's longest wait for its answer.
const TIMEOUT: Duration = Duration::from_secs(10);
/// With another endpoint to try, a read waits this many times the method's
/// usual answer time on an endpoint (within the bounds) before it moves on.
const PATIENCE: u32 = 8;
const SHORTEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Consecutive failures of a method on an endpoint that open its breaker.
const FAILURES_TO_OPEN: u32 = 3;
/// An open breaker rests the method this long, doubling each time it opens
/// again without a success between, up to `LONGEST_REST`.
const FIRST_REST: Duration = Duration::from_secs(1);
const LONGEST_REST: Duration = Duration::from_secs(30);
/// A `Retry-After` is taken as at least the first and at most the second.
const SHORTEST_RETRY_AFTER: Duration = Duration::from_secs(1);
const LONGEST_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How long a call goes on in all: trying endpoints, waiting for a rested
/// or spent one.
pub(crate) const WAIT_AT_MOST: Duration = Duration::from_secs(10);
/// How often every endpoint's head is read to compare them (EVM).
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// A round of head reads older than this says nothing about lag.
const ROUND_KEPT: Duration = Duration::from_secs(15);
/// Blocks a head may be ahead of the line: answers of one round arrive a
/// moment apart; more would count confirmations that are not there.
const AHEAD_AT_MOST: u64 = 1;
/// How long a question put to every endpoint waits for each.
const ASK_EACH_WAIT: Duration = Duration::from_millis(2500);
/// The longest answer read from a provider (a batch of receipts of full
/// blocks is a few MiB).
const LONGEST_ANSWER: usize = 64 << 20;
/// Most calls in one batch request.
const BATCH: usize = 100;
const SECOND: Duration = Duration::from_secs(1);

/// `scheme://host:port`, plus `/…` when the URL has a path or query: a
/// provider key often sits in either, so neither is ever shown. User info
/// is dropped.
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let host = u.host_str().unwrap_or("?");
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let rest = if u.path().trim_matches('/').is_empty() && u.query().is_none() { "" } else { "/…" };
            format!("{}://{host}{port}{rest}", u.scheme())
        }
        Err(_) => "<unparseable url>".into(),
    }
}

/// What a method does, for where it may be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Read,
    /// A read that says how far the chain has got: not from a node out of line.
    Finality,
    /// A broadcast: sent to every endpoint that may be sent one.
    Write,
}

impl Class {
    pub(crate) fn of(family: Family, method: &str) -> Class {
        match (family, method) {
            (Family::Evm, "eth_sendRawTransaction") | (Family::Solana, "sendTransaction") => Class::Write,
            (Family::Tron, m) if m.starts_with("/wallet/broadcast") => Class::Write,
            (
                Family::Evm,
                "eth_blockNumber"
                | "eth_getTransactionReceipt"
                | "eth_getLogs"
                | "eth_getBlockByNumber"
                | "eth_getBalance"
                | "eth_getTransactionCount",
            )
            | (Family::Solana, "getSlot" | "getSignatureStatuses" | "getSignaturesForAddress" | "getBlockHeight") => Class::Finality,
            _ => Class::Read,
        }
    }
}

/// At most `per_second` requests in any one second: the send times of the
/// last `per_second` requests.
struct Budget {
    per_second: usize,
    sent: VecDeque<Instant>,
}

impl Budget {
    /// `n` slots now (a batch of `n` calls counts as `n` requests), or
    /// when enough free.
    fn take(&mut self, now: Instant, n: usize) -> Result<(), Instant> {
        while self.sent.front().is_some_and(|t| now.duration_since(*t) >= SECOND) {
            self.sent.pop_front();
        }
        let n = n.min(self.per_second);
        if self.sent.len() + n <= self.per_second {
            self.sent.extend(std::iter::repeat_n(now, n));
            Ok(())
        } else {
            Err(self.sent[self.sent.len() + n - self.per_second - 1] + SECOND)
        }
    }
}

#[derive(Default)]
struct Method {
    /// Exponentially weighted answer time.
    usual: Option<Duration>,
    failures: u32,
    /// Open breaker: not tried before this (unless nothing else can be).
    resting_until: Option<Instant>,
    /// Times opened since the last success.
    opened: u32,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Identity {
    #[default]
    Unasked,
    /// On the expected chain, or unable to say (a node without the
    /// question: a provider on another chain answers it).
    Agrees,
    /// On another chain than the config's: never used again.
    Wrong,
}

#[derive(Default)]
struct Health {
    /// Per method (a batch has its own key): answer time and breaker.
    methods: HashMap<String, Method>,
    /// The provider asked not to be sent anything before this.
    retry_after: Option<Instant>,
    budget: Option<Budget>,
    /// Answer time over all methods, for a method not answered here yet.
    usual: Option<Duration>,
    identity: Identity,
}

impl Health {
    fn resting(&self, key: &str, now: Instant) -> bool {
        self.methods.get(key).and_then(|m| m.resting_until).is_some_and(|t| t > now)
    }

    /// May `n` requests be sent now: not in a provider's rest, within
    /// budget (taking the slots). Otherwise when they may.
    fn admit(&mut self, now: Instant, n: usize) -> Result<(), Instant> {
        if let Some(until) = self.retry_after.filter(|t| *t > now) {
            return Err(until);
        }
        match &mut self.budget {
            Some(b) => b.take(now, n),
            None => Ok(()),
        }
    }
}

pub(crate) struct Endpoint {
    url: String,
    label: String,
    health: Mutex<Health>,
}

/// What one request carries: one call's params, or a batch of calls of
/// the same method (JSON-RPC's array form; the answer is the array).
pub(crate) enum Body<'a> {
    One(&'a Value),
    Batch(&'a [Value]),
}

impl Body<'_> {
    /// Requests it counts as against a budget.
    fn cost(&self) -> usize {
        match self {
            Body::One(_) => 1,
            Body::Batch(calls) => calls.len().max(1),
        }
    }

    /// The key its health is kept under: a provider may answer single
    /// calls and refuse or choke on batches.
    fn key(&self, method: &str) -> String {
        match self {
            Body::One(_) => method.to_string(),
            Body::Batch(_) => format!("{method}[]"),
        }
    }
}

/// What became of one request to one endpoint.
pub(crate) enum Sent {
    /// The node answered: a result or its own error (final either way).
    Answer(Result<String, ChainError>),
    /// The provider refused for now (`429`, or `503` with `Retry-After`):
    /// for this long.
    Throttled(Duration),
    /// Nothing usable came back.
    Failed(String),
}

/// One round of head reads: each endpoint's answer, and when.
struct Round {
    at: Instant,
    heads: Vec<Option<u64>>,
}

pub(crate) struct Pool {
    chain: String,
    family: Family,
    endpoints: Vec<Endpoint>,
    /// Blocks an endpoint's head may be out of line with the others'.
    max_lag: u64,
    http: reqwest::Client,
    last_probe: Mutex<Option<Instant>>,
    round: Mutex<Option<Round>>,
    /// The chain the config names: once set, an endpoint is asked which
    /// chain it is on before it is first used.
    expected: Mutex<Option<String>>,
}

/// The next step of a call.
enum Next {
    Try(usize),
    WaitUntil(Instant),
    GiveUp,
}

impl Pool {
    pub(crate) fn new(chain: &str, family: Family, urls: Vec<RpcUrl>, max_lag: u64) -> Pool {
        let http = reqwest::Client::builder().timeout(TIMEOUT).build().expect("a reqwest client with a timeout builds");
        let endpoints = urls
            .into_iter()
            .map(|u| Endpoint {
                label: redact_url(&u.url),
                health: Mutex::new(Health {
                    budget: u.max_requests_per_second.map(|n| Budget { per_second: n.get() as usize, sent: VecDeque::new() }),
                    ..Health::default()
                }),
                url: u.url,
            })
            .collect();
        Pool {
            chain: chain.to_string(),
            family,
            endpoints,
            max_lag,
            http,
            last_probe: Mutex::new(None),
            round: Mutex::new(None),
            expected: Mutex::new(None),
        }
    }

    fn health(&self, i: usize) -> std::sync::MutexGuard<'_, Health> {
        self.endpoints[i].health.lock().expect("health")
    }

    /// A read: the healthiest endpoint first, the next on failure; a rested
    /// or spent endpoint is waited for when it is the only one left. One
    /// call or a batch; the whole call ends by `deadline`.
    pub(crate) async fn read_until(&self, method: &str, body: &Body<'_>, deadline: Instant) -> Result<String, ChainError> {
        let class = Class::of(self.family, method);
        let key = body.key(method);
        let mut tried = vec![false; self.endpoints.len()];
        let mut last = ChainError::NoEndpoint;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(last_or(last, "no endpoint answered in time"));
            }
            match self.next(&key, class, body.cost(), &mut tried) {
                Next::Try(i) => {
                    match self.identified(i, deadline, true).await {
                        Err(e) => {
                            last = e;
                            continue;
                        }
                        // The question used the slot: the call waits for its own.
                        Ok(true) if self.health(i).admit(Instant::now(), body.cost()).is_err() => {
                            tried[i] = false;
                            continue;
                        }
                        Ok(_) => {}
                    }
                    // Another usable endpoint left to try: this one gets a short wait.
                    let now = Instant::now();
                    let others = self.ranked(&key, class, now).into_iter().any(|j| !tried[j] && !self.health(j).resting(&key, now));
                    match self.send_one(i, method, body, others, deadline).await {
                        Sent::Answer(answer) => return answer,
                        Sent::Throttled(_) => {
                            // Another may answer; this one is tried again after its rest.
                            tried[i] = false;
                            last = self.transport(i, "asked to wait (Retry-After)");
                        }
                        Sent::Failed(detail) => {
                            tracing::debug!(chain = %self.chain, endpoint = %self.endpoints[i].label, method, %detail, "rpc endpoint failed");
                            last = self.transport(i, &detail);
                        }
                    }
                }
                Next::WaitUntil(at) if at < deadline => tokio::time::sleep_until(at.into()).await,
                Next::WaitUntil(_) => return Err(last_or(last, "every endpoint is resting or out of budget")),
                Next::GiveUp if class == Class::Finality && matches!(last, ChainError::NoEndpoint) && !self.endpoints.is_empty() => {
                    return Err(ChainError::Transport {
                        endpoint: "-".into(),
                        detail: "every endpoint is out of line with the chain's head".into(),
                    })
                }
                Next::GiveUp => return Err(last),
            }
        }
    }

    /// A broadcast to every endpoint that may be sent one now, at once:
    /// the first that accepts it is the answer (the bytes are the same, so
    /// any acceptance is the transaction's); else the first node answer in
    /// configured order; else the last failure. Each send runs to its end
    /// on its own task, answered or not: a provider that accepted first
    /// must not be the only one the transaction reached.
    pub(crate) async fn write(self: &std::sync::Arc<Self>, method: &str, params: &Value) -> Result<String, ChainError> {
        let deadline = Instant::now() + WAIT_AT_MOST;
        let ranked = self.ranked(method, Class::Write, Instant::now());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for (rank, &i) in ranked.iter().enumerate() {
            let (pool, tx, method, params) = (self.clone(), tx.clone(), method.to_string(), params.clone());
            // Each send in the caller's trace, though it may outlive the call.
            let span = tracing::Span::current();
            tokio::spawn(tracing::Instrument::instrument(
                async move {
                    let sent = match pool.identified(i, deadline, false).await {
                        Ok(_) if pool.health(i).admit(Instant::now(), 1).is_ok() => {
                            Some(pool.send_one(i, &method, &Body::One(&params), false, deadline).await)
                        }
                        _ => None,
                    };
                    let _ = tx.send((rank, i, sent));
                },
                span,
            ));
        }
        drop(tx);
        let mut answers: Vec<(usize, Result<String, ChainError>)> = Vec::new();
        let mut last = ChainError::NoEndpoint;
        let mut sent_any = false;
        while let Some((rank, i, sent)) = rx.recv().await {
            sent_any |= sent.is_some();
            match sent {
                None => {}
                Some(Sent::Answer(answer)) if self.accepted(&answer) => return answer,
                Some(Sent::Answer(answer)) => answers.push((rank, answer)),
                Some(Sent::Throttled(_)) => last = self.transport(i, "asked to wait (Retry-After)"),
                Some(Sent::Failed(detail)) => {
                    tracing::debug!(chain = %self.chain, endpoint = %self.endpoints[i].label, method, %detail, "rpc endpoint failed");
                    last = self.transport(i, &detail);
                }
            }
        }
        if !sent_any {
            // Nothing could be sent to: the one-at-a-time path waits for a slot.
            return self.read_until(method, &Body::One(params), deadline).await;
        }
        answers.sort_by_key(|(rank, _)| *rank);
        answers.into_iter().next().map(|(_, a)| a).unwrap_or(Err(last))
    }

    /// Did a node take a broadcast? JSON-RPC: a result. TRON's HTTP API
    /// answers 200 either way: `result: true`, or the transaction already
    /// known.
    fn accepted(&self, answer: &Result<String, ChainError>) -> bool {
        match (self.family, answer) {
            (_, Err(_)) => false,
            (Family::Tron, Ok(body)) => serde_json::from_str::<Value>(body)
                .is_ok_and(|v| v["result"] == Value::Bool(true) || v["code"].as_str() == Some("DUP_TRANSACTION_ERROR")),
            (_, Ok(_)) => true,
        }
    }

    fn transport(&self, i: usize, detail: &str) -> ChainError {
        ChainError::Transport { endpoint: self.endpoints[i].label.clone(), detail: detail.to_string() }
    }

    /// Endpoints in the order a call tries them: not resting before resting,
    /// in line before out of line, then as configured. The configured order
    /// is the operator's trust: the first healthy provider answers, as the
    /// first URL did before the pool (ranking by speed would hand every
    /// receipt to whichever provider answers fastest). Endpoints on another
    /// chain are left out, and those out of line from finality reads.
    fn ranked(&self, key: &str, class: Class, now: Instant) -> Vec<usize> {
        let out = self.out_of_line(now);
        let mut order: Vec<(usize, bool, bool)> = (0..self.endpoints.len())
            .filter_map(|i| {
                let h = self.health(i);
                if h.identity == Identity::Wrong || (out[i] && class == Class::Finality) {
                    return None;
                }
                Some((i, h.resting(key, now), out[i]))
            })
            .collect();
        order.sort_by_key(|&(i, resting, out)| (resting, out, i));
        order.into_iter().map(|(i, ..)| i).collect()
    }

    fn next(&self, key: &str, class: Class, cost: usize, tried: &mut [bool]) -> Next {
        let now = Instant::now();
        let order: Vec<usize> = self.ranked(key, class, now).into_iter().filter(|&i| !tried[i]).collect();
        let mut free_at: Option<Instant> = None;
        let mut rested = None;
        for &i in &order {
            let mut h = self.health(i);
            if h.resting(key, now) {
                rested.get_or_insert(i);
                continue;
            }
            match h.admit(now, cost) {
                Ok(()) => {
                    tried[i] = true;
                    return Next::Try(i);
                }
                Err(at) => free_at = Some(free_at.map_or(at, |f| f.min(at))),
            }
        }
        // Only open breakers left: the first is tried all the same (a chain
        // with one provider must notice when it is back), once per call.
        if let (Some(i), None) = (rested, free_at) {
            if !tried.iter().any(|t| *t) && self.health(i).admit(now, cost).is_ok() {
                tried[i] = true;
                return Next::Try(i);
            }
        }
        match free_at {
            Some(at) => Next::WaitUntil(at),
            None => Next::GiveUp,
        }
    }

    /// One request to endpoint `i`, its outcome written into its health.
    /// It waits at most until `deadline`, and less with `others` to try.
    async fn send_one(&self, i: usize, method: &str, body: &Body<'_>, others: bool, deadline: Instant) -> Sent {
        let e = &self.endpoints[i];
        let key = body.key(method);
        let mut timeout = TIMEOUT;
        if others {
            let h = self.health(i);
            let usual = h.methods.get(&key).and_then(|m| m.usual).or(h.usual);
            drop(h);
            timeout = usual.map_or(TIMEOUT, |u| (u * PATIENCE).clamp(SHORTEST_TIMEOUT, TIMEOUT));
        }
        // Within the call's deadline, so a timeout here is this endpoint's
        // failure, written down, not the caller's cancellation.
        let timeout = timeout.min(deadline.saturating_duration_since(Instant::now()));
        let started = Instant::now();
        // One span per request to one provider, named by its place in
        // `rpc_urls`: not even the redacted label, whose host can name a
        // private node or carry a provider's key.
        let span = tracing::info_span!("rpc", chain = %self.chain, provider = i, method, calls = body.cost());
        let exchange = tracing::Instrument::instrument(self.send(&e.url, method, body), span);
        let sent = match tokio::time::timeout(timeout, exchange).await {
            Ok(sent) => sent,
            Err(_) => Sent::Failed(format!("no answer in {} ms", timeout.as_millis())),
        };
        let took = started.elapsed();
        let mut h = self.health(i);
        let now = Instant::now();
        match &sent {
            Sent::Answer(_) => {
                let m = h.methods.entry(key.clone()).or_default();
                m.usual = Some(m.usual.map_or(took, |u| (u * 7 + took) / 8));
                m.failures = 0;
                m.opened = 0;
                m.resting_until = None;
                h.usual = Some(h.usual.map_or(took, |u| (u * 7 + took) / 8));
            }
            Sent::Throttled(rest) => h.retry_after = Some(now + *rest),
            Sent::Failed(_) => {
                // Once open, a failed trial after the rest opens it again
                // at once, for twice as long.
                let m = h.methods.entry(key.clone()).or_default();
                m.failures += 1;
                if m.failures >= FAILURES_TO_OPEN {
                    let rest = FIRST_REST.saturating_mul(1 << m.opened.min(5)).min(LONGEST_REST);
                    m.resting_until = Some(now + rest);
                    m.opened += 1;
                }
            }
        }
        let outcome = match &sent {
            Sent::Answer(Ok(_)) => "ok",
            Sent::Answer(Err(_)) => "node_error",
            Sent::Throttled(_) => "throttled",
            Sent::Failed(_) => "failed",
        };
        let resting = h.resting(&key, now);
        drop(h);
        crate::telemetry::rpc_endpoint(&self.chain, &e.label, method, outcome, resting);
        sent
    }

    /// The raw exchange: TRON's HTTP API, or JSON-RPC (one call or a batch).
    /// A provider's rest (`Retry-After`) is written down here.
    async fn send(&self, url: &str, method: &str, body: &Body<'_>) -> Sent {
        let mut request = match (self.family, body) {
            (Family::Tron, Body::One(params)) => self.http.post(format!("{}{method}", url.trim_end_matches('/'))).json(params),
            (Family::Tron, Body::Batch(_)) => return Sent::Answer(Err(ChainError::Denied("TRON's HTTP API has no batches".into()))),
            (_, Body::One(params)) => self.http.post(url).json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })),
            (_, Body::Batch(calls)) => {
                let calls: Vec<Value> =
                    calls.iter().enumerate().map(|(id, p)| json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": p })).collect();
                self.http.post(url).json(&calls)
            }
        };
        // The provider can join the trace (W3C Trace Context); none when off.
        if let Some(traceparent) = crate::traces::for_providers() {
            request = request.header("traceparent", traceparent);
        }
        let response = match request.send().await {
            Ok(r) => r,
            // `without_url`: reqwest puts the full URL in its errors.
            Err(e) => return Sent::Failed(e.without_url().to_string()),
        };
        let status = response.status();
        if status.as_u16() == 429 || (status.as_u16() == 503 && response.headers().contains_key(reqwest::header::RETRY_AFTER)) {
            let rest = retry_after(response.headers()).unwrap_or(SHORTEST_RETRY_AFTER);
            return Sent::Throttled(rest.clamp(SHORTEST_RETRY_AFTER, LONGEST_RETRY_AFTER));
        }
        if !status.is_success() {
            return Sent::Failed(format!("HTTP {}", status.as_u16()));
        }
        // Read up to a bound: a provider's answer is held whole in memory.
        let mut response = response;
        let mut bytes = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if bytes.len() + chunk.len() > LONGEST_ANSWER => {
                    return Sent::Failed(format!("an answer longer than {} MiB", LONGEST_ANSWER >> 20))
                }
                Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(e) => return Sent::Failed(e.without_url().to_string()),
            }
        }
        let Ok(text) = String::from_utf8(bytes) else { return Sent::Failed("an answer that is not UTF-8".into()) };
        if self.family == Family::Tron {
            return Sent::Answer(Ok(text));
        }
        let Ok(answer) = serde_json::from_str::<Value>(&text) else { return Sent::Failed("an answer that is not JSON".into()) };
        match (body, answer.is_array()) {
            (Body::Batch(_), true) => return Sent::Answer(Ok(text)),
            // A provider that takes no batches: its failure, so the caller
            // falls back to single calls.
            (Body::Batch(_), false) => return Sent::Answer(Err(ChainError::NoBatches(redact_url(url)))),
            _ => {}
        }
        Sent::Answer(match (answer.get("result"), answer.get("error")) {
            (_, Some(err)) if !err.is_null() => Err(node_error(err)),
            (Some(result), _) => Ok(result.to_string()),
            _ => Err(ChainError::BadAnswer("answer has neither result nor error".into())),
        })
    }

    /// Which chain the endpoints are on, against `want` (the config's, in
    /// its terms): each is asked; one on another chain is never used again,
    /// and from now on an endpoint not asked yet is asked before its first
    /// use. What each said, in order.
    pub(crate) async fn identify(&self, want: Option<&str>) -> Vec<(usize, Result<String, ChainError>)> {
        if let Some(want) = want {
            self.expect(Some(want.to_string()));
        }
        let deadline = Instant::now() + ASK_EACH_WAIT;
        futures::future::join_all((0..self.endpoints.len()).map(|i| async move { (i, self.ask_identity(i, deadline, false).await) })).await
    }

    /// The chain the endpoints must be on (chains.toml's identity for it).
    pub(crate) fn expect(&self, identity: Option<String>) {
        if identity.is_some() {
            *self.expected.lock().expect("expected") = identity;
        }
    }

    /// Endpoint `i` may be used: it is on the expected chain, asking it
    /// first if it was never asked. `Ok(true)`: it was asked now, with the
    /// slot the caller had taken for its own request.
    async fn identified(&self, i: usize, deadline: Instant, slot_taken: bool) -> Result<bool, ChainError> {
        let identity = self.health(i).identity;
        match identity {
            Identity::Agrees => Ok(false),
            Identity::Wrong => Err(self.transport(i, "on another chain")),
            Identity::Unasked if self.expected.lock().expect("expected").is_none() => Ok(false),
            Identity::Unasked => {
                let asked = self.ask_identity(i, deadline.min(Instant::now() + ASK_EACH_WAIT), slot_taken).await;
                let identity = self.health(i).identity;
                match (identity, asked) {
                    (Identity::Agrees, _) => Ok(true),
                    (Identity::Wrong, _) => Err(self.transport(i, "on another chain")),
                    (Identity::Unasked, Err(e)) => Err(e),
                    (Identity::Unasked, Ok(_)) => Err(self.transport(i, "could not say which chain it is on")),
                }
            }
        }
    }

    /// Ask endpoint `i` which chain it is on (within its budget, not while
    /// the question rests there); write down what that says.
    async fn ask_identity(&self, i: usize, deadline: Instant, slot_taken: bool) -> Result<String, ChainError> {
        let method = match self.family {
            Family::Evm => "eth_chainId",
            Family::Solana => "getGenesisHash",
            Family::Tron => return Err(ChainError::Denied("TRON's HTTP API names no chain".into())),
        };
        {
            let now = Instant::now();
            let mut h = self.health(i);
            if h.resting(method, now) || (!slot_taken && h.admit(now, 1).is_err()) {
                return Err(self.transport(i, "resting, or asked to wait, or out of budget"));
            }
        }
        let said = match self.send_one(i, method, &Body::One(&json!([])), false, deadline).await {
            Sent::Answer(Ok(answer)) => identity_in(self.family, &answer),
            Sent::Answer(Err(e)) => {
                // A node without the question (method not found) cannot be
                // on another chain by its own account; one that is would
                // answer it. Any other refusal (over quota) asks again later.
                let mut h = self.health(i);
                if h.identity == Identity::Unasked && matches!(e, ChainError::Node { code: -32601, .. }) {
                    h.identity = Identity::Agrees;
                }
                return Err(e);
            }
            Sent::Throttled(_) => return Err(self.transport(i, "asked to wait (Retry-After)")),
            Sent::Failed(detail) => return Err(self.transport(i, &detail)),
        }?;
        let expected = self.expected.lock().expect("expected").clone();
        if let Some(want) = expected {
            let mut h = self.health(i);
            // Once on another chain, out for good.
            if h.identity != Identity::Wrong {
                h.identity = if said == want { Identity::Agrees } else { Identity::Wrong };
            }
            if h.identity == Identity::Wrong {
                drop(h);
                tracing::error!(chain = %self.chain, endpoint = %self.endpoints[i].label, node = %said, config = %want, "a provider is on another chain; it is not used");
            }
        }
        Ok(said)
    }

    /// Calls per batch: at most 100, and no more than the smallest budget.
    pub(crate) fn batch_size(&self) -> usize {
        (0..self.endpoints.len()).filter_map(|i| self.health(i).budget.as_ref().map(|b| b.per_second)).fold(BATCH, usize::min).max(1)
    }

    /// Per endpoint: is its head in the last round out of line with the
    /// others': more than `max_lag` blocks behind, or more than
    /// `AHEAD_AT_MOST` ahead? The line is the round's lower median, so it
    /// takes more than half the answers to move it; with fewer than three
    /// answers nobody is judged.
    fn out_of_line(&self, now: Instant) -> Vec<bool> {
        let round = self.round.lock().expect("round");
        let Some(round) = round.as_ref().filter(|r| now.duration_since(r.at) < ROUND_KEPT) else {
            return vec![false; self.endpoints.len()];
        };
        let mut heads: Vec<u64> = round.heads.iter().flatten().copied().collect();
        if heads.len() < 3 {
            // Two heads cannot say which is wrong: nobody is passed over.
            return vec![false; self.endpoints.len()];
        }
        heads.sort_unstable();
        let line = heads[(heads.len() - 1) / 2];
        round
            .heads
            .iter()
            .map(|h| h.is_some_and(|h| h.saturating_add(self.max_lag) < line || h > line.saturating_add(AHEAD_AT_MOST)))
            .collect()
    }

    /// Is it time to read every endpoint's head again (EVM, two endpoints
    /// or more)? Answers yes once per `PROBE_EVERY`.
    pub(crate) fn probe_due(&self) -> bool {
        if self.family != Family::Evm || self.endpoints.len() < 2 {
            return false;
        }
        let mut last = self.last_probe.lock().expect("probe");
        let due = last.is_none_or(|at| at.elapsed() >= PROBE_EVERY);
        if due {
            *last = Some(Instant::now());
        }
        due
    }

    /// One round of head reads: every endpoint on the chain (within its
    /// budget) at once, so their heads can be compared.
    pub(crate) async fn probe_heads(&self) {
        let now = Instant::now();
        let deadline = now + ASK_EACH_WAIT;
        let unchecked = self.expected.lock().expect("expected").is_none();
        let params = json!([]);
        let body = &Body::One(&params);
        let asks = (0..self.endpoints.len()).map(|i| async move {
            let admitted = {
                let mut h = self.health(i);
                (h.identity == Identity::Agrees || (unchecked && h.identity == Identity::Unasked))
                    && !h.resting("eth_blockNumber", now)
                    && h.admit(now, 1).is_ok()
            };
            if !admitted {
                return None;
            }
            match self.send_one(i, "eth_blockNumber", body, true, deadline).await {
                Sent::Answer(Ok(text)) => parse_quantity(&text),
                _ => None,
            }
        });
        let heads = futures::future::join_all(asks).await;
        let best = heads.iter().flatten().max().copied();
        for (e, head) in self.endpoints.iter().zip(&heads) {
            if let (Some(best), Some(head)) = (best, head) {
                crate::telemetry::rpc_endpoint_lag(&self.chain, &e.label, best.saturating_sub(*head));
            }
        }
        *self.round.lock().expect("round") = Some(Round { at: Instant::now(), heads });
    }
}

fn node_error(err: &Value) -> ChainError {
    ChainError::Node {
        code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: err.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
        data: err.get("data").map(|d| d.as_str().map(str::to_string).unwrap_or_else(|| d.to_string())),
    }
}

/// The answers of a batch, by call, in the order asked: each call's result
/// text or its node error. An answer that names a call twice, or none,
/// leaves that call unanswered (`BadAnswer`: the caller asks it alone).
pub(crate) fn batch_answers(text: &str, calls: usize) -> Result<Vec<Result<String, ChainError>>, ChainError> {
    let answers: Vec<Value> = serde_json::from_str(text).map_err(|e| ChainError::BadAnswer(e.to_string()))?;
    let mut by_id: Vec<Vec<Value>> = vec![Vec::new(); calls];
    for a in answers {
        if let Some(id) = a.get("id").and_then(Value::as_u64).filter(|id| (*id as usize) < calls) {
            by_id[id as usize].push(a);
        }
    }
    Ok(by_id
        .into_iter()
        .enumerate()
        .map(|(id, mut a)| match (a.len(), a.pop()) {
            (1, Some(a)) => match (a.get("result"), a.get("error")) {
                (_, Some(err)) if !err.is_null() => Err(node_error(err)),
                (Some(result), _) => Ok(result.to_string()),
                _ => Err(ChainError::BadAnswer("answer has neither result nor error".into())),
            },
            _ => Err(ChainError::BadAnswer(format!("the batch's answer to call {id} is missing or repeated"))),
        })
        .collect())
}

fn last_or(last: ChainError, detail: &str) -> ChainError {
    match last {
        ChainError::NoEndpoint => ChainError::Transport { endpoint: "-".into(), detail: detail.into() },
        e => e,
    }
}

/// `Retry-After` as seconds or an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// The chain's name in chains.toml's terms in a node's answer to the
/// identity question: the EVM chain id, or Solana's CAIP-2 reference (the
/// first 32 characters of the genesis hash).
pub(crate) fn identity_in(family: Family, answer: &str) -> Result<String, ChainError> {
    let v: Value = serde_json::from_str(answer).map_err(|e| ChainError::BadAnswer(e.to_string()))?;
    match family {
        Family::Solana => v
            .as_str()
            .filter(|h| h.len() >= 32)
            .map(|h| h[..32].to_string())
            .ok_or_else(|| ChainError::BadAnswer(format!("getGenesisHash answered {v}"))),
        _ => parse_quantity(answer).map(|id| id.to_string()).ok_or_else(|| ChainError::BadAnswer(format!("eth_chainId answered {v}"))),
    }
}

/// A JSON `"0x…"` quantity.
pub(crate) fn parse_quantity(text: &str) -> Option<u64> {
    let v: Value = serde_json::from_str(text).ok()?;
    u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}
