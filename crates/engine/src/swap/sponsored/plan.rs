//! Whether a swap can be sponsored, and what it costs the agent: the
//! plan, the gas it needs and the fee that pays it.

use super::*;

/// The served asset a sponsored swap pulls, and what it keeps of it.
pub struct Plan {
    pub(super) asset: String,
    /// Base units of the input.
    pub fee: U256,
}

/// The asset a swap of `from_token` on `from` into the same chain would
/// pull if sponsored, and the fee kept: an EVM chain, the input a served
/// stablecoin its wallet can authorize off chain (EIP-3009, or Permit2
/// with an EIP-2612 domain), and `[swap] sponsored` not `never`.
pub fn sponsorable(swaps: &Swaps, from: &SwapChain, from_token: &str, to_chain: &str) -> Result<Option<Plan>, SwapError> {
    let cfg = &swaps.config;
    if from.family != Family::Evm || from.name != to_chain || cfg.swap.sponsored == Sponsored::Never {
        return Ok(None);
    }
    let Some(chain) = cfg.chains.get(&from.name) else { return Ok(None) };
    let facts = from.family.facts();
    let served = |a: &crate::config::Asset| cfg.availability(a) == crate::config::Availability::Available;
    let Some((asset, a)) = chain.assets.iter().find(|(_, a)| facts.same_account(&a.token, from_token) && served(a)) else {
        return Ok(None);
    };
    let authorizable = a.scheme == "eip3009" || (a.scheme == "permit2" && a.eip712_name.is_some() && a.domain != DomainKind::None);
    if !authorizable {
        return Ok(None);
    }
    Ok(Some(Plan { asset: asset.clone(), fee: fee_units(cfg, &from.name, a.decimals)? }))
}

/// The plan, if the request is served the sponsored way: `sponsorable`,
/// and by `[swap] sponsored` (by default: when the wallet holds less of the
/// native coin than `swap.max_gas` at the node's gas price).
pub async fn plan(swaps: &Swaps, r: &Request, from: &SwapChain, me: &str) -> Result<Option<Plan>, SwapError> {
    let Some(plan) = sponsorable(swaps, from, &r.from_token, &r.to_chain)? else { return Ok(None) };
    let cfg = &swaps.config;
    if r.slippage_bps < cfg.swap.sponsored_min_slippage_bps {
        return Err(SwapError::SlippageBelowFloor);
    }
    if cfg.swap.sponsored == Sponsored::Auto {
        let client = swaps.client(&from.name)?;
        let read = |v: serde_json::Value| v.as_str().and_then(|h| U256::from_str_radix(h.trim_start_matches("0x"), 16).ok());
        let unavailable = |e: crate::family::chain::ChainError| SwapError::Unavailable(format!("{}: {e}", from.name));
        let balance = read(client.rpc("eth_getBalance", json!([me, "latest"])).await.map_err(unavailable)?);
        let price = read(client.rpc("eth_gasPrice", json!([])).await.map_err(unavailable)?);
        let (Some(balance), Some(price)) = (balance, price) else { return Err(SwapError::Unavailable("unreadable balance".into())) };
        if balance >= price.saturating_mul(U256::from(cfg.swap.max_gas)) && !balance.is_zero() {
            return Ok(None);
        }
    }
    Ok(Some(plan))
}

/// Gas a sponsored swap takes besides the provider's own estimate of its
/// swap: the pull and the relayer's approval (for the quote, which cannot
/// simulate the pull).
pub const PULL_AND_APPROVE_GAS: u64 = 150_000;
/// The swap's gas when the provider's quote names none.
pub const SWAP_GAS_GUESS: u64 = 300_000;

/// What `gas` costs the relayer now in a dollar stablecoin's base units
/// (`decimals`): at the node's gas price and the provider's price of the
/// native coin, plus a fifth, rounded up. No price, no sponsorship.
pub async fn gas_cost(swaps: &Swaps, chain: &SwapChain, gas: u64, decimals: u8) -> Result<U256, SwapError> {
    let client = swaps.client(&chain.name)?;
    let price = client.rpc("eth_gasPrice", json!([])).await.map_err(|e| SwapError::Unavailable(format!("{}: {e}", chain.name)))?;
    let wei_per_gas = price.as_str().and_then(|h| u128::from_str_radix(h.trim_start_matches("0x"), 16).ok());
    let wei_per_gas = wei_per_gas.ok_or_else(|| SwapError::Unavailable("unreadable gas price".into()))?;
    let native = chain.family.facts().zero_address();
    let usd = super::super::prices::price_now(swaps, chain.lifi_id, native)
        .await
        .ok_or_else(|| SwapError::Unavailable(format!("{}: no price of the native coin", chain.name)))?;
    let wei = Decimal::from(gas) * Decimal::from(wei_per_gas);
    let cost = wei / Decimal::from(1_000_000_000_000_000_000u64) * usd * Decimal::new(12, 1);
    let scale = Decimal::from(10u64.checked_pow(u32::from(decimals)).ok_or(SwapError::Internal("decimals".into()))?);
    let units = (cost * scale).ceil();
    U256::from_str_radix(&units.normalize().to_string(), 10).map_err(|_| SwapError::Internal(format!("gas cost {cost}")))
}

/// The decimals of the served asset `token` on `chain`.
pub fn input_decimals(swaps: &Swaps, chain: &SwapChain, token: &str) -> Option<u8> {
    let facts = chain.family.facts();
    swaps.config.chains.get(&chain.name)?.assets.values().find(|a| facts.same_account(&a.token, token)).map(|a| a.decimals)
}

/// The chain's network fee (`chains.<name>.fee`, in USD) in base units of
/// a dollar stablecoin with `decimals`, rounded up.
pub(super) fn fee_units(cfg: &Config, chain: &str, decimals: u8) -> Result<U256, SwapError> {
    let usd = cfg.chains.get(chain).and_then(|c| crate::decimal::parse(&c.fee).ok()).unwrap_or_default();
    let scale = Decimal::from(10u64.checked_pow(u32::from(decimals)).ok_or(SwapError::Internal("decimals".into()))?);
    let units = (usd * scale).ceil();
    U256::from_str_radix(&units.normalize().to_string(), 10).map_err(|_| SwapError::Internal(format!("fee {usd} on {chain}")))
}
