//! Create a payment intent, below HTTP: every rule of the request in the
//! spec's order, the fee quote, the payer adapter's requirements, and one
//! insert. The API turns the request body into `CreateRequest` and the
//! answer (or `CreateError`) into HTTP.

use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::json;

use crate::adapter::CallError;
use crate::config::{Availability, Role};
use crate::intent::fees::{self, AmountError};
use crate::intent::{self, AmountMode, Intent, Status};
use crate::payment::{AdapterError, Terms};
use crate::state::AppState;
use crate::store::agents::Agent;

/// Why a create was refused; `api::error` maps each to its status.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// 400 with the spec's sentence.
    #[error("{0}")]
    Invalid(String),
    /// 503: the chain is configured but its node has not answered yet.
    #[error("{0} is temporarily unavailable")]
    ChainWithheld(String),
    /// 503: the asset's chain disagrees with chains.toml about the token
    /// (decimals, EIP-712 domain, contracts); withheld until the operator
    /// corrects one of them.
    #[error("{asset} on {chain} is temporarily unavailable")]
    AssetWithheld { chain: String, asset: String },
    /// The adapter refused an input (an address, an amount).
    #[error("the adapter refused an input: {0:?}")]
    Adapter(AdapterError),
    /// The adapter did not answer: the service's failure.
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Detail for the log; the public sentence is fixed.
    #[error("{0}")]
    Internal(String),
    /// 403: the compliance screen declined the recipient.
    #[error("payment declined")]
    Declined,
}

impl From<AdapterError> for CreateError {
    fn from(e: AdapterError) -> Self {
        CreateError::Adapter(e)
    }
}

/// A testnet paired with a mainnet (either way round).
pub const NETWORKS_DIFFER: &str = "payer_chain and target_chain must both be mainnets or both testnets";

fn bad(m: impl Into<String>) -> CreateError {
    CreateError::Invalid(m.into())
}

/// Assets the spec knows. Anything else is `invalid payer_asset`.
const ASSETS: [&str; 3] = ["usdc", "usdt", "usdt0"];

/// A payment intent to create. Exactly one of `email`/`recipient` and one of
/// `amount`/`to_amount`; amounts are decimal strings in whole tokens.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    /// A registered recipient's email, instead of `recipient`.
    pub email: Option<String>,
    /// The merchant's wallet on the target chain.
    pub recipient: Option<String>,
    /// What the merchant receives (exact out).
    #[schema(example = "10")]
    pub amount: Option<String>,
    /// What the payer sends (exact in).
    pub to_amount: Option<String>,
    #[schema(example = "base")]
    pub payer_chain: Option<String>,
    /// Defaults to the service's default target chain.
    pub target_chain: Option<String>,
    /// `usdc` (default), `usdt` or `usdt0`.
    pub payer_asset: Option<String>,
    pub target_asset: Option<String>,
    /// The payer's wallet, screened before payment when given.
    pub payer_address: Option<String>,
}

/// Every rule of the create request, then the quote, the requirements, and
/// one insert.
pub async fn create(s: &AppState, agent: Option<&Agent>, req: CreateRequest) -> Result<Intent, CreateError> {
    let cfg = &s.config;
    let fields = [
        &req.email,
        &req.recipient,
        &req.amount,
        &req.to_amount,
        &req.payer_chain,
        &req.target_chain,
        &req.payer_asset,
        &req.target_asset,
        &req.payer_address,
    ];
    if fields.iter().any(|f| f.as_deref().is_some_and(|v| v.chars().any(char::is_control))) {
        return Err(bad("fields must not contain control characters"));
    }
    // Surrounding whitespace is ignored; an empty string is an absent field.
    let given = |o: &Option<String>| o.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);

    let (email, recipient) = match (given(&req.email), given(&req.recipient)) {
        (Some(_), Some(_)) => return Err(bad("cannot provide both email and recipient")),
        (None, None) => return Err(bad("either email or recipient is required")),
        pair => pair,
    };
    let (mode, amount_text) = match (given(&req.amount), given(&req.to_amount)) {
        (Some(_), Some(_)) => return Err(bad("cannot provide both amount and to_amount")),
        (None, None) => return Err(bad("either amount or to_amount is required")),
        (Some(a), None) => (AmountMode::ExactOut, a),
        (None, Some(a)) => (AmountMode::ExactIn, a),
    };
    let amount = fees::parse_amount(&amount_text).map_err(|e| match e {
        AmountError::Range => bad("amount out of range: must be between 0.02 and 1000000"),
        _ => bad("invalid amount: must be a positive number with up to 6 decimal places"),
    })?;

    let chain = |name: String| crate::config::chain_named(&name).to_string();
    let payer_chain = given(&req.payer_chain).map(chain).ok_or_else(|| bad("payer_chain is required"))?;
    let target_chain = given(&req.target_chain).map(chain).unwrap_or_else(|| cfg.service.default_target_chain.clone());
    // A testnet never pays a mainnet, nor the other way (before anything
    // else is asked of either chain).
    if let (Some(p), Some(t)) = (cfg.chains.get(&payer_chain), cfg.chains.get(&target_chain)) {
        if p.kind() != t.kind() {
            return Err(bad(NETWORKS_DIFFER));
        }
    }
    check_chain(s, &payer_chain, Role::Payer)?;
    check_chain(s, &target_chain, Role::Target)?;

    let payer_asset = given(&req.payer_asset).unwrap_or_else(|| "usdc".into()).to_lowercase();
    let payer = served_asset(s, &payer_chain, &payer_asset, "payer_asset")?;
    let target_asset = given(&req.target_asset).unwrap_or_else(|| "usdc".into()).to_lowercase();
    let target = served_asset(s, &target_chain, &target_asset, "target_asset")?;

    let target_family = cfg.chains[&target_chain].family;
    // A stranger's create by email learns nothing of the email: neither its
    // wallet nor whether one is registered. Everything that depends on the
    // wallet is decided later: the wallet is looked up again when a proof is
    // submitted, screened with the payer before money moves, and the
    // account fee is the same whatever the wallet holds.
    let hidden = agent.is_none() && email.is_some();
    let merchant = match (recipient, email) {
        (Some(addr), _) => target.normalize_address(target_family, &addr).await?.map_err(|_| bad("invalid recipient address format"))?,
        (None, Some(email)) => {
            if !email.contains('@') || email.len() > 254 {
                return Err(bad("invalid email"));
            }
            match crate::store::agents::recipient(&s.db, &email, &target_chain).await? {
                Some(wallet) => wallet,
                None if hidden => String::new(),
                None => return Err(bad(format!("no wallet on {target_chain} is registered for this email"))),
            }
        }
        (None, None) => unreachable!("checked above"),
    };
    let account_fee = if hidden {
        unknown_recipient_account_fee(s, &target_chain)
    } else {
        refuse_unreceivable(s, &target_chain, &target_asset, &merchant).await?;
        if s.sanctions.is_listed(&merchant) {
            tracing::warn!(recipient = %merchant, "the recipient is on a sanctions list; declined");
            crate::telemetry::sanctions_hit("create");
            return Err(CreateError::Declined);
        }
        recipient_account_fee(s, &target_chain, &target_asset, &merchant).await?
    };

    // The screen at create is advisory (SPEC, `payer_address`): a hit is
    // recorded for operators and the intent is created; settlement screens
    // the address that actually pays, and that one ends it BLOCKED.
    let mut payer_listed = false;
    let payer_address = match given(&req.payer_address) {
        None => None,
        Some(addr) => {
            let family = cfg.chains[&payer_chain].family;
            let addr = payer.normalize_address(family, &addr).await?.map_err(|_| bad("invalid payer_address"))?;
            if s.sanctions.is_listed(&addr) {
                tracing::warn!(payer = %addr, "payer_address is on a sanctions list; recorded, settlement screens the payer again");
                crate::telemetry::sanctions_hit("create");
                payer_listed = true;
            }
            Some(addr)
        }
    };

    // The configured treasury, or else the service's own collection wallet.
    let collection = match cfg.chains[&payer_chain].collection_address.clone() {
        Some(a) => a,
        None => s
            .keys
            .address(&crate::family::keys::Role::Collection.key_name(cfg.chains[&payer_chain].family))
            .await
            .map_err(|e| CreateError::Internal(format!("collection wallet: {e:#}")))?,
    };

    let fee_of = |c: &str| crate::decimal::parse(&cfg.chains[c].fee).unwrap_or(Decimal::ZERO);
    let pct = crate::decimal::parse(&cfg.fees.platform_fee_percentage).unwrap_or(Decimal::ZERO);
    let target_fee = fee_of(&target_chain) + account_fee;
    let q = fees::quote(mode, amount, fee_of(&payer_chain), target_fee, pct).map_err(|_| {
        bad(format!(
            "amount does not cover the fees ({} on {payer_chain} and {target_chain})",
            fees::show(fee_of(&payer_chain) + target_fee)
        ))
    })?;

    let now = crate::clock::now_ms();
    let expires_at = now + intent::LIFETIME_MS;
    let sending = fees::show(q.sending);
    let units = payer.to_base_units(&sending).await??;
    let terms = Terms { amount: units, pay_to: collection, max_timeout_seconds: (intent::LIFETIME_MS / 1000) as u64 };
    let requirements = payer.requirements(&terms).await??;

    let mut breakdown = json!({
        "source_chain": payer_chain,
        "source_chain_fee": fees::show(q.source_fee),
        "target_chain": target_chain,
        "target_chain_fee": fees::show(q.target_fee),
        "platform_fee": fees::show(q.platform_fee),
        "platform_fee_percentage": fees::show(q.platform_pct),
        "total_fee": fees::show(q.total_fee),
    });
    if !account_fee.is_zero() {
        // Part of target_chain_fee: the payout opens the recipient's account.
        breakdown[fees::RECIPIENT_ACCOUNT_FEE] = json!(fees::show(account_fee));
    }
    let record = Intent {
        id: intent::new_id(),
        agent_id: agent.map(|a| a.id.clone()),
        status: Status::AwaitingPayment,
        payer_chain,
        target_chain,
        payer_asset,
        target_asset,
        merchant_recipient: merchant,
        recipient_email: given(&req.email).map(|e| e.to_lowercase()),
        payer_address,
        amount_mode: mode.as_str().into(),
        sending_amount: fees::show(q.sending),
        receiving_amount: fees::show(q.receiving),
        estimated_fee: fees::show(q.total_fee),
        fee_breakdown: breakdown.to_string(),
        payment_requirements: requirements,
        payer_listed,
        settle_proof: None,
        replay_key: None,
        payer: None,
        source_tx_hash: None,
        source_settled_at: None,
        target_tx_hash: None,
        target_settle_proof: None,
        target_settled_at: None,
        error_message: None,
        created_at: now,
        expires_at,
        updated_at: now,
        error_code: None,
        trace: crate::traces::current(),
    };
    s.inserts.write(&s.db, record.clone()).await?;
    Ok(record)
}

/// Addresses that cannot receive a payout: the zero address (real tokens
/// revert, leaving the payer's money collected and the intent stuck), the
/// token contract itself, and the service's own wallets.
async fn refuse_unreceivable(s: &AppState, chain: &str, asset: &str, recipient: &str) -> Result<(), CreateError> {
    let c = &s.config.chains[chain];
    let facts = c.family.facts();
    let same = |a: &str| facts.same_address(a, recipient);
    if facts.is_zero(recipient) {
        return Err(bad("invalid recipient address format: the zero address cannot receive payments"));
    }
    if c.assets.get(asset).is_some_and(|a| !a.token.is_empty() && same(&a.token)) {
        return Err(bad("invalid recipient address format: the token contract cannot receive payments"));
    }
    let mut own = vec![];
    for role in crate::family::keys::SERVICE_ROLES {
        own.push(s.keys.address(&role.key_name(c.family)).await.map_err(|e| CreateError::Internal(format!("service wallet: {e:#}")))?);
    }
    own.extend(c.collection_address.clone());
    if own.iter().any(|a| same(a)) {
        return Err(bad("invalid recipient address format: a wallet of this service cannot be a recipient"));
    }
    Ok(())
}

/// The account fee of a recipient the answer must not tell anything about:
/// the chain's `recipient_account_fee` wherever a payout may have to open
/// the recipient's token account (and may open one), whatever it holds.
fn unknown_recipient_account_fee(s: &AppState, chain: &str) -> Decimal {
    let c = &s.config.chains[chain];
    let opens = c.family.facts().opens_accounts;
    if opens && c.create_recipient_accounts {
        crate::decimal::parse(&c.recipient_account_fee).unwrap_or(Decimal::ZERO)
    } else {
        Decimal::ZERO
    }
}

/// What the payout must pay to open the recipient's token account, as it
/// stands now: nothing where the recipient can receive already (or the
/// family has no such accounts); the chain's `recipient_account_fee` where
/// the payout opens one; refused where the operator turned that off.
async fn recipient_account_fee(s: &AppState, chain: &str, asset: &str, recipient: &str) -> Result<Decimal, CreateError> {
    let c = &s.config.chains[chain];
    let Some(driver) = s.drivers.for_chain(chain) else { return Ok(Decimal::ZERO) };
    let ready = driver.can_receive(chain, &c.assets[asset].token, recipient).await.map_err(|e| match e {
        crate::family::SendError::Unavailable(m) => {
            tracing::warn!(chain, detail = %m, "could not read the recipient's token account");
            CreateError::ChainWithheld(chain.to_string())
        }
        other => CreateError::Internal(format!("recipient account: {other}")),
    })?;
    if ready {
        return Ok(Decimal::ZERO);
    }
    if !c.create_recipient_accounts {
        return Err(bad(format!("the recipient has no {asset} token account on {chain}; it must open one before it can be paid")));
    }
    Ok(crate::decimal::parse(&c.recipient_account_fee).unwrap_or(Decimal::ZERO))
}

/// Is `chain` exposed in `role`? TRON chains behind an off flag get their own message.
fn check_chain(s: &AppState, chain: &str, role: Role) -> Result<(), CreateError> {
    let cfg = &s.config;
    if cfg.chains_with_role(role).iter().any(|c| c == chain) {
        if !s.watch.exposed(chain) {
            return Err(CreateError::ChainWithheld(chain.to_string()));
        }
        return Ok(());
    }
    if let Some(c) = cfg.chains.get(chain) {
        // Configured but turned off by its deployment flag (`TRON_ENABLED`).
        if let Some(gate) = c.gate.as_deref().filter(|g| c.enabled && c.roles.contains(&role) && !cfg.flag(g)) {
            return Err(bad(format!("{} is not enabled on this deployment", gate.trim_end_matches("_ENABLED"))));
        }
    }
    Err(match role {
        Role::Payer => bad("invalid payer_chain"),
        Role::Target => bad(format!("invalid target_chain: accepted target chains are {}", cfg.chains_with_role(Role::Target).join(", "))),
    })
}

/// The adapter serving (chain, asset), or the spec's 400 for why not.
fn served_asset(s: &AppState, chain: &str, asset: &str, field: &str) -> Result<std::sync::Arc<crate::adapter::AssetAdapter>, CreateError> {
    if !ASSETS.contains(&asset) {
        return Err(bad(format!("invalid {field}")));
    }
    match s.config.chains[chain].assets.get(asset).map(|a| s.config.availability(a)) {
        Some(Availability::Available) => {}
        Some(Availability::GatedOff) => return Err(bad(format!("invalid {field}"))),
        Some(Availability::Unwired) | None => return Err(bad(format!("{field} not configured on chain"))),
    }
    if s.watch.asset_withheld(chain, asset) {
        return Err(CreateError::AssetWithheld { chain: chain.into(), asset: asset.into() });
    }
    s.registry.asset(chain, asset).ok_or_else(|| CreateError::Internal(format!("{chain}/{asset} is served but has no adapter")))
}
