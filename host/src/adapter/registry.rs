//! Which adapter serves which (chain, asset), resolved from chains.toml at
//! start-up. A served pair whose adapter is missing or does not serve its
//! scheme stops start-up with a message naming the file and the problem.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::bindings::types as wit;
use super::{Adapter, CallError, LoadError, Runtime};
use crate::chain::ChainClient;
use crate::config::{self, Config};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("chains.{chain}.assets.{asset} (scheme `{scheme}`): {source}")]
    Load { chain: String, asset: String, scheme: String, source: LoadError },
    #[error("chains.{chain}.assets.{asset}: adapter file {file} (`{name}`) does not serve scheme `{scheme}` for {family:?} chains; it serves [{serves}]")]
    Mismatch { chain: String, asset: String, scheme: String, family: config::Family, file: PathBuf, name: String, serves: String },
}

/// An adapter bound to one (chain, asset): its context and its chain.
pub struct AssetAdapter {
    pub adapter: Arc<Adapter>,
    pub ctx: wit::AssetContext,
    pub chain: Arc<ChainClient>,
}

pub struct Registry {
    pub runtime: Arc<Runtime>,
    /// Loaded adapters by scheme.
    pub adapters: BTreeMap<String, Arc<Adapter>>,
    assets: BTreeMap<(String, String), Arc<AssetAdapter>>,
    chains: BTreeMap<String, Arc<ChainClient>>,
}

impl Registry {
    pub fn from_config(cfg: &Config, runtime: Arc<Runtime>) -> Result<Registry, StartupError> {
        let dir = cfg.resolve(&cfg.service.adapters_dir);
        let mut adapters: BTreeMap<String, Arc<Adapter>> = BTreeMap::new();
        let mut chains: BTreeMap<String, Arc<ChainClient>> = BTreeMap::new();
        let mut assets = BTreeMap::new();
        for (chain_id, chain, asset_key, asset) in cfg.served_assets() {
            let adapter = match adapters.get(&asset.scheme) {
                Some(a) => a.clone(),
                None => {
                    let file = dir.join(&cfg.adapters[&asset.scheme]);
                    let loaded = runtime.load(&file).map_err(|source| StartupError::Load {
                        chain: chain_id.into(),
                        asset: asset_key.into(),
                        scheme: asset.scheme.clone(),
                        source,
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
            let client = chains
                .entry(chain_id.to_string())
                .or_insert_with(|| Arc::new(ChainClient::new(chain_id, chain.family, chain.rpc_urls.clone())))
                .clone();
            let ctx = asset_context(chain_id, chain, asset_key, asset);
            assets.insert(
                (chain_id.to_string(), asset_key.to_string()),
                Arc::new(AssetAdapter { adapter, ctx, chain: client }),
            );
        }
        Ok(Registry { runtime, adapters, assets, chains })
    }

    /// The transport of a chain with a served asset.
    pub fn chain(&self, chain: &str) -> Option<Arc<ChainClient>> {
        self.chains.get(chain).cloned()
    }

    /// Some served asset of a chain of this family (for address checks).
    pub fn any_for_family(&self, family: wit::Family) -> Option<Arc<AssetAdapter>> {
        self.assets.values().find(|a| a.ctx.family == family).cloned()
    }

    /// The adapter serving (chain, asset), if that pair is served.
    pub fn asset(&self, chain: &str, asset: &str) -> Option<Arc<AssetAdapter>> {
        self.assets.get(&(chain.to_string(), asset.to_string())).cloned()
    }
}

pub fn wit_family(f: config::Family) -> wit::Family {
    match f {
        config::Family::Evm => wit::Family::Evm,
        config::Family::Solana => wit::Family::Solana,
        config::Family::Tron => wit::Family::Tron,
    }
}

pub fn family_name(f: wit::Family) -> &'static str {
    match f {
        wit::Family::Evm => "evm",
        wit::Family::Solana => "solana",
        wit::Family::Tron => "tron",
    }
}

pub fn describe_serves(d: &wit::Description) -> String {
    d.serves.iter().map(|s| format!("{}/{}", family_name(s.family), s.scheme)).collect::<Vec<_>>().join(", ")
}

fn asset_context(chain_id: &str, chain: &config::Chain, key: &str, asset: &config::Asset) -> wit::AssetContext {
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
        domain: match asset.domain {
            config::DomainKind::Standard => wit::DomainKind::Standard,
            config::DomainKind::Salted => wit::DomainKind::Salted,
            config::DomainKind::None => wit::DomainKind::None,
        },
        params: asset.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    }
}

/// Typed calls. Outer `Result`: the call itself failed (trap, budget).
/// Inner: the adapter's own answer.
impl AssetAdapter {
    fn call<R>(
        &self,
        function: &'static str,
        f: impl FnOnce(&super::bindings::scheme::Guest, &mut wasmtime::Store<super::HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let started = std::time::Instant::now();
        let answer = self.adapter.call(Some(self.chain.clone()), f);
        let outcome = match &answer {
            Ok(_) => "ok",
            Err(CallError::OutOfFuel(_)) => "out_of_fuel",
            Err(CallError::MemoryLimit(..)) => "memory_limit",
            Err(CallError::Trap(..)) => "trap",
        };
        crate::telemetry::adapter_call(&self.adapter.name, function, outcome, started.elapsed());
        answer
    }

    pub fn normalize_address(&self, family: wit::Family, address: &str) -> Result<Result<String, wit::AdapterError>, CallError> {
        self.call("normalize-address", |g, s| g.call_normalize_address(s, family, address))
    }

    pub fn to_base_units(&self, amount: &str) -> Result<Result<String, wit::AdapterError>, CallError> {
        self.call("to-base-units", |g, s| g.call_to_base_units(s, amount, self.ctx.decimals))
    }

    pub fn requirements(&self, terms: &wit::Terms) -> Result<Result<wit::PaymentRequirements, wit::AdapterError>, CallError> {
        self.call("requirements", |g, s| g.call_requirements(s, &self.ctx, terms))
    }

    pub fn verify(&self, req: &wit::PaymentRequirements, proof: &str) -> Result<Result<wit::VerifiedPayment, wit::ProofError>, CallError> {
        self.call("verify", |g, s| g.call_verify(s, &self.ctx, req, proof))
    }

    pub fn preflight(&self, payment: &wit::VerifiedPayment) -> Result<Result<(), wit::ProofError>, CallError> {
        self.call("preflight", |g, s| g.call_preflight(s, &self.ctx, payment))
    }

    pub fn settle(&self, req: &wit::PaymentRequirements, proof: &str) -> Result<Result<Vec<wit::SettleStep>, wit::ProofError>, CallError> {
        self.call("settle", |g, s| g.call_settle(s, &self.ctx, req, proof))
    }

    pub fn read_receipt(&self, payment: &wit::VerifiedPayment, receipt: &str) -> Result<Result<wit::ReceiptStatus, wit::AdapterError>, CallError> {
        self.call("read-receipt", |g, s| g.call_read_receipt(s, &self.ctx, payment, receipt))
    }

    pub fn authorize(&self, transfer: &wit::Transfer) -> Result<Result<wit::SigningRequest, wit::AdapterError>, CallError> {
        self.call("authorize", |g, s| g.call_authorize(s, &self.ctx, transfer))
    }

    pub fn prepare_sender(&self, sender: &str, amount: &str) -> Result<Result<Vec<wit::EvmCall>, wit::AdapterError>, CallError> {
        self.call("prepare-sender", |g, s| g.call_prepare_sender(s, &self.ctx, sender, amount))
    }

    pub fn assemble(&self, req: &wit::PaymentRequirements, transfer: &wit::Transfer, signature: &[u8]) -> Result<Result<String, wit::AdapterError>, CallError> {
        self.call("assemble", |g, s| g.call_assemble(s, &self.ctx, req, transfer, signature))
    }
}
