//! `chains.toml`: chains, assets, schemes, adapters, flags and fees.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

mod chains;
mod dashboard;
mod facilitator;
mod service;
mod swap;
mod validate;

pub use chains::*;
pub use dashboard::*;
pub use facilitator::*;
pub use service::*;
pub use swap::*;

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
    /// OpenTelemetry traces.
    #[serde(default)]
    pub telemetry: Telemetry,
    /// Keys in a hardware module.
    #[serde(default)]
    pub hsm: Hsm,
    /// Directory of the config file; relative paths resolve against it.
    #[serde(skip)]
    pub base_dir: PathBuf,
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
            for rpc in chain.rpc_urls.iter_mut() {
                rpc.url = expand_env(&rpc.url)
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
