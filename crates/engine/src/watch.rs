//! What a replica watches about itself: which chains answer (a chain is not
//! exposed until its node answers with the configured chain id) and the
//! service wallets' balances (metrics, and floors that fail readiness).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::RwLock;
use std::time::Duration;

use std::sync::Arc;

use crate::config::Config;
use crate::family::chain::Chains;
use crate::family::keys::Keystore;
use crate::family::Drivers;

#[derive(Default)]
pub struct Watch {
    /// Configured chains withheld: the node did not answer right yet.
    down: RwLock<BTreeSet<String>>,
    /// `wallet chain asset` → the floor it is below.
    low: RwLock<BTreeMap<String, String>>,
    /// `chain asset` → how its chain disagrees with chains.toml (withheld).
    assets: RwLock<BTreeMap<String, String>>,
}

impl Watch {
    pub fn exposed(&self, chain: &str) -> bool {
        !self.down.read().unwrap().contains(chain)
    }

    pub fn withheld(&self) -> BTreeSet<String> {
        self.down.read().unwrap().clone()
    }

    /// Record a probe; `true` when the chain's exposure changed.
    pub fn record(&self, chain: &str, probe: &ChainProbe) -> bool {
        let mut down = self.down.write().unwrap();
        match probe {
            ChainProbe::Ok => down.remove(chain),
            _ => down.insert(chain.to_string()),
        }
    }

    /// Is this served asset withheld because its chain disagrees with chains.toml?
    pub fn asset_withheld(&self, chain: &str, asset: &str) -> bool {
        self.assets.read().unwrap().contains_key(&format!("{chain} {asset}"))
    }

    /// Withheld assets, as `{"arbitrum usdt0": "decimals: …"}`.
    pub fn withheld_assets(&self) -> BTreeMap<String, String> {
        self.assets.read().unwrap().clone()
    }

    /// Service wallets below their floors, as `{"relayer:evm base native": "below 0.05"}`.
    pub fn below_floor(&self) -> BTreeMap<String, String> {
        self.low.read().unwrap().clone()
    }
}

/// What `/readyz` reads from the chains and the queue.
#[derive(Debug, Clone, Default)]
pub struct ReadyView {
    pub chains: BTreeMap<String, &'static str>,
    pub relayer_unfunded: Vec<String>,
    pub books: BTreeMap<&'static str, i64>,
}

/// What the probes (`/readyz`, `/metrics`) read from the chains and the
/// database, each at most once per `probe_cache_seconds`.
#[derive(Default)]
pub struct ProbeCache {
    pub ready: crate::cached::Cached<ReadyView>,
    pub db_metrics: crate::cached::Cached<String>,
}

/// Ask again, every `chain_probe_seconds`, the chains that are withheld.
pub async fn probe_withheld(config: Arc<Config>, chains: Arc<Chains>, drivers: Arc<Drivers>, watch: Arc<Watch>) {
    let every = Duration::from_secs(config.service.chain_probe_seconds.max(1));
    loop {
        tokio::time::sleep(every).await;
        if watch.withheld().is_empty() {
            continue;
        }
        for (chain, probe) in probe_chains(&config, &chains).await {
            let probe = if probe == ChainProbe::Ok && !watch.exposed(&chain) {
                check_tokens(&config, &drivers, &watch, &chain).await
            } else {
                probe
            };
            if watch.record(&chain, &probe) {
                match probe {
                    ChainProbe::Ok => tracing::info!(chain = %chain, "chain answers; now exposed"),
                    _ => tracing::warn!(chain = %chain, probe = probe.as_str(), "chain withheld"),
                }
            }
        }
    }
}

/// Before a chain is exposed (at start, and when it answers again): ask
/// its family's driver what the chain says of each served asset (EVM:
/// token facts and contracts; TRON: the token's, Permit2's and the x402
/// proxy's contracts) and withhold every asset whose chain disagrees with
/// chains.toml, with one log line naming the
/// difference. A chain that cannot be asked stays withheld
/// (`Unreachable`) and is asked again with the next probe.
pub async fn check_tokens(config: &Config, drivers: &Drivers, watch: &Watch, chain: &str) -> ChainProbe {
    let Some(driver) = drivers.for_chain(chain) else { return ChainProbe::Ok };
    let mut verdicts = Vec::new();
    for (key, asset) in config.served_assets().filter(|(name, ..)| *name == chain).map(|(_, _, k, a)| (k, a)) {
        match driver.asset_differences(chain, asset).await {
            Ok(diffs) => verdicts.push((format!("{chain} {key}"), diffs)),
            Err(e) => {
                tracing::warn!(chain = %chain, asset = %key, error = %e, "token facts unreadable; chain withheld until they are read");
                return ChainProbe::Unreachable;
            }
        }
    }
    let mut withheld = watch.assets.write().unwrap();
    for (at, diffs) in verdicts {
        if diffs.is_empty() {
            withheld.remove(&at);
        } else {
            let said = diffs.join("; ");
            tracing::error!(asset = %at, difference = %said, "asset withheld: its chain disagrees with chains.toml");
            withheld.insert(at, said);
        }
    }
    ChainProbe::Ok
}

/// Read every service wallet's balances on every exposed chain, now and
/// every `balance_check_seconds`: gauges for each, and a WARN plus a failed
/// readiness check for each one below its configured floor.
pub async fn balances(config: Arc<Config>, keys: Arc<Keystore>, drivers: Arc<Drivers>, watch: Arc<Watch>) {
    let every = Duration::from_secs(config.service.balance_check_seconds.max(1));
    loop {
        check_balances(&config, &keys, &drivers, &watch).await;
        tokio::time::sleep(every).await;
    }
}

pub async fn check_balances(cfg: &Config, keys: &Keystore, drivers: &Drivers, watch: &Watch) {
    let mut low = BTreeMap::new();
    let wallets = match keys.list().await {
        Ok(all) => all.into_iter().filter(|(name, _)| crate::family::keys::is_service_wallet(name)).collect::<Vec<_>>(),
        Err(e) => {
            tracing::warn!(error = %e, "balance check: keystore unavailable");
            return;
        }
    };
    let chains = cfg.exposed_chains();
    for (name, address) in wallets {
        let family = crate::family::keys::family_of(&name);
        for chain in chains.iter().filter(|c| watch.exposed(c) && cfg.chains[*c].family == family) {
            let balances = match crate::wallets::on_chain(drivers, chain, &address).await {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(wallet = %name, chain = %chain, error = %e, "balance check: chain unavailable");
                    continue;
                }
            };
            for b in &balances {
                let shown = crate::wallets::display(b.raw, b.decimals);
                let amount = crate::decimal::parse(&shown).unwrap_or_default();
                crate::telemetry::wallet_balance(&name, chain, &b.asset, amount);
                if let Some(f) = floor(cfg, &name, chain, &b.asset) {
                    let min = crate::decimal::parse(&f.amount).unwrap_or_default();
                    if amount < min {
                        tracing::warn!(wallet = %name, %address, chain = %chain, asset = %b.asset, balance = %shown, floor = %f.amount, "service wallet below its floor");
                        low.insert(format!("{name} {chain} {}", b.asset), format!("below {}", f.amount));
                    }
                }
            }
        }
    }
    *watch.low.write().unwrap() = low;
}

/// The floor configured for a service wallet's balance of `asset` on `chain`.
pub fn floor<'a>(cfg: &'a Config, wallet: &str, chain: &str, asset: &str) -> Option<&'a crate::config::Floor> {
    let native = &cfg.chains.get(chain)?.native_asset;
    cfg.floors.iter().find(|f| f.wallet == wallet && f.chain == chain && (f.asset == asset || (f.asset == "native" && asset == native)))
}

/// What a chain's node said to `eth_chainId`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainProbe {
    Ok,
    Unreachable,
    /// The node is on another chain: EVM chain ids, or Solana CAIP-2 references.
    WrongChainId {
        node: String,
        config: String,
    },
}

impl ChainProbe {
    pub fn as_str(&self) -> &'static str {
        match self {
            ChainProbe::Ok => "ok",
            ChainProbe::Unreachable => "unreachable",
            ChainProbe::WrongChainId { .. } => "wrong_chain_id",
        }
    }
}

/// Ask every exposed chain's node for its chain id, all at once, a few
/// seconds each at most.
pub async fn probe_chains(config: &Config, chains: &Chains) -> Vec<(String, ChainProbe)> {
    let probes = config.exposed_chains().into_iter().filter_map(|name| {
        let client = chains.get(&name)?;
        let chain = config.chains.get(&name)?;
        let want = chain.family.facts().identity(chain);
        Some(async move {
            let said = tokio::time::timeout(std::time::Duration::from_secs(3), client.identity(want.as_deref())).await;
            let state = match (said, want) {
                (Ok(Ok(Some(node))), Some(config)) if node != config => ChainProbe::WrongChainId { node, config },
                (Ok(Ok(_)), _) => ChainProbe::Ok,
                (Ok(Err(e)), _) => {
                    tracing::warn!(chain = %name, error = %e, "chain probe failed");
                    ChainProbe::Unreachable
                }
                (Err(_), _) => ChainProbe::Unreachable,
            };
            (name, state)
        })
    });
    futures::future::join_all(probes).await
}
