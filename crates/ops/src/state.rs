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
    /// Requests per IPv6 site (/48), above its clients' own limits.
    pub site_limiter: crate::ratelimit::Limiter,
    /// Dashboard code requests and tries, per client.
    pub sign_in_limiter: crate::ratelimit::Limiter,
    /// Wrong sign-in codes per client address, and from everyone, per hour.
    pub sign_in_failures: crate::ratelimit::Budget,
    pub sign_in_failures_all: crate::ratelimit::Budget,
    /// Sends the dashboard's sign-in codes.
    pub mailer: crate::mail::Mailer,
    /// Announces recorded changes to this replica's live streams.
    pub live: crate::live::Hub,
    /// Live streams this replica may still open: keyless ones, agents'.
    pub public_streams: Arc<tokio::sync::Semaphore>,
    pub agent_streams: Arc<tokio::sync::Semaphore>,
    /// Open streams per client and per agent, and which agent owns an
    /// intent (agent streams skip others' changes without a read).
    pub stream_counts: Arc<crate::live::StreamCounts>,
    pub owners: Arc<crate::live::Owners>,
    /// Seals webhook endpoints' secrets at rest.
    pub sealer: crate::webhooks::sign::Sealer,
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
    /// The x402 wing's operations and worker.
    pub x402: Arc<crate::x402::facilitator::Facilitator>,
    /// The swap provider's client and discovery cache.
    pub swaps: Arc<crate::swap::Swaps>,
    /// Gets legs' transactions on chain: the settlement workers' and the
    /// sponsored swaps' (one runner, so a wallet's setup is serialized once).
    pub steps: Arc<crate::settle::Steps>,
    /// Chains withheld until they answer; wallets below their floors.
    pub watch: Arc<crate::watch::Watch>,
    /// The proxy wallets' balances, read for the public flow's float check.
    pub floats: Arc<crate::float::Floats>,
    /// Proofs accepted at the same moment commit together.
    pub acceptances: crate::store::group::Group<crate::store::transition::intents::Accept>,
    /// So do intents created at the same moment.
    pub inserts: crate::store::group::Group<crate::store::transition::intents::Inserts>,
}

pub type Shared = Arc<AppState>;

/// The workers `start_workers` started.
pub struct Started {
    pub engine: Arc<crate::settle::Engine>,
    pub x402: Arc<crate::x402::worker::Worker>,
}

impl AppState {
    /// Is `address` one of this service's own wallets on `chain`?
    pub async fn is_service_wallet(&self, chain: &str, address: &str) -> bool {
        self.drivers.is_service_wallet(chain, address).await
    }

    /// Start this replica's background work: the settlement engine (`workers`
    /// at once) and the x402 worker on one step runner, and the swap
    /// tracker, each with its own share of the state.
    pub fn start_workers(&self, workers: usize) -> Started {
        let steps = self.steps.clone();
        let engine = crate::settle::Engine::with_steps(steps.clone());
        engine.spawn(workers);
        let x402 = crate::x402::worker::Worker::new(steps, self.x402.work.clone(), self.x402.done.clone());
        x402.spawn();
        let tracker = crate::swap::tracker::Deps {
            config: self.config.clone(),
            swaps: self.swaps.clone(),
            db: self.db.clone(),
            drivers: self.drivers.clone(),
            steps: self.steps.clone(),
        };
        tokio::spawn(crate::swap::tracker::run(tracker));
        crate::webhooks::spawn(crate::webhooks::Deps {
            config: self.config.clone(),
            db: self.db.clone(),
            sealer: self.sealer.clone(),
            drivers: self.drivers.clone(),
        });
        Started { engine, x402 }
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
        }
    }
}
