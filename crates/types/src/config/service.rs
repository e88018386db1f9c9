//! `[service]`, `[[floors]]`, `[fees]`, `[limits]`, `[retention]` and
//! `[webhooks]`: how the service runs, what it charges and keeps.

use super::*;

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
    /// Settlement passes per replica working at once (verifying, signing,
    /// reading receipts); payouts and source legs share them. A pass gives
    /// its worker back while it waits for its batch or its block, so this
    /// bounds work, not payments in flight (those cost a leased row).
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
    pub client_ip_header: ClientIpHeader,
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

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Compliance {
    /// Sanctions lists: one address per line (`#` comments allowed) or a
    /// JSON array of strings. Relative to the config file.
    pub sanctions_files: Vec<PathBuf>,
}

/// The header the operator's proxies record the client in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientIpHeader {
    /// `X-Forwarded-For`: nginx, Caddy, HAProxy and cloud load balancers append to it.
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded` (its `for=` of each element).
    Forwarded,
    /// `X-Real-IP`: one address, set (not appended) by the proxy.
    XRealIp,
}

/// `[telemetry]`: OpenTelemetry traces, sent as OTLP over HTTP (protobuf).
/// Off unless an endpoint is named.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Telemetry {
    /// The collector's traces URL, e.g. `http://127.0.0.1:4318/v1/traces`.
    pub otlp_endpoint: Option<String>,
    /// The share of new traces kept, 0 to 1. A caller's `traceparent`
    /// decides for its own request (sampled or not), whatever this says.
    pub sample_ratio: f64,
    /// The `service.name` the traces carry.
    pub service_name: String,
    /// Send `traceparent` to RPC providers. Both legs of a payment are one
    /// trace, so a provider that serves both chains can link a payer to a
    /// merchant by it: off when that matters more than matching a
    /// provider's logs.
    pub traceparent_to_providers: bool,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry { otlp_endpoint: None, sample_ratio: 1.0, service_name: "stablerail".into(), traceparent_to_providers: true }
    }
}

impl Telemetry {
    pub(super) fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(format!("telemetry.sample_ratio: {} is not between 0 and 1", self.sample_ratio));
        }
        if let Some(endpoint) = &self.otlp_endpoint {
            match url::Url::parse(endpoint) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => return Err("telemetry.otlp_endpoint: not an http(s) URL".into()),
            }
        }
        if self.service_name.trim().is_empty() {
            return Err("telemetry.service_name is empty".into());
        }
        Ok(())
    }
}

/// `[hsm]`: a PKCS#11 module that makes and holds the keys of some roles.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Hsm {
    /// The module's library, e.g. `/usr/lib/softhsm/libsofthsm2.so`. None: no module.
    pub module: Option<PathBuf>,
    /// The token's label.
    pub token: String,
    /// The user PIN's file (or `STABLERAIL_HSM_PIN`).
    pub pin_file: Option<PathBuf>,
    /// Whose new keys the module makes: `relayer`, `proxy`, `collection`,
    /// `agents` (hosted wallets).
    pub roles: Vec<String>,
}

/// The roles `[hsm] roles` may name.
pub const HSM_ROLES: [&str; 4] = ["relayer", "proxy", "collection", "agents"];

impl Hsm {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.module.is_none() {
            return if self.roles.is_empty() { Ok(()) } else { Err("hsm.roles are named but hsm.module is not".into()) };
        }
        if self.token.trim().is_empty() {
            return Err("hsm.token (the token's label) is empty".into());
        }
        if let Some(r) = self.roles.iter().find(|r| !HSM_ROLES.contains(&r.as_str())) {
            return Err(format!("hsm.roles: `{r}` is not one of {}", HSM_ROLES.join(", ")));
        }
        Ok(())
    }
}
