//! One `POST /v2/swap/execute`: what was asked, what is answered, the
//! legs its transactions are stored under (`swx_…` runs), and the
//! approvals a swapping wallet makes first. Shared by the wallet's own
//! swap (`execute`) and the sponsored one (`sponsored`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::U256;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::erc20::{self, Spend};
use super::{guard, SwapChain, SwapError, Swaps, DEFAULT_SLIPPAGE_BPS, MAX_SLIPPAGE_BPS};
use crate::config::Family;
use crate::db::Db;
use crate::family::keys::Role;
use crate::family::{Driver, Finality, SendError, Submit};
use crate::store::settlement::{self as repo, TxRow};

/// The leg name a run's transactions are stored under.
pub const LEG: &str = "swap";
pub const RESET_STEP: i32 = 0;
pub const APPROVE_STEP: i32 = 1;
pub const SWAP_STEP: i32 = 2;
/// How long an approval may take to confirm before the swap is sent.
const APPROVAL_WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Serialize, ToSchema)]
pub struct Executed {
    pub tx_hash: String,
    pub chain: String,
    pub from_token: String,
    pub to_token: String,
    /// Smallest units, decimal string.
    pub from_amount: String,
    /// Smallest units of `to_token`, decimal string: the quote's estimate.
    pub estimated_output: String,
    /// On the sponsored (gasless) path: what the service kept of the input
    /// for the gas it paid, in smallest units of `from_token`. The swap
    /// spent `from_amount` less this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sponsored_fee: Option<String>,
}

/// The run id of an execution: derived from (agent, key) when the caller
/// gave an `Idempotency-Key`, fresh otherwise.
pub fn run_id(agent: &str, key: Option<&str>) -> String {
    match key {
        Some(k) => format!("swx_{}", &hex::encode(Sha256::digest(format!("{agent}\n{k}")))[..32]),
        None => format!("swx_{}", ulid::Ulid::new()),
    }
}

pub struct Request {
    pub chain: String,
    pub from_token: String,
    pub to_token: String,
    pub from_amount: u64,
    pub slippage_bps: u16,
    pub to_chain: String,
}

pub fn parse(body: &Value) -> Result<Request, SwapError> {
    let text = |k: &'static str| {
        body.get(k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).ok_or(SwapError::FieldRequired(k))
    };
    let chain = text("chain")?;
    let from_token = text("from_token")?;
    let to_token = text("to_token")?;
    let number = |v: Option<&Value>| v.and_then(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())));
    let from_amount = number(body.get("from_amount")).filter(|a| *a > 0).ok_or(SwapError::PositiveAmount)?;
    let slippage_bps = match body.get("slippage_bps") {
        None | Some(Value::Null) => DEFAULT_SLIPPAGE_BPS,
        v => match number(v) {
            Some(b) if b <= u64::from(MAX_SLIPPAGE_BPS) => b as u16,
            Some(_) => return Err(SwapError::Slippage),
            None => return Err(SwapError::Invalid("slippage_bps")),
        },
    };
    let to_chain =
        body.get("to_chain").and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map_or_else(|| chain.clone(), str::to_string);
    Ok(Request { chain, from_token, to_token, from_amount, slippage_bps, to_chain })
}

pub fn sent(e: SendError) -> SwapError {
    match e {
        SendError::Unavailable(m) => SwapError::Unavailable(m),
        other => SwapError::SendFailed(other.to_string()),
    }
}

/// The approvals a wallet must make before it swaps: none for the native
/// coin or when its allowance to the route's spender covers the amount;
/// else (a reset to 0 first for tokens configured so, when it is not 0)
/// an approve of exactly the amount.
pub struct Approvals<'a> {
    chain: &'a str,
    family: Family,
    token: alloy_primitives::Address,
    owner: alloy_primitives::Address,
    spender: alloy_primitives::Address,
    steps: Vec<(i32, &'static str, U256)>,
}

pub async fn plan_approvals<'a>(
    swaps: &Swaps,
    from: &'a SwapChain,
    from_token: &str,
    amount: U256,
    me: &str,
    spender: Option<&str>,
) -> Result<Option<Approvals<'a>>, SwapError> {
    let token = from.family.facts().address20(from_token).ok_or(SwapError::Invalid("from_token"))?;
    if from.family.facts().is_native(&token) {
        return Ok(None);
    }
    let spender = spender
        .and_then(|a| from.family.facts().address20(a))
        .ok_or_else(|| SwapError::Unavailable("quote without an approval address".into()))?;
    let owner = from.family.facts().address20(me).ok_or(SwapError::WalletNotReady)?;
    let spend = Spend { chain: &from.name, family: from.family, token, owner, spender };
    let allowance = erc20::allowance(swaps, &spend).await?;
    if allowance >= amount {
        return Ok(None);
    }
    let mut steps = Vec::new();
    if erc20::resets_first(swaps, &spend) && !allowance.is_zero() {
        steps.push((RESET_STEP, "reset", U256::ZERO));
    }
    steps.push((APPROVE_STEP, "approve", amount));
    Ok(Some(Approvals { chain: &from.name, family: from.family, token, owner, spender, steps }))
}

impl Approvals<'_> {
    /// The approvals as calls to simulate ahead of the swap (EVM).
    pub fn simulated(&self) -> impl Iterator<Item = guard::EvmCall> + '_ {
        self.steps.iter().map(|(_, _, value)| guard::EvmCall {
            to: self.token,
            data: erc20::approve_data(self.spender, *value),
            value: U256::ZERO,
        })
    }

    /// Sign, store and send each (or find it stored by an earlier try of
    /// the run), each confirmed before the next.
    pub async fn send(&self, swaps: &Swaps, db: &Db, driver: &Arc<dyn Driver>, wallet: &Role, run: &str) -> Result<(), SwapError> {
        let spend = Spend { chain: self.chain, family: self.family, token: self.token, owner: self.owner, spender: self.spender };
        for &(step, label, value) in &self.steps {
            let hash = match repo::get_tx(db, run, LEG, step).await? {
                Some(stored) => stored.tx_hash,
                None => {
                    let submission = erc20::approve_submission(swaps, &spend, value).await?;
                    let row = TxRow { intent_id: run.to_string(), leg: LEG.into(), step, label: label.into() };
                    driver.submit(self.chain, wallet, &submission, row, Submit::default()).await.map_err(sent)?
                }
            };
            let started = Instant::now();
            loop {
                match driver.finality(self.chain, &hash, 1).await {
                    Ok(Finality::Confirmed(_)) => break,
                    Ok(Finality::Failed) => return Err(SwapError::SendFailed(format!("{label} {hash} reverted"))),
                    Ok(Finality::Pending) | Err(_) if started.elapsed() < APPROVAL_WAIT => {
                        tokio::time::sleep(Duration::from_millis(250)).await
                    }
                    _ => return Err(SwapError::Unavailable(format!("{label} {hash} not confirmed in time"))),
                }
            }
        }
        Ok(())
    }
}
