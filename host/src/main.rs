use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use stablerail::adapter::{family_name, system_clock, Runtime};
use stablerail::config::Config;

#[derive(Parser)]
#[command(name = "stablerail", version, about = "Cross-chain stablecoin payments with WebAssembly chain adapters")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service.
    Serve {
        #[arg(long, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
        config: PathBuf,
        #[arg(long, default_value = "127.0.0.1:8402", env = "STABLERAIL_LISTEN")]
        listen: SocketAddr,
        #[arg(long, default_value = "sqlite://.stablerail/stablerail.db", env = "STABLERAIL_DATABASE")]
        database: String,
    },
    /// Work with adapter files.
    Adapter {
        #[command(subcommand)]
        command: AdapterCommand,
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
    /// The email → wallet directory used for email recipients.
    Recipient {
        #[command(subcommand)]
        command: RecipientCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(clap::Args)]
struct StoreArgs {
    #[arg(long, global = true, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
    config: PathBuf,
    #[arg(long, global = true, default_value = "sqlite://.stablerail/stablerail.db", env = "STABLERAIL_DATABASE")]
    database: String,
}

#[derive(Subcommand)]
enum AccountCommand {
    /// Create an account; prints its id.
    Create {
        #[arg(long)]
        name: String,
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
}

#[derive(Subcommand)]
enum DevnetCommand {
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
    /// Map EMAIL to a wallet address on a chain.
    Add {
        email: String,
        #[arg(long)]
        chain: String,
        #[arg(long)]
        address: String,
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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "stablerail=info,tower_http=info".into()),
        )
        .init();
    match Cli::parse().command {
        Command::Serve { config, listen, database } => stablerail::server::serve(config, listen, database).await,
        Command::Adapter { command: AdapterCommand::Inspect { file, config } } => inspect(&file, &config),
        Command::Account { command, store } => account(command, store).await,
        Command::Agent { command, store } => agent(command, store).await,
        Command::Recipient { command, store } => recipient(command, store).await,
        Command::Devnet { command } => devnet(command).await,
    }
}

async fn devnet(cmd: DevnetCommand) -> anyhow::Result<()> {
    let node = |script: PathBuf, args: Vec<String>| -> anyhow::Result<String> {
        let out = std::process::Command::new("node").arg(&script).args(&args).output()?;
        anyhow::ensure!(out.status.success(), "{}: {}", script.display(), String::from_utf8_lossy(&out.stderr));
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    match cmd {
        DevnetCommand::Down { dir, scripts } => {
            print!("{}", node(scripts.join("down.mjs"), vec!["--dir".into(), dir.display().to_string()])?);
        }
        DevnetCommand::Up { dir, port, chains, scripts } => {
            // Start from clean chains each time.
            node(scripts.join("down.mjs"), vec!["--dir".into(), dir.display().to_string()])?;
            std::fs::create_dir_all(&dir)?;
            let dir = std::fs::canonicalize(&dir)?;
            let database = format!("sqlite://{}", dir.join("stablerail.db").display());
            let db = stablerail::server::connect(&database).await?;
            let keys = stablerail::keys::Keystore::open(db, &dir.join("master.key"))?;
            let relayer = keys.address(stablerail::keys::RELAYER).await?;
            let proxy = keys.address(stablerail::keys::PROXY).await?;
            let adapters = std::fs::canonicalize("adapters/target/wasm32-wasip2/release").unwrap_or_else(|_| "adapters".into());
            let out = node(scripts.join("up.mjs"), vec![
                "--dir".into(), dir.display().to_string(), "--port".into(), port.to_string(), "--chains".into(), chains,
                // The proxy pays gas too: on Permit2 chains it approves Permit2 once.
                "--gas".into(), format!("{relayer},{proxy}"), "--tokens".into(), proxy.clone(),
                "--adapters-dir".into(), adapters.display().to_string(),
            ])?;
            let info: serde_json::Value = serde_json::from_str(out.trim())?;
            println!("devnet is up in {}", dir.display());
            for (name, c) in info["chains"].as_object().into_iter().flatten() {
                let assets: Vec<&str> = c["assets"].as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
                println!("  {name:<9} chain id {:<6} {}  {}", c["chain_id"], c["rpc"].as_str().unwrap_or(""), assets.join(", "));
            }
            println!("  relayer {relayer} (gas), proxy {proxy} (gas, and 1,000,000 of each asset per chain)");
            println!("  payer   {} key {}", info["payers"][0]["address"].as_str().unwrap_or(""), info["payers"][0]["private_key"].as_str().unwrap_or(""));
            println!("\nRun the service on it:\n  stablerail serve --config {0}/chains.toml --database {database}", dir.display());
            println!("Make a payment (base -> arbitrum, signed by the x402 client):\n  node {}/demo.mjs --dir {}", scripts.display(), dir.display());
        }
    }
    Ok(())
}

async fn open(store: &StoreArgs) -> anyhow::Result<(Config, stablerail::db::Db)> {
    let cfg = stablerail::server::load_config(&store.config)?;
    let db = stablerail::server::connect(&store.database).await?;
    Ok((cfg, db))
}

async fn account(cmd: AccountCommand, store: StoreArgs) -> anyhow::Result<()> {
    let (_, db) = open(&store).await?;
    let AccountCommand::Create { name } = cmd;
    let id = stablerail::store::agents::create_account(&db, &name, now_ms()).await?;
    println!("{}", serde_json::json!({ "account_id": id, "name": name }));
    Ok(())
}

/// Keys are printed once, here, and never again.
fn print_keys(agent_id: &str, c: &stablerail::auth::Credentials) {
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "agent_id": agent_id,
            "api_key": c.api_key,
            "secret_key": c.secret_key,
            "bearer_token": c.bearer(),
            "note": "the secret key is shown only now; store it securely",
        }))
        .expect("json")
    );
}

async fn agent(cmd: AgentCommand, store: StoreArgs) -> anyhow::Result<()> {
    let (cfg, db) = open(&store).await?;
    let pepper = stablerail::auth::Pepper::load(&cfg.resolve(&cfg.service.pepper_file))?;
    let agent_id = match cmd {
        AgentCommand::Create { name, account } => {
            let a = stablerail::store::agents::create_agent(&db, account.as_deref(), &name, now_ms()).await?;
            let keys = stablerail::keys::Keystore::open(db.clone(), &cfg.resolve(&cfg.service.master_key_file))?;
            let wallet = keys.address(&stablerail::keys::agent_key(&a.id)).await?;
            eprintln!("created agent {} (number {}), hosted wallet {wallet}", a.id, a.agent_number);
            a.id
        }
        AgentCommand::Keys { agent } => agent,
    };
    let creds = stablerail::auth::issue_keys(&db, &pepper, &agent_id, now_ms()).await?;
    print_keys(&agent_id, &creds);
    Ok(())
}

async fn recipient(cmd: RecipientCommand, store: StoreArgs) -> anyhow::Result<()> {
    let RecipientCommand::Add { email, chain, address } = cmd;
    anyhow::ensure!(email.contains('@'), "`{email}` is not an email address");
    let state = stablerail::server::build_state(&store.config, &store.database, system_clock()).await?;
    let chain_cfg = state.config.chains.get(&chain).ok_or_else(|| anyhow::anyhow!("unknown chain `{chain}`"))?;
    let family = stablerail::adapter::wit_family(chain_cfg.family);
    let adapter = state
        .registry
        .any_for_family(family)
        .ok_or_else(|| anyhow::anyhow!("no adapter serves {chain}'s address family"))?;
    let address = tokio::task::spawn_blocking(move || adapter.normalize_address(family, &address))
        .await??
        .map_err(|e| anyhow::anyhow!("invalid address for {chain}: {e:?}"))?;
    stablerail::store::agents::set_recipient(&state.db, &email, &chain, &address).await?;
    println!("{}", serde_json::json!({ "email": email.trim().to_lowercase(), "chain": chain, "address": address }));
    Ok(())
}

fn now_ms() -> i64 {
    stablerail::intent::now_ms()
}

fn inspect(file: &std::path::Path, config: &std::path::Path) -> anyhow::Result<()> {
    // Without a config, inspect with default limits and a cache beside the file.
    let cfg = match Config::load(config) {
        Ok(c) => c,
        Err(_) => Config::parse("[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\"]\n")?,
    };
    let runtime: std::sync::Arc<Runtime> = stablerail::server::runtime_for(&cfg, system_clock())?;
    let adapter = runtime.load(file)?;
    let d = &adapter.description;
    let out = serde_json::json!({
        "file": file.display().to_string(),
        "name": d.name,
        "version": d.version,
        "interface": "stablerail:adapter@0.1.0",
        "serves": d.serves.iter().map(|s| serde_json::json!({
            "family": family_name(s.family),
            "scheme": s.scheme,
        })).collect::<Vec<_>>(),
        "config_keys": d.config_keys,
        "imports": adapter.imports,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
