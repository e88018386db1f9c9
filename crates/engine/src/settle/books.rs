//! The books' reconciler: reads every token movement into and out of the
//! service's collection and proxy wallets on each chain (up to the chain's
//! final block) and records it beside the credits the engine wrote. What
//! arrived and belongs to no payment is listed for the operator (`stablerail
//! books unmatched`); money out that no payment claims, or a credit the
//! chain does not show, raises an alarm (a metric, `/readyz`, the
//! dashboard's operator page). A wallet's books open at the balance it held
//! at the first block read, so `books check` compares the chain's balance
//! with opening + in - out.

use std::collections::BTreeSet;

use alloy_primitives::U256;

use super::Deps;
use crate::clock::now_ms;
use crate::config::Availability;
use crate::family::keys::Role;
use crate::store::books;

/// A movement in the form the books store and compare (EVM hex lowercase).
pub fn canonical(family: crate::config::Family, m: crate::payment::Movement) -> crate::payment::Movement {
    let f = family.facts();
    crate::payment::Movement {
        tx: f.canonical(&m.tx),
        token: f.canonical(&m.token),
        from: f.canonical(&m.from),
        to: f.canonical(&m.to),
        ..m
    }
}

/// A credit is written a moment after its transaction is final; an
/// uncredited movement younger than this is not an alarm yet.
pub const GRACE_MS: i64 = 5 * 60 * 1000;

/// One (chain, wallet, token) the books follow.
#[derive(Debug, Clone, PartialEq, Eq, Ord, PartialOrd)]
pub struct Wallet {
    pub chain: String,
    pub role: &'static str,
    pub address: String,
    pub token: String,
    pub asset: String,
}

/// The service's wallets whose movements the books read: the collection
/// wallet (or the configured treasury) and the proxy wallet of each chain
/// whose family reads them, for each served asset.
pub async fn wallets(deps: &Deps) -> Vec<Wallet> {
    let mut out = BTreeSet::new();
    for chain in deps.config.exposed_chains() {
        let (Some(cfg), Some(driver)) = (deps.config.chains.get(&chain), deps.drivers.for_chain(&chain)) else { continue };
        let mut owners: Vec<(&'static str, String)> = cfg.collection_address.iter().map(|a| ("collection", a.clone())).collect();
        if owners.is_empty() {
            if let Ok(a) = driver.address(&Role::Collection).await {
                owners.push(("collection", a));
            }
        }
        if let Ok(a) = driver.address(&Role::Proxy).await {
            owners.push(("proxy", a));
        }
        for (key, asset) in &cfg.assets {
            if deps.config.availability(asset) != Availability::Available || asset.token.is_empty() {
                continue;
            }
            let facts = cfg.family.facts();
            for (role, address) in &owners {
                let (address, token) = (facts.canonical(address), facts.canonical(&asset.token));
                // An alias (arbitrum `usdt` for `usdt0`) is the same token: read once.
                if out.iter().any(|w: &Wallet| w.chain == chain && w.address == address && w.token == token) {
                    continue;
                }
                out.insert(Wallet { chain: chain.clone(), role, address, token, asset: key.clone() });
            }
        }
    }
    out.into_iter().collect()
}

/// One pass: each wallet's movements since its last read, recorded; then
/// the alarms, set as metrics and answered. A chain that does not answer
/// is skipped this pass.
pub async fn reconcile(deps: &Deps) -> anyhow::Result<books::Alarms> {
    let db = &deps.db;
    for w in wallets(deps).await {
        let Some(driver) = deps.drivers.for_chain(&w.chain) else { continue };
        let last = match driver.final_block(&w.chain).await {
            Ok(Some(b)) => b,
            Ok(None) => continue,
            Err(e) => {
                tracing::info!(chain = %w.chain, error = %e, "books: chain unavailable; skipped this pass");
                continue;
            }
        };
        let Some(cursor) = books::cursor(db, &w.chain, &w.address, &w.token).await? else {
            match driver.balance_at(&w.chain, &w.token, &w.address, last).await {
                Ok(opening) => books::open(db, &w.chain, &w.address, &w.token, &opening.to_string(), last as i64, now_ms()).await?,
                Err(e) => tracing::info!(chain = %w.chain, error = %e, "books: cannot open a wallet's books yet"),
            }
            continue;
        };
        let from = cursor.read_block as u64 + 1;
        if from > last {
            continue;
        }
        let to = last.min(from + driver.most_blocks_per_read() - 1);
        let found = match driver.wallet_movements(&w.chain, &w.token, &w.address, from, to).await {
            Ok(f) => f,
            Err(e) => {
                tracing::info!(chain = %w.chain, error = %e, "books: movements unavailable; skipped this pass");
                continue;
            }
        };
        let family = driver.family();
        let found: Vec<crate::payment::Movement> = found.into_iter().map(|m| canonical(family, m)).collect();
        // The chain's balance at `to` must be the last one read plus what
        // moved since: a provider that lacks a block answers no logs for
        // it, and the books would pass it by for ever. A family that
        // answers balances at its final block only (TRON catching up) is
        // not checked on that pass, and the next pass starts afresh.
        let held = match driver.balance_at(&w.chain, &w.token, &w.address, to).await {
            Ok(now) => {
                let before = cursor.held.as_deref().and_then(|h| h.parse::<U256>().ok());
                if before.is_some_and(|before| !adds_up(before, &found, &w.address, now)) {
                    tracing::error!(chain = %w.chain, wallet = %w.address, from, to, "books: the chain's balance is not what the movements read add up to; held back until it is");
                    books::stall(db, &w.chain, &w.address, &w.token, now_ms()).await?;
                    continue;
                }
                Some(now.to_string())
            }
            Err(e) => {
                tracing::info!(chain = %w.chain, error = %e, "books: no balance at the last block read; the pass is not checked");
                None
            }
        };
        for m in &found {
            books::observe(db, &w.chain, m, now_ms()).await?;
        }
        books::advance(db, &w.chain, &w.address, &w.token, cursor.read_block, to as i64, held.as_deref(), now_ms()).await?;
    }
    let alarms = books::alarms(db, now_ms() - GRACE_MS).await?;
    crate::telemetry::books_alarms(alarms.unexplained_outgoing, alarms.unmatched_incoming, alarms.unseen_credits, alarms.stalled_wallets);
    if alarms.unexplained_outgoing > 0 || alarms.unseen_credits > 0 || alarms.stalled_wallets > 0 {
        tracing::error!(?alarms, "the books do not match the chain: an operator must look (stablerail books check)");
    }
    Ok(alarms)
}

/// `before` plus what `found` moved into `wallet`, less what it moved out,
/// is `now`.
fn adds_up(before: U256, found: &[crate::payment::Movement], wallet: &str, now: U256) -> bool {
    let (mut plus, mut minus) = (before, now);
    for m in found {
        let Ok(amount) = m.amount.parse::<U256>() else { return false };
        if m.to == wallet {
            plus = plus.saturating_add(amount);
        }
        if m.from == wallet {
            minus = minus.saturating_add(amount);
        }
    }
    plus == minus
}

/// One wallet's books against its chain.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    pub chain: String,
    pub role: &'static str,
    pub wallet: String,
    pub asset: String,
    pub block: i64,
    pub on_chain: String,
    pub books: String,
    pub difference: String,
}

/// Each followed wallet's balance on chain at the last block read, beside
/// opening + movements in - movements out in the books up to it.
pub async fn check(deps: &Deps) -> anyhow::Result<Vec<Check>> {
    let mut out = vec![];
    'wallets: for w in wallets(deps).await {
        let (Some(driver), Some(cursor)) =
            (deps.drivers.for_chain(&w.chain), books::cursor(&deps.db, &w.chain, &w.address, &w.token).await?)
        else {
            continue;
        };
        // A family without older state (TRON) answers at its final block
        // only: the movements since the last read are read on to it here.
        let (on_chain, block, since) = match driver.balance_at(&w.chain, &w.token, &w.address, cursor.read_block as u64).await {
            Ok(b) => (b, cursor.read_block, vec![]),
            Err(_) => {
                // The final block can move between the reads: a few tries.
                let mut tries = 0;
                loop {
                    let Some(head) = driver.final_block(&w.chain).await? else { continue 'wallets };
                    let since = if head > cursor.read_block as u64 {
                        driver.wallet_movements(&w.chain, &w.token, &w.address, cursor.read_block as u64 + 1, head).await?
                    } else {
                        vec![]
                    };
                    match driver.balance_at(&w.chain, &w.token, &w.address, head).await {
                        Ok(b) => break (b, head as i64, since),
                        Err(_) if tries < 4 => tries += 1,
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        };
        let family = driver.family();
        let booked = books::of_wallet(&deps.db, &w.chain, &w.address, &w.token, cursor.opened_block).await?;
        let mut held: i128 = cursor.opening.parse::<U256>()?.try_into()?;
        let moves = booked
            .iter()
            .take_while(|m| m.block <= cursor.read_block)
            .map(|m| (m.from.clone(), m.to.clone(), m.amount.clone()))
            .chain(since.into_iter().map(|m| canonical(family, m)).map(|m| (m.from, m.to, m.amount)));
        for (from, to, amount) in moves {
            let amount: i128 = amount.parse::<U256>()?.try_into()?;
            if to == w.address {
                held += amount;
            }
            if from == w.address {
                held -= amount;
            }
        }
        let chain_held: i128 = on_chain.try_into()?;
        out.push(Check {
            chain: w.chain,
            role: w.role,
            wallet: w.address,
            asset: w.asset,
            block,
            on_chain: chain_held.to_string(),
            books: held.to_string(),
            difference: (chain_held - held).to_string(),
        });
    }
    Ok(out)
}
