//! The payout float: what the proxy wallet holds of an asset on a target
//! chain, read through the family driver and kept a few seconds, so that a
//! burst of proofs costs the node one read.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rust_decimal::Decimal;

use crate::family::chain::ChainError;
use crate::family::keys::Role;
use crate::family::Drivers;

/// How long a balance read is reused.
const FRESH_FOR: Duration = Duration::from_secs(3);

#[derive(Default)]
pub struct Floats {
    seen: Mutex<HashMap<(String, String), (Instant, Decimal)>>,
}

impl Floats {
    /// The proxy wallet's balance of `asset` on `chain` in whole tokens;
    /// `None` when this build has no driver for the chain or the wallet
    /// holds no such asset there.
    pub async fn proxy_balance(&self, drivers: &Drivers, chain: &str, asset: &str) -> Result<Option<Decimal>, ChainError> {
        let key = (chain.to_string(), asset.to_string());
        if let Some((at, balance)) = self.seen.lock().unwrap().get(&key) {
            if at.elapsed() < FRESH_FOR {
                return Ok(Some(*balance));
            }
        }
        let Some(driver) = drivers.for_chain(chain) else { return Ok(None) };
        let owner = driver.address(&Role::Proxy).await.map_err(|e| ChainError::BadAnswer(format!("proxy wallet: {e:#}")))?;
        let Some(b) = driver.balances(chain, &owner).await?.into_iter().find(|b| b.asset == asset) else { return Ok(None) };
        // Base units as an exact decimal; an amount beyond Decimal's range
        // covers any intent.
        let balance = i128::try_from(b.raw)
            .ok()
            .and_then(|raw| Decimal::try_from_i128_with_scale(raw, u32::from(b.decimals)).ok())
            .unwrap_or(Decimal::MAX);
        self.seen.lock().unwrap().insert(key, (Instant::now(), balance));
        Ok(Some(balance))
    }
}
