//! Chain transport: JSON-RPC for EVM and Solana, the full-node HTTP API for
//! TRON. Adapters reach it only through `chain.query`, which is limited to
//! read-only methods of the chain's own family.

use std::time::Duration;

use serde_json::{json, Value};

use crate::adapter::bindings::stablerail::adapter::chain::QueryError;
use crate::config::Family;

const EVM_READS: &[&str] = &[
    "eth_call",
    "eth_chainId",
    "eth_blockNumber",
    "eth_getBalance",
    "eth_getCode",
    "eth_getStorageAt",
    "eth_getTransactionCount",
    "eth_getTransactionByHash",
    "eth_getTransactionReceipt",
    "eth_getBlockByNumber",
    "eth_getLogs",
    "eth_estimateGas",
    "eth_gasPrice",
    "eth_maxPriorityFeePerGas",
    "eth_feeHistory",
];

const SOLANA_READS: &[&str] = &[
    "getAccountInfo",
    "getMultipleAccounts",
    "getBalance",
    "getTokenAccountBalance",
    "getTokenAccountsByOwner",
    "getLatestBlockhash",
    "isBlockhashValid",
    "getSignatureStatuses",
    "getTransaction",
    "getSlot",
    "getBlockHeight",
    "getMinimumBalanceForRentExemption",
    "getFeeForMessage",
    "simulateTransaction",
];

const TRON_READS: &[&str] = &[
    "/wallet/triggerconstantcontract",
    "/wallet/estimateenergy",
    "/wallet/gettransactioninfobyid",
    "/wallet/gettransactionbyid",
    "/wallet/getnowblock",
    "/wallet/getaccount",
    "/wallet/getaccountresource",
    "/wallet/getcontract",
    "/wallet/getchainparameters",
];

/// The read-only methods an adapter of `family` may call.
pub fn read_allow_list(family: Family) -> &'static [&'static str] {
    match family {
        Family::Evm => EVM_READS,
        Family::Solana => SOLANA_READS,
        Family::Tron => TRON_READS,
    }
}

/// One configured chain's transport.
pub struct ChainClient {
    pub chain: String,
    pub family: Family,
    urls: Vec<String>,
    http: reqwest::Client,
}

impl ChainClient {
    pub fn new(chain: &str, family: Family, urls: Vec<String>) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("a reqwest client with a timeout builds");
        ChainClient { chain: chain.to_string(), family, urls, http }
    }

    /// An adapter's query: allow-listed, then sent to each URL in turn until
    /// one answers.
    pub async fn query(&self, method: &str, params: &str) -> Result<String, QueryError> {
        if !read_allow_list(self.family).contains(&method) {
            return Err(QueryError::Denied(format!(
                "`{method}` is not a read-only {:?} method",
                self.family
            )));
        }
        let params: Value = serde_json::from_str(params)
            .map_err(|e| QueryError::Rpc(format!("params are not JSON: {e}")))?;
        if self.urls.is_empty() {
            return Err(QueryError::Unavailable(format!("{} has no rpc_urls", self.chain)));
        }
        let mut last = String::new();
        for url in &self.urls {
            match self.send(url, method, &params).await {
                Ok(v) => return v,
                Err(e) => last = format!("{url}: {e}"),
            }
        }
        Err(QueryError::Unavailable(last))
    }

    /// The host's own JSON-RPC call (EVM, Solana): any method, no allow-list.
    /// Returns the `result`, or the node's or transport's error as text.
    pub async fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        if self.urls.is_empty() {
            return Err(format!("{} has no rpc_urls", self.chain));
        }
        let mut last = String::new();
        for url in &self.urls {
            match self.send(url, method, &params).await {
                Ok(Ok(text)) => return serde_json::from_str(&text).map_err(|e| e.to_string()),
                Ok(Err(QueryError::Rpc(m))) => return Err(m),
                Ok(Err(other)) => last = format!("{other:?}"),
                Err(e) => last = format!("{url}: {e}"),
            }
        }
        Err(last)
    }

    /// `query` from a blocking thread (adapter calls run on one).
    pub fn query_blocking(&self, method: &str, params: &str) -> Result<String, QueryError> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| QueryError::Unavailable("no async runtime for chain queries".into()))?;
        handle.block_on(self.query(method, params))
    }

    /// Outer error: transport failed (try the next URL). Inner: the node's answer.
    async fn send(&self, url: &str, method: &str, params: &Value) -> Result<Result<String, QueryError>, reqwest::Error> {
        if self.family == Family::Tron {
            let url = format!("{}{method}", url.trim_end_matches('/'));
            let body = self.http.post(url).json(params).send().await?.error_for_status()?.text().await?;
            return Ok(Ok(body));
        }
        let req = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let answer: Value = self.http.post(url).json(&req).send().await?.error_for_status()?.json().await?;
        Ok(match (answer.get("result"), answer.get("error")) {
            (_, Some(err)) if !err.is_null() => Err(QueryError::Rpc(err.to_string())),
            (Some(result), _) => Ok(result.to_string()),
            _ => Err(QueryError::Rpc("answer has neither result nor error".into())),
        })
    }
}
