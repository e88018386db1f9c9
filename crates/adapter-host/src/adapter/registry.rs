//! Which adapter serves which (chain, asset), resolved from chains.toml at
//! start-up. A served pair whose adapter is missing or does not serve its
//! scheme stops start-up with a message naming the file and the problem.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hashlink::LruCache;

use super::wit::types as wit;
use super::{convert, Adapter, CallError, LoadError, Runtime};
use crate::chain::{ChainClient, Chains};
use crate::config::{self, Config};
use crate::payment as p;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// `cause` is not a `source`: its text is already in this one's, and a
    /// source would print it again in an error chain.
    #[error("chains.{chain}.assets.{asset} (scheme `{scheme}`): {cause}")]
    Load { chain: String, asset: String, scheme: String, cause: LoadError },
    #[error("chains.{chain}.assets.{asset}: adapter file {file} (`{name}`) does not serve scheme `{scheme}` for {family:?} chains; it serves [{serves}]")]
    Mismatch { chain: String, asset: String, scheme: String, family: config::Family, file: PathBuf, name: String, serves: String },
}

/// An adapter bound to one (chain, asset): its context and its chain.
pub struct AssetAdapter {
    pub adapter: Arc<Adapter>,
    pub ctx: wit::AssetContext,
    pub chain: Arc<ChainClient>,
    /// The host's relayer on this chain, once keys are loaded.
    relayer: std::sync::OnceLock<String>,
    /// The token's EIP-712 domain separator, from `ctx`.
    domain_separator: Option<[u8; 32]>,
    memo: Memo,
}

/// Answers of the calls a create makes (addresses, amounts, requirements),
/// kept when the call only computed: it ran inline, read no chain and no
/// clock, and WASI was not there to give it randomness. An adapter must be
/// deterministic (`adapter check` tests it), so the same inputs get the
/// same answer; a payment service sees the same merchants, prices and
/// terms again and again. Bounded per (chain, asset); refusals are not kept.
struct Memo {
    addresses: Mutex<LruCache<(u8, String), String>>,
    units: Mutex<LruCache<String, String>>,
    requirements: Mutex<LruCache<TermsKey, p::PaymentRequirements>>,
}

/// Requirements are keyed by the terms they answer: relayer, amount, payTo
/// and timeout.
type TermsKey = (Option<String>, String, String, u64);

/// Entries of each of an asset's memo tables.
const MEMO_ENTRIES: usize = 1024;

impl Default for Memo {
    fn default() -> Self {
        Memo {
            addresses: Mutex::new(LruCache::new(MEMO_ENTRIES)),
            units: Mutex::new(LruCache::new(MEMO_ENTRIES)),
            requirements: Mutex::new(LruCache::new(MEMO_ENTRIES)),
        }
    }
}

fn recall<K: std::hash::Hash + Eq, V: Clone>(table: &Mutex<LruCache<K, V>>, key: &K) -> Option<V> {
    table.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
}

/// Keep `answer` under `key` when the call was pure and the adapter agreed.
fn keep<K: std::hash::Hash + Eq, V: Clone, E>(table: &Mutex<LruCache<K, V>>, key: K, pure: bool, answer: &Result<V, E>) {
    if let (true, Ok(v)) = (pure, answer) {
        table.lock().unwrap_or_else(|e| e.into_inner()).insert(key, v.clone());
    }
}

impl AssetAdapter {
    /// An adapter bound to a context and a chain outside any config (`adapter check`).
    pub fn new(adapter: Arc<Adapter>, ctx: wit::AssetContext, chain: Arc<ChainClient>) -> Self {
        let domain_separator = super::wit::v0_6::domain_separator(&ctx);
        AssetAdapter { adapter, ctx, chain, relayer: Default::default(), domain_separator, memo: Memo::default() }
    }

    /// What a call is told of this (chain, asset).
    pub fn context(&self) -> super::Context<'_> {
        super::Context {
            asset: &self.ctx,
            relayer: self.relayer.get().map(String::as_str),
            domain_separator: self.domain_separator.as_ref(),
        }
    }

    pub fn with_relayer(self, address: &str) -> Self {
        let _ = self.relayer.set(address.to_string());
        self
    }

    /// The host's relayer on this chain (the fee payer, on Solana), once keys are loaded.
    pub fn relayer(&self) -> Option<&str> {
        self.relayer.get().map(String::as_str)
    }
}

pub struct Registry {
    pub runtime: Arc<Runtime>,
    /// Loaded adapters by scheme.
    pub adapters: BTreeMap<String, Arc<Adapter>>,
    assets: BTreeMap<(String, String), Arc<AssetAdapter>>,
}

impl Registry {
    /// Load the adapter of every served asset; each asset's adapter reaches
    /// its chain through the client `chains` holds for it.
    #[allow(clippy::result_large_err)] // once, at start-up: the error is the operator's message
    pub fn from_config(cfg: &Config, runtime: Arc<Runtime>, chains: &Chains) -> Result<Registry, StartupError> {
        let dir = cfg.resolve(&cfg.service.adapters_dir);
        let mut adapters: BTreeMap<String, Arc<Adapter>> = BTreeMap::new();
        let mut assets = BTreeMap::new();
        for (chain_id, chain, asset_key, asset) in cfg.served_assets() {
            let adapter = match adapters.get(&asset.scheme) {
                Some(a) => a.clone(),
                None => {
                    let file = dir.join(&cfg.adapters[&asset.scheme]);
                    let loaded = runtime.load(&file).map_err(|cause| StartupError::Load {
                        chain: chain_id.into(),
                        asset: asset_key.into(),
                        scheme: asset.scheme.clone(),
                        cause,
                    })?;
                    tracing::info!(scheme = %asset.scheme, file = %file.display(), name = %loaded.name, version = %loaded.description.version, "adapter ready");
                    let loaded = Arc::new(loaded);
                    adapters.insert(asset.scheme.clone(), loaded.clone());
                    loaded
                }
            };
            let family = wit_family(chain.family);
            if !adapter.serves(family, &asset.scheme) {
                return Err(StartupError::Mismatch {
                    chain: chain_id.into(),
                    asset: asset_key.into(),
                    scheme: asset.scheme.clone(),
                    family: chain.family,
                    file: adapter.file.clone(),
                    name: adapter.name.to_string(),
                    serves: describe_serves(&adapter.description),
                });
            }
            let client = chains.get(chain_id).expect("Chains::from_config holds every chain with a served asset");
            let ctx = asset_context(chain_id, chain, asset_key, asset);
            assets.insert((chain_id.to_string(), asset_key.to_string()), Arc::new(AssetAdapter::new(adapter, ctx, client)));
        }
        Ok(Registry { runtime, adapters, assets })
    }

    /// Some served asset of a chain of this family (for address checks).
    pub fn any_for_family(&self, family: config::Family) -> Option<Arc<AssetAdapter>> {
        let family = wit_family(family);
        self.assets.values().find(|a| a.ctx.family == family).cloned()
    }

    /// Tell every served asset of `family` the host's relayer address there
    /// (0.3.0 adapters receive it in their context). Set once, at start-up,
    /// after the keystore is open; later calls change nothing.
    pub fn set_relayer(&self, family: config::Family, address: &str) {
        let family = wit_family(family);
        for a in self.assets.values().filter(|a| a.ctx.family == family) {
            let _ = a.relayer.set(address.to_string());
        }
    }

    /// The adapter serving (chain, asset), if that pair is served.
    pub fn asset(&self, chain: &str, asset: &str) -> Option<Arc<AssetAdapter>> {
        self.assets.get(&(chain.to_string(), asset.to_string())).cloned()
    }
}

pub fn wit_family(f: config::Family) -> wit::Family {
    convert::family(f)
}

pub fn family_name(f: wit::Family) -> &'static str {
    convert::family_of(f).facts().name
}

pub fn describe_serves(d: &wit::Description) -> String {
    d.serves.iter().map(|s| format!("{}/{}", family_name(s.family), s.scheme)).collect::<Vec<_>>().join(", ")
}

/// The asset parameter through which a Solana adapter learns the chain's
/// `max_priority_fee_microlamports` (an asset's own setting wins).
pub const MAX_PRIORITY_FEE_PARAM: &str = "max-priority-fee-microlamports";

/// The asset parameters through which an EVM adapter learns the chain's
/// `erc6492_factories` (comma-separated) and `multicall3_address` (absent:
/// the canonical one), for smart-wallet payers (WIT 0.5.0).
pub const ERC6492_FACTORIES_PARAM: &str = "erc6492-factories";
pub const MULTICALL3_PARAM: &str = "multicall3";

fn asset_context(chain_id: &str, chain: &config::Chain, key: &str, asset: &config::Asset) -> wit::AssetContext {
    let mut params: Vec<(String, String)> = asset.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    if let Some(cap) = chain.adapter_priority_fee_cap().filter(|_| !asset.params.contains_key(MAX_PRIORITY_FEE_PARAM)) {
        params.push((MAX_PRIORITY_FEE_PARAM.into(), cap.to_string()));
    }
    if chain.family == config::Family::Evm {
        params.push((ERC6492_FACTORIES_PARAM.into(), chain.erc6492_factories.join(",")));
        if let Some(m) = &chain.multicall3_address {
            params.push((MULTICALL3_PARAM.into(), m.clone()));
        }
    }
    wit::AssetContext {
        chain: chain_id.into(),
        network: chain.network().unwrap_or_default(),
        family: wit_family(chain.family),
        chain_id: chain.chain_id,
        asset: key.into(),
        token: asset.token.clone(),
        decimals: asset.decimals,
        eip712_name: asset.eip712_name.clone(),
        eip712_version: asset.eip712_version.clone(),
        domain: domain_kind(asset.domain),
        params,
    }
}

pub fn domain_kind(d: config::DomainKind) -> wit::DomainKind {
    match d {
        config::DomainKind::Standard => wit::DomainKind::Standard,
        config::DomainKind::Salted => wit::DomainKind::Salted,
        config::DomainKind::None => wit::DomainKind::None,
    }
}

/// An adapter call that did not end in an answer the caller can use: it
/// did not come back (trap, budget), or the adapter refused. Typed, so
/// callers branch on it; its text is for the logs.
#[derive(Debug, thiserror::Error)]
pub enum AdapterFailure {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("{function} refused: {error:?}")]
    Refused { function: &'static str, error: Refusal },
}

#[derive(Debug)]
pub enum Refusal {
    Adapter(p::AdapterError),
    Proof(p::ProofError),
}

impl From<p::AdapterError> for Refusal {
    fn from(e: p::AdapterError) -> Self {
        Refusal::Adapter(e)
    }
}

impl From<p::ProofError> for Refusal {
    fn from(e: p::ProofError) -> Self {
        Refusal::Proof(e)
    }
}

/// An adapter's answer where any refusal is a failure of the caller's task.
pub trait Answer<T> {
    fn or_refused(self, function: &'static str) -> Result<T, AdapterFailure>;
}

impl<T, E: Into<Refusal>> Answer<T> for Result<Result<T, E>, CallError> {
    fn or_refused(self, function: &'static str) -> Result<T, AdapterFailure> {
        self?.map_err(|e| AdapterFailure::Refused { function, error: e.into() })
    }
}

/// The adapter interface the engine and the API call: async (each call runs
/// on a blocking thread, in a fresh sandboxed instance), typed. Outer
/// `Result`: the call itself failed (trap, budget). Inner: the adapter's
/// own answer.
/// One call of a guest function, given the instance's exports, its store
/// and the asset it serves.
trait GuestCall<R>:
    Fn(super::Exports<'_>, &mut wasmtime::Store<super::HostState>, super::Context) -> wasmtime::Result<R> + Send + Sync + 'static
{
}

impl<R, F> GuestCall<R> for F where
    F: Fn(super::Exports<'_>, &mut wasmtime::Store<super::HostState>, super::Context) -> wasmtime::Result<R> + Send + Sync + 'static
{
}

/// Did the call's `eth_call` fail only for the chain's gas cap?
fn over_gas_cap(s: &wasmtime::Store<super::HostState>) -> bool {
    s.data().over_gas_cap
}

/// A refusal that followed a read over the chain's gas cap is the cap's
/// (the adapter saw a revert: its words would blame the signature).
fn capped<T>(answer: Result<T, p::ProofError>, over: bool) -> Result<T, p::ProofError> {
    match answer {
        Err(p::ProofError::ChainUnavailable(m)) => Err(p::ProofError::ChainUnavailable(m)),
        Err(_) if over => Err(p::ProofError::GasCapExceeded),
        other => other,
    }
}

/// Adapter functions that read their chain: always on a blocking thread.
const READS_THE_CHAIN: [&str; 2] = ["preflight", "prepare-sender"];

impl AssetAdapter {
    async fn call<R: Send + 'static>(self: &Arc<Self>, function: &'static str, f: impl GuestCall<R>) -> Result<R, CallError> {
        self.call_pure(function, f).await.0
    }

    /// `call`, and whether its answer depended on its inputs alone.
    async fn call_pure<R: Send + 'static>(self: &Arc<Self>, function: &'static str, f: impl GuestCall<R>) -> (Result<R, CallError>, bool) {
        let name = self.adapter.name.clone();
        let Ok(slot) = self.adapter.runtime.slots.clone().acquire_owned().await else {
            return (Err(CallError::Trap(name, "the adapter runtime is shutting down".into())), false);
        };
        let done = |me: &AssetAdapter, answer: &Result<R, CallError>, started: std::time::Instant| {
            let outcome = match answer {
                Ok(_) => "ok",
                Err(CallError::OutOfFuel(_)) => "out_of_fuel",
                Err(CallError::MemoryLimit(..)) => "memory_limit",
                Err(CallError::Trap(..)) => "trap",
            };
            crate::telemetry::adapter_call(&me.adapter.name, function, outcome, started.elapsed());
        };
        // Most calls compute only, in well under a millisecond: they run
        // here, without two thread hand-offs. Those that read the chain go
        // to a blocking thread at once; any other that turns out to (or
        // runs long) is run again there.
        let span = tracing::info_span!("adapter call", adapter = %name, chain = %self.chain.chain, function);
        if !READS_THE_CHAIN.contains(&function) {
            let _in = span.enter();
            let started = std::time::Instant::now();
            let ctx = self.context();
            if let Some((answer, pure)) = self.adapter.call_inline(|g, s| f(g, s, ctx)) {
                done(self, &answer, started);
                return (answer, pure);
            }
        }
        let me = self.clone();
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            // Its chain reads are this span's children.
            let _in = span.enter();
            let started = std::time::Instant::now();
            let ctx = me.context();
            let answer = me.adapter.call(Some(me.chain.clone()), |g, s| f(g, s, ctx));
            done(&me, &answer, started);
            answer
        })
        .await
        .map(|answer| (answer, false))
        .unwrap_or_else(|e| (Err(CallError::Trap(name, format!("the call's thread failed: {e}"))), false))
    }

    pub async fn normalize_address(
        self: &Arc<Self>,
        family: p::Family,
        address: &str,
    ) -> Result<Result<String, p::AdapterError>, CallError> {
        let key = (family as u8, address.to_string());
        if let Some(known) = recall(&self.memo.addresses, &key) {
            return Ok(Ok(known));
        }
        let (family, text) = (convert::family(family), key.1.clone());
        let (r, pure) = self.call_pure("normalize-address", move |g, s, _| g.normalize_address(s, family, &text)).await;
        let answer = convert::answer(r?);
        keep(&self.memo.addresses, key, pure, &answer);
        Ok(answer)
    }

    pub async fn to_base_units(self: &Arc<Self>, amount: &str) -> Result<Result<String, p::AdapterError>, CallError> {
        if let Some(known) = recall(&self.memo.units, &amount.to_string()) {
            return Ok(Ok(known));
        }
        let text = amount.to_string();
        let (r, pure) = self.call_pure("to-base-units", move |g, s, ctx| g.to_base_units(s, &text, ctx.asset.decimals)).await;
        let answer = convert::answer(r?);
        keep(&self.memo.units, amount.to_string(), pure, &answer);
        Ok(answer)
    }

    pub async fn requirements(self: &Arc<Self>, terms: &p::Terms) -> Result<Result<p::PaymentRequirements, p::AdapterError>, CallError> {
        // The relayer is part of the adapter's context (a Solana fee payer, an upto facilitator).
        let key = (self.relayer.get().cloned(), terms.amount.clone(), terms.pay_to.clone(), terms.max_timeout_seconds);
        if let Some(known) = recall(&self.memo.requirements, &key) {
            return Ok(Ok(known));
        }
        let wit_terms = convert::terms(terms);
        let (r, pure) = self.call_pure("requirements", move |g, s, ctx| g.requirements(s, ctx, &wit_terms)).await;
        let answer = convert::answer(r?);
        keep(&self.memo.requirements, key, pure, &answer);
        Ok(answer)
    }

    pub async fn verify(
        self: &Arc<Self>,
        req: &p::PaymentRequirements,
        proof: &str,
    ) -> Result<Result<p::VerifiedPayment, p::ProofError>, CallError> {
        let (req, proof) = (convert::requirements(req), proof.to_string());
        let (r, over) = self.call("verify", move |g, s, ctx| Ok((g.verify(s, ctx, &req, &proof)?, over_gas_cap(s)))).await?;
        Ok(capped(convert::answer(r), over))
    }

    pub async fn preflight(self: &Arc<Self>, payment: &p::VerifiedPayment) -> Result<Result<(), p::ProofError>, CallError> {
        let payment = convert::payment(payment);
        let (r, over) = self.call("preflight", move |g, s, ctx| Ok((g.preflight(s, ctx, &payment)?, over_gas_cap(s)))).await?;
        Ok(capped(convert::answer(r), over))
    }

    pub async fn settle(
        self: &Arc<Self>,
        req: &p::PaymentRequirements,
        proof: &str,
    ) -> Result<Result<Vec<p::SettleStep>, p::ProofError>, CallError> {
        let (req, proof) = (convert::requirements(req), proof.to_string());
        let (r, over) = self.call("settle", move |g, s, ctx| Ok((g.settle(s, ctx, &req, &proof)?, over_gas_cap(s)))).await?;
        Ok(capped(r.map(|steps| steps.into_iter().map(Into::into).collect()), over))
    }

    pub async fn read_receipt(
        self: &Arc<Self>,
        payment: &p::VerifiedPayment,
        receipt: &str,
    ) -> Result<Result<p::ReceiptStatus, p::AdapterError>, CallError> {
        let (payment, receipt) = (convert::payment(payment), receipt.to_string());
        let r = self.call("read-receipt", move |g, s, ctx| g.read_receipt(s, ctx, &payment, &receipt)).await?;
        Ok(convert::answer(r))
    }

    /// The `extra` object of a facilitator answer about `proof` (0.7.0
    /// adapters; `None` from earlier ones): a JSON object, or `None`.
    pub async fn answer_extra(
        self: &Arc<Self>,
        req: &p::PaymentRequirements,
        proof: &str,
        transaction: Option<&str>,
    ) -> Result<Result<Option<serde_json::Map<String, serde_json::Value>>, p::AdapterError>, CallError> {
        let (req, proof, transaction) = (convert::requirements(req), proof.to_string(), transaction.map(str::to_string));
        let r = self.call("answer-extra", move |g, s, ctx| g.answer_extra(s, ctx, &req, &proof, transaction.as_deref())).await?;
        Ok(match r {
            Ok(None) => Ok(None),
            // An object, or the adapter's fault: never text the answer would carry as is.
            // Small: it is a scheme's state, not a channel for bulk.
            Ok(Some(text)) if text.len() > 16 * 1024 => Err(p::AdapterError::Malformed("answer-extra is over 16 KiB".into())),
            Ok(Some(text)) => match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(serde_json::Value::Object(m)) => Ok(Some(m)),
                _ => Err(p::AdapterError::Malformed("answer-extra is not a JSON object".into())),
            },
            Err(e) => Err(e.into()),
        })
    }

    pub async fn authorize(self: &Arc<Self>, transfer: &p::Transfer) -> Result<Result<p::SigningRequest, p::AdapterError>, CallError> {
        let transfer = convert::transfer(transfer);
        let r = self.call("authorize", move |g, s, ctx| g.authorize(s, ctx, &transfer)).await?;
        Ok(r.map_err(Into::into))
    }

    pub async fn prepare_sender(
        self: &Arc<Self>,
        sender: &str,
        amount: &str,
    ) -> Result<Result<Vec<p::SettleStep>, p::AdapterError>, CallError> {
        let (sender, amount) = (sender.to_string(), amount.to_string());
        let r = self.call("prepare-sender", move |g, s, ctx| g.prepare_sender(s, ctx, &sender, &amount)).await?;
        Ok(r.map(|steps| steps.into_iter().map(Into::into).collect()).map_err(Into::into))
    }

    pub async fn assemble(
        self: &Arc<Self>,
        req: &p::PaymentRequirements,
        transfer: &p::Transfer,
        request: &p::SigningRequest,
        signature: Vec<u8>,
    ) -> Result<Result<String, p::AdapterError>, CallError> {
        let (req, transfer, request) = (convert::requirements(req), convert::transfer(transfer), request.clone());
        let r = self.call("assemble", move |g, s, ctx| g.assemble(s, ctx, &req, &transfer, &request, &signature)).await?;
        Ok(convert::answer(r))
    }
}
