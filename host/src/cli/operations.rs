//! What an operator runs against a live deployment: `config check`,
//! `wallets`, `intent`, `facilitator`.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use super::store::{now_ms, open, StoreArgs};
use crate::adapter::system_clock;
use crate::output::{emit, Output};

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Exit 0 when the config is usable; otherwise say what is wrong.
    Check {
        #[arg(long, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
        config: PathBuf,
    },
}

#[derive(Subcommand)]
pub enum IntentCommand {
    /// List intents, oldest first (e.g. `--status PARTIAL_SETTLEMENT`).
    List {
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Re-queue a PARTIAL_SETTLEMENT intent for its payout, or make a
    /// waiting one due now. Safe to run twice.
    Retry { id: String },
    /// Give up on a payout: SOURCE_SETTLED or TARGET_SETTLING →
    /// PARTIAL_SETTLEMENT (needs reconciliation). A stored payout that
    /// lands anyway is still recorded as TARGET_SETTLED.
    Partial { id: String },
}

#[derive(Subcommand)]
pub enum FacilitatorCommand {
    /// Create a key for a resource server (`Authorization: Bearer srfk_…`);
    /// the secret is printed once.
    CreateKey {
        name: String,
        /// A receiver this key speaks for: an EVM address (on every EVM
        /// network) or `eip155:CHAIN_ID:ADDRESS` (on that network only).
        /// With `[facilitator] receiver_authorizer`, the facilitator signs
        /// the `batch-settlement` claims and refunds of that receiver's
        /// channels when this key asks. Repeat for several.
        #[arg(long = "receiver")]
        receivers: Vec<String>,
    },
    /// Revoke a key by name.
    RevokeKey { name: String },
    /// A key's webhook endpoints: its settlements' events
    /// (`x402.settlement.pending`, `.succeeded`, `.failed`).
    Webhook {
        #[command(subcommand)]
        command: WebhookCommand,
    },
    /// Look settlements up by id, transaction or payer (newest first).
    Settlement {
        #[arg(long, conflicts_with_all = ["transaction", "payer"])]
        id: Option<String>,
        #[arg(long, conflicts_with = "payer")]
        transaction: Option<String>,
        #[arg(long)]
        payer: Option<String>,
    },
}

#[derive(Subcommand)]
pub enum WebhookCommand {
    /// Add an endpoint for the key's settlements; its signing secret is printed once.
    Add {
        /// The facilitator key's name.
        key: String,
        /// `https://…` (plain `http` only to loopback where the operator allows it).
        url: String,
        /// Event types, comma-separated (default: all of the key's).
        #[arg(long, value_delimiter = ',')]
        events: Option<Vec<String>>,
    },
    /// The key's endpoints.
    List { key: String },
    /// Remove one of the key's endpoints and its deliveries.
    Remove { key: String, id: String },
}

pub async fn wallets(out: Output, store: StoreArgs) -> anyhow::Result<()> {
    let state = crate::server::build_state(&store.config, store.database()?, system_clock()).await?;
    let mut rows = Vec::new();
    for (name, address) in state.keys.list().await? {
        let family = crate::family::keys::family_of(&name);
        let mut chains = serde_json::Map::new();
        for chain in state.config.exposed_chains().into_iter().filter(|c| state.config.chains[c].family == family) {
            let shown = match crate::wallets::on_chain(&state.drivers, &chain, &address).await {
                Ok(balances) => serde_json::Value::Object(
                    balances.iter().map(|b| (b.asset.clone(), crate::wallets::display(b.raw, b.decimals).into())).collect(),
                ),
                Err(e) => {
                    tracing::warn!(chain = %chain, error = %e, "balances unavailable");
                    json!({ "error": "chain unavailable" })
                }
            };
            chains.insert(chain, shown);
        }
        rows.push(json!({ "name": name, "address": address, "balances": chains }));
    }
    emit(out, &json!({ "wallets": rows }));
    Ok(())
}

pub async fn config_check(out: Output, path: &std::path::Path) -> anyhow::Result<()> {
    use crate::watch::ChainProbe;
    let cfg = crate::server::load_config(path)?;
    let runtime = crate::server::runtime_for(&cfg, system_clock())?;
    let chains = crate::family::chain::Chains::from_config(&cfg);
    let registry = crate::adapter::Registry::from_config(&cfg, runtime, &chains)?;
    let probes = crate::watch::probe_chains(&cfg, &chains).await;
    let chains: serde_json::Map<String, serde_json::Value> = probes.iter().map(|(c, p)| (c.clone(), p.as_str().into())).collect();
    emit(out, &json!({ "config": path.display().to_string(), "adapters": registry.adapters.len(), "chains": chains }));
    let wrong: Vec<String> = probes
        .iter()
        .filter_map(|(c, p)| match p {
            ChainProbe::WrongChainId { node, config } => {
                Some(format!("chain `{c}`: its RPC answers chain id {node}, but the config says {config}"))
            }
            ChainProbe::Unreachable => Some(format!("chain `{c}`: its RPC does not answer")),
            ChainProbe::Ok => None,
        })
        .collect();
    anyhow::ensure!(wrong.is_empty(), "{}", wrong.join("; "));
    Ok(())
}

pub async fn intent(out: Output, cmd: IntentCommand, store: StoreArgs) -> anyhow::Result<()> {
    use crate::intent::Status;
    use crate::store::transition::intents::{self as transition, Retry};
    let (_, db) = open(&store).await?;
    let answer = match cmd {
        IntentCommand::List { status, limit } => {
            let status =
                status.map(|s| Status::parse(&s.to_uppercase()).ok_or_else(|| anyhow::anyhow!("unknown status `{s}`"))).transpose()?;
            let ids = match status {
                Some(s) => transition::ids_with_status(&db, s, limit).await?,
                None => {
                    let mut all = Vec::new();
                    for s in Status::ALL {
                        all.extend(transition::ids_with_status(&db, s, limit).await?);
                    }
                    all
                }
            };
            let mut rows = Vec::new();
            for id in ids.into_iter().take(limit.max(0) as usize) {
                if let Some(i) = crate::store::intents::get(&db, &id).await? {
                    rows.push(json!({
                        "intent_id": i.id, "status": i.status.as_str(), "payer_chain": i.payer_chain,
                        "target_chain": i.target_chain, "sending_amount": i.sending_amount,
                        "receiving_amount": i.receiving_amount, "merchant_recipient": i.merchant_recipient,
                        "error_code": i.error_code.map(|c| c.code()), "error_message": i.error_message,
                        "payer_listed": i.payer_listed,
                        "source_tx_hash": i.source_tx_hash, "target_tx_hash": i.target_tx_hash,
                        "updated_at": crate::clock::rfc3339(i.updated_at),
                    }));
                }
            }
            serde_json::Value::Array(rows)
        }
        IntentCommand::Retry { id } => {
            let said = match transition::retry(&db, &id, now_ms()).await? {
                Retry::Reopened => "re-opened: PARTIAL_SETTLEMENT -> SOURCE_SETTLED, payout queued".to_string(),
                Retry::Requeued => "queued: due now".to_string(),
                Retry::NotFound => anyhow::bail!("no intent {id}"),
                Retry::NotRetriable(s) => anyhow::bail!("intent {id} is {s}: only PARTIAL_SETTLEMENT or settling intents can be retried"),
            };
            json!({ "intent_id": id, "result": said })
        }
        IntentCommand::Partial { id } => {
            let why = crate::failure::Reason::from(crate::failure::Failure::NeedsReconciliation);
            anyhow::ensure!(transition::give_up(&db, &id, &why, now_ms()).await?, "intent {id} is not waiting for its payout");
            json!({ "intent_id": id, "result": "PARTIAL_SETTLEMENT" })
        }
    };
    emit(out, &answer);
    Ok(())
}

/// `facilitator webhook …`: the same operations as `/v2/webhook_endpoints`,
/// owned by a facilitator key.
async fn webhook(cfg: &crate::config::Config, db: &crate::db::Db, cmd: WebhookCommand) -> anyhow::Result<serde_json::Value> {
    use crate::ops::webhooks::{self as op, Owner, Parts};
    let pepper = crate::auth::Pepper::load(&cfg.resolve(&cfg.service.pepper_file))?;
    let sealer = crate::webhooks::sign::Sealer::new(&pepper);
    let parts = || Parts { config: cfg, db, sealer: &sealer };
    let view = |e: &crate::store::webhooks::Endpoint| {
        json!({ "id": e.id, "url": e.url, "events": e.events, "status": e.status, "disabled_reason": e.disabled_reason,
                "created_at": crate::clock::rfc3339(e.created_at) })
    };
    let owned = |key: &str| Owner::facilitator_key(key);
    Ok(match cmd {
        WebhookCommand::Add { key, url, events } => {
            anyhow::ensure!(crate::store::facilitator::key_is_live(db, &key).await?, "no live facilitator key `{key}`");
            let made = op::create(parts(), &owned(&key), &url, events).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut v = view(&made.endpoint);
            // Printed once, here, and never again.
            v["secret"] = made.secret.into();
            v
        }
        WebhookCommand::List { key } => {
            let list = op::list(parts(), &owned(&key)).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            json!({ "key": key, "data": list.iter().map(view).collect::<Vec<_>>() })
        }
        WebhookCommand::Remove { key, id } => {
            op::remove(parts(), &owned(&key), &id).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            json!({ "id": id, "deleted": true })
        }
    })
}

pub async fn facilitator(out: Output, cmd: FacilitatorCommand, store: StoreArgs) -> anyhow::Result<()> {
    use crate::store::facilitator::Lookup;
    let (cfg, db) = open(&store).await?;
    let answer = match cmd {
        FacilitatorCommand::CreateKey { name, receivers } => {
            anyhow::ensure!(name != crate::x402::facilitator::PUBLIC_CLIENT, "`{name}` names keyless settlements; choose another name");
            let mut lower = vec![];
            for r in &receivers {
                let binding = crate::x402::facilitator::delegate::receiver_binding(r).map_err(|e| anyhow::anyhow!("--receiver {e}"))?;
                lower.push(binding);
            }
            lower.sort();
            lower.dedup();
            let pepper = crate::auth::Pepper::load(&cfg.resolve(&cfg.service.pepper_file))?;
            let secret = match crate::auth::issue_facilitator_key(&db, &pepper, &name, &lower, now_ms()).await {
                Err(e) if e.is_duplicate() => anyhow::bail!("a facilitator key named `{name}` exists already"),
                other => other?,
            };
            // Printed once, here, and never again.
            json!({ "name": name, "key": secret, "header": format!("Authorization: Bearer {secret}"), "receivers": lower })
        }
        FacilitatorCommand::RevokeKey { name } => {
            anyhow::ensure!(crate::store::facilitator::revoke_key(&db, &name, now_ms()).await?, "no live facilitator key `{name}`");
            json!({ "name": name, "result": "revoked" })
        }
        FacilitatorCommand::Webhook { command } => webhook(&cfg, &db, command).await?,
        FacilitatorCommand::Settlement { id, transaction, payer } => {
            let by = match (&id, &transaction, &payer) {
                (Some(v), _, _) => Lookup::Id(v),
                (_, Some(v), _) => Lookup::Transaction(v),
                (_, _, Some(v)) => Lookup::Payer(v),
                _ => anyhow::bail!("name one of --id, --transaction, --payer"),
            };
            let page = crate::store::facilitator::Page { client: None, limit: 100, before: None };
            serde_json::to_value(crate::x402::facilitator::lookup(&db, by, page).await?)?
        }
    };
    emit(out, &answer);
    Ok(())
}
