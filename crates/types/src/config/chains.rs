//! `[chains.*]` and their assets: families, kinds, schemes, states, and
//! the aliases an asset may be.

use super::*;

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
    /// The chain's providers: a URL, or `{ url, max_requests_per_second }`
    /// for one that throttles. Used as a pool (the transport's `pool`).
    #[serde(default)]
    pub rpc_urls: Vec<RpcUrl>,
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

/// One provider of a chain: its URL (`${VAR}` expanded at load) and the
/// most requests it may be sent in any one second (none: no limit).
/// Written as a URL string, or as `{ url = "…", max_requests_per_second = N }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcUrl {
    pub url: String,
    pub max_requests_per_second: Option<std::num::NonZeroU32>,
}

impl<'de> Deserialize<'de> for RpcUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RpcUrl, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            url: String,
            max_requests_per_second: Option<std::num::NonZeroU32>,
        }
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = RpcUrl;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a URL, or a table { url, max_requests_per_second }")
            }
            fn visit_str<E: serde::de::Error>(self, url: &str) -> Result<RpcUrl, E> {
                Ok(RpcUrl::from(url))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<RpcUrl, M::Error> {
                let t = Table::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RpcUrl { url: t.url, max_requests_per_second: t.max_requests_per_second })
            }
        }
        d.deserialize_any(Entry)
    }
}

impl From<&str> for RpcUrl {
    fn from(url: &str) -> RpcUrl {
        RpcUrl { url: url.to_string(), max_requests_per_second: None }
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
    /// Payment channels: one deposit, then vouchers per request, claimed
    /// and swept to the receiver in batches (`batch-settlement`).
    #[serde(rename = "batch-settlement")]
    BatchSettlement,
}

impl X402Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            X402Scheme::Exact => "exact",
            X402Scheme::Upto => "upto",
            X402Scheme::BatchSettlement => "batch-settlement",
        }
    }

    pub fn parse(name: &str) -> Option<X402Scheme> {
        [X402Scheme::Exact, X402Scheme::Upto, X402Scheme::BatchSettlement].into_iter().find(|s| s.as_str() == name)
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

impl Asset {
    /// What a settlement's proof is read as, for the books: the x402 scheme
    /// where it decides (batch-settlement's steps), else the adapter's name
    /// (`eip3009`, `permit2`, ...).
    pub fn proof_kind(&self) -> &str {
        match self.x402_scheme {
            X402Scheme::BatchSettlement => X402Scheme::BatchSettlement.as_str(),
            _ => &self.scheme,
        }
    }
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
pub(super) fn expand_aliases(raw: &mut toml::Table) -> Result<(), ConfigError> {
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
