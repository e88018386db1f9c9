//! Follows registered swaps to the end: the source transaction's receipt
//! on its chain (through the family's driver), then, for cross-chain
//! routes, the provider's status. A source transaction that is not on
//! chain within `cancel_after_seconds` is FAILED (`source_not_confirmed`),
//! as is a reverted one (`source_reverted`); a swap whose source chain this
//! deployment no longer serves is dropped: CANCELED (`chain_not_served`).
//! Each swap is leased by compare-and-set, so one replica follows it at a
//! time; a restart picks up where the database says.

use std::time::Duration;

use serde_json::Value;

use super::lifi::{Lifi, Status};
use super::{SwapError, Swaps};
use crate::clock::now_ms;
use crate::family::Finality;
use crate::store::swaps::{self as repo, Outcome, SwapIntent};

/// How long a replica holds a swap while it looks.
const LEASE_MS: i64 = 30_000;
const BATCH: i64 = 20;

/// What the tracker reads and writes through: its own share of the
/// service's parts, so that it depends on nothing above it.
#[derive(Clone)]
pub struct Deps {
    pub config: std::sync::Arc<crate::config::Config>,
    pub swaps: std::sync::Arc<Swaps>,
    pub db: crate::db::Db,
    pub drivers: std::sync::Arc<crate::family::Drivers>,
    /// Sponsored swaps whose driver died are finished here.
    pub steps: std::sync::Arc<crate::settle::Steps>,
}

pub async fn run(deps: Deps) {
    let holder = format!("swaps:{}", ulid::Ulid::new());
    let swaps = deps.swaps.clone();
    let every = Duration::from_millis(deps.config.swap.track_interval_ms.max(100));
    loop {
        tokio::time::sleep(every).await;
        let due = match repo::claim_due(&deps.db, &holder, now_ms(), LEASE_MS, BATCH).await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "swap tracker could not read its work");
                continue;
            }
        };
        for i in due {
            if let Err(e) = follow(&deps, &swaps.lifi, &holder, &i).await {
                tracing::warn!(intent = %i.id, error = ?e, "swap tracker: will look again");
                let next = now_ms() + every.as_millis() as i64 * 5;
                let _ = repo::later(&deps.db, &i.id, &holder, i.substatus.as_deref(), next, now_ms()).await;
            }
        }
        let sponsor = super::sponsored::Sponsor { swaps: &swaps, db: &deps.db, drivers: &deps.drivers, steps: &deps.steps };
        sponsor.resume_abandoned().await;
    }
}

async fn follow(deps: &Deps, lifi: &Lifi, holder: &str, i: &SwapIntent) -> Result<(), SwapError> {
    let cfg = &deps.config;
    let now = now_ms();
    let next = now + cfg.swap.track_interval_ms as i64;
    let served = cfg.chains.get(&i.from_chain).filter(|c| cfg.chain_exposed(c)).and_then(|c| Some((c, deps.drivers.of(c.family)?)));
    let Some((chain, driver)) = served else {
        return done(deps, i, holder, now, Outcome::ended("CANCELED", "chain_not_served")).await;
    };
    let finality =
        driver.finality(&i.from_chain, &i.source_tx_hash, chain.confirmations).await.map_err(|e| SwapError::Unavailable(e.to_string()))?;
    let receipt = match finality {
        Finality::Failed => return done(deps, i, holder, now, Outcome::ended("FAILED", "source_reverted")).await,
        Finality::Pending if now - i.created_at > cfg.swap.cancel_after_seconds as i64 * 1000 => {
            return done(deps, i, holder, now, Outcome::ended("FAILED", "source_not_confirmed")).await;
        }
        Finality::Pending => return Ok(repo::later(&deps.db, &i.id, holder, Some("WAIT_SOURCE_CONFIRMATIONS"), next, now).await?),
        Finality::Confirmed(r) => r,
    };
    // A registration the chain contradicts (a squatter's, a typo) ends here.
    if super::register::mismatch(driver.as_ref(), &receipt, i) {
        return done(deps, i, holder, now, Outcome::ended("FAILED", "registration_mismatch")).await;
    }
    if i.from_chain == i.to_chain {
        let received = driver.credited(&receipt, &i.to_token, &i.recipient_address).map(|a| a.to_string());
        return done(
            deps,
            i,
            holder,
            now,
            Outcome {
                status: "DONE",
                substatus: Some("COMPLETED"),
                dest_tx_hash: Some(&i.source_tx_hash),
                received_amount: received.as_deref(),
                error_code: None,
            },
        )
        .await;
    }
    // Cross-chain: the source landed; the provider says when the rest did.
    let ids = |c: &str| cfg.chains.get(c).and_then(|c| c.chain_id);
    match lifi.status(&i.source_tx_hash, ids(&i.from_chain), ids(&i.to_chain), None).await? {
        Status::Unknown => Ok(repo::later(&deps.db, &i.id, holder, Some("WAIT_DESTINATION_TRANSACTION"), next, now).await?),
        Status::Known(v) => {
            let s = |p: &str| v.pointer(p).and_then(Value::as_str);
            match s("/status") {
                Some("DONE") if cfg.chains.get(&i.to_chain).is_some_and(|c| provider_mismatch(&v, i, c.chain_id, c.family)) => {
                    done(deps, i, holder, now, Outcome::ended("FAILED", "registration_mismatch")).await
                }
                Some("DONE") => {
                    done(
                        deps,
                        i,
                        holder,
                        now,
                        Outcome {
                            status: "DONE",
                            substatus: s("/substatus"),
                            dest_tx_hash: s("/receiving/txHash"),
                            received_amount: s("/receiving/amount"),
                            error_code: None,
                        },
                    )
                    .await
                }
                Some("FAILED") | Some("INVALID") => {
                    done(
                        deps,
                        i,
                        holder,
                        now,
                        Outcome {
                            status: "FAILED",
                            substatus: s("/substatus"),
                            dest_tx_hash: None,
                            received_amount: None,
                            error_code: Some("route_failed"),
                        },
                    )
                    .await
                }
                _ => Ok(repo::later(&deps.db, &i.id, holder, s("/substatus").or(Some("WAIT_DESTINATION_TRANSACTION")), next, now).await?),
            }
        }
    }
}

async fn done(deps: &Deps, i: &SwapIntent, holder: &str, now: i64, o: Outcome<'_>) -> Result<(), SwapError> {
    if !crate::store::transition::swaps::finish(&deps.db, &i.id, holder, &o, now).await? {
        tracing::info!(intent = %i.id, "swap intent changed under the tracker; left as it is");
    }
    Ok(())
}

/// Does the provider's record of a cross-chain swap name another
/// destination (chain, token or recipient) than the registration? Only
/// what it names is compared.
fn provider_mismatch(v: &Value, i: &SwapIntent, to_chain_id: Option<u64>, to: crate::config::Family) -> bool {
    let differs = |p: &str, want: &str| v.pointer(p).and_then(Value::as_str).is_some_and(|got| !to.facts().same_address(got, want));
    let chain = v.pointer("/receiving/chainId").and_then(Value::as_u64);
    differs("/receiving/token/address", &i.to_token)
        || differs("/toAddress", &i.recipient_address)
        || matches!((chain, to_chain_id), (Some(got), Some(want)) if got != want)
}
