//! Token prices and logos for the balances agents read, from the swap
//! provider's token list (LI.FI's `/tokens` carries `priceUSD` and
//! `logoURI`). Fetched per chain in the background and kept at most
//! `swap.price_max_age_seconds`: an older price is omitted, never shown. A
//! balance read never waits for the provider.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use serde_json::Value;

use super::Swaps;

/// What the token list says of one token.
#[derive(Debug, Clone)]
pub struct TokenFacts {
    pub symbol: Option<String>,
    pub logo_uri: Option<String>,
    pub price_usd: Option<Decimal>,
}

type List = Arc<HashMap<String, TokenFacts>>;

#[derive(Default)]
pub struct Prices {
    /// LI.FI chain id → when its list was fetched, and the list.
    lists: Mutex<HashMap<u64, (Instant, List)>>,
    /// Chains whose list is being fetched now.
    fetching: Mutex<std::collections::HashSet<u64>>,
}

/// Token addresses compare as the chain spells them; EVM's in any case.
fn key(address: &str) -> String {
    if address.starts_with("0x") {
        address.to_lowercase()
    } else {
        address.to_string()
    }
}

impl Prices {
    /// The facts of `token` on the chain LI.FI numbers `chain_id`, from a
    /// list younger than the maximum age. A list that is missing or past
    /// half its age is fetched again in the background.
    pub fn facts(swaps: &Arc<Swaps>, chain_id: u64, token: &str) -> Option<TokenFacts> {
        let max_age = Duration::from_secs(swaps.config.swap.price_max_age_seconds);
        let cached = swaps.prices.lists.lock().unwrap().get(&chain_id).cloned();
        let stale = cached.as_ref().is_none_or(|(at, _)| at.elapsed() > max_age / 2);
        if stale && swaps.prices.fetching.lock().unwrap().insert(chain_id) {
            let swaps = swaps.clone();
            tokio::spawn(async move {
                match fetch(&swaps, chain_id).await {
                    Some(list) => {
                        swaps.prices.lists.lock().unwrap().insert(chain_id, (Instant::now(), Arc::new(list)));
                    }
                    None => tracing::debug!(chain_id, "token prices unavailable"),
                }
                swaps.prices.fetching.lock().unwrap().remove(&chain_id);
            });
        }
        let (at, list) = cached?;
        if at.elapsed() > max_age {
            return None;
        }
        list.get(&key(token)).cloned()
    }
}

/// The USD price of `token` on the chain LI.FI numbers `chain_id`, from a
/// list younger than the maximum age, fetched now if there is none: for a
/// fee that must not be charged from a guess.
pub async fn price_now(swaps: &Swaps, chain_id: u64, token: &str) -> Option<rust_decimal::Decimal> {
    let max_age = Duration::from_secs(swaps.config.swap.price_max_age_seconds);
    let cached = swaps.prices.lists.lock().unwrap().get(&chain_id).cloned();
    let list = match cached {
        Some((at, list)) if at.elapsed() <= max_age => list,
        _ => {
            let list = Arc::new(fetch(swaps, chain_id).await?);
            swaps.prices.lists.lock().unwrap().insert(chain_id, (Instant::now(), list.clone()));
            list
        }
    };
    list.get(&key(token)).and_then(|f| f.price_usd)
}

async fn fetch(swaps: &Swaps, chain_id: u64) -> Option<HashMap<String, TokenFacts>> {
    let body = swaps.lifi.discovery("/tokens", &[("chains", chain_id.to_string())]).await.ok()?;
    let v: Value = serde_json::from_slice(&body).ok()?;
    let tokens = v.pointer(&format!("/tokens/{chain_id}"))?.as_array()?;
    let text = |t: &Value, k: &str| t.get(k).and_then(Value::as_str).map(str::to_string);
    Some(
        tokens
            .iter()
            .filter_map(|t| {
                let facts = TokenFacts {
                    symbol: text(t, "symbol"),
                    logo_uri: text(t, "logoURI"),
                    price_usd: text(t, "priceUSD").and_then(|p| p.parse().ok()),
                };
                Some((key(t.get("address")?.as_str()?), facts))
            })
            .collect(),
    )
}
