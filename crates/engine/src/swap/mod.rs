//! Swap proxying: quotes, approvals, cross-chain status, discovery, and
//! registered swaps followed to the end by the tracker. The upstreams are
//! an API speaking LI.FI's (`[swap] lifi_url`) and, for same-chain Solana
//! swaps, one speaking Jupiter's (`jupiter_url`); what they say is mapped
//! to the spec's fields and typed failures here, beside intents, below HTTP.

pub mod approval;
pub mod cache;
pub mod discovery;
pub mod erc20;
pub mod execute;
pub mod guard;
pub mod jupiter;
pub mod lifi;
pub mod prices;
pub mod quote;
pub mod register;
pub mod route;
pub mod run;
pub mod sponsored;
pub mod status;
pub mod tracker;
pub mod upstream;

use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, Family};
use crate::family::chain::{ChainClient, Chains};

/// What a quote fixes.
#[derive(Debug, Clone, Copy)]
pub enum Amount {
    /// ExactIn: what is sent.
    From(u64),
    /// ExactOut: what must arrive.
    To(u64),
}

/// Default and maximum slippage, basis points.
pub const DEFAULT_SLIPPAGE_BPS: u16 = 50;
pub const MAX_SLIPPAGE_BPS: u16 = 500;

/// Why a swap request failed; each maps to one status and fixed sentence.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    #[error("{0} parameter is required")]
    ParamRequired(&'static str),
    #[error("{0} is required")]
    FieldRequired(&'static str),
    #[error("from_amount or to_amount is required")]
    AmountRequired,
    #[error("from_amount and to_amount are mutually exclusive")]
    AmountsExclusive,
    #[error("invalid amount: must be a positive integer")]
    InvalidAmount,
    #[error("slippage_bps exceeds maximum allowed value")]
    Slippage,
    #[error("unsupported chain for swaps: {0}")]
    UnsupportedChain(String),
    /// A route between a testnet and a mainnet.
    #[error("chain and to_chain must both be mainnets or both testnets")]
    NetworksDiffer,
    #[error("invalid {0}")]
    Invalid(&'static str),
    #[error("no swap route found")]
    NoRoute,
    #[error("insufficient liquidity for swap")]
    NoLiquidity,
    #[error("to_user_address is required for cross-family routes")]
    RecipientRequired,
    #[error("transfer not found")]
    NotFound,
    #[error("from_amount must be greater than 0")]
    PositiveAmount,
    /// The chain (or the provider) shows the transaction doing other than
    /// the registration says.
    #[error("the transaction does not match the registration")]
    RegistrationMismatch,
    /// `payer_address` is not the account that sent the transaction.
    #[error("payer_address did not send this transaction")]
    NotTheSender,
    /// `/v2/swap/execute` on a chain agents cannot execute on.
    #[error("{0} has no CAIP-2 identifier")]
    NoCaip2(String),
    #[error("agent wallet not ready")]
    WalletNotReady,
    #[error("agent has no TRON wallet")]
    NoTronWallet,
    #[error("tron execution is not configured")]
    TronNotConfigured,
    /// The hosted wallet could not sign or send (detail logged). The
    /// sentence is the one clients of the hosted service match on.
    #[error("failed to send transaction via Privy")]
    SendFailed(String),
    /// The provider's route names a contract that is not known, or its
    /// simulated effect is not what was asked: nothing is signed or
    /// handed out (detail logged, never shown).
    #[error("swap route refused")]
    Refused(String),
    /// `sponsored=true` on a quote the sponsored path does not serve.
    #[error("this swap cannot be sponsored: same chain, a served stablecoin input and from_amount only")]
    NotSponsorable,
    /// A sponsored swap's input does not cover the gas fee it would keep.
    #[error("from_amount does not cover the sponsored gas fee")]
    BelowSponsoredFee,
    /// The wallet holds less of the input than the swap takes.
    #[error("agent wallet has insufficient balance for this swap")]
    InsufficientBalance,
    /// A sponsored swap failed after its input was pulled: the input went
    /// back to the wallet less the fee, which paid the relayer's gas.
    #[error("swap failed; the input was refunded less the sponsored gas fee")]
    Refunded,
    /// A sponsored swap asked less slippage than the service's floor.
    #[error("slippage_bps is below the minimum for sponsored swaps")]
    SlippageBelowFloor,
    /// The provider failed or timed out (detail logged, never shown).
    #[error("swap service temporarily unavailable")]
    Unavailable(String),
    /// The service's own failure (detail logged).
    #[error("internal error")]
    Internal(String),
}

impl From<crate::store::StoreError> for SwapError {
    fn from(e: crate::store::StoreError) -> Self {
        SwapError::Internal(format!("database: {e}"))
    }
}

/// A chain swaps are offered on.
#[derive(Clone)]
pub struct SwapChain {
    pub name: String,
    pub family: Family,
    /// The chain's id in LI.FI's numbering.
    pub lifi_id: u64,
    /// The EVM chain id (EVM only).
    pub chain_id: Option<u64>,
}

pub struct Swaps {
    pub config: Arc<Config>,
    pub chains: Arc<Chains>,
    pub lifi: lifi::Lifi,
    pub jupiter: jupiter::Jupiter,
    pub discovery: cache::Cache,
    /// Token prices for balances, per chain.
    pub prices: prices::Prices,
}

impl Swaps {
    pub fn new(config: Arc<Config>, chains: Arc<Chains>) -> Swaps {
        let lifi = lifi::Lifi::new(&config.swap);
        let jupiter = jupiter::Jupiter::new(&config.swap);
        let discovery = cache::Cache::new(Duration::from_secs(config.swap.discovery_ttl_seconds));
        Swaps { config, chains, lifi, jupiter, discovery, prices: Default::default() }
    }

    /// `name` if swaps are offered on it.
    pub fn chain(&self, name: &str) -> Result<SwapChain, SwapError> {
        let unsupported = || SwapError::UnsupportedChain(name.to_string());
        let c = self.config.chains.get(name).filter(|c| self.config.chain_exposed(c)).ok_or_else(unsupported)?;
        if let Some(listed) = &self.config.swap.chains {
            if !listed.iter().any(|l| l == name) {
                return Err(unsupported());
            }
        }
        let lifi_id = match c.family {
            Family::Evm => c.chain_id.ok_or_else(unsupported)?,
            Family::Solana => lifi::SOLANA_CHAIN_ID,
            // LI.FI serves TRON's mainnet only.
            Family::Tron if c.chain_id == Some(lifi::TRON_CHAIN_ID) => lifi::TRON_CHAIN_ID,
            Family::Tron => return Err(unsupported()),
        };
        Ok(SwapChain { name: name.to_string(), family: c.family, lifi_id, chain_id: (c.family == Family::Evm).then_some(lifi_id) })
    }

    /// A route's two chains (`to` absent: the same chain), both offered and
    /// both mainnets or both testnets.
    pub fn pair(&self, from: &str, to: Option<&str>) -> Result<(SwapChain, SwapChain), SwapError> {
        let first = self.chain(from)?;
        let Some(to) = to else { return Ok((first.clone(), first)) };
        let second = self.chain(to)?;
        let kind = |name: &str| self.config.chains.get(name).map(|c| c.kind());
        if kind(from) != kind(to) {
            return Err(SwapError::NetworksDiffer);
        }
        Ok((first, second))
    }

    /// The chain's transport, for on-chain reads.
    pub fn client(&self, chain: &str) -> Result<Arc<ChainClient>, SwapError> {
        self.chains.get(chain).ok_or_else(|| SwapError::Unavailable(format!("{chain} has no transport")))
    }
}

/// A query parameter as given, empty counted as absent.
pub fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// A positive integer amount in smallest units (`u64`, as the spec types it).
pub fn amount(text: &str) -> Result<u64, SwapError> {
    match text.parse::<u64>() {
        Ok(a) if a > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(a),
        _ => Err(SwapError::InvalidAmount),
    }
}

pub fn slippage(text: Option<&str>) -> Result<u16, SwapError> {
    match text {
        None => Ok(DEFAULT_SLIPPAGE_BPS),
        Some(t) => match t.parse::<u16>() {
            Ok(b) if b <= MAX_SLIPPAGE_BPS => Ok(b),
            Ok(_) => Err(SwapError::Slippage),
            Err(_) if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() => Err(SwapError::Slippage),
            Err(_) => Err(SwapError::Invalid("slippage_bps")),
        },
    }
}
