//! `GET /api/swap/{tokens,chains,connections}`: the provider's discovery
//! lists, cached, passed through byte for byte. Only the parameters named
//! here reach the provider.

use std::sync::Arc;

use serde::Deserialize;
use utoipa::IntoParams;

use super::{SwapError, Swaps};

/// Tokens the provider knows.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TokensQuery {
    /// Comma-separated chain ids
    pub chains: Option<String>,
    /// e.g. EVM,SVM
    #[serde(rename = "chainTypes")]
    pub chain_types: Option<String>,
}

/// Chains the provider serves.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChainsQuery {
    /// EVM or SVM
    #[serde(rename = "chainTypes")]
    pub chain_types: Option<String>,
}

/// Routes between chains and tokens.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConnectionsQuery {
    /// Chain id
    #[serde(rename = "fromChain")]
    pub from_chain: Option<String>,
    /// Chain id
    #[serde(rename = "toChain")]
    pub to_chain: Option<String>,
    /// Token address
    #[serde(rename = "fromToken")]
    pub from_token: Option<String>,
    /// Token address
    #[serde(rename = "toToken")]
    pub to_token: Option<String>,
}

/// One discovery list: which provider path, with which parameters.
pub enum List<'a> {
    Tokens(&'a TokensQuery),
    Chains(&'a ChainsQuery),
    Connections(&'a ConnectionsQuery),
}

impl List<'_> {
    fn path_and_pairs(&self) -> (&'static str, Vec<(&'static str, String)>) {
        let given = |pairs: &[(&'static str, &Option<String>)]| -> Vec<(&'static str, String)> {
            pairs.iter().filter_map(|(k, v)| v.as_ref().map(|v| (*k, v.clone()))).collect()
        };
        match self {
            List::Tokens(q) => ("/tokens", given(&[("chains", &q.chains), ("chainTypes", &q.chain_types)])),
            List::Chains(q) => ("/chains", given(&[("chainTypes", &q.chain_types)])),
            List::Connections(q) => (
                "/connections",
                given(&[("fromChain", &q.from_chain), ("toChain", &q.to_chain), ("fromToken", &q.from_token), ("toToken", &q.to_token)]),
            ),
        }
    }
}

/// The provider's answer for `list`, from the cache while it is fresh.
pub async fn fetch(swaps: &Swaps, list: List<'_>) -> Result<Arc<[u8]>, SwapError> {
    let (path, mut pairs) = list.path_and_pairs();
    pairs.sort();
    let key = format!("{path}?{}", pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&"));
    let lifi = &swaps.lifi;
    swaps.discovery.get(&key, || lifi.discovery(path, &pairs)).await
}
