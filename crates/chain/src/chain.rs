//! Chain transport: JSON-RPC for EVM and Solana, the full-node HTTP API for
//! TRON. Adapters reach it only through `chain.query`, which is limited to
//! read-only methods of the chain's own family.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::{Config, Family, RpcUrl};
pub use crate::error::ChainError;
pub use crate::pool::redact_url;
use crate::pool::{parse_quantity, Class, Pool};

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
                // A provider out of line with the others' heads by more
                // than the chain's confirmations is not asked how far the
                // chain has got.
                let client = ChainClient::lagging_at_most(&name, c.family, c.rpc_urls.clone(), c.confirmations.max(1));
                // Each provider is asked which chain it is on before its first use.
                client.pool.expect(c.family.facts().identity(c));
                let client = Arc::new(ChainClient { gas_cap: c.contract_payer_gas_cap(), ..client });
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

/// One configured chain's transport.
pub struct ChainClient {
    pub chain: String,
    pub family: Family,
    pool: Arc<Pool>,
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
        Self::lagging_at_most(chain, family, urls.iter().map(|u| RpcUrl::from(u.as_str())).collect(), 1)
    }

    /// A client whose providers are a pool (`pool`); one whose head is more
    /// than `max_lag` blocks behind the line of a round of heads (or ahead
    /// of it) is not used for finality.
    pub fn lagging_at_most(chain: &str, family: Family, urls: Vec<RpcUrl>, max_lag: u64) -> Self {
        ChainClient {
            chain: chain.to_string(),
            family,
            pool: Arc::new(Pool::new(chain, family, urls, max_lag)),
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

    /// Many calls of one method in one request (JSON-RPC's batch): each
    /// call's result or node error, in order. A batch counts against a
    /// provider's budget as its calls; a long list goes as several batches.
    pub async fn rpc_batch(&self, method: &str, calls: &[Value]) -> Result<Vec<Result<Value, ChainError>>, ChainError> {
        if self.recorded.is_some() {
            return Err(ChainError::Denied("recorded chains answer one call at a time".into()));
        }
        let mut out = Vec::with_capacity(calls.len());
        for chunk in calls.chunks(self.pool.batch_size()) {
            let started = Instant::now();
            let deadline = started + crate::pool::WAIT_AT_MOST;
            let answer = self.pool.read_until(method, &crate::pool::Body::Batch(chunk), deadline).await;
            crate::telemetry::rpc_call(&self.chain, method, if answer.is_ok() { "ok" } else { "unavailable" }, started.elapsed());
            for answer in crate::pool::batch_answers(&answer?, chunk.len())? {
                out.push(answer.and_then(|text| serde_json::from_str(&text).map_err(|e| ChainError::BadAnswer(e.to_string()))));
            }
        }
        Ok(out)
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
        // The bound goes down to each endpoint's try, so a provider that
        // hangs is written down as failing, not just abandoned.
        let outcome = self
            .call_by("eth_blockNumber", &json!([]), started + HEAD_READ_TIMEOUT)
            .await
            .and_then(|answer| parse_quantity(&answer).ok_or_else(|| ChainError::BadAnswer(format!("eth_blockNumber answered {answer}"))));
        if let Ok(head) = outcome {
            *self.head_seen.lock().expect("head lock") = Some((head, Instant::now()));
        }
        // Now and then every provider's head, to know which lag.
        if self.pool.probe_due() {
            let pool = self.pool.clone();
            tokio::spawn(async move { pool.probe_heads().await });
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
        self.call_by(method, params, Instant::now() + crate::pool::WAIT_AT_MOST).await
    }

    /// A call that ends by `deadline`, counted in the metrics.
    async fn call_by(&self, method: &str, params: &Value, deadline: Instant) -> Result<String, ChainError> {
        let started = std::time::Instant::now();
        let answer = self.call_endpoints(method, params, deadline).await;
        let outcome = match &answer {
            Ok(_) => "ok",
            Err(ChainError::Node { .. }) => "node_error",
            Err(_) => "unavailable",
        };
        crate::telemetry::rpc_call(&self.chain, method, outcome, started.elapsed());
        answer
    }

    async fn call_endpoints(&self, method: &str, params: &Value, deadline: Instant) -> Result<String, ChainError> {
        if let Some(r) = &self.recorded {
            return r.answer(method, params);
        }
        match Class::of(self.family, method) {
            Class::Write => self.pool.write(method, params).await,
            _ => self.pool.read_until(method, &crate::pool::Body::One(params), deadline).await,
        }
    }

    /// Which chain the nodes say they are on, in chains.toml's terms: the
    /// EVM chain id (`eth_chainId`), or Solana's CAIP-2 reference (the first
    /// 32 characters of `getGenesisHash`); `None` for TRON, whose HTTP API
    /// has no such answer. Every provider is asked: one that names another
    /// chain than `want` is taken out of the pool for good (a testnet's URL
    /// beside a mainnet's would credit what the mainnet never saw). The
    /// answer is `want` when a provider agrees, else the first one given.
    pub async fn identity(&self, want: Option<&str>) -> Result<Option<String>, ChainError> {
        if self.family == Family::Tron {
            return Ok(None);
        }
        if let Some(r) = &self.recorded {
            let method = if self.family == Family::Evm { "eth_chainId" } else { "getGenesisHash" };
            return r.answer(method, &json!([])).and_then(|a| crate::pool::identity_in(self.family, &a)).map(Some);
        }
        let said = self.pool.identify(want).await;
        // A round of heads, so lags are known early (not waited for: the
        // probe of a chain is bounded, and one silent provider would hold it).
        if self.pool.probe_due() {
            let pool = self.pool.clone();
            tokio::spawn(async move { pool.probe_heads().await });
        }
        if let Some(want) = want.filter(|w| said.iter().any(|(_, s)| s.as_ref().is_ok_and(|s| s == w))) {
            return Ok(Some(want.to_string()));
        }
        let mut last = Err(ChainError::NoEndpoint);
        for (_, s) in said {
            if s.is_ok() {
                return s.map(Some);
            }
            last = s.map(Some);
        }
        last
    }

    /// `query` from a blocking thread (adapter calls run on one).
    pub fn query_blocking(&self, method: &str, params: &str) -> Result<String, ChainError> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| ChainError::Transport { endpoint: "-".into(), detail: "no async runtime for chain queries".into() })?;
        handle.block_on(self.query(method, params))
    }
}
