//! The service's parts, built once at start-up (`server::build_state`) and
//! shared by the HTTP layer, the settlement engine and the watchers.

use std::sync::Arc;

use crate::adapter::Registry;
use crate::auth::Pepper;
use crate::config::Config;
use crate::db::Db;
use crate::sanctions::SanctionsList;

pub struct AppState {
    pub config: Arc<Config>,
    pub registry: Arc<Registry>,
    pub db: Db,
    pub pepper: Pepper,
    pub sanctions: Arc<SanctionsList>,
    pub limiter: crate::ratelimit::Limiter,
    /// Keyless facilitator callers, per IP (`[facilitator] public`).
    pub facilitator_limiter: crate::ratelimit::Limiter,
    /// Keyless settlements, per payer and per payTo: rotating IPs does not
    /// buy one payer or one shop more of the relayer's gas.
    pub public_budget: crate::ratelimit::Limiter,
    /// Requests per IPv6 site (/48), above its clients' own limits.
    pub site_limiter: crate::ratelimit::Limiter,
    /// Swap registrations whose transaction is not on its chain yet, per client.
    pub unseen_swaps: crate::ratelimit::Limiter,
    /// `/readyz`'s and `/metrics`' reads of the chains and the database.
    pub probe_cache: crate::watch::ProbeCache,
    /// Reverse proxies whose forwarded client addresses are believed.
    pub proxies: crate::client_ip::TrustedProxies,
    pub keys: Arc<crate::family::keys::Keystore>,
    /// Every chain's transport.
    pub chains: Arc<crate::family::chain::Chains>,
    /// Each chain family's driver (signing, sending, finality, balances).
    pub drivers: Arc<crate::family::Drivers>,
    /// Wakes this replica's settlement workers when work is queued.
    pub work: Arc<tokio::sync::Notify>,
    /// Wakes this replica's facilitator workers when a settlement is queued.
    pub x402_work: Arc<tokio::sync::Notify>,
    /// Wakes requests waiting on a facilitator settlement when it ends.
    pub x402_done: Arc<crate::x402::finished::Finished>,
    /// The swap provider's client and discovery cache.
    pub swaps: Arc<crate::swap::Swaps>,
    /// Chains withheld until they answer; wallets below their floors.
    pub watch: Arc<crate::watch::Watch>,
    /// The proxy wallets' balances, read for the public flow's float check.
    pub floats: Arc<crate::float::Floats>,
    /// This replica's running settlement engine, once started: a facilitator
    /// settle runs its first pass on it at once when a worker is free.
    pub engine: std::sync::OnceLock<Arc<crate::settle::Engine>>,
    /// Proofs accepted at the same moment commit together.
    pub acceptances: crate::store::group::Group<crate::store::transition::intents::Accept>,
    /// So do intents created at the same moment.
    pub inserts: crate::store::group::Group<crate::store::transition::intents::Inserts>,
}

pub type Shared = Arc<AppState>;

impl AppState {
    /// Start this replica's background work: the settlement engine (`workers`
    /// at once) and the swap tracker, each with its own share of the state.
    pub fn start_workers(&self, workers: usize) -> std::sync::Arc<crate::settle::Engine> {
        let engine = crate::settle::Engine::new(self.engine_deps());
        engine.spawn(workers);
        let tracker = crate::swap::tracker::Deps {
            config: self.config.clone(),
            swaps: self.swaps.clone(),
            db: self.db.clone(),
            drivers: self.drivers.clone(),
        };
        tokio::spawn(crate::swap::tracker::run(tracker));
        engine
    }

    /// The settlement engine's share of this state.
    pub fn engine_deps(&self) -> crate::settle::Deps {
        crate::settle::Deps {
            config: self.config.clone(),
            registry: self.registry.clone(),
            db: self.db.clone(),
            keys: self.keys.clone(),
            drivers: self.drivers.clone(),
            sanctions: self.sanctions.clone(),
            work: self.work.clone(),
            x402_work: self.x402_work.clone(),
            x402_done: self.x402_done.clone(),
        }
    }
}
