//! Wiring: config → adapters → database → HTTP, and graceful shutdown.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::adapter::{system_clock, Clock, Limits, Registry, Runtime};
use crate::api;
use crate::auth::Pepper;
use crate::config::Config;
use crate::db::Db;
use crate::family::chain::Chains;
use crate::family::keys::Keystore;
use crate::ratelimit::Limiter;
use crate::sanctions::SanctionsList;
use crate::state::{AppState, Shared};
use crate::watch::{probe_chains, ChainProbe};

/// Build the application state: everything but the listener.
pub async fn build_state(config_path: &Path, database: &str, clock: Clock) -> anyhow::Result<Shared> {
    let config = load_config(config_path)?;
    crate::telemetry::init();
    let runtime = runtime_for(&config, clock)?;
    let chains = Arc::new(Chains::from_config(&config));
    let registry = Registry::from_config(&config, runtime, &chains).context("adapters")?;
    let db = connect(database).await?;
    let pepper = Pepper::load(&config.resolve(&config.service.pepper_file))?;
    let files: Vec<PathBuf> = config.compliance.sanctions_files.iter().map(|f| config.resolve(f)).collect();
    let sanctions = Arc::new(SanctionsList::load(&files)?);
    if !sanctions.is_empty() {
        tracing::info!(entries = sanctions.len(), "sanctions lists loaded");
    }
    let bound = config.limits.max_tracked_clients;
    let limiter = Limiter::bounded(config.limits.requests_per_minute, bound);
    let facilitator_limiter = Limiter::bounded(config.facilitator.public_requests_per_minute.max(1), bound);
    let public_budget = Limiter::bounded(config.facilitator.public_settlements_per_minute.max(1), bound);
    let public_gas = crate::ratelimit::Budget::per_hour(config.facilitator.public_gas_per_hour, bound);
    let public_chain_gas = crate::ratelimit::Budget::per_hour(config.facilitator.public_chain_gas_per_hour, bound);
    let site_limiter = Limiter::bounded(config.limits.site_requests_per_minute(), bound);
    let unseen_swaps = Limiter::bounded(config.swap.unseen_registrations_per_minute.max(1), bound);
    let sign_in_limiter = Limiter::bounded(config.dashboard.sign_in_requests_per_minute.max(1), bound);
    let sign_in_failures = crate::ratelimit::Budget::per_hour(config.dashboard.failed_tries_per_client_per_hour, bound);
    let sign_in_failures_all = crate::ratelimit::Budget::per_hour(config.dashboard.failed_tries_per_hour, 1);
    let sealer = crate::webhooks::sign::Sealer::new(&pepper);
    let live = crate::live::Hub::default();
    live.spawn(db.clone());
    let mailer = crate::mail::Mailer::new(&config.dashboard.smtp_url, &config.dashboard.from)?;
    let proxies = crate::client_ip::TrustedProxies::new(
        config.service.trusted_proxies().map_err(|e| anyhow::anyhow!(e))?,
        config.service.client_ip_header,
    );
    let held = crate::family::module::Held::from_config(&config)?;
    let keys = Arc::new(Keystore::open(db.clone(), &config.resolve(&config.service.master_key_file))?.holding(held));
    let (public_streams, agent_streams) = (config.limits.public_streams.max(1), config.limits.agent_streams.max(1));
    let (config, registry) = (Arc::new(config), Arc::new(registry));
    let drivers = Arc::new(crate::family::Drivers::new(config.clone(), chains.clone(), db.clone(), keys.clone()));
    // Adapters are told the relayer's address (Solana: the fee payer payers
    // name). Without keys yet, `serve` refuses to start anyway.
    for family in config.families() {
        if let Some(driver) = drivers.of(family) {
            if let Ok(address) = driver.address(&crate::family::keys::Role::Relayer).await {
                registry.set_relayer(family, &address);
            }
        }
    }
    let swaps = Arc::new(crate::swap::Swaps::new(config.clone(), chains.clone()));
    let watch: Arc<crate::watch::Watch> = Default::default();
    let authorizer = match config.facilitator.receiver_authorizer {
        true => Some(crate::x402::facilitator::Authorizer::load(&keys).await.context("the receiver authorizer")?),
        false => None,
    };
    let x402 = Arc::new(crate::x402::facilitator::Facilitator {
        config: config.clone(),
        registry: registry.clone(),
        db: db.clone(),
        drivers: drivers.clone(),
        sanctions: sanctions.clone(),
        watch: watch.clone(),
        public_budget,
        public_gas,
        public_chain_gas,
        work: Default::default(),
        done: Default::default(),
        worker: Default::default(),
        authorizer,
    });
    let work: Arc<tokio::sync::Notify> = Default::default();
    let steps = crate::settle::Steps::new(crate::settle::Deps {
        config: config.clone(),
        registry: registry.clone(),
        db: db.clone(),
        keys: keys.clone(),
        drivers: drivers.clone(),
        sanctions: sanctions.clone(),
        work: work.clone(),
    });
    Ok(Arc::new(AppState {
        steps,
        swaps,
        chains,
        config,
        registry,
        drivers,
        db,
        pepper,
        sanctions,
        limiter,
        facilitator_limiter,
        proxies,
        probe_cache: Default::default(),
        unseen_swaps,
        site_limiter,
        sign_in_limiter,
        sign_in_failures,
        sign_in_failures_all,
        mailer,
        sealer,
        live,
        public_streams: Arc::new(tokio::sync::Semaphore::new(public_streams)),
        agent_streams: Arc::new(tokio::sync::Semaphore::new(agent_streams)),
        stream_counts: Default::default(),
        owners: Default::default(),
        keys,
        work,
        x402,
        watch,
        floats: Default::default(),
        acceptances: Default::default(),
        inserts: Default::default(),
    }))
}

pub fn load_config(path: &Path) -> anyhow::Result<Config> {
    Config::load(path).with_context(|| format!("loading {}", path.display()))
}

/// Connect to the database (creating a SQLite file's folder) and migrate.
pub async fn connect(database: &str) -> anyhow::Result<Db> {
    if let Some(dir) = sqlite_parent_dir(database) {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Db::connect(database).await.with_context(|| format!("database {database}"))
}

pub fn runtime_for(config: &Config, clock: Clock) -> anyhow::Result<Arc<Runtime>> {
    let limits = Limits::new(config.service.adapter_fuel, config.service.adapter_memory_mib);
    Runtime::new(limits, config.resolve(&config.service.cache_dir), clock)
}

pub async fn serve(config_path: PathBuf, listen: SocketAddr, database: String) -> anyhow::Result<()> {
    let state = build_state(&config_path, &database, system_clock()).await?;
    let missing = state.keys.missing_service_wallets(&state.config.families()).await?;
    anyhow::ensure!(
        missing.is_empty(),
        "the service wallets {} do not exist in this database; run `stablerail keys init` with the same --config and --database first",
        missing.join(", ")
    );
    // A node on another chain than configured would take signed transactions
    // meant for this one: refuse to start. A node that does not answer yet
    // is only a warning (`/readyz` says so until it does).
    // A chain that answers is exposed once its tokens' facts are read (all
    // chains at once): an asset whose chain disagrees with chains.toml is
    // withheld.
    let probes = futures::future::join_all(probe_chains(&state.config, &state.chains).await.into_iter().map(|(chain, probe)| {
        let state = state.clone();
        async move {
            match probe {
                ChainProbe::Ok => {
                    let probe = crate::watch::check_tokens(&state.config, &state.drivers, &state.watch, &chain).await;
                    (chain, probe)
                }
                other => (chain, other),
            }
        }
    }))
    .await;
    for (chain, probe) in probes {
        match probe {
            ChainProbe::WrongChainId { node, config } => {
                anyhow::bail!("chain `{chain}`: its RPC answers chain id {node}, but chains.toml says {config}")
            }
            ChainProbe::Unreachable => {
                tracing::warn!(chain = %chain, "chain RPC does not answer at start-up; not exposed until it does")
            }
            ChainProbe::Ok => {}
        }
        state.watch.record(&chain, &probe);
    }
    tokio::spawn(crate::watch::probe_withheld(state.config.clone(), state.chains.clone(), state.drivers.clone(), state.watch.clone()));
    tokio::spawn(crate::watch::balances(state.config.clone(), state.keys.clone(), state.drivers.clone(), state.watch.clone()));
    let every = std::time::Duration::from_secs(state.config.service.sweep_interval_seconds.max(1));
    let window = std::time::Duration::from_secs(state.config.dashboard.attempts_window_seconds);
    tokio::spawn(crate::sweeper::run(state.db.clone(), every, state.config.retention.clone(), window));
    if state.config.service.heap_trim_seconds > 0 {
        tokio::spawn(crate::heap::trim_every(std::time::Duration::from_secs(state.config.service.heap_trim_seconds)));
    }
    let started = state.start_workers(state.config.service.settlement_workers);
    let _ = state.x402.worker.set(started.x402);
    for name in crate::family::keys::service_wallets(&state.config.families()) {
        tracing::info!(wallet = %name, address = %state.keys.address(&name).await?, "service wallet");
    }
    tracing::info!(allocator = state.registry.runtime.allocator, adapters = state.registry.adapters.len(), "stablerail ready");
    let listener = listen_on(listen).with_context(|| format!("binding {listen}"))?;
    tracing::info!(address = %listener.local_addr()?, "listening");
    let limits = crate::http_server::Limits {
        header_read_timeout: std::time::Duration::from_secs(state.config.service.header_read_timeout_seconds),
        max_connections: state.config.service.max_connections,
    };
    // Metrics on their own address, for the operator's scraper only.
    if let Some(at) = state.config.service.metrics_listen {
        let metrics = listen_on(at).with_context(|| format!("binding metrics_listen {at}"))?;
        tracing::info!(address = %metrics.local_addr()?, "metrics listening");
        tokio::spawn(crate::http_server::serve(metrics, api::metrics_router(state.clone()), limits, std::future::pending()));
    }
    crate::http_server::serve(listener, api::router(state), limits, shutdown_signal()).await;
    tracing::info!("stopped");
    Ok(())
}

fn sqlite_parent_dir(url: &str) -> Option<PathBuf> {
    let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = path.split('?').next()?;
    if path.is_empty() || path.contains(":memory:") {
        return None;
    }
    Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

/// A listening socket with a deep accept queue. The default (128, as std and
/// mio use) overflows when a burst of clients connects at once, and every
/// dropped SYN costs its client a one-second retransmission timeout.
fn listen_on(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}
