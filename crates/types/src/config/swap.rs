//! `[swap]`: the swap provider, registered swaps, the sponsored swap.

use super::*;

/// `[swap]`: where quotes, routes and cross-chain status come from (an
/// API speaking LI.FI's), and how registered swaps are followed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Swap {
    /// Base URL of the LI.FI API (or one speaking it), e.g. `https://li.quest/v1`.
    pub lifi_url: String,
    /// Environment variable holding the LI.FI API key (sent as
    /// `x-lifi-api-key`); none: unauthenticated, at LI.FI's lower rate limit.
    pub lifi_api_key_env: Option<String>,
    /// Per upstream request; past it the answer is 502.
    pub timeout_ms: u64,
    /// How long discovery answers (tokens, chains, connections) are served from cache.
    pub discovery_ttl_seconds: u64,
    /// How long a quote's transaction may be broadcast (`expires_at`).
    pub quote_ttl_seconds: u64,
    /// A registered swap whose source transaction is not on chain by then is FAILED.
    pub cancel_after_seconds: u64,
    /// Registrations per minute per client of transactions not yet on their
    /// chain (each is followed for `cancel_after_seconds`).
    pub unseen_registrations_per_minute: u32,
    /// How often the tracker looks at pending swaps.
    pub track_interval_ms: u64,
    /// Chains offered for swaps; absent: every exposed EVM and TRON chain and Solana.
    pub chains: Option<Vec<String>>,
    /// Base URL of Jupiter's Swap API (or one speaking it).
    pub jupiter_url: String,
    /// Environment variable holding the Jupiter API key (sent as `x-api-key`).
    pub jupiter_api_key_env: Option<String>,
    /// Chain → provider of its same-chain swaps. Unlisted: `jupiter` on
    /// Solana chains, `lifi` elsewhere. Cross-chain routes are LI.FI's.
    pub providers: BTreeMap<String, SwapProvider>,
    /// The most gas a hosted wallet's swap (its approvals and the swap
    /// itself, as simulated) may use: the native fee it may cost is this
    /// times the chain's gas price, which the driver's fee policy bounds.
    pub max_gas: u64,
    /// The most SOL a hosted wallet's Solana swap may cost it beyond a SOL
    /// input (fees and new token accounts' rent), in lamports.
    pub max_fee_lamports: u64,
    /// How old a token price (from the provider's token list) may be and
    /// still be shown beside a balance.
    pub price_max_age_seconds: u64,
    /// When a hosted wallet's same-chain EVM swap is sponsored (the relayer
    /// pays the gas and keeps the chain's `fee` out of the input).
    pub sponsored: Sponsored,
    /// How long a sponsored swap's driver holds it without renewing before
    /// another (a retry, the tracker) may take it over.
    pub sponsored_lease_seconds: u64,
    /// The least `slippage_bps` a sponsored swap may ask (a swap with no
    /// room to move reverts on the smallest price change, and the relayer
    /// would pay for it): below it the request is refused. Default 10.
    pub sponsored_min_slippage_bps: u16,
}

/// `[swap] sponsored`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sponsored {
    /// When the wallet holds too little of the native coin for the swap's gas.
    Auto,
    /// Every eligible swap.
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapProvider {
    Lifi,
    /// Solana only.
    Jupiter,
}

impl Swap {
    /// Who serves same-chain swaps on `chain`.
    pub fn provider(&self, chain: &str, family: Family) -> SwapProvider {
        match self.providers.get(chain) {
            Some(p) => *p,
            None if family == Family::Solana => SwapProvider::Jupiter,
            None => SwapProvider::Lifi,
        }
    }
}

/// A provider's answers are signed by hosted wallets once checked; they
/// still travel only over TLS, but to a provider on this machine.
pub(super) fn provider_url_allowed(url: &str) -> bool {
    match url::Url::parse(url) {
        Ok(u) if u.scheme() == "https" => u.host().is_some(),
        Ok(u) if u.scheme() == "http" => u.host_str().is_some_and(|h| {
            h == "localhost" || h.trim_matches(|c| c == '[' || c == ']').parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }),
        _ => false,
    }
}

impl Default for Swap {
    fn default() -> Self {
        Swap {
            lifi_url: "https://li.quest/v1".into(),
            lifi_api_key_env: None,
            timeout_ms: 8_000,
            discovery_ttl_seconds: 300,
            quote_ttl_seconds: 120,
            cancel_after_seconds: 1_800,
            unseen_registrations_per_minute: 10,
            track_interval_ms: 2_000,
            chains: None,
            jupiter_url: "https://lite-api.jup.ag/swap/v1".into(),
            jupiter_api_key_env: None,
            providers: BTreeMap::new(),
            max_gas: 3_000_000,
            max_fee_lamports: 20_000_000,
            price_max_age_seconds: 300,
            sponsored: Sponsored::Auto,
            sponsored_lease_seconds: 15,
            sponsored_min_slippage_bps: 10,
        }
    }
}
