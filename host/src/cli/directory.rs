//! `stablerail account`, `agent` and `recipient`: who may use the API and
//! where an email is paid.

use clap::Subcommand;
use serde_json::json;

use super::store::{now_ms, open, the_one, StoreArgs};
use crate::adapter::system_clock;
use crate::output::{emit, Output};

#[derive(Subcommand)]
pub enum AccountCommand {
    /// Create an account; prints its id.
    Create {
        #[arg(long)]
        name: String,
    },
    /// Every account.
    List,
    Show {
        id: String,
    },
    /// Disable an account and all its agents (their keys stop working).
    Disable {
        id: String,
    },
    /// Let EMAIL make an account on the dashboard (`[dashboard] signup = "invite"`).
    Invite {
        email: String,
    },
    /// Open the dashboard's operator pages to an account (`--off` closes them).
    Operator {
        id: String,
        #[arg(long)]
        off: bool,
    },
}

#[derive(Subcommand)]
pub enum AgentCommand {
    /// Create an agent (at most 10 per account) and issue its keys.
    Create {
        #[arg(long)]
        name: String,
        /// Owning account id. Without one, the agent has no owner.
        #[arg(long)]
        account: Option<String>,
    },
    /// Issue a new key pair for an agent, revoking its previous keys.
    Keys {
        #[arg(long)]
        agent: String,
    },
    /// Every agent, or one account's.
    List {
        #[arg(long)]
        account: Option<String>,
    },
    Show {
        id: String,
    },
    /// Disable an agent: its keys stop authenticating.
    Disable {
        id: String,
    },
}

#[derive(Subcommand)]
pub enum RecipientCommand {
    /// Map EMAIL to a wallet address on a chain (re-enabling it).
    Add {
        email: String,
        #[arg(long)]
        chain: String,
        #[arg(long)]
        address: String,
    },
    /// Every mapping.
    List,
    /// EMAIL's mappings.
    Show { email: String },
    /// Stop resolving EMAIL, on one chain or on all.
    Disable {
        email: String,
        #[arg(long)]
        chain: Option<String>,
    },
}

pub async fn account(out: Output, cmd: AccountCommand, store: StoreArgs) -> anyhow::Result<()> {
    use crate::store::agents as repo;
    let (_, db) = open(&store).await?;
    let answer = match cmd {
        AccountCommand::Create { name } => {
            let id = repo::create_account(&db, &name, now_ms()).await?;
            json!({ "account_id": id, "name": name })
        }
        AccountCommand::List => serde_json::to_value(repo::accounts(&db, None).await?)?,
        AccountCommand::Show { id } => the_one(repo::accounts(&db, Some(&id)).await?, "account", &id)?,
        AccountCommand::Disable { id } => {
            anyhow::ensure!(repo::disable_account(&db, &id).await?, "no account {id}");
            the_one(repo::accounts(&db, Some(&id)).await?, "account", &id)?
        }
        AccountCommand::Invite { email } => {
            let email = crate::store::dashboard::normal_email(&email);
            anyhow::ensure!(email.parse::<lettre::Address>().is_ok(), "`{email}` is not an email address");
            crate::store::dashboard::invite(&db, &email, now_ms()).await?;
            json!({ "email": email, "invited": true })
        }
        AccountCommand::Operator { id, off } => {
            anyhow::ensure!(crate::store::dashboard::set_operator(&db, &id, !off).await?, "no account {id}");
            the_one(repo::accounts(&db, Some(&id)).await?, "account", &id)?
        }
    };
    emit(out, &answer);
    Ok(())
}

pub async fn agent(out: Output, cmd: AgentCommand, store: StoreArgs) -> anyhow::Result<()> {
    use crate::store::agents as repo;
    let (cfg, db) = open(&store).await?;
    let agent_id = match cmd {
        AgentCommand::Create { name, account } => {
            let held = crate::family::module::Held::from_config(&cfg)?;
            let keys = crate::family::keys::Keystore::open(db.clone(), &cfg.resolve(&cfg.service.master_key_file))?.holding(held);
            crate::ops::agents::create(&db, &keys, &cfg, account.as_deref(), &name, now_ms()).await?.id
        }
        AgentCommand::Keys { agent } => agent,
        AgentCommand::List { account } => {
            emit(out, &serde_json::to_value(repo::agents(&db, account.as_deref(), None).await?)?);
            return Ok(());
        }
        AgentCommand::Show { id } => {
            emit(out, &the_one(repo::agents(&db, None, Some(&id)).await?, "agent", &id)?);
            return Ok(());
        }
        AgentCommand::Disable { id } => {
            anyhow::ensure!(repo::disable_agent(&db, &id).await?, "no agent {id}");
            emit(out, &the_one(repo::agents(&db, None, Some(&id)).await?, "agent", &id)?);
            return Ok(());
        }
    };
    let pepper = crate::auth::Pepper::load(&cfg.resolve(&cfg.service.pepper_file))?;
    let creds = crate::auth::issue_keys(&db, &pepper, &agent_id, now_ms()).await?;
    // Keys are printed once, here, and never again.
    let mut answer = the_one(repo::agents(&db, None, Some(&agent_id)).await?, "agent", &agent_id)?;
    answer["api_key"] = json!(creds.api_key);
    answer["secret_key"] = json!(creds.secret_key);
    answer["bearer_token"] = json!(creds.bearer());
    answer["note"] = json!("the secret key is shown only now; store it securely");
    emit(out, &answer);
    Ok(())
}

pub async fn recipient(out: Output, cmd: RecipientCommand, store: StoreArgs) -> anyhow::Result<()> {
    use crate::store::agents as repo;
    let answer = match cmd {
        RecipientCommand::Add { email, chain, address } => {
            anyhow::ensure!(email.contains('@'), "`{email}` is not an email address");
            let state = crate::server::build_state(&store.config, store.database()?, system_clock()).await?;
            let chain_cfg = state.config.chains.get(&chain).ok_or_else(|| anyhow::anyhow!("unknown chain `{chain}`"))?;
            let family = chain_cfg.family;
            let adapter =
                state.registry.any_for_family(family).ok_or_else(|| anyhow::anyhow!("no adapter serves {chain}'s address family"))?;
            let address = adapter
                .normalize_address(family, &address)
                .await?
                .map_err(|_| anyhow::anyhow!("`{address}` is not a valid address on {chain}"))?;
            repo::set_recipient(&state.db, &email, &chain, &address).await?;
            json!({ "email": email.trim().to_lowercase(), "chain": chain, "address": address, "status": "active" })
        }
        RecipientCommand::List => serde_json::to_value(repo::recipients(&open(&store).await?.1, None).await?)?,
        RecipientCommand::Show { email } => {
            let rows = repo::recipients(&open(&store).await?.1, Some(&email)).await?;
            anyhow::ensure!(!rows.is_empty(), "no recipient {email}");
            serde_json::to_value(rows)?
        }
        RecipientCommand::Disable { email, chain } => {
            let db = open(&store).await?.1;
            let n = repo::disable_recipient(&db, &email, chain.as_deref(), now_ms()).await?;
            anyhow::ensure!(n > 0, "no active mapping for {email}{}", chain.map(|c| format!(" on {c}")).unwrap_or_default());
            serde_json::to_value(repo::recipients(&db, Some(&email)).await?)?
        }
    };
    emit(out, &answer);
    Ok(())
}
