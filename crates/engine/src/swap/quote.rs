//! `GET /api/swap/quote`: the request's rules, in the spec's order, then
//! the provider's quote mapped to the spec's fields.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::route::{RouteRequest, RouteTx};
use super::Amount;
use super::{amount, erc20, given, guard, slippage, SwapChain, SwapError, Swaps};

/// How long a Solana swap transaction may be sent: its blockhash lives
/// 150 blocks (about 60 s at 400 ms).
pub const SOLANA_TTL_SECONDS: i64 = 60;

#[derive(Debug, Serialize, ToSchema)]
pub struct QuoteResponse {
    pub quote: QuoteBody,
    /// Present only when the signer is known (`user_address` or `email`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_transaction: Option<SwapTransaction>,
    /// With `sponsored=true`: what the service keeps of the input for the
    /// gas it pays, in smallest units of the input token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sponsored_fee: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct QuoteBody {
    pub input_token: String,
    pub output_token: String,
    /// Smallest units, decimal string.
    pub input_amount: String,
    pub output_amount: String,
    /// The least that arrives within the slippage.
    pub min_output_amount: String,
    /// Percent, e.g. `"0.31"`.
    pub price_impact_pct: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SwapTransaction {
    /// EVM: hex calldata. Solana: base64 versioned transaction.
    pub transaction: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Hex wei (native-input swaps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gas_limit: Option<String>,
    /// Unix seconds; never broadcast after it.
    pub expires_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_valid_block_height: Option<u64>,
}

/// `GET /api/swap/quote`'s parameters. Values are read as text and checked
/// in `quote`, in the spec's order, so each refusal names its parameter.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QuoteQuery {
    /// Source chain
    #[param(value_type = String, required = true)]
    pub chain: Option<String>,
    /// Token to send (EVM contract or Solana mint)
    #[param(value_type = String, required = true)]
    pub input_token: Option<String>,
    /// Token to receive
    #[param(value_type = String, required = true)]
    pub output_token: Option<String>,
    /// ExactIn: smallest units sent
    #[param(value_type = Option<u64>)]
    pub from_amount: Option<String>,
    /// ExactOut: smallest units received
    #[param(value_type = Option<u64>)]
    pub to_amount: Option<String>,
    /// Deprecated alias of from_amount
    #[deprecated]
    #[param(value_type = Option<u64>)]
    pub amount: Option<String>,
    /// Default 50, at most 500
    #[param(value_type = Option<u16>)]
    pub slippage_bps: Option<String>,
    /// Destination chain (default: chain)
    pub to_chain: Option<String>,
    /// Signer; with it the answer carries swap_transaction
    pub user_address: Option<String>,
    /// Recipient; required across families
    pub to_user_address: Option<String>,
    /// Accepted and not resolved on the public API (it would reveal the
    /// email's wallet): send `user_address`.
    pub email: Option<String>,
    /// Accepted and not resolved on the public API: send `to_user_address`.
    pub to_user_email: Option<String>,
    /// `true`: the quote of the sponsored (gasless) `/v2/swap/execute` of
    /// this input: `from_amount` less `sponsored_fee` is swapped. Same
    /// chain, a served stablecoin input, ExactIn; no transaction.
    #[param(value_type = Option<bool>)]
    pub sponsored: Option<String>,
}

/// The wallet a public swap request names. An `email` is never resolved
/// here: a swap transaction built for it would tell a stranger the wallet
/// registered for that email (and that one is), so only an address counts.
pub fn wallet(address: Option<&str>) -> Option<String> {
    address.map(str::to_string)
}

pub fn token(chain: &SwapChain, text: &str, which: &'static str) -> Result<String, SwapError> {
    chain.family.facts().is_address(text).then(|| text.to_string()).ok_or(SwapError::Invalid(which))
}

pub fn account(chain: &SwapChain, text: Option<String>, which: &'static str) -> Result<Option<String>, SwapError> {
    match text {
        Some(t) if !chain.family.facts().is_address(&t) => Err(SwapError::Invalid(which)),
        other => Ok(other),
    }
}

/// The service hands a user only a transaction it would sign itself: the
/// route's contracts are known and, on EVM chains, its simulated effect
/// from the user's wallet (with the approval it needs) is what was asked.
/// A simulation that reverts (the user does not hold the input yet) moves
/// nothing and is not held against the route.
#[allow(clippy::too_many_arguments)]
async fn vouch(
    swaps: &Swaps,
    from: &SwapChain,
    to: &SwapChain,
    route: &super::route::Route,
    user: &str,
    to_user: Option<&str>,
    input: &str,
    output: &str,
    wanted: Amount,
    slippage_bps: u16,
) -> Result<(), SwapError> {
    use alloy_primitives::U256;
    let unreadable = || SwapError::Unavailable("quote with unreadable amounts".into());
    let max_input = match wanted {
        Amount::From(a) => U256::from(a),
        // ExactOut: the route may take the estimate plus the slippage.
        Amount::To(_) => {
            let estimate = U256::from_str_radix(&route.input_amount, 10).map_err(|_| unreadable())?;
            (estimate * U256::from(10_000 + u64::from(slippage_bps))).div_ceil(U256::from(10_000u64))
        }
    };
    let least = U256::from_str_radix(&route.min_output_amount, 10).map_err(|_| unreadable())?;
    let asked = guard::Asked {
        wallet: user,
        from_token: input,
        max_input,
        to_token: output,
        output: (from.name == to.name).then_some((to_user.unwrap_or(user), least)),
    };
    guard::check_route(swaps, from, route, &asked)?;
    if let Some(RouteTx::Solana { transaction, .. }) = &route.transaction {
        return guard::simulate_solana(swaps, from, transaction, &asked, guard::OnRevert::Pass).await;
    }
    // Without the user's approval on chain yet, this usually reverts, which
    // says nothing against the route; with it, the effect is checked.
    if let Some(RouteTx::Tron { raw_data, .. }) = &route.transaction {
        return guard::simulate_tron(swaps, from, raw_data, &asked, guard::OnRevert::Pass).await;
    }
    let Some(RouteTx::Evm { to: router, data, value, .. }) = &route.transaction else { return Ok(()) };
    let mut bundle = Vec::new();
    let token = from.family.facts().address20(input).ok_or(SwapError::Invalid("input_token"))?;
    if let (Some(spender), false) = (route.approval_address.as_deref(), from.family.facts().is_native(&token)) {
        let spender =
            from.family.facts().address20(spender).ok_or_else(|| SwapError::Refused(format!("spender {spender} is not an address")))?;
        let owner = from.family.facts().address20(user).ok_or(SwapError::Invalid("user_address"))?;
        let spend = erc20::Spend { chain: &from.name, family: from.family, token, owner, spender };
        if erc20::allowance(swaps, &spend).await? < max_input {
            bundle.push(guard::EvmCall { to: token, data: erc20::approve_data(spender, max_input), value: U256::ZERO });
        }
    }
    let router = router.parse().map_err(|_| SwapError::Refused(format!("router {router} is not an address")))?;
    let data =
        alloy_primitives::hex::decode(data.trim_start_matches("0x")).map_err(|_| SwapError::Unavailable("calldata is not hex".into()))?;
    let value = value.as_deref().and_then(|v| U256::from_str_radix(v.trim_start_matches("0x"), 16).ok()).unwrap_or_default();
    bundle.push(guard::EvmCall { to: router, data, value });
    guard::simulate_evm(swaps, from, &bundle, &asked, guard::OnRevert::Pass).await.map(|_| ())
}

#[allow(deprecated)] // reads the deprecated `amount` alias, as the spec asks
pub async fn quote(swaps: &Swaps, q: &QuoteQuery, now_s: i64) -> Result<QuoteResponse, SwapError> {
    let chain_name = given(&q.chain).ok_or(SwapError::ParamRequired("chain"))?;
    let input = given(&q.input_token).ok_or(SwapError::ParamRequired("input_token"))?;
    let output = given(&q.output_token).ok_or(SwapError::ParamRequired("output_token"))?;
    let (from_amount, to_amount, alias) = (given(&q.from_amount), given(&q.to_amount), given(&q.amount));
    let wanted = match (from_amount, to_amount, alias) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => return Err(SwapError::AmountsExclusive),
        (Some(a), None, None) | (None, None, Some(a)) => Amount::From(amount(a)?),
        (None, Some(a), None) => Amount::To(amount(a)?),
        (None, None, None) => return Err(SwapError::AmountRequired),
    };
    let slippage_bps = slippage(given(&q.slippage_bps))?;
    let (from, to) = swaps.pair(chain_name, given(&q.to_chain))?;
    let input = token(&from, input, "input_token")?;
    let output = token(&to, output, "output_token")?;
    let sponsored = match given(&q.sponsored) {
        None | Some("false") => None,
        Some("true") => {
            let Amount::From(gross) = wanted else { return Err(SwapError::NotSponsorable) };
            let plan = super::sponsored::sponsorable(swaps, &from, &input, &to.name)?.ok_or(SwapError::NotSponsorable)?;
            if slippage_bps < swaps.config.swap.sponsored_min_slippage_bps {
                return Err(SwapError::SlippageBelowFloor);
            }
            let fee = u64::try_from(plan.fee).map_err(|_| SwapError::NotSponsorable)?;
            Some((gross, fee, gross.checked_sub(fee).filter(|n| *n > 0).ok_or(SwapError::BelowSponsoredFee)?))
        }
        Some(_) => return Err(SwapError::Invalid("sponsored")),
    };
    let wanted = sponsored.map_or(wanted, |(_, _, net)| Amount::From(net));
    // A sponsored swap is sent by the service: no transaction for a user.
    let (user_address, to_user_address) =
        if sponsored.is_some() { (None, None) } else { (given(&q.user_address), given(&q.to_user_address)) };
    let user = account(&from, wallet(user_address), "user_address")?;
    let to_user = account(&to, wallet(to_user_address), "to_user_address")?;
    if user.is_some() && from.family != to.family && to_user.is_none() {
        return Err(SwapError::RecipientRequired);
    }
    let route = swaps
        .best_route(&RouteRequest {
            from: &from,
            to: &to,
            from_token: &input,
            to_token: &output,
            from_address: user.as_deref(),
            to_address: to_user.as_deref(),
            amount: wanted,
            slippage_bps,
        })
        .await?;
    // Sponsored: the fee covers the gas the relayer would pay (the pull,
    // the approval and the provider's estimate of the swap); when it is more
    // than the chain's fee, the smaller input is quoted again.
    let (route, sponsored) = match sponsored {
        Some((gross, floor, _)) => {
            let gas = route.gas_limit().unwrap_or(super::sponsored::SWAP_GAS_GUESS) + super::sponsored::PULL_AND_APPROVE_GAS;
            let decimals = super::sponsored::input_decimals(swaps, &from, &input).ok_or(SwapError::NotSponsorable)?;
            let cost =
                u64::try_from(super::sponsored::gas_cost(swaps, &from, gas, decimals).await?).map_err(|_| SwapError::BelowSponsoredFee)?;
            if cost > floor {
                let net = gross.checked_sub(cost).filter(|n| *n > 0).ok_or(SwapError::BelowSponsoredFee)?;
                let again = RouteRequest {
                    from: &from,
                    to: &to,
                    from_token: &input,
                    to_token: &output,
                    from_address: None,
                    to_address: None,
                    amount: Amount::From(net),
                    slippage_bps,
                };
                (swaps.best_route(&again).await?, Some((gross, cost, net)))
            } else {
                (route, sponsored)
            }
        }
        None => (route, None),
    };
    if let Some(user) = user.as_deref() {
        vouch(swaps, &from, &to, &route, user, to_user.as_deref(), &input, &output, wanted, slippage_bps).await?;
    }
    let body = QuoteBody {
        input_token: input,
        output_token: output,
        // Sponsored: what leaves the wallet, the fee included.
        input_amount: sponsored.map_or(route.input_amount, |(gross, _, _)| gross.to_string()),
        output_amount: route.output_amount,
        min_output_amount: route.min_output_amount,
        price_impact_pct: route.price_impact_pct,
    };
    let ttl = swaps.config.swap.quote_ttl_seconds as i64;
    let swap_transaction = route.transaction.map(|tx| match tx {
        RouteTx::Evm { to, data, value, gas_limit } => SwapTransaction {
            transaction: data,
            to: Some(to),
            value: value.or(Some("0x0".into())),
            gas_limit,
            expires_at: now_s + ttl,
            last_valid_block_height: None,
        },
        // A Solana transaction dies with its blockhash (150 blocks, about a
        // minute): never promise more.
        RouteTx::Solana { transaction, last_valid_block_height } => SwapTransaction {
            transaction,
            to: None,
            value: None,
            gas_limit: None,
            expires_at: now_s + ttl.min(SOLANA_TTL_SECONDS),
            last_valid_block_height,
        },
        // A TRON transaction carries its own expiration.
        RouteTx::Tron { to, raw_data, fee_limit } => {
            let expires = tron_wire::raw::single_call(&raw_data).map_or(now_s + ttl, |(raw, _)| raw.expiration / 1000);
            SwapTransaction {
                transaction: alloy_primitives::hex::encode_prefixed(&raw_data),
                to: Some(to),
                value: None,
                gas_limit: fee_limit,
                expires_at: expires.min(now_s + ttl),
                last_valid_block_height: None,
            }
        }
    });
    Ok(QuoteResponse { quote: body, swap_transaction, sponsored_fee: sponsored.map(|(_, fee, _)| fee.to_string()) })
}
