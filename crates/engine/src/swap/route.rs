//! One route, whichever provider serves it: LI.FI for EVM and cross-chain
//! routes, Jupiter for same-chain swaps on the chains `[swap.providers]`
//! gives it (Solana by default). Each provider's answer is read into the
//! same `Route` here, so the endpoints never see a provider's shape.

use rust_decimal::Decimal;
use serde_json::Value;

use super::lifi::QuoteRequest;
use super::{Amount, SwapChain, SwapError, Swaps};
use crate::config::{Family, SwapProvider};

pub struct RouteRequest<'a> {
    pub from: &'a SwapChain,
    pub to: &'a SwapChain,
    pub from_token: &'a str,
    pub to_token: &'a str,
    /// The signer; without one, no transaction is built.
    pub from_address: Option<&'a str>,
    pub to_address: Option<&'a str>,
    pub amount: Amount,
    pub slippage_bps: u16,
}

/// A quote in the service's terms; amounts in smallest units.
pub struct Route {
    pub input_amount: String,
    pub output_amount: String,
    /// The least that arrives within the slippage.
    pub min_output_amount: String,
    /// Percent, e.g. `"0.31"`.
    pub price_impact_pct: String,
    /// The spender the input token must be approved to (EVM).
    pub approval_address: Option<String>,
    pub transaction: Option<RouteTx>,
}

impl Route {
    /// The provider's gas limit of its EVM transaction, if it gave one.
    pub fn gas_limit(&self) -> Option<u64> {
        match &self.transaction {
            Some(RouteTx::Evm { gas_limit: Some(g), .. }) => u64::from_str_radix(g.trim_start_matches("0x"), 16).ok(),
            _ => None,
        }
    }
}

#[derive(Clone)]
pub enum RouteTx {
    Evm {
        to: String,
        /// Hex calldata.
        data: String,
        /// Hex wei.
        value: Option<String>,
        /// Hex.
        gas_limit: Option<String>,
    },
    Solana {
        /// Base64 v0 transaction, the signer's signature missing.
        transaction: String,
        last_valid_block_height: Option<u64>,
    },
    /// An unsigned TRON transaction (LI.FI: `data` is `0x` ‖ raw_data_hex).
    Tron {
        /// The contract it calls (base58).
        to: String,
        raw_data: Vec<u8>,
        /// Hex SUN.
        fee_limit: Option<String>,
    },
}

/// The sender LI.FI is given when the caller named none (it requires
/// one); no transaction is returned for it.
fn quote_only_from(family: Family) -> &'static str {
    match family {
        Family::Solana => "11111111111111111111111111111111",
        _ => "0x0000000000000000000000000000000000000001",
    }
}

fn string(v: &Value, pointer: &str) -> Result<String, SwapError> {
    v.pointer(pointer).and_then(Value::as_str).map(str::to_string).ok_or_else(|| SwapError::Unavailable(format!("quote without {pointer}")))
}

/// A `0x…` hex quantity from LI.FI's hex or decimal string.
fn hex_quantity(v: Option<&Value>) -> Option<String> {
    let text = v?.as_str()?;
    if let Some(h) = text.strip_prefix("0x") {
        return u128::from_str_radix(h, 16).ok().map(|n| format!("{n:#x}"));
    }
    text.parse::<u128>().ok().map(|n| format!("{n:#x}"))
}

/// A percentage with at most four decimals.
fn percent(p: Decimal) -> String {
    p.round_dp(4).normalize().to_string()
}

impl Swaps {
    /// Which provider serves a route from `from` to `to`: cross-chain routes
    /// are LI.FI's; a same-chain route is the chain's configured provider.
    pub fn provider(&self, from: &SwapChain, to: &SwapChain) -> SwapProvider {
        if from.name != to.name {
            return SwapProvider::Lifi;
        }
        self.config.swap.provider(&from.name, from.family)
    }

    pub async fn best_route(&self, r: &RouteRequest<'_>) -> Result<Route, SwapError> {
        match self.provider(r.from, r.to) {
            SwapProvider::Lifi => self.lifi_route(r).await,
            SwapProvider::Jupiter => self.jupiter_route(r).await,
        }
    }

    async fn lifi_route(&self, r: &RouteRequest<'_>) -> Result<Route, SwapError> {
        let request = QuoteRequest {
            from_chain: r.from.lifi_id,
            to_chain: r.to.lifi_id,
            from_token: r.from_token,
            to_token: r.to_token,
            from_address: r.from_address.unwrap_or(quote_only_from(r.from.family)),
            to_address: r.to_address,
            amount: r.amount,
            slippage_bps: r.slippage_bps,
        };
        let step = self.lifi.quote(&request).await?;
        let transaction = match r.from_address {
            None => None,
            Some(_) => {
                let tx = step.get("transactionRequest").ok_or_else(|| SwapError::Unavailable("quote without transactionRequest".into()))?;
                let data = string(tx, "/data")?;
                Some(match r.from.family {
                    Family::Solana => RouteTx::Solana {
                        transaction: data,
                        last_valid_block_height: tx.get("lastValidBlockHeight").and_then(Value::as_u64),
                    },
                    Family::Tron => RouteTx::Tron {
                        to: string(tx, "/to")?,
                        raw_data: alloy_primitives::hex::decode(data.trim_start_matches("0x"))
                            .map_err(|_| SwapError::Unavailable("TRON transaction data is not hex".into()))?,
                        fee_limit: hex_quantity(tx.get("gasLimit")),
                    },
                    Family::Evm => RouteTx::Evm {
                        to: string(tx, "/to")?,
                        data,
                        value: hex_quantity(tx.get("value")),
                        gas_limit: hex_quantity(tx.get("gasLimit")),
                    },
                })
            }
        };
        // Price impact from the USD values LI.FI gives.
        let usd = |k: &str| step.pointer(&format!("/estimate/{k}")).and_then(Value::as_str).and_then(|s| s.parse::<Decimal>().ok());
        let price_impact_pct = match (usd("fromAmountUSD"), usd("toAmountUSD")) {
            (Some(from), Some(to)) if from > Decimal::ZERO => percent((from - to) / from * Decimal::from(100)),
            _ => "0".into(),
        };
        Ok(Route {
            input_amount: string(&step, "/estimate/fromAmount")?,
            output_amount: string(&step, "/estimate/toAmount")?,
            min_output_amount: string(&step, "/estimate/toAmountMin")?,
            price_impact_pct,
            approval_address: step.pointer("/estimate/approvalAddress").and_then(Value::as_str).map(str::to_string),
            transaction,
        })
    }

    /// `owner`'s associated token account for `mint`, under the token
    /// program that owns the mint (Token or Token-2022), read on chain.
    pub(super) async fn token_account(&self, chain: &str, owner: &str, mint: &str) -> Result<String, SwapError> {
        let key = |text: &str, which| text.parse::<solana_pubkey::Pubkey>().map_err(|_| SwapError::Invalid(which));
        let (owner_key, mint_key) = (key(owner, "to_user_address")?, key(mint, "output_token")?);
        let v = self
            .client(chain)?
            .rpc("getAccountInfo", serde_json::json!([mint, { "encoding": "base64" }]))
            .await
            .map_err(|e| SwapError::Unavailable(format!("{chain}: {e}")))?;
        let program = v.pointer("/value/owner").and_then(Value::as_str).ok_or(SwapError::NoRoute)?;
        let program = key(program, "output_token")?;
        Ok(crate::family::solana::ata::address(&owner_key, &mint_key, &program).to_string())
    }

    async fn jupiter_route(&self, r: &RouteRequest<'_>) -> Result<Route, SwapError> {
        let q = self.jupiter.quote(r.from_token, r.to_token, r.amount, r.slippage_bps).await?;
        let min_output_amount = match r.amount {
            // ExactIn: the threshold is the least out; ExactOut: the most in.
            Amount::From(_) => string(&q, "/otherAmountThreshold")?,
            Amount::To(_) => string(&q, "/outAmount")?,
        };
        // Jupiter gives the impact as a fraction.
        let impact = q.get("priceImpactPct").and_then(Value::as_str).and_then(|s| s.parse::<Decimal>().ok()).unwrap_or_default();
        let transaction = match r.from_address {
            None => None,
            Some(user) => {
                // Another recipient is paid into its associated token account.
                let destination = match r.to_address.filter(|to| *to != user) {
                    Some(to) => Some(self.token_account(&r.from.name, to, r.to_token).await?),
                    None => None,
                };
                let built = self.jupiter.swap(&q, user, destination.as_deref()).await?;
                Some(RouteTx::Solana { transaction: built.transaction, last_valid_block_height: built.last_valid_block_height })
            }
        };
        Ok(Route {
            input_amount: string(&q, "/inAmount")?,
            output_amount: string(&q, "/outAmount")?,
            min_output_amount,
            price_impact_pct: percent(impact * Decimal::from(100)),
            approval_address: None,
            transaction,
        })
    }
}
