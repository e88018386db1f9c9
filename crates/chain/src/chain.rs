//! Chain transport: JSON-RPC for EVM and Solana, the full-node HTTP API for
//! TRON. Adapters reach it only through `chain.query`, which is limited to
//! read-only methods of the chain's own family.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::{Config, Family};

/// Every chain's transport, built once at start-up and handed to the
/// adapter host, the family drivers, the swap code and the chain watch.
pub struct Chains(BTreeMap<String, Arc<ChainClient>>);

impl Chains {
    /// A client for each exposed chain and each chain with a served asset.
    pub fn from_config(cfg: &Config) -> Chains {
        let mut names: Vec<String> = cfg.served_assets().map(|(chain, ..)| chain.to_string()).collect();
        names.extend(cfg.exposed_chains());
        let clients = names
            .into_iter()
            .map(|name| {
                let c = &cfg.chains[&name];
                let client =
                    Arc::new(ChainClient { gas_cap: c.contract_payer_gas_cap(), ..ChainClient::new(&name, c.family, c.rpc_urls.clone()) });
                (name, client)
            })
            .collect();
        Chains(clients)
    }

    /// The transport of a configured chain, if it is exposed.
    pub fn get(&self, chain: &str) -> Option<Arc<ChainClient>> {
        self.0.get(chain).cloned()
    }
}

/// The read-only methods an adapter of `family` may call.
pub fn read_allow_list(family: Family) -> &'static [&'static str] {
    family.facts().reads
}

/// Why a chain call did not produce a result. Transport failures carry
/// only the endpoint's redacted label, never its URL.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ChainError {
    #[error("`{0}` is not a read-only method of this chain's family")]
    Denied(String),
    #[error("no rpc_urls are configured")]
    NoEndpoint,
    #[error("{endpoint}: {detail}")]
    Transport { endpoint: String, detail: String },
    /// The node answered with an error object.
    #[error("node error {code}: {message}")]
    Node { code: i64, message: String, data: Option<String> },
    #[error("unreadable answer: {0}")]
    BadAnswer(String),
}

impl ChainError {
    /// The node itself refused (as opposed to: could not be reached).
    pub fn is_node(&self) -> bool {
        matches!(self, ChainError::Node { .. })
    }
}

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

struct Endpoint {
    url: String,
    label: String,
}

/// One configured chain's transport.
pub struct ChainClient {
    pub chain: String,
    pub family: Family,
    endpoints: Vec<Endpoint>,
    http: reqwest::Client,
    /// Answers written down instead of a node (`adapter check`).
    recorded: Option<Recorded>,
    /// The most gas an adapter's `eth_call` may spend here (EVM): what a
    /// payer's contract may make the service simulate, and then pay for.
    pub gas_cap: Option<u64>,
    /// EVM: the last head read and when its answer arrived, for readers
    /// that must not wait (the code reads).
    head_seen: Mutex<Option<(u64, Instant)>>,
    /// EVM: one head read at a time; when the last one started and what it
    /// gave, for those who waited on it.
    head_read: tokio::sync::Mutex<Option<(Instant, Result<u64, ChainError>)>>,
    /// EVM: short `eth_getCode` answers at `latest` (no code, an EIP-7702
    /// delegation), by address, all read under the head `.0`.
    codes: Mutex<(u64, HashMap<String, String>)>,
}

/// How old a head read may be and still be the head (EVM): the
/// confirmation follower and the code reads share one `eth_blockNumber`.
pub const HEAD_MEMO: Duration = Duration::from_millis(100);

/// A head read gives up after this: those waiting on it get its error.
const HEAD_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Code answers kept: only short ones (`"0x"`, a 23-byte EIP-7702
/// delegation), at most this many per head. A contract's code is read each
/// time, as before: kept, 10,000 strangers' 24-KiB contracts would be half
/// a gigabyte.
const SHORT_CODE: usize = 64;
const MOST_CODES: usize = 10_000;

/// A chain that answers from a table: (method, params) → result or node
/// error. A question the table lacks is answered as an unreachable node.
#[derive(Debug, Clone, Default)]
pub struct Recorded(pub Vec<RecordedAnswer>);

#[derive(Debug, Clone)]
pub struct RecordedAnswer {
    pub method: String,
    pub params: Value,
    pub answer: Result<Value, (i64, String)>,
}

impl Recorded {
    fn answer(&self, method: &str, params: &Value) -> Result<String, ChainError> {
        match self.0.iter().find(|a| a.method == method && &a.params == params) {
            Some(RecordedAnswer { answer: Ok(v), .. }) => Ok(v.to_string()),
            Some(RecordedAnswer { answer: Err((code, message)), .. }) => {
                Err(ChainError::Node { code: *code, message: message.clone(), data: None })
            }
            None => Err(ChainError::Transport { endpoint: "recorded".into(), detail: format!("no recorded answer to {method} {params}") }),
        }
    }
}

impl ChainClient {
    pub fn new(chain: &str, family: Family, urls: Vec<String>) -> Self {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("a reqwest client with a timeout builds");
        let endpoints = urls.into_iter().map(|url| Endpoint { label: redact_url(&url), url }).collect();
        ChainClient {
            chain: chain.to_string(),
            family,
            endpoints,
            http,
            recorded: None,
            gas_cap: None,
            head_seen: Default::default(),
            head_read: Default::default(),
            codes: Default::default(),
        }
    }

    /// A chain of recorded answers, with the allow-list of a live one.
    pub fn recorded(chain: &str, family: Family, answers: Recorded) -> Self {
        ChainClient { recorded: Some(answers), ..ChainClient::new(chain, family, vec![]) }
    }

    /// An adapter's query: allow-listed, then sent like `rpc`. Returns the
    /// result's JSON text.
    pub async fn query(&self, method: &str, params: &str) -> Result<String, ChainError> {
        if !read_allow_list(self.family).contains(&method) {
            return Err(ChainError::Denied(method.to_string()));
        }
        let params: Value = serde_json::from_str(params).map_err(|e| ChainError::BadAnswer(format!("params are not JSON: {e}")))?;
        self.call(method, &params).await
    }

    /// The host's own call (EVM, Solana JSON-RPC): any method, no allow-list.
    pub async fn rpc(&self, method: &str, params: Value) -> Result<Value, ChainError> {
        let text = self.call(method, &params).await?;
        serde_json::from_str(&text).map_err(|e| ChainError::BadAnswer(e.to_string()))
    }

    /// The chain's head block number (EVM), read again only when the last
    /// answer arrived more than `max_age` ago (`HEAD_MEMO` for the hot
    /// paths, zero for a caller that has just seen a block land). One read
    /// at a time: a caller that waited for another's read takes its answer,
    /// or its error, when that read started after the caller asked (it is
    /// as fresh as a read of its own would be), so a slow or failing node
    /// costs the waiters one read, not one each.
    pub async fn head(&self, max_age: Duration) -> Result<u64, ChainError> {
        let asked = Instant::now();
        if let Some(head) = self.head_within(max_age) {
            return Ok(head);
        }
        let mut last = self.head_read.lock().await;
        if let Some((started, outcome)) = &*last {
            if *started >= asked {
                return outcome.clone();
            }
        }
        if let Some(head) = self.head_within(max_age) {
            return Ok(head);
        }
        let started = Instant::now();
        let outcome = match tokio::time::timeout(HEAD_READ_TIMEOUT, self.call_uncached("eth_blockNumber", &json!([]))).await {
            Ok(Ok(answer)) => serde_json::from_str::<Value>(&answer)
                .ok()
                .and_then(|v| u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok())
                .ok_or_else(|| ChainError::BadAnswer(format!("eth_blockNumber answered {answer}"))),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ChainError::Transport { endpoint: "-".into(), detail: "eth_blockNumber timed out".into() }),
        };
        if let Ok(head) = outcome {
            *self.head_seen.lock().expect("head lock") = Some((head, Instant::now()));
        }
        *last = Some((started, outcome.clone()));
        outcome
    }

    /// The last head read, if its answer arrived within `max_age`.
    fn head_within(&self, max_age: Duration) -> Option<u64> {
        self.head_seen.lock().expect("head lock").filter(|(_, at)| at.elapsed() < max_age).map(|(head, _)| head)
    }

    /// A payer's code is read once per block, not once per look: verify,
    /// settle and the keyless gas count of one payment ask it in turn, and
    /// so do a payer's payments in one block. Code changes only in a new
    /// block (a deployment, an EIP-7702 delegation), so an answer serves
    /// while the head it was read under is the head. The head is what was
    /// last read (by the follower, the batcher) within `HEAD_MEMO`: a code
    /// read never waits for a head read, and without a fresh head it reads
    /// the code and keeps nothing.
    async fn code_at_head(&self, address: String, params: &Value) -> Result<String, ChainError> {
        let Some(head) = self.head_within(HEAD_MEMO) else { return self.call_uncached("eth_getCode", params).await };
        {
            let codes = self.codes.lock().expect("codes lock");
            if let Some(code) = codes.1.get(&address).filter(|_| codes.0 == head) {
                return Ok(code.clone());
            }
        }
        let code = self.call_uncached("eth_getCode", params).await?;
        if code.len() <= SHORT_CODE {
            let mut codes = self.codes.lock().expect("codes lock");
            // Answers under an older head are of no use any more.
            if codes.0 < head {
                *codes = (head, HashMap::new());
            }
            if codes.0 == head && codes.1.len() < MOST_CODES {
                codes.1.insert(address, code.clone());
            }
        }
        Ok(code)
    }

    /// Each endpoint in turn until one answers; a node's own error answer
    /// is final (another endpoint of the same chain would say the same).
    async fn call(&self, method: &str, params: &Value) -> Result<String, ChainError> {
        if let Some(address) = self.latest_code_of(method, params) {
            return self.code_at_head(address, params).await;
        }
        self.call_uncached(method, params).await
    }

    /// `eth_getCode(address, "latest")`'s address, lower-cased (EVM).
    fn latest_code_of(&self, method: &str, params: &Value) -> Option<String> {
        if self.family != Family::Evm || method != "eth_getCode" || self.recorded.is_some() {
            return None;
        }
        match params.as_array()?.as_slice() {
            [Value::String(address), Value::String(tag)] if tag == "latest" => Some(address.to_ascii_lowercase()),
            _ => None,
        }
    }

    async fn call_uncached(&self, method: &str, params: &Value) -> Result<String, ChainError> {
        let started = std::time::Instant::now();
        let answer = self.call_endpoints(method, params).await;
        let outcome = match &answer {
            Ok(_) => "ok",
            Err(ChainError::Node { .. }) => "node_error",
            Err(_) => "unavailable",
        };
        crate::telemetry::rpc_call(&self.chain, method, outcome, started.elapsed());
        answer
    }

    async fn call_endpoints(&self, method: &str, params: &Value) -> Result<String, ChainError> {
        if let Some(r) = &self.recorded {
            return r.answer(method, params);
        }
        let mut last = ChainError::NoEndpoint;
        for e in &self.endpoints {
            match self.send(&e.url, method, params).await {
                Ok(answer) => return answer,
                Err(err) => {
                    // `without_url`: reqwest puts the full URL in its errors.
                    let detail = err.without_url().to_string();
                    tracing::debug!(chain = %self.chain, endpoint = %e.label, method, %detail, "rpc endpoint failed");
                    last = ChainError::Transport { endpoint: e.label.clone(), detail };
                }
            }
        }
        Err(last)
    }

    /// Which chain the node says it is on, in chains.toml's terms: the EVM
    /// chain id (`eth_chainId`), or Solana's CAIP-2 reference (the first 32
    /// characters of `getGenesisHash`); `None` for TRON, whose HTTP API has
    /// no such answer.
    pub async fn identity(&self) -> Result<Option<String>, ChainError> {
        match self.family {
            Family::Evm => {
                let v = self.rpc("eth_chainId", json!([])).await?;
                let id = v.as_str().and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok());
                id.map(|id| Some(id.to_string())).ok_or_else(|| ChainError::BadAnswer(format!("eth_chainId answered {v}")))
            }
            Family::Solana => {
                let v = self.rpc("getGenesisHash", json!([])).await?;
                let hash =
                    v.as_str().filter(|h| h.len() >= 32).ok_or_else(|| ChainError::BadAnswer(format!("getGenesisHash answered {v}")))?;
                Ok(Some(hash[..32].to_string()))
            }
            Family::Tron => Ok(None),
        }
    }

    /// `query` from a blocking thread (adapter calls run on one).
    pub fn query_blocking(&self, method: &str, params: &str) -> Result<String, ChainError> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| ChainError::Transport { endpoint: "-".into(), detail: "no async runtime for chain queries".into() })?;
        handle.block_on(self.query(method, params))
    }

    /// Outer error: transport failed (try the next URL). Inner: the node's answer.
    async fn send(&self, url: &str, method: &str, params: &Value) -> Result<Result<String, ChainError>, reqwest::Error> {
        if self.family == Family::Tron {
            let url = format!("{}{method}", url.trim_end_matches('/'));
            let body = self.http.post(url).json(params).send().await?.error_for_status()?.text().await?;
            return Ok(Ok(body));
        }
        let req = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let answer: Value = self.http.post(url).json(&req).send().await?.error_for_status()?.json().await?;
        Ok(match (answer.get("result"), answer.get("error")) {
            (_, Some(err)) if !err.is_null() => Err(ChainError::Node {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
                data: err.get("data").map(|d| d.as_str().map(str::to_string).unwrap_or_else(|| d.to_string())),
            }),
            (Some(result), _) => Ok(result.to_string()),
            _ => Err(ChainError::BadAnswer("answer has neither result nor error".into())),
        })
    }
}
