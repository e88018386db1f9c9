//! Read-only questions to the adapter's own chain (`chain.query`).
//!
//! The host forwards a JSON-RPC method and its parameters to the chain the
//! call is for, after checking the method against its allow-list (EVM
//! `eth_call`, `eth_getCode`, …; Solana `getAccountInfo`, …; TRON
//! `wallet/triggerconstantcontract`, …). Nothing an adapter asks can move
//! money. Every failure is the payment's `chain-unavailable`: the host then
//! retries, or answers that it could not ask, and never reports a refusal.
//!
//! ```ignore
//! use stablerail_adapter_kit::chain;
//! let code: String = chain::query("eth_getCode", &serde_json::json!([token, "latest"]))?;
//! ```

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bindings::stablerail::adapter0_1_0::chain as wit;
use crate::types::ProofError;

/// Why a question got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The host's allow-list refuses this method for this family.
    Denied(String),
    /// The chain could not be reached.
    Unavailable(String),
    /// The node answered with a JSON-RPC error.
    Rpc(String),
    /// The answer is not what the caller expected.
    Unreadable(String),
}

impl From<QueryError> for ProofError {
    fn from(e: QueryError) -> Self {
        ProofError::ChainUnavailable(match e {
            QueryError::Denied(m) => format!("query denied: {m}"),
            QueryError::Unavailable(m) => format!("chain unavailable: {m}"),
            QueryError::Rpc(m) => format!("rpc error: {m}"),
            QueryError::Unreadable(m) => format!("unreadable chain answer: {m}"),
        })
    }
}

/// Ask `method` with `params` and read the answer as `T` (a
/// `serde_json::Value` takes anything).
pub fn query<T: DeserializeOwned>(method: &str, params: &Value) -> Result<T, QueryError> {
    let text = wit::query(method, &params.to_string()).map_err(|e| match e {
        wit::QueryError::Denied(m) => QueryError::Denied(m),
        wit::QueryError::Unavailable(m) => QueryError::Unavailable(m),
        wit::QueryError::Rpc(m) => QueryError::Rpc(m),
    })?;
    serde_json::from_str(&text).map_err(|e| QueryError::Unreadable(format!("{method}: {e}")))
}
