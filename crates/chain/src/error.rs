//! Why a chain call did not produce a result.

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
    /// The provider takes no batched calls: ask them one by one.
    #[error("{0}: the provider takes no batched calls")]
    NoBatches(String),
}

impl ChainError {
    /// The node itself refused (as opposed to: could not be reached).
    pub fn is_node(&self) -> bool {
        matches!(self, ChainError::Node { .. })
    }
}
