//! `GET /api/swap/status`: the provider's record of a (cross-chain) swap,
//! in the spec's fields; 404 while it has none.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::lifi::Status;
use super::{given, SwapError, Swaps};

#[derive(Debug, Serialize, ToSchema)]
pub struct StatusResponse {
    /// PENDING, DONE, FAILED or INVALID.
    pub status: String,
    pub substatus: Option<String>,
    pub message: Option<String>,
    pub tool: Option<String>,
    pub source_tx_hash: Option<String>,
    pub dest_tx_hash: Option<String>,
    /// Smallest units of the received token, decimal string.
    pub received_amount: Option<String>,
    pub explorer_link: Option<String>,
}

impl StatusResponse {
    pub fn of(v: &Value) -> StatusResponse {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        StatusResponse {
            status: s("/status").unwrap_or_default(),
            substatus: s("/substatus"),
            message: s("/substatusMessage").or_else(|| s("/message")),
            tool: s("/tool"),
            source_tx_hash: s("/sending/txHash"),
            dest_tx_hash: s("/receiving/txHash"),
            received_amount: s("/receiving/amount"),
            explorer_link: s("/lifiExplorerLink"),
        }
    }
}

/// `GET /api/swap/status`'s parameters, read as text and checked in `status`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatusQuery {
    /// Source-chain transaction hash
    #[param(value_type = String, required = true)]
    pub tx_hash: Option<String>,
    /// Source chain
    pub from_chain: Option<String>,
    /// Destination chain
    pub to_chain: Option<String>,
    /// Bridge tool identifier
    pub bridge: Option<String>,
}

pub async fn status(swaps: &Swaps, q: &StatusQuery) -> Result<StatusResponse, SwapError> {
    let tx = given(&q.tx_hash).ok_or(SwapError::ParamRequired("tx_hash"))?;
    let chain = |v: &Option<String>| given(v).map(|c| swaps.chain(c)).transpose();
    let (from, to) = (chain(&q.from_chain)?, chain(&q.to_chain)?);
    // A hash of the source chain's family (of any family when it is not named).
    let families = from.as_ref().map_or(crate::family::ALL.to_vec(), |c| vec![c.family]);
    if !families.into_iter().any(|f| f.facts().is_tx_id(tx)) {
        return Err(SwapError::Invalid("tx_hash"));
    }
    match swaps.lifi.status(tx, from.map(|c| c.lifi_id), to.map(|c| c.lifi_id), given(&q.bridge)).await? {
        Status::Unknown => Err(SwapError::NotFound),
        Status::Known(v) => Ok(StatusResponse::of(&v)),
    }
}
