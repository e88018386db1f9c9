use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use serde_json::json;
use stablerail::adapter::{family_name, system_clock, Runtime};
use stablerail::config::Config;
use stablerail::output::{emit, Output};

#[derive(Parser)]
#[command(name = "stablerail", version, about = "Cross-chain stablecoin payments with WebAssembly chain adapters")]
struct Cli {
    /// Log lines as JSON objects (one per line) or as text. Text has colours
    /// only when standard error is a terminal.
    #[arg(long, global = true, value_enum, default_value = "text", env = "STABLERAIL_LOG_FORMAT")]
    log_format: LogFormat,
    /// How answers are printed: JSON (for scripts) or a table (for people).
    #[arg(long, global = true, value_enum, default_value = "json", env = "STABLERAIL_OUTPUT")]
    output: Output,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Logs go to standard error, so a command's answer on standard output
/// stays clean JSON.
fn init_logs(format: LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "stablerail=info,tower_http=info".into());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Json => logs.json().flatten_event(true).with_current_span(true).with_span_list(false).init(),
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service.
    Serve {
        #[arg(long, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
        config: PathBuf,
        #[arg(long, default_value = "127.0.0.1:8402", env = "STABLERAIL_LISTEN")]
        listen: SocketAddr,
        /// The database URL (sqlite://FILE or postgres://…). Required.
        #[arg(long, env = "STABLERAIL_DATABASE")]
        database: String,
    },
    /// Work with adapter files.
    Adapter {
        #[command(subcommand)]
        command: AdapterCommand,
    },
    /// The master key, the API-secret pepper and the service wallets.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Accounts own agents.
    Account {
        #[command(subcommand)]
        command: AccountCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Agents and their API keys.
    Agent {
        #[command(subcommand)]
        command: AgentCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Local chains for trying stablerail: one anvil per EVM chain, with
    /// devnet USDC deployed and the service's wallets funded.
    Devnet {
        #[command(subcommand)]
        command: DevnetCommand,
    },
    /// Check a config without serving: parse, validate, load every adapter
    /// it names, and ask each exposed chain's RPC for its chain id.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Every service and agent wallet with its native and token balances on
    /// each exposed chain.
    Wallets {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Operators' view of intents: list them, re-queue one.
    Intent {
        #[command(subcommand)]
        command: IntentCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// The x402 facilitator: keys for resource servers, and settlements.
    Facilitator {
        #[command(subcommand)]
        command: FacilitatorCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print the HTTP API's OpenAPI 3.1 document (also served at
    /// `GET /api/openapi.json`).
    Openapi,
    /// The email → wallet directory used for email recipients.
    Recipient {
        #[command(subcommand)]
        command: RecipientCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Commands on a deployment's database name it explicitly: a default file
/// the server does not read would take writes that then go missing.
#[derive(clap::Args)]
struct StoreArgs {
    #[arg(long, global = true, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
    config: PathBuf,
    /// The service's database URL (sqlite://FILE or postgres://…). Required.
    #[arg(long, global = true, env = "STABLERAIL_DATABASE")]
    database: Option<String>,
}

impl StoreArgs {
    // Checked here, not by clap: clap cannot require a global argument
    // that may come after the subcommand.
    fn database(&self) -> anyhow::Result<&str> {
        self.database
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--database (or STABLERAIL_DATABASE) is required: name the database the service uses"))
    }
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create what is missing (master key file unless STABLERAIL_MASTER_KEY
    /// is set, pepper file unless STABLERAIL_PEPPER is set, the relayer,
    /// collection and proxy wallets) and keep what exists. Safe to re-run.
    Init,
    /// Store an existing private key (hex, read from standard input) as a
    /// wallet, e.g. `relayer:evm`. Refuses a name that exists.
    Import {
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand)]
enum AccountCommand {
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
}

#[derive(Subcommand)]
enum AgentCommand {
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
enum ConfigCommand {
    /// Exit 0 when the config is usable; otherwise say what is wrong.
    Check {
        #[arg(long, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
        config: PathBuf,
    },
}

#[derive(Subcommand)]
enum FacilitatorCommand {
    /// Create a key for a resource server (`Authorization: Bearer srfk_…`);
    /// the secret is printed once.
    CreateKey { name: String },
    /// Revoke a key by name.
    RevokeKey { name: String },
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
enum IntentCommand {
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
enum DevnetCommand {
    /// Give ADDRESS devnet money on one chain: AMOUNT of `--asset` (minted),
    /// or of the native coin without `--asset`.
    Fund {
        address: String,
        amount: String,
        #[arg(long)]
        chain: String,
        #[arg(long)]
        asset: Option<String>,
        #[arg(long, default_value = ".stablerail/devnet")]
        dir: PathBuf,
    },
    /// Start the devnet and write DIR/chains.toml for `serve`.
    Up {
        #[arg(long, default_value = ".stablerail/devnet")]
        dir: PathBuf,
        #[arg(long, default_value_t = 18545)]
        port: u16,
        #[arg(long, default_value = "base,arbitrum,polygon,bsc")]
        chains: String,
        /// Where the devnet scripts (and their node_modules) are.
        #[arg(long, default_value = "devnet")]
        scripts: PathBuf,
    },
    /// Stop the devnet's chains.
    Down {
        #[arg(long, default_value = ".stablerail/devnet")]
        dir: PathBuf,
        #[arg(long, default_value = "devnet")]
        scripts: PathBuf,
    },
}

#[derive(Subcommand)]
enum RecipientCommand {
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

#[derive(Subcommand)]
enum AdapterCommand {
    /// Load an adapter and print what it describes.
    Inspect {
        file: PathBuf,
        /// Config whose cache and limits to use.
        #[arg(long, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
        config: PathBuf,
    },
    /// Write a crate to start a new adapter from, on the adapter kit: a
    /// working x402 `exact` adapter (EVM EIP-3009, Solana SPL or TRON
    /// Permit2) and its vectors, renamed.
    New {
        /// Crate and scheme name (lower-case letters, digits, `-`).
        name: String,
        /// Chain family: `evm` (EIP-3009), `solana` (SPL) or `tron` (Permit2).
        #[arg(long, default_value = "evm")]
        family: String,
        /// Folder to create the crate in.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The kit: a path or a git URL (default: this checkout's `adapters/kit`).
        #[arg(long)]
        kit: Option<String>,
    },
    /// Check an adapter: statically, and against a vectors file's proofs,
    /// tamperings and recorded chain answers. Exits non-zero on any failure.
    Check {
        file: PathBuf,
        /// Vectors (JSON; docs/adapters.md): without them only the static checks run.
        #[arg(long)]
        vectors: Option<PathBuf>,
        /// Config whose cache and limits to use.
        #[arg(long, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
        config: PathBuf,
    },
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logs(cli.log_format);
    let out = cli.output;
    match cli.command {
        Command::Serve { config, listen, database } => stablerail::server::serve(config, listen, database).await,
        Command::Adapter { command: AdapterCommand::Inspect { file, config } } => inspect(out, &file, &config),
        Command::Adapter { command: AdapterCommand::New { name, family, dir, kit } } => {
            let family: stablerail::config::Family =
                serde_json::from_value(json!(family)).map_err(|_| anyhow::anyhow!("--family must be evm, solana or tron"))?;
            let written = stablerail::adapter::new::write(&name, family, &dir, kit.as_deref())?;
            emit(out, &serde_json::to_value(&written)?);
            Ok(())
        }
        Command::Adapter { command: AdapterCommand::Check { file, vectors, config } } => {
            check(out, &file, vectors.as_deref(), &config).await
        }
        Command::Keys { command, store } => keys(out, command, store).await,
        Command::Account { command, store } => account(out, command, store).await,
        Command::Agent { command, store } => agent(out, command, store).await,
        Command::Recipient { command, store } => recipient(out, command, store).await,
        Command::Intent { command, store } => intent(out, command, store).await,
        Command::Facilitator { command, store } => facilitator(out, command, store).await,
        Command::Wallets { store } => wallets(out, store).await,
        Command::Config { command: ConfigCommand::Check { config } } => config_check(out, &config).await,
        Command::Devnet { command } => devnet(out, command).await,
        Command::Openapi => {
            println!("{}", stablerail::api::docs::DOCUMENT.as_str());
            Ok(())
        }
    }
}

async fn devnet(output: Output, cmd: DevnetCommand) -> anyhow::Result<()> {
    let node = |script: PathBuf, args: Vec<String>| -> anyhow::Result<String> {
        let out = std::process::Command::new("node").arg(&script).args(&args).output()?;
        anyhow::ensure!(out.status.success(), "{}: {}", script.display(), String::from_utf8_lossy(&out.stderr));
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    match cmd {
        DevnetCommand::Fund { address, amount, chain, asset, dir } => {
            emit(output, &devnet_fund(&dir, &chain, asset.as_deref(), &address, &amount).await?)
        }
        DevnetCommand::Down { dir, scripts } => {
            node(scripts.join("down.mjs"), vec!["--dir".into(), dir.display().to_string()])?;
            emit(output, &json!({ "dir": dir.display().to_string(), "result": "stopped" }));
        }
        DevnetCommand::Up { dir, port, chains, scripts } => {
            // Start from clean chains each time.
            node(scripts.join("down.mjs"), vec!["--dir".into(), dir.display().to_string()])?;
            std::fs::create_dir_all(&dir)?;
            let dir = std::fs::canonicalize(&dir)?;
            let database = format!("sqlite://{}", dir.join("stablerail.db").display());
            let db = stablerail::server::connect(&database).await?;
            // The devnet's config names these files; its wallets exist before
            // the chains start so that they can be funded.
            let families = stablerail::config::Family::of_devnet_chains(&chains);
            let made = stablerail::keys::init(&dir.join("master.key"), &dir.join("pepper"), db, &families).await?;
            let adapters = std::fs::canonicalize("adapters/target/wasm32-wasip2/release").unwrap_or_else(|_| "adapters".into());
            let mut args = vec![
                "--dir".into(),
                dir.display().to_string(),
                "--port".into(),
                port.to_string(),
                "--chains".into(),
                chains,
                "--adapters-dir".into(),
                adapters.display().to_string(),
            ];
            args.extend(made.devnet_funding_args());
            let out = node(scripts.join("up.mjs"), args)?;
            let info: serde_json::Value = serde_json::from_str(out.trim())?;
            let chains: Vec<serde_json::Value> = info["chains"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, c)| {
                    let assets: Vec<&str> = c["assets"].as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
                    json!({ "chain": name, "chain_id": c["chain_id"], "rpc": c["rpc"], "assets": assets.join(",") })
                })
                .collect();
            emit(
                output,
                &json!({
                    "dir": dir.display().to_string(),
                    "chains": chains,
                    "relayer": made.wallet(stablerail::keys::RELAYER),
                    "proxy": made.wallet(stablerail::keys::PROXY),
                    "payer": info["payers"][0]["address"],
                    "payer_private_key": info["payers"][0]["private_key"],
                    "solana": info.get("solana").map(|s| json!({ "rpc": s["rpc"], "caip2": s["caip2"], "usdc_mint": s["assets"]["usdc"]["address"] })),
                    "tron": info.get("tron").map(|t| json!({ "http": t["http"], "usdt": t["assets"]["usdt"]["address"], "permit2": t["permit2"], "proxy_wallet": made.wallet("proxy:tron") })),
                    "serve": format!("stablerail serve --config {}/chains.toml --database {database}", dir.display()),
                    "demo": format!("node {}/demo.mjs --dir {}", scripts.display(), dir.display()),
                }),
            );
        }
    }
    Ok(())
}

async fn open(store: &StoreArgs) -> anyhow::Result<(Config, stablerail::db::Db)> {
    let cfg = stablerail::server::load_config(&store.config)?;
    let db = stablerail::server::connect(store.database()?).await?;
    Ok((cfg, db))
}

async fn keys(out: Output, cmd: KeysCommand, store: StoreArgs) -> anyhow::Result<()> {
    let (cfg, db) = open(&store).await?;
    match cmd {
        KeysCommand::Init => {
            let files = (cfg.resolve(&cfg.service.master_key_file), cfg.resolve(&cfg.service.pepper_file));
            let done = stablerail::keys::init(&files.0, &files.1, db, &cfg.families()).await?;
            emit(out, &serde_json::to_value(&done)?);
        }
        KeysCommand::Import { name } => {
            let mut key = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut key)?;
            let keys = stablerail::keys::Keystore::open(db, &cfg.resolve(&cfg.service.master_key_file))?;
            let address = keys.import(&name, &key).await?;
            emit(out, &json!({ "name": name, "address": address }));
        }
    }
    Ok(())
}

/// One row, or "no such" as the error.
fn the_one<T: serde::Serialize>(rows: Vec<T>, what: &str, id: &str) -> anyhow::Result<serde_json::Value> {
    let row = rows.into_iter().next().ok_or_else(|| anyhow::anyhow!("no {what} {id}"))?;
    Ok(serde_json::to_value(row)?)
}

async fn account(out: Output, cmd: AccountCommand, store: StoreArgs) -> anyhow::Result<()> {
    use stablerail::store::agents as repo;
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
    };
    emit(out, &answer);
    Ok(())
}

async fn agent(out: Output, cmd: AgentCommand, store: StoreArgs) -> anyhow::Result<()> {
    use stablerail::store::agents as repo;
    let (cfg, db) = open(&store).await?;
    let agent_id = match cmd {
        AgentCommand::Create { name, account } => {
            let a = repo::create_agent(&db, account.as_deref(), &name, now_ms()).await?;
            let keys = stablerail::keys::Keystore::open(db.clone(), &cfg.resolve(&cfg.service.master_key_file))?;
            // A hosted wallet for each family the service serves (EVM always).
            let mut families = cfg.families();
            if !families.contains(&stablerail::config::Family::Evm) {
                families.insert(0, stablerail::config::Family::Evm);
            }
            for family in families {
                keys.ensure(&stablerail::keys::Role::Agent(a.id.clone()).key_name(family)).await?;
            }
            a.id
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
    let pepper = stablerail::auth::Pepper::load(&cfg.resolve(&cfg.service.pepper_file))?;
    let creds = stablerail::auth::issue_keys(&db, &pepper, &agent_id, now_ms()).await?;
    // Keys are printed once, here, and never again.
    let mut answer = the_one(repo::agents(&db, None, Some(&agent_id)).await?, "agent", &agent_id)?;
    answer["api_key"] = json!(creds.api_key);
    answer["secret_key"] = json!(creds.secret_key);
    answer["bearer_token"] = json!(creds.bearer());
    answer["note"] = json!("the secret key is shown only now; store it securely");
    emit(out, &answer);
    Ok(())
}

async fn recipient(out: Output, cmd: RecipientCommand, store: StoreArgs) -> anyhow::Result<()> {
    use stablerail::store::agents as repo;
    let answer = match cmd {
        RecipientCommand::Add { email, chain, address } => {
            anyhow::ensure!(email.contains('@'), "`{email}` is not an email address");
            let state = stablerail::server::build_state(&store.config, store.database()?, system_clock()).await?;
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

async fn wallets(out: Output, store: StoreArgs) -> anyhow::Result<()> {
    let state = stablerail::server::build_state(&store.config, store.database()?, system_clock()).await?;
    let mut rows = Vec::new();
    for (name, address) in state.keys.list().await? {
        let family = stablerail::keys::family_of(&name);
        let mut chains = serde_json::Map::new();
        for chain in state.config.exposed_chains().into_iter().filter(|c| state.config.chains[c].family == family) {
            let shown = match stablerail::wallets::on_chain(&state.drivers, &chain, &address).await {
                Ok(balances) => serde_json::Value::Object(
                    balances.iter().map(|b| (b.asset.clone(), stablerail::wallets::display(b.raw, b.decimals).into())).collect(),
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

async fn config_check(out: Output, path: &std::path::Path) -> anyhow::Result<()> {
    use stablerail::watch::ChainProbe;
    let cfg = stablerail::server::load_config(path)?;
    let runtime = stablerail::server::runtime_for(&cfg, system_clock())?;
    let chains = stablerail::chain::Chains::from_config(&cfg);
    let registry = stablerail::adapter::Registry::from_config(&cfg, runtime, &chains)?;
    let probes = stablerail::watch::probe_chains(&cfg, &chains).await;
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

async fn facilitator(out: Output, cmd: FacilitatorCommand, store: StoreArgs) -> anyhow::Result<()> {
    use stablerail::store::facilitator::Lookup;
    let (cfg, db) = open(&store).await?;
    let answer = match cmd {
        FacilitatorCommand::CreateKey { name } => {
            let pepper = stablerail::auth::Pepper::load(&cfg.resolve(&cfg.service.pepper_file))?;
            let secret = match stablerail::auth::issue_facilitator_key(&db, &pepper, &name, now_ms()).await {
                Err(e) if e.is_duplicate() => anyhow::bail!("a facilitator key named `{name}` exists already"),
                other => other?,
            };
            // Printed once, here, and never again.
            json!({ "name": name, "key": secret, "header": format!("Authorization: Bearer {secret}") })
        }
        FacilitatorCommand::RevokeKey { name } => {
            anyhow::ensure!(stablerail::store::facilitator::revoke_key(&db, &name, now_ms()).await?, "no live facilitator key `{name}`");
            json!({ "name": name, "result": "revoked" })
        }
        FacilitatorCommand::Settlement { id, transaction, payer } => {
            let by = match (&id, &transaction, &payer) {
                (Some(v), _, _) => Lookup::Id(v),
                (_, Some(v), _) => Lookup::Transaction(v),
                (_, _, Some(v)) => Lookup::Payer(v),
                _ => anyhow::bail!("name one of --id, --transaction, --payer"),
            };
            let page = stablerail::store::facilitator::Page { client: None, limit: 100, before: None };
            serde_json::to_value(stablerail::facilitator::lookup(&db, by, page).await?)?
        }
    };
    emit(out, &answer);
    Ok(())
}

async fn intent(out: Output, cmd: IntentCommand, store: StoreArgs) -> anyhow::Result<()> {
    use stablerail::intent::Status;
    use stablerail::store::transition::intents::{self as transition, Retry};
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
                if let Some(i) = stablerail::store::intents::get(&db, &id).await? {
                    rows.push(json!({
                        "intent_id": i.id, "status": i.status.as_str(), "payer_chain": i.payer_chain,
                        "target_chain": i.target_chain, "sending_amount": i.sending_amount,
                        "receiving_amount": i.receiving_amount, "merchant_recipient": i.merchant_recipient,
                        "error_code": i.error_code.map(|c| c.code()), "error_message": i.error_message,
                        "payer_listed": i.payer_listed,
                        "source_tx_hash": i.source_tx_hash, "target_tx_hash": i.target_tx_hash,
                        "updated_at": stablerail::clock::rfc3339(i.updated_at),
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
            let why = stablerail::failure::Reason::from(stablerail::failure::Failure::NeedsReconciliation);
            anyhow::ensure!(transition::give_up(&db, &id, &why, now_ms()).await?, "intent {id} is not waiting for its payout");
            json!({ "intent_id": id, "result": "PARTIAL_SETTLEMENT" })
        }
    };
    emit(out, &answer);
    Ok(())
}

/// Devnet money for ADDRESS: the deployer mints the token, or anvil sets
/// the native balance (current + AMOUNT).
async fn devnet_fund(
    dir: &std::path::Path,
    chain: &str,
    asset: Option<&str>,
    address: &str,
    amount: &str,
) -> anyhow::Result<serde_json::Value> {
    use alloy_primitives::{Address, U256};
    let info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("devnet.json"))?)?;
    let c = info["chains"].get(chain).ok_or_else(|| anyhow::anyhow!("the devnet has no chain `{chain}`"))?;
    let rpc = c["rpc"].as_str().unwrap_or_default().to_string();
    let to: Address = address.parse().map_err(|_| anyhow::anyhow!("`{address}` is not an EVM address"))?;
    let call = |method: &'static str, params: serde_json::Value| {
        let rpc = rpc.clone();
        async move {
            let v: serde_json::Value = reqwest::Client::new()
                .post(&rpc)
                .json(&serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
                .send()
                .await?
                .json()
                .await?;
            anyhow::ensure!(v.get("error").is_none(), "{method}: {}", v["error"]);
            Ok::<_, anyhow::Error>(v["result"].clone())
        }
    };
    let units = |decimals: u32| -> anyhow::Result<U256> {
        let d = stablerail::decimal::parse(amount).map_err(|_| anyhow::anyhow!("`{amount}` is not a decimal amount"))?;
        anyhow::ensure!(
            d.scale() <= decimals && d > rust_decimal::Decimal::ZERO,
            "`{amount}` has more than {decimals} decimals or is not positive"
        );
        let text = d.to_string();
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        Ok(U256::from_str_radix(&format!("{int}{frac:0<width$}", width = decimals as usize), 10)?)
    };
    match asset {
        None => {
            let have = call("eth_getBalance", serde_json::json!([to, "latest"])).await?;
            let have = U256::from_str_radix(have.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16)?;
            call("anvil_setBalance", serde_json::json!([to, format!("{:#x}", have + units(18)?)])).await?;
        }
        Some(a) => {
            let t = c["assets"].get(a).ok_or_else(|| anyhow::anyhow!("the devnet has no `{a}` on {chain}"))?;
            let token = t["address"].as_str().unwrap_or_default();
            let decimals = t["decimals"].as_u64().unwrap_or(6) as u32;
            let mut data = alloy_primitives::hex::decode("40c10f19")?; // mint(address,uint256)
            data.extend_from_slice(&[0u8; 12]);
            data.extend_from_slice(to.as_slice());
            data.extend_from_slice(&units(decimals)?.to_be_bytes::<32>());
            let tx = serde_json::json!([{ "from": info["deployer"], "to": token, "data": alloy_primitives::hex::encode_prefixed(data) }]);
            let hash = call("eth_sendTransaction", tx).await?;
            for _ in 0..100 {
                let r = call("eth_getTransactionReceipt", serde_json::json!([hash])).await?;
                if !r.is_null() {
                    anyhow::ensure!(r["status"] == "0x1", "mint reverted");
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
    Ok(json!({ "address": to.to_checksum(None), "chain": chain, "asset": asset.unwrap_or("native"), "amount": amount }))
}

fn now_ms() -> i64 {
    stablerail::clock::now_ms()
}

/// The config whose limits and cache an adapter command uses: the given
/// one, or the defaults.
fn adapter_config(config: &std::path::Path) -> anyhow::Result<Config> {
    match Config::load(config) {
        Ok(c) => Ok(c),
        Err(_) => Ok(Config::parse("[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\"]\n")?),
    }
}

async fn check(output: Output, file: &std::path::Path, vectors: Option<&std::path::Path>, config: &std::path::Path) -> anyhow::Result<()> {
    use stablerail::adapter::{check, Limits};
    let cfg = adapter_config(config)?;
    let vectors: Option<check::Vectors> = match vectors {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            Some(serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: not a vectors file: {e}", path.display()))?)
        }
        None => None,
    };
    let limits = Limits::new(cfg.service.adapter_fuel, cfg.service.adapter_memory_mib);
    let report = check::run(file, vectors.as_ref(), limits, cfg.resolve(&cfg.service.cache_dir)).await;
    match output {
        Output::Json => emit(output, &serde_json::to_value(&report)?),
        Output::Table => {
            println!("{} ({}), {}", report.adapter, report.interface, report.file);
            emit(output, &serde_json::to_value(&report.checks)?);
            let failed = report.checks.iter().filter(|r| r.result == check::Outcome::Fail).count();
            println!("{} checks, {failed} failed", report.checks.len());
        }
    }
    anyhow::ensure!(
        report.passed,
        "the adapter failed {} check(s)",
        report.checks.iter().filter(|r| r.result == check::Outcome::Fail).count()
    );
    Ok(())
}

fn inspect(output: Output, file: &std::path::Path, config: &std::path::Path) -> anyhow::Result<()> {
    // Without a config, inspect with default limits and a cache beside the file.
    let cfg = adapter_config(config)?;
    let runtime: std::sync::Arc<Runtime> = stablerail::server::runtime_for(&cfg, system_clock())?;
    let adapter = runtime.load(file)?;
    let d = &adapter.description;
    let out = serde_json::json!({
        "file": file.display().to_string(),
        "name": d.name,
        "version": d.version,
        "interface": format!("stablerail:adapter@{}", adapter.interface),
        "serves": d.serves.iter().map(|s| serde_json::json!({
            "family": family_name(s.family),
            "scheme": s.scheme,
        })).collect::<Vec<_>>(),
        "config_keys": d.config_keys,
        "imports": adapter.imports,
    });
    emit(output, &out);
    Ok(())
}
