//! `chains.toml`: chains, assets, schemes, adapters, flags and fees.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Deployment flags a chain or asset may be gated by. Each can be overridden
/// by an environment variable of the same name (`true`/`false`/`1`/`0`).
pub const FLAGS: [&str; 3] = ["TRON_ENABLED", "TRON_NILE_ENABLED", "USDT_ENABLED"];

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Parse { path: PathBuf, source: toml::de::Error },
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub service: Service,
    #[serde(default)]
    pub flags: BTreeMap<String, bool>,
    #[serde(default)]
    pub fees: Fees,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub compliance: Compliance,
    /// Scheme name → adapter file name inside `service.adapters_dir`.
    #[serde(default)]
    pub adapters: BTreeMap<String, String>,
    #[serde(default)]
    pub chains: BTreeMap<String, Chain>,
    /// Balances below which the service warns and is not ready.
    #[serde(default)]
    pub floors: Vec<Floor>,
    /// The swap provider and the swap tracker.
    #[serde(default)]
    pub swap: Swap,
    /// The x402 facilitator (`/x402`).
    #[serde(default)]
    pub facilitator: Facilitator,
    /// How long rows that anyone can create and nobody needs are kept.
    #[serde(default)]
    pub retention: Retention,
    /// The account holders' web pages (`/dashboard`).
    #[serde(default)]
    pub dashboard: Dashboard,
    /// Signed event deliveries to the owners' endpoints.
    #[serde(default)]
    pub webhooks: Webhooks,
    /// Directory of the config file; relative paths resolve against it.
    #[serde(skip)]
    pub base_dir: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Service {
    pub adapters_dir: PathBuf,
    /// Where precompiled adapters are cached.
    pub cache_dir: PathBuf,
    pub default_target_chain: String,
    /// Per-call adapter budget.
    pub adapter_fuel: u64,
    pub adapter_memory_mib: u64,
    /// Server-side secret that API secrets are HMAC'd under. Created (32
    /// random bytes) on first use; `STABLERAIL_PEPPER` overrides it.
    pub pepper_file: PathBuf,
    /// How often expired intents are swept, in seconds.
    pub sweep_interval_seconds: u64,
    /// Keystore master key (created on first use; `STABLERAIL_MASTER_KEY` overrides).
    pub master_key_file: PathBuf,
    /// Concurrent settlement passes per replica. A pass mostly waits on its
    /// chain (the batch, the receipt), so this bounds intents in flight, not
    /// CPU; payouts and source legs share it.
    pub settlement_workers: usize,
    /// Most relayer calls sent together in one Multicall3 transaction per
    /// chain; 1 sends every call on its own.
    pub settlement_batch_max: usize,
    /// How long a batch waits for more relayer calls after its first, in
    /// milliseconds (0: it takes what queued while the previous one was
    /// sent). On chains with slow blocks a window fills batches that would
    /// otherwise go out a few calls each.
    pub settlement_batch_window_ms: u64,
    /// How long a payout is retried, in hours, before an intent whose
    /// stored payouts can provably no longer land is `PARTIAL_SETTLEMENT`.
    pub payout_retry_hours: u64,
    /// Longest pause between two retries of a leg (exponential backoff
    /// with jitter up to this), in seconds.
    pub retry_max_backoff_seconds: u64,
    /// How often each sender's nonces are checked for a stalled chain (a
    /// gap to fill) and PARTIAL_SETTLEMENT intents for payouts that landed.
    pub nonce_check_seconds: u64,
    /// How long a worker waits for a receipt before retrying later, in seconds.
    pub receipt_timeout_seconds: u64,
    /// An `Idempotency-Key` whose request has run this long without an
    /// answer is taken to be abandoned (its server died): a retry takes it
    /// over. What the request moves is deduplicated below it (stored
    /// transactions, leased runs), so a takeover never moves money twice.
    pub idempotency_stale_seconds: u64,
    /// How long a worker's claim on an intent lasts, in seconds: a replica
    /// that dies mid-pass holds its intents this long. Keep it well above a
    /// pass (receipt_timeout_seconds and the RPC timeouts).
    pub claim_lease_seconds: u64,
    /// How long `POST /v2/intents/{id}/execute` waits for settlement before
    /// answering with the status at that moment (0: answer at once).
    pub execute_wait_seconds: u64,
    /// How often service wallet balances are read (metrics, floors).
    pub balance_check_seconds: u64,
    /// How often a chain that did not answer (or answered another chain
    /// id) is asked again; it is not exposed until it answers right.
    pub chain_probe_seconds: u64,
    /// How often the heap's free pages are handed back to the system
    /// (glibc's `malloc_trim`), in seconds; 0: never.
    pub heap_trim_seconds: u64,
    /// Reverse proxies in front of the service (addresses or CIDRs): only
    /// from these peers are `Forwarded` / `X-Forwarded-For` believed, to
    /// find the client a rate limit counts. Empty (default): the socket's
    /// peer is the client.
    pub trusted_proxies: Vec<String>,
    /// The one header `trusted_proxies` record the client in:
    /// `x-forwarded-for` (default), `forwarded` or `x-real-ip`. Every other
    /// forwarding header is ignored.
    pub client_ip_header: crate::client_ip::ClientIpHeader,
    /// Seconds a client has to send a request's headers before its
    /// connection is closed (slow-header clients hold sockets).
    pub header_read_timeout_seconds: u64,
    /// Seconds a request may take in all before it is answered 408; above
    /// the longest wait the API does (`execute_wait_seconds`,
    /// `[facilitator] settle_retry_wait_seconds`).
    pub request_timeout_seconds: u64,
    /// Connections served at once; more wait in the accept queue.
    pub max_connections: usize,
    /// Serve `/metrics` on this address of its own (e.g. `127.0.0.1:9464`)
    /// for the operator's scraper. Unset (default): not served there.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Serve `/metrics` on the API's address too, to callers that send
    /// `Authorization: Bearer <token>`. Unset (default): the API's address
    /// answers 404 for `/metrics`.
    pub metrics_token: Option<String>,
    /// How old the database's view in `/metrics` and the chain checks in
    /// `/readyz` may be, in seconds: each is read again at most this often,
    /// however often it is asked for.
    pub probe_cache_seconds: u64,
}

impl Service {
    /// `trusted_proxies` as networks: CIDRs, or single addresses.
    pub fn trusted_proxies(&self) -> Result<Vec<ipnet::IpNet>, String> {
        self.trusted_proxies
            .iter()
            .map(|s| {
                let s = s.trim();
                s.parse::<ipnet::IpNet>()
                    .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| format!("service.trusted_proxies: `{s}` is not an address or CIDR"))
            })
            .collect()
    }
}

/// `[[floors]]`: warn (and fail readiness) when `wallet` holds less than
/// `amount` of `asset` (`native` or an asset name) on `chain`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floor {
    /// A keystore name, e.g. `relayer:evm`.
    pub wallet: String,
    pub chain: String,
    #[serde(default = "native")]
    pub asset: String,
    /// Exact decimal in whole units.
    pub amount: String,
}

fn native() -> String {
    "native".into()
}

impl Default for Service {
    fn default() -> Self {
        Service {
            adapters_dir: "adapters".into(),
            cache_dir: ".stablerail/cache".into(),
            default_target_chain: "base".into(),
            adapter_fuel: 2_000_000_000,
            adapter_memory_mib: 64,
            pepper_file: ".stablerail/pepper".into(),
            sweep_interval_seconds: 5,
            master_key_file: ".stablerail/master.key".into(),
            settlement_workers: 128,
            settlement_batch_max: 64,
            settlement_batch_window_ms: 0,
            payout_retry_hours: 24,
            retry_max_backoff_seconds: 60,
            nonce_check_seconds: 10,
            receipt_timeout_seconds: 30,
            idempotency_stale_seconds: 60,
            claim_lease_seconds: 60,
            execute_wait_seconds: 30,
            balance_check_seconds: 60,
            chain_probe_seconds: 15,
            heap_trim_seconds: 10,
            trusted_proxies: vec![],
            client_ip_header: Default::default(),
            header_read_timeout_seconds: 10,
            request_timeout_seconds: 90,
            max_connections: 8_192,
            metrics_listen: None,
            metrics_token: None,
            probe_cache_seconds: 5,
        }
    }
}

/// Fees are exact decimal strings in USD (the asset's unit).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Fees {
    /// Percentage of the amount, e.g. `"0.5"` for 0.5 %.
    pub platform_fee_percentage: String,
}

impl Default for Fees {
    fn default() -> Self {
        Fees { platform_fee_percentage: "0".into() }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Requests per minute per client IP (an IPv6 client's /64) on `/api`
    /// and per agent on `/v2`.
    pub requests_per_minute: u32,
    /// About how many clients each rate limit remembers at once (about 150
    /// bytes each); idle ones are forgotten first.
    pub max_tracked_clients: usize,
    /// Requests per minute per IPv6 site (/48) on `/api` and keyless
    /// `/x402`, whichever of its /64s they come from (default: ten times
    /// `requests_per_minute`).
    pub ipv6_site_requests_per_minute: Option<u32>,
    /// Milliseconds a keyless client over its limit waits for its 429.
    pub rejection_delay_ms: u64,
    /// Live streams per replica: keyless ones (`/api/intents/{id}/events`)
    /// and agents' (`/v2/events`) in pools of their own, so neither kind
    /// can take the other's.
    pub public_streams: usize,
    pub agent_streams: usize,
    /// Open keyless streams per client (an IPv6 client's /64), and open
    /// streams per agent; past it, 429.
    pub streams_per_client: usize,
    pub streams_per_agent: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            requests_per_minute: 60,
            max_tracked_clients: 100_000,
            ipv6_site_requests_per_minute: None,
            rejection_delay_ms: 500,
            public_streams: 2_000,
            agent_streams: 2_000,
            streams_per_client: 20,
            streams_per_agent: 10,
        }
    }
}

impl Limits {
    pub fn site_requests_per_minute(&self) -> u32 {
        self.ipv6_site_requests_per_minute.unwrap_or(self.requests_per_minute.saturating_mul(10)).max(1)
    }
}

/// `[retention]`: rows a stranger can create for free are deleted once
/// nothing can come of them, by the sweeper, a few hundred at a time.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Retention {
    /// Unpaid intents that expired, deleted this many hours after expiry.
    pub expired_intents_hours: u64,
    /// Refused facilitator settlements (`failed`): the signed payload is
    /// dropped this many hours after the refusal ...
    pub failed_settlement_payload_hours: u64,
    /// ... and the row deleted after this many.
    pub failed_settlements_hours: u64,
    /// Registered swaps whose source transaction never appeared on its chain
    /// (`source_not_confirmed`), deleted this many hours after they ended.
    pub unseen_swaps_hours: u64,
    /// Webhook deliveries that were delivered or given up, deleted this many
    /// hours after they were made.
    pub webhook_deliveries_hours: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            expired_intents_hours: 168,
            failed_settlement_payload_hours: 1,
            failed_settlements_hours: 168,
            unseen_swaps_hours: 168,
            webhook_deliveries_hours: 168,
        }
    }
}

/// `[webhooks]`: where events may be delivered, and how hard we try.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Webhooks {
    /// Deliver at all (endpoints can be managed either way).
    pub enabled: bool,
    /// Let endpoints resolve to private, loopback, link-local and metadata
    /// addresses (a devnet, a private deployment).
    pub allow_private_networks: bool,
    /// Let endpoints be plain `http://` to a loopback host (the devnet).
    pub allow_plain_http_loopback: bool,
    /// One attempt's limit, and how long a delivery is retried before its
    /// endpoint is disabled.
    pub timeout_seconds: u64,
    pub retry_hours: u64,
    /// How often the fan-out and the deliverers look for work.
    pub poll_ms: u64,
    /// Deliveries in flight at once per replica (each endpoint has one at
    /// most, across replicas: its slowness costs only itself).
    pub concurrency: usize,
    /// Deliveries an endpoint may have pending; past it the endpoint is
    /// disabled with its reason.
    pub max_pending_per_endpoint: i64,
}

impl Default for Webhooks {
    fn default() -> Self {
        Webhooks {
            enabled: true,
            allow_private_networks: false,
            allow_plain_http_loopback: false,
            timeout_seconds: 10,
            retry_hours: 72,
            poll_ms: 250,
            concurrency: 64,
            max_pending_per_endpoint: 10_000,
        }
    }
}

/// Who may make an account on the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Signup {
    /// Any email that proves itself with a code.
    Open,
    /// Only emails the operator invited (`stablerail account invite`).
    Invite,
}

/// `[dashboard]`: sign-in by emailed code, sessions, who may sign up.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Dashboard {
    /// Serve `/dashboard` at all.
    pub enabled: bool,
    /// Where codes are sent from: `smtps://host:port` (TLS) or
    /// `smtp://host:port?tls=required` (STARTTLS, refused without it), with
    /// `user:pass@` if the relay wants it. Plain `smtp://` (codes in clear
    /// text) only to a loopback host; anything else is refused at load.
    /// Empty: nobody can sign in.
    pub smtp_url: String,
    /// Where browsers reach the dashboard (`https://pay.example.com`): the
    /// session cookies are `__Host-` and Secure when it is https, whatever
    /// Host a proxy sends. Unset: judged from the request's Host (a
    /// loopback host gets plain cookies), for local use only.
    pub public_url: Option<String>,
    /// The sender of the codes, `Name <address>`.
    pub from: String,
    pub signup: Signup,
    /// A code's life.
    pub code_ttl_seconds: u64,
    /// Tries of codes per email per `attempts_window_seconds`, across codes
    /// (a new code does not reset them).
    pub code_attempts: u32,
    pub attempts_window_seconds: u64,
    /// After the try that uses the budget up, how long no code is sent or
    /// accepted; each further lockout of the email adds as much again.
    pub lockout_seconds: u64,
    /// Wrong codes per hour from one client address, and from everyone:
    /// past either, every code is refused (an attacker spreading guesses
    /// over many emails meets these).
    pub failed_tries_per_client_per_hour: u32,
    pub failed_tries_per_hour: u32,
    /// Least time between two codes to one email.
    pub resend_seconds: u64,
    /// A session ends after this long unused, and this long after sign-in.
    pub session_idle_minutes: u64,
    pub session_max_hours: u64,
    /// Code requests per minute per client address.
    pub sign_in_requests_per_minute: u32,
}

/// The host of a URL's part after `scheme://` (no user info, port, path
/// or query).
fn url_host(rest: &str) -> &str {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    }
}

fn loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Default for Dashboard {
    fn default() -> Self {
        Dashboard {
            enabled: false,
            smtp_url: String::new(),
            public_url: None,
            from: "stablerail <no-reply@localhost>".into(),
            signup: Signup::Invite,
            code_ttl_seconds: 600,
            code_attempts: 5,
            attempts_window_seconds: 900,
            lockout_seconds: 900,
            failed_tries_per_client_per_hour: 30,
            failed_tries_per_hour: 1_000,
            resend_seconds: 30,
            session_idle_minutes: 30,
            session_max_hours: 12,
            sign_in_requests_per_minute: 10,
        }
    }
}

impl Dashboard {
    fn validate(&self) -> Result<(), String> {
        if !self.smtp_url.is_empty() && !["smtp://", "smtps://"].iter().any(|p| self.smtp_url.starts_with(p)) {
            return Err("dashboard.smtp_url must start with smtp:// or smtps://".into());
        }
        if let Some(rest) = self.smtp_url.strip_prefix("smtp://") {
            let required = rest.split_once('?').is_some_and(|(_, q)| q.split('&').any(|p| p == "tls=required"));
            if !required && !loopback_host(url_host(rest)) {
                return Err("dashboard.smtp_url: smtp:// sends sign-in codes in clear text; use smtps:// or add ?tls=required \
                            (plain smtp:// only to a loopback host)"
                    .into());
            }
        }
        if let Some(url) = &self.public_url {
            let https = url.strip_prefix("https://");
            let http = url.strip_prefix("http://");
            match (https, http) {
                (Some(_), _) => {}
                (None, Some(rest)) if loopback_host(url_host(rest)) => {}
                _ => return Err("dashboard.public_url must be an https:// URL (http:// only to a loopback host)".into()),
            }
        }
        if self.from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(format!("dashboard.from `{}` is not a mailbox (`Name <address>`)", self.from));
        }
        if self.code_attempts == 0 || self.code_ttl_seconds == 0 || self.session_idle_minutes == 0 || self.session_max_hours == 0 {
            return Err("dashboard: code_attempts, code_ttl_seconds, session_idle_minutes and session_max_hours must be positive".into());
        }
        Ok(())
    }
}

/// `[facilitator]`: who may use `/x402` and how long `/settle` waits.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Facilitator {
    /// Serve `/x402` at all.
    pub enabled: bool,
    /// Without a facilitator key, anyone may verify and settle (spending the
    /// relayer's gas): then the limits below apply to keyless callers.
    pub public: bool,
    /// Keyless `/x402/verify` and `/x402/settle` requests per minute per IP.
    pub public_requests_per_minute: u32,
    /// Keyless `/x402/settle` settlements per minute per payer, and per payTo.
    pub public_settlements_per_minute: u32,
    /// Relayer gas keyless settlements may spend per hour, per payer and
    /// per payTo on each chain (each settlement counts the most it can
    /// cost: a contract payer its chain's `contract_payer_gas_cap` more).
    pub public_gas_per_hour: u64,
    /// Relayer gas all keyless settlements together may spend per hour on
    /// each chain (fresh payers and shops do not buy more of it).
    pub public_chain_gas_per_hour: u64,
    /// Smallest keyless settlement, in the asset's units ("0.01").
    pub public_min_amount: String,
    /// When not empty, keyless settlements may pay only these addresses.
    pub public_pay_to: Vec<String>,
    /// How long `/settle` waits for the transfer to be final before it
    /// answers `settlement_pending` with the broadcast transaction.
    pub settle_wait_seconds: u64,
    /// How long a repeated `/settle` of a pending payload waits.
    pub settle_retry_wait_seconds: u64,
    /// Settlements this replica sends at once. Each waits mostly on the
    /// chain and batches with the others into the relayer's Multicall3
    /// transactions, so more of them cost little; past this many, a
    /// `/settle` queues for a free worker.
    pub workers: usize,
}

impl Default for Facilitator {
    fn default() -> Self {
        Facilitator {
            enabled: true,
            public: false,
            public_requests_per_minute: 120,
            public_settlements_per_minute: 60,
            public_gas_per_hour: 10_000_000,
            public_chain_gas_per_hour: 100_000_000,
            public_min_amount: "0.001".into(),
            public_pay_to: vec![],
            settle_wait_seconds: 20,
            settle_retry_wait_seconds: 60,
            workers: 256,
        }
    }
}

/// `[swap]`: where quotes, routes and cross-chain status come from (an
/// API speaking LI.FI's), and how registered swaps are followed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Swap {
    /// Base URL of the LI.FI API (or one speaking it), e.g. `https://li.quest/v1`.
    pub lifi_url: String,
    /// Environment variable holding the LI.FI API key (sent as
    /// `x-lifi-api-key`); none: unauthenticated, at LI.FI's lower rate limit.
    pub lifi_api_key_env: Option<String>,
    /// Per upstream request; past it the answer is 502.
    pub timeout_ms: u64,
    /// How long discovery answers (tokens, chains, connections) are served from cache.
    pub discovery_ttl_seconds: u64,
    /// How long a quote's transaction may be broadcast (`expires_at`).
    pub quote_ttl_seconds: u64,
    /// A registered swap whose source transaction is not on chain by then is FAILED.
    pub cancel_after_seconds: u64,
    /// Registrations per minute per client of transactions not yet on their
    /// chain (each is followed for `cancel_after_seconds`).
    pub unseen_registrations_per_minute: u32,
    /// How often the tracker looks at pending swaps.
    pub track_interval_ms: u64,
    /// Chains offered for swaps; absent: every exposed EVM and TRON chain and Solana.
    pub chains: Option<Vec<String>>,
    /// Base URL of Jupiter's Swap API (or one speaking it).
    pub jupiter_url: String,
    /// Environment variable holding the Jupiter API key (sent as `x-api-key`).
    pub jupiter_api_key_env: Option<String>,
    /// Chain → provider of its same-chain swaps. Unlisted: `jupiter` on
    /// Solana chains, `lifi` elsewhere. Cross-chain routes are LI.FI's.
    pub providers: BTreeMap<String, SwapProvider>,
    /// The most gas a hosted wallet's swap (its approvals and the swap
    /// itself, as simulated) may use: the native fee it may cost is this
    /// times the chain's gas price, which the driver's fee policy bounds.
    pub max_gas: u64,
    /// The most SOL a hosted wallet's Solana swap may cost it beyond a SOL
    /// input (fees and new token accounts' rent), in lamports.
    pub max_fee_lamports: u64,
    /// How old a token price (from the provider's token list) may be and
    /// still be shown beside a balance.
    pub price_max_age_seconds: u64,
    /// When a hosted wallet's same-chain EVM swap is sponsored (the relayer
    /// pays the gas and keeps the chain's `fee` out of the input).
    pub sponsored: Sponsored,
    /// How long a sponsored swap's driver holds it without renewing before
    /// another (a retry, the tracker) may take it over.
    pub sponsored_lease_seconds: u64,
    /// The least `slippage_bps` a sponsored swap may ask (a swap with no
    /// room to move reverts on the smallest price change, and the relayer
    /// would pay for it): below it the request is refused. Default 10.
    pub sponsored_min_slippage_bps: u16,
}

/// `[swap] sponsored`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sponsored {
    /// When the wallet holds too little of the native coin for the swap's gas.
    Auto,
    /// Every eligible swap.
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapProvider {
    Lifi,
    /// Solana only.
    Jupiter,
}

impl Swap {
    /// Who serves same-chain swaps on `chain`.
    pub fn provider(&self, chain: &str, family: Family) -> SwapProvider {
        match self.providers.get(chain) {
            Some(p) => *p,
            None if family == Family::Solana => SwapProvider::Jupiter,
            None => SwapProvider::Lifi,
        }
    }
}

/// A provider's answers are signed by hosted wallets once checked; they
/// still travel only over TLS, but to a provider on this machine.
fn provider_url_allowed(url: &str) -> bool {
    match reqwest::Url::parse(url) {
        Ok(u) if u.scheme() == "https" => u.host().is_some(),
        Ok(u) if u.scheme() == "http" => u.host_str().is_some_and(|h| {
            h == "localhost" || h.trim_matches(|c| c == '[' || c == ']').parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }),
        _ => false,
    }
}

impl Default for Swap {
    fn default() -> Self {
        Swap {
            lifi_url: "https://li.quest/v1".into(),
            lifi_api_key_env: None,
            timeout_ms: 8_000,
            discovery_ttl_seconds: 300,
            quote_ttl_seconds: 120,
            cancel_after_seconds: 1_800,
            unseen_registrations_per_minute: 10,
            track_interval_ms: 2_000,
            chains: None,
            jupiter_url: "https://lite-api.jup.ag/swap/v1".into(),
            jupiter_api_key_env: None,
            providers: BTreeMap::new(),
            max_gas: 3_000_000,
            max_fee_lamports: 20_000_000,
            price_max_age_seconds: 300,
            sponsored: Sponsored::Auto,
            sponsored_lease_seconds: 15,
            sponsored_min_slippage_bps: 10,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Compliance {
    /// Sanctions lists: one address per line (`#` comments allowed) or a
    /// JSON array of strings. Relative to the config file.
    pub sanctions_files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Evm,
    Solana,
    Tron,
}

/// The families of a devnet's `--chains` list (comma-separated): `solana`
/// and `tron` are their own clusters, every other name an EVM chain, and
/// EVM is always there (the devnet's config serves base).
pub fn devnet_families(chains: &str) -> Vec<Family> {
    let named = |n: &str| chains.split(',').any(|c| c == n);
    let mut families = vec![Family::Evm];
    families.extend(named("solana").then_some(Family::Solana));
    families.extend(named("tron").then_some(Family::Tron));
    families
}

/// An EVM chain's transaction type for the service's own transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TxType {
    #[default]
    Eip1559,
    Legacy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Payer,
    Target,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    /// CAIP-2 network id. EVM chains derive `eip155:<chain_id>` when absent.
    pub caip2: Option<String>,
    pub family: Family,
    /// Numeric chain id (EVM, TRON). Absent means "operator must fill in".
    pub chain_id: Option<u64>,
    pub roles: Vec<Role>,
    #[serde(default)]
    pub rpc_urls: Vec<String>,
    /// Explorer link for a transaction; `{tx}` is replaced by its hash.
    #[serde(default)]
    pub explorer_tx_url: String,
    /// Flag that must be on for the chain to be exposed at all.
    pub gate: Option<String>,
    /// An operator switch: a disabled chain is not exposed.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Network fee charged when this chain is a leg, in USD.
    #[serde(default = "zero")]
    pub fee: String,
    /// Blocks a settlement transaction must have on top of it (itself
    /// included) before the engine moves on.
    #[serde(default = "one")]
    pub confirmations: u64,
    /// The chain's block interval in milliseconds (default by family: EVM
    /// 2,000, Solana 400, TRON 3,000): how far back a transfer is looked
    /// for, and the default for `min_validity_seconds`.
    pub block_time_ms: Option<u64>,
    /// Whether a payout may open the recipient's token account (Solana):
    /// then its rent is charged in the target fee (`recipient_account_fee`);
    /// otherwise a recipient without one is refused at create.
    #[serde(default = "yes")]
    pub create_recipient_accounts: bool,
    /// What opening a recipient's token account adds to the target fee, in
    /// USD (Solana's 2,039,280 lamports of rent, priced high enough for the
    /// SOL price to move): default "1.00".
    #[serde(default = "account_fee")]
    pub recipient_account_fee: String,
    /// An authorization that expires sooner than this after it is sent is
    /// refused, since it could be mined after it expired (default: three
    /// blocks, at least 6 s).
    pub min_validity_seconds: Option<u64>,
    /// Solana: the most a payer's transaction may make the fee payer spend
    /// on priority (compute-unit price × compute-unit limit), in
    /// micro-lamports (default 10,000,000,000: 10,000 lamports). x402's own
    /// cap (5 lamports a unit) would let a payer set 2,000,000 lamports.
    pub max_priority_fee_microlamports: Option<u64>,
    /// Asset key of the native coin in balance listings (18 decimals).
    #[serde(default = "eth")]
    pub native_asset: String,
    /// The service's collection wallet here: x402 `payTo` for payers on
    /// this chain. Intents from a chain without one are refused (503).
    pub collection_address: Option<String>,
    /// Multicall3, used to send several settlements in one transaction
    /// (default: its canonical address; without one there, calls go alone).
    pub multicall3_address: Option<String>,
    /// The transactions the service signs here (EVM): "eip1559" (default)
    /// or "legacy" (type 0) for chains that take nothing else.
    #[serde(default)]
    pub transaction_type: TxType,
    /// The contracts a hosted wallet may call, approve or pay into when it
    /// swaps here: the providers' routers, diamonds, approval contracts and
    /// bridges (EVM, TRON), or their programs (Solana). A route naming any
    /// other is refused. Empty: no hosted wallet swaps here.
    #[serde(default)]
    pub swap_contracts: Vec<String>,
    /// ERC-6492 factories (EVM): a payer's smart wallet that is not
    /// deployed yet is deployed through one of these, at the service's gas,
    /// before its EIP-3009 authorization is settled. Empty (the default):
    /// counterfactual wallets are refused (`eip6492_factory_not_allowed`).
    #[serde(default)]
    pub erc6492_factories: Vec<String>,
    /// The most gas one check a contract payer causes may take here (EVM):
    /// every `eth_call` an adapter makes is simulated with at most this
    /// much, so an ERC-1271 wallet, an ERC-6492 deployment or 7702 code
    /// that needs more is refused (`payer_gas_cap_exceeded`) before the
    /// relayer sends anything. Default 500,000.
    pub contract_payer_gas_cap: Option<u64>,
    /// `mainnet` or `testnet`, for a chain whose id is not a known one
    /// (`Kind::known`); a known chain's kind is its own and the config may
    /// not say otherwise. Unknown and unsaid: mainnet (real value).
    pub kind: Option<Kind>,
    #[serde(default)]
    pub assets: BTreeMap<String, Asset>,
}

/// Whether a chain carries real value. A testnet never pays a mainnet, and
/// a mainnet never pays a testnet: worthless test tokens in, real ones out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Mainnet,
    Testnet,
}

impl Kind {
    /// The kind of a network (CAIP-2) the service knows: the spec's chains
    /// and their public testnets.
    pub fn known(caip2: &str) -> Option<Kind> {
        const MAINNETS: &[&str] = &[
            "eip155:1",
            "eip155:10",
            "eip155:56",
            "eip155:137",
            "eip155:143",
            "eip155:999",
            "eip155:4326",
            "eip155:8453",
            "eip155:42161",
            "eip155:43114",
            "eip155:1187947933",
            "tron:0x2b6653dc",
            "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
        ];
        const TESTNETS: &[&str] = &[
            "eip155:97",
            "eip155:998",
            "eip155:6342",
            "eip155:10143",
            "eip155:43113",
            "eip155:80002",
            "eip155:84532",
            "eip155:421614",
            "eip155:11155111",
            "eip155:11155420",
            "eip155:324705682",
            "tron:0xcd8690dc",
            "tron:0x94a9059e",
            "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
            "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
        ];
        if MAINNETS.contains(&caip2) {
            Some(Kind::Mainnet)
        } else if TESTNETS.contains(&caip2) {
            Some(Kind::Testnet)
        } else {
            None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Mainnet => "mainnet",
            Kind::Testnet => "testnet",
        }
    }
}

impl Chain {
    /// `contract_payer_gas_cap` where the family has gas (EVM).
    pub fn contract_payer_gas_cap(&self) -> Option<u64> {
        (self.family == Family::Evm).then(|| self.contract_payer_gas_cap.unwrap_or(500_000))
    }

    /// Mainnet or testnet: known chain ids decide, then the config, then
    /// mainnet.
    pub fn kind(&self) -> Kind {
        self.network().and_then(|n| Kind::known(&n)).or(self.kind).unwrap_or(Kind::Mainnet)
    }

    pub fn block_time_ms(&self) -> u64 {
        self.block_time_ms.unwrap_or(match self.family {
            Family::Evm => 2_000,
            Family::Solana => 400,
            Family::Tron => 3_000,
        })
    }

    /// Seconds an authorization must still be valid when it is sent.
    pub fn min_validity_seconds(&self) -> u64 {
        self.min_validity_seconds.unwrap_or_else(|| (3 * self.block_time_ms()).div_ceil(1000).max(6))
    }

    /// The priority-fee cap a Solana payer's transaction must keep to.
    pub fn max_priority_fee_microlamports(&self) -> u64 {
        self.max_priority_fee_microlamports.unwrap_or(10_000_000_000)
    }

    /// The priority-fee cap its adapters are told of: Solana chains only.
    pub fn adapter_priority_fee_cap(&self) -> Option<u64> {
        (self.family == Family::Solana).then(|| self.max_priority_fee_microlamports())
    }

    /// CAIP-2 network id.
    pub fn network(&self) -> Option<String> {
        match (&self.caip2, self.family, self.chain_id) {
            (Some(n), _, _) => Some(n.clone()),
            (None, Family::Evm, Some(id)) => Some(format!("eip155:{id}")),
            _ => None,
        }
    }
}

fn yes() -> bool {
    true
}
fn one() -> u64 {
    1
}

fn eth() -> String {
    "eth".into()
}

fn account_fee() -> String {
    "1.00".into()
}

fn zero() -> String {
    "0".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AssetState {
    /// Serves payments.
    Live,
    /// Serves payments while its `flag` is on.
    Gated,
    /// Described but not served.
    Unwired,
}

/// The x402 payment scheme an asset's adapter speaks. Intents pay `exact`
/// only (a fixed amount); the facilitator serves both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum X402Scheme {
    /// The amount signed is the amount paid.
    #[default]
    Exact,
    /// The payer signs a maximum; the resource server settles what it
    /// charges, up to that, through a proxy only the named facilitator may
    /// call (so the call is sent by the relayer itself, never batched).
    Upto,
}

impl X402Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            X402Scheme::Exact => "exact",
            X402Scheme::Upto => "upto",
        }
    }

    pub fn parse(name: &str) -> Option<X402Scheme> {
        [X402Scheme::Exact, X402Scheme::Upto].into_iter().find(|s| s.as_str() == name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DomainKind {
    #[default]
    Standard,
    Salted,
    None,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asset {
    pub state: AssetState,
    /// For `state = "gated"`: the flag that opens it.
    pub flag: Option<String>,
    /// Token address in the family's own form; empty means "operator must fill in".
    #[serde(default)]
    pub token: String,
    pub decimals: u8,
    pub eip712_name: Option<String>,
    pub eip712_version: Option<String>,
    #[serde(default)]
    pub domain: DomainKind,
    /// Transfer scheme; names an entry of `[adapters]`.
    pub scheme: String,
    /// The x402 scheme that adapter speaks (`exact` unless said).
    #[serde(default)]
    pub x402_scheme: X402Scheme,
    /// Scheme-specific settings passed to the adapter.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
}

/// Whether a (chain, asset) request can be served, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    Available,
    /// Gated by a flag that is off (spec: 400 `invalid payer_asset`).
    GatedOff,
    /// Not wired on this chain (spec: 400 `payer_asset not configured on chain`).
    Unwired,
}

/// `alias_of = "usdt0"` makes an asset a second name for another asset of
/// the same chain: same contract and settings, its own `state` and `flag`.
fn expand_aliases(raw: &mut toml::Table) -> Result<(), ConfigError> {
    let Some(toml::Value::Table(chains)) = raw.get_mut("chains") else { return Ok(()) };
    for (chain_id, chain) in chains.iter_mut() {
        let Some(toml::Value::Table(assets)) = chain.get_mut("assets") else { continue };
        let snapshot = assets.clone();
        for (key, asset) in assets.iter_mut() {
            let toml::Value::Table(own) = asset else { continue };
            let Some(target) = own.remove("alias_of") else { continue };
            let at = format!("chains.{chain_id}.assets.{key}.alias_of");
            let name = target.as_str().ok_or_else(|| ConfigError::Invalid(format!("{at} must be a string")))?;
            let Some(toml::Value::Table(base)) = snapshot.get(name) else {
                return Err(ConfigError::Invalid(format!("{at} names `{name}`, which is not an asset of this chain")));
            };
            if base.contains_key("alias_of") {
                return Err(ConfigError::Invalid(format!("{at} names `{name}`, which is itself an alias")));
            }
            let mut merged = base.clone();
            merged.remove("flag");
            merged.extend(std::mem::take(own));
            *own = merged;
        }
    }
    Ok(())
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
        let mut cfg = Config::parse(&text).map_err(|source| match source {
            ConfigError::Parse { source, .. } => ConfigError::Parse { path: path.into(), source },
            other => other,
        })?;
        cfg.base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(cfg)
    }

    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let parse_err = |source| ConfigError::Parse { path: "<config>".into(), source };
        let mut raw: toml::Table = toml::from_str(text).map_err(parse_err)?;
        expand_aliases(&mut raw)?;
        let mut cfg: Config = toml::Value::Table(raw).try_into().map_err(parse_err)?;
        cfg.apply_env_flags()?;
        cfg.expand_env_references()?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// `${NAME}` in an RPC URL is the environment variable NAME, so a
    /// provider key need not be written into chains.toml. A variable that
    /// is not set is an error naming the entry (never the value).
    fn expand_env_references(&mut self) -> Result<(), ConfigError> {
        for (name, chain) in self.chains.iter_mut() {
            for url in chain.rpc_urls.iter_mut() {
                *url = expand_env(url)
                    .map_err(|var| ConfigError::Invalid(format!("chains.{name}.rpc_urls: environment variable `{var}` is not set")))?;
            }
        }
        Ok(())
    }

    fn apply_env_flags(&mut self) -> Result<(), ConfigError> {
        for name in FLAGS {
            if let Ok(v) = std::env::var(name) {
                let on = match v.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => true,
                    "0" | "false" | "no" | "off" | "" => false,
                    other => return Err(ConfigError::Invalid(format!("environment {name}={other} is not a boolean"))),
                };
                self.flags.insert(name.to_string(), on);
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        self.dashboard.validate().map_err(ConfigError::Invalid)?;
        for f in &self.floors {
            let Some(chain) = self.chains.get(&f.chain) else {
                return bad(format!("floors: `{}` is not a configured chain", f.chain));
            };
            if f.asset != "native" && !chain.assets.contains_key(&f.asset) {
                return bad(format!("floors: chain `{}` has no asset `{}`", f.chain, f.asset));
            }
            if crate::decimal::parse(&f.amount).map_or(true, |d| d.is_sign_negative()) {
                return bad(format!("floors: `{}` is not a non-negative decimal amount", f.amount));
            }
        }
        let known_flag = |f: &str| FLAGS.contains(&f) || self.flags.contains_key(f);
        for (id, chain) in &self.chains {
            if let Some(g) = &chain.gate {
                if !known_flag(g) {
                    return bad(format!("chains.{id}.gate names unknown flag `{g}`"));
                }
            }
            let exposed = self.chain_exposed(chain);
            if let (Some(said), Some(known)) = (chain.kind, chain.network().and_then(|n| Kind::known(&n))) {
                if said != known {
                    return bad(format!("chains.{id}.kind says {}, but its chain id is a known {}", said.as_str(), known.as_str()));
                }
            }
            if exposed && chain.network().is_none() {
                return bad(format!("chains.{id} is enabled but has neither caip2 nor chain_id"));
            }
            if exposed && chain.family == Family::Evm && chain.chain_id.is_none() {
                return bad(format!("chains.{id} is an enabled EVM chain without chain_id"));
            }
            for (key, asset) in &chain.assets {
                let at = format!("chains.{id}.assets.{key}");
                match (asset.state, &asset.flag) {
                    (AssetState::Gated, None) => return bad(format!("{at} is gated but names no flag")),
                    (AssetState::Gated, Some(f)) if !known_flag(f) => return bad(format!("{at}.flag names unknown flag `{f}`")),
                    _ => {}
                }
                if asset.x402_scheme == X402Scheme::Upto && chain.family != Family::Evm {
                    return bad(format!("{at}.x402_scheme `upto` is served on EVM chains only"));
                }
                // Only what is served now must be complete; a gated-off pair
                // may wait for the operator to fill it in.
                if exposed && self.availability(asset) == Availability::Available {
                    if asset.token.is_empty() {
                        return bad(format!("{at} is served but has no token address"));
                    }
                    if !self.adapters.contains_key(&asset.scheme) {
                        return bad(format!("{at}.scheme `{}` has no entry in [adapters]", asset.scheme));
                    }
                }
            }
        }
        for (key, url) in [("swap.lifi_url", &self.swap.lifi_url), ("swap.jupiter_url", &self.swap.jupiter_url)] {
            if !provider_url_allowed(url) {
                return bad(format!("{key} must be an https URL (http only to a loopback address)"));
            }
        }
        for (name, provider) in &self.swap.providers {
            match (self.chains.get(name), provider) {
                (None, _) => return bad(format!("swap.providers: `{name}` is not a configured chain")),
                (Some(c), SwapProvider::Jupiter) if c.family != Family::Solana => {
                    return bad(format!("swap.providers: jupiter serves Solana chains only, not `{name}`"))
                }
                _ => {}
            }
        }
        crate::decimal::parse(&self.facilitator.public_min_amount)
            .map_err(|e| ConfigError::Invalid(format!("facilitator.public_min_amount: {e}")))?;
        if self.facilitator.public && self.facilitator.public_requests_per_minute == 0 {
            return bad("facilitator.public_requests_per_minute must be at least 1".into());
        }
        if self.limits.requests_per_minute == 0 {
            return bad("limits.requests_per_minute must be at least 1".into());
        }
        self.service.trusted_proxies().map_err(ConfigError::Invalid)?;
        let longest_wait = self.service.execute_wait_seconds.max(self.facilitator.settle_retry_wait_seconds);
        if self.service.request_timeout_seconds <= longest_wait {
            return bad(format!(
                "service.request_timeout_seconds must be above the longest wait ({longest_wait} s: execute_wait_seconds, facilitator.settle_retry_wait_seconds)"
            ));
        }
        if self.service.header_read_timeout_seconds == 0 || self.service.max_connections == 0 {
            return bad("service.header_read_timeout_seconds and service.max_connections must be at least 1".into());
        }
        if !self.chains.contains_key(&self.service.default_target_chain) {
            return bad(format!("service.default_target_chain `{}` is not a configured chain", self.service.default_target_chain));
        }
        crate::decimal::parse(&self.fees.platform_fee_percentage)
            .map_err(|e| ConfigError::Invalid(format!("fees.platform_fee_percentage: {e}")))?;
        for (id, chain) in &self.chains {
            crate::decimal::parse(&chain.fee).map_err(|e| ConfigError::Invalid(format!("chains.{id}.fee: {e}")))?;
            if !chain.erc6492_factories.is_empty() && chain.family != Family::Evm {
                return bad(format!("chains.{id}.erc6492_factories: ERC-6492 wallets are EVM's"));
            }
            if let Some(f) = chain.erc6492_factories.iter().find(|f| !chain.family.facts().is_address(f)) {
                return bad(format!("chains.{id}.erc6492_factories: `{f}` is not an address"));
            }
        }
        Ok(())
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags.get(name).copied().unwrap_or(false)
    }

    /// A chain is exposed when the operator enabled it and its gate is on.
    pub fn chain_exposed(&self, chain: &Chain) -> bool {
        chain.enabled && chain.gate.as_deref().is_none_or(|g| self.flag(g))
    }

    /// Chains exposed in `role`, in the config's (sorted) order.
    /// Every exposed chain, payer or target, sorted.
    pub fn exposed_chains(&self) -> Vec<String> {
        self.chains.iter().filter(|(_, c)| !c.roles.is_empty() && self.chain_exposed(c)).map(|(id, _)| id.clone()).collect()
    }

    /// The families of the exposed chains, each once, EVM first.
    pub fn families(&self) -> Vec<Family> {
        let exposed = self.exposed_chains();
        [Family::Evm, Family::Solana, Family::Tron].into_iter().filter(|f| exposed.iter().any(|c| self.chains[c].family == *f)).collect()
    }

    /// The families an agent has a hosted wallet in: every served one, and
    /// EVM always (an agent's id names its EVM wallet).
    pub fn agent_families(&self) -> Vec<Family> {
        let mut families = self.families();
        if !families.contains(&Family::Evm) {
            families.insert(0, Family::Evm);
        }
        families
    }

    /// A transaction's page on the chain's explorer, where one is configured.
    pub fn explorer_tx_url(&self, chain: &str, tx: &str) -> Option<String> {
        self.chains.get(chain).filter(|c| !c.explorer_tx_url.is_empty()).map(|c| c.explorer_tx_url.replace("{tx}", tx))
    }

    pub fn chains_with_role(&self, role: Role) -> Vec<String> {
        self.chains.iter().filter(|(_, c)| c.roles.contains(&role) && self.chain_exposed(c)).map(|(id, _)| id.clone()).collect()
    }

    pub fn availability(&self, asset: &Asset) -> Availability {
        match asset.state {
            AssetState::Live => Availability::Available,
            AssetState::Unwired => Availability::Unwired,
            AssetState::Gated => match &asset.flag {
                Some(f) if self.flag(f) => Availability::Available,
                _ => Availability::GatedOff,
            },
        }
    }

    /// Every (chain, asset) that can serve payments now, which is what needs
    /// an adapter at start-up.
    pub fn served_assets(&self) -> impl Iterator<Item = (&str, &Chain, &str, &Asset)> {
        self.chains
            .iter()
            .filter(|(_, c)| self.chain_exposed(c))
            .flat_map(|(id, c)| c.assets.iter().map(move |(k, a)| (id.as_str(), c, k.as_str(), a)))
            .filter(|(_, _, _, a)| self.availability(a) == Availability::Available)
    }

    pub fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }
}

/// Replace every `${NAME}` in `text` with the environment variable NAME;
/// `Err(NAME)` for the first one that is not set. `$` without a brace is
/// kept as it is.
pub fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else { break };
        let var = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        out.push_str(&std::env::var(var).map_err(|_| var.to_string())?);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Names the public SDKs use for a chain, and the chain each means here.
const CHAIN_ALIASES: [(&str, &str); 2] = [("solana-mainnet-beta", "solana"), ("solana-mainnet", "solana")];

/// The chain a request's name means: an SDK's alias gives our name; any
/// other name is itself.
pub fn chain_named(name: &str) -> &str {
    CHAIN_ALIASES.iter().find(|(alias, _)| *alias == name).map_or(name, |(_, chain)| chain)
}
