//! Per-call store state and the host imports an adapter may use.

use std::sync::Arc;

use alloy_primitives::keccak256;
use sha2::{Digest, Sha256};
use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::wit::v0_1::stablerail::adapter::{chain, clock, crypto, log, types};
use crate::chain::ChainClient;

/// The host's idea of "now", in Unix seconds. Swappable so tests can move time.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

pub fn system_clock() -> Clock {
    Arc::new(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0))
}

pub struct HostState {
    /// Built on the guest's first WASI call: most calls make none.
    wasi: Option<WasiCtx>,
    table: ResourceTable,
    pub(super) limiter: MemoryLimiter,
    /// The chain of the call's asset-context; `None` when the call has none.
    chain: Option<Arc<ChainClient>>,
    clock: Clock,
    adapter: Arc<str>,
    /// A call run on an async thread may not wait on the chain: its asking
    /// is recorded (the call is then run again where it may wait).
    pub(super) chain_deferred: bool,
    pub(super) chain_wanted: bool,
    /// The guest read the clock: its answer may not be reused.
    pub(super) clock_read: bool,
    /// An `eth_call` of the guest's failed only for the chain's gas cap
    /// (`ChainClient::gas_cap`): a refusal that follows is the cap's.
    pub(super) over_gas_cap: bool,
}

impl HostState {
    pub fn new(adapter: Arc<str>, max_memory: usize, chain: Option<Arc<ChainClient>>, clock: Clock) -> Self {
        HostState {
            wasi: None,
            table: ResourceTable::new(),
            limiter: MemoryLimiter { max: max_memory, refused: false, peak: 0 },
            chain,
            clock,
            adapter,
            chain_deferred: false,
            chain_wanted: false,
            clock_read: false,
            over_gas_cap: false,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        // A WASI context with nothing in it: no preopened directories, no
        // environment, no arguments, no sockets, no name lookup. Guests built
        // for wasm32-wasip2 import these interfaces; they get nothing from them.
        let wasi = self.wasi.get_or_insert_with(|| {
            let mut wasi = WasiCtx::builder();
            wasi.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
            wasi.build()
        });
        WasiCtxView { ctx: wasi, table: &mut self.table }
    }
}

/// Caps linear memory per call and remembers a refusal, so the host can say
/// "memory limit" instead of whatever trap the guest's allocator raises.
pub struct MemoryLimiter {
    max: usize,
    pub refused: bool,
    /// The largest linear memory the call asked for, in bytes.
    pub peak: usize,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.peak = self.peak.max(desired);
        if desired > self.max {
            self.refused = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

impl types::Host for HostState {}

impl crypto::Host for HostState {
    fn keccak256(&mut self, data: Vec<u8>) -> Vec<u8> {
        keccak256(&data).to_vec()
    }

    fn sha256(&mut self, data: Vec<u8>) -> Vec<u8> {
        Sha256::digest(&data).to_vec()
    }

    fn secp256k1_recover(&mut self, prehash: Vec<u8>, signature: Vec<u8>) -> Result<Vec<u8>, String> {
        crate::crypto::secp256k1_recover(&prehash, &signature)
    }

    fn ed25519_verify(&mut self, public_key: Vec<u8>, message: Vec<u8>, signature: Vec<u8>) -> bool {
        crate::crypto::ed25519_verify(&public_key, &message, &signature)
    }
}

impl chain::Host for HostState {
    fn query(&mut self, method: String, params: String) -> Result<String, chain::QueryError> {
        if self.chain_deferred {
            self.chain_wanted = true;
            return Err(chain::QueryError::Unavailable("asked again where the chain can be waited for".into()));
        }
        let Some(client) = self.chain.clone() else { return Err(chain::QueryError::Denied("this call has no chain".into())) };
        let capped = client.gas_cap.filter(|_| method == "eth_call").and_then(|cap| Some((cap, with_gas(&params, cap)?)));
        let Some((cap, capped)) = capped else { return client.query_blocking(&method, &params).map_err(query_error) };
        match client.query_blocking(&method, &capped) {
            // Did the cap alone make it fail? The same call with room to
            // spare (never unbounded) says so; the guest sees a revert.
            Err(crate::chain::ChainError::Node { .. })
                if with_gas(&params, cap.saturating_mul(20)).is_some_and(|roomy| client.query_blocking(&method, &roomy).is_ok()) =>
            {
                self.over_gas_cap = true;
                Err(chain::QueryError::Rpc(serde_json::json!({ "code": 3, "message": "execution reverted: over the gas cap" }).to_string()))
            }
            other => other.map_err(query_error),
        }
    }
}

/// An `eth_call`'s params with at most `cap` gas for the call.
fn with_gas(params: &str, cap: u64) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(params).ok()?;
    let call = v.get_mut(0)?.as_object_mut()?;
    let asked = call.get("gas").and_then(|g| g.as_str()).and_then(|g| u64::from_str_radix(g.trim_start_matches("0x"), 16).ok());
    call.insert("gas".into(), format!("{:#x}", asked.unwrap_or(cap).min(cap)).into());
    Some(v.to_string())
}

fn query_error(e: crate::chain::ChainError) -> chain::QueryError {
    match e {
        crate::chain::ChainError::Denied(m) => chain::QueryError::Denied(format!("`{m}` is not a read-only method of this chain's family")),
        // The node's answer is the adapter's to read; it holds no URL.
        crate::chain::ChainError::Node { code, message, data } => {
            chain::QueryError::Rpc(serde_json::json!({ "code": code, "message": message, "data": data }).to_string())
        }
        other => chain::QueryError::Unavailable(other.to_string()),
    }
}

impl clock::Host for HostState {
    fn now(&mut self) -> u64 {
        self.clock_read = true;
        (self.clock)()
    }
}

impl log::Host for HostState {
    fn log(&mut self, level: log::Level, message: String, fields: Vec<(String, String)>) {
        let adapter = &*self.adapter;
        let fields = fields.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
        match level {
            log::Level::Debug => tracing::debug!(adapter, %fields, "{message}"),
            log::Level::Info => tracing::info!(adapter, %fields, "{message}"),
            log::Level::Warn => tracing::warn!(adapter, %fields, "{message}"),
            log::Level::Error => tracing::error!(adapter, %fields, "{message}"),
        }
    }
}
