//! The `stablerail` command: parse, set up logs, dispatch. Each area's
//! commands live in `stablerail::cli`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use stablerail::cli::adapters::{self, AdapterCommand};
use stablerail::cli::books::{self, BooksCommand};
use stablerail::cli::devnet::{self, DevnetCommand};
use stablerail::cli::directory::{self, AccountCommand, AgentCommand, RecipientCommand};
use stablerail::cli::keys::{self, KeysCommand};
use stablerail::cli::operations::{self, ConfigCommand, FacilitatorCommand, IntentCommand};
use stablerail::cli::store::StoreArgs;
use stablerail::output::Output;

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
    /// The books: every token movement at the service's wallets and the
    /// payment it is credited to; what no payment explains.
    Books {
        #[command(subcommand)]
        command: BooksCommand,
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
    // The service's traces are configured in its chains.toml; read before
    // anything logs (a config that does not load fails below, in `serve`).
    let telemetry = match &cli.command {
        Command::Serve { config, .. } => stablerail::config::Config::load(config).ok().map(|c| c.telemetry),
        _ => None,
    };
    let _logs = stablerail::logs::init(matches!(cli.log_format, LogFormat::Json), telemetry.as_ref())?;
    let out = cli.output;
    match cli.command {
        Command::Serve { config, listen, database } => stablerail::server::serve(config, listen, database).await,
        Command::Adapter { command } => adapters::adapter(out, command).await,
        Command::Keys { command, store } => keys::keys(out, command, store).await,
        Command::Account { command, store } => directory::account(out, command, store).await,
        Command::Agent { command, store } => directory::agent(out, command, store).await,
        Command::Recipient { command, store } => directory::recipient(out, command, store).await,
        Command::Intent { command, store } => operations::intent(out, command, store).await,
        Command::Facilitator { command, store } => operations::facilitator(out, command, store).await,
        Command::Wallets { store } => operations::wallets(out, store).await,
        Command::Books { command, store } => books::books(out, command, store).await,
        Command::Config { command: ConfigCommand::Check { config } } => operations::config_check(out, &config).await,
        Command::Devnet { command } => devnet::devnet(out, command).await,
        Command::Openapi => {
            println!("{}", stablerail::api::docs::DOCUMENT.as_str());
            Ok(())
        }
    }
}
