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
    }
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
