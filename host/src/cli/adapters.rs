//! `stablerail adapter`: inspect, check and start adapters.

use std::path::PathBuf;

use clap::Subcommand;

use crate::adapter::{family_name, system_clock, Runtime};
use crate::config::Config;
use crate::output::{emit, Output};

#[derive(Subcommand)]
pub enum AdapterCommand {
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

/// The config whose limits and cache an adapter command uses: the given
/// one, or the defaults.
pub fn adapter_config(config: &std::path::Path) -> anyhow::Result<Config> {
    match Config::load(config) {
        Ok(c) => Ok(c),
        Err(_) => Ok(Config::parse("[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\"]\n")?),
    }
}

pub async fn check(
    output: Output,
    file: &std::path::Path,
    vectors: Option<&std::path::Path>,
    config: &std::path::Path,
) -> anyhow::Result<()> {
    use super::adapter_check as check;
    use crate::adapter::Limits;
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

pub fn inspect(output: Output, file: &std::path::Path, config: &std::path::Path) -> anyhow::Result<()> {
    // Without a config, inspect with default limits and a cache beside the file.
    let cfg = adapter_config(config)?;
    let runtime: std::sync::Arc<Runtime> = crate::server::runtime_for(&cfg, system_clock())?;
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

/// Run one `stablerail adapter` command.
pub async fn adapter(out: Output, cmd: AdapterCommand) -> anyhow::Result<()> {
    match cmd {
        AdapterCommand::Inspect { file, config } => inspect(out, &file, &config),
        AdapterCommand::New { name, family, dir, kit } => {
            let family: crate::config::Family =
                serde_json::from_value(serde_json::json!(family)).map_err(|_| anyhow::anyhow!("--family must be evm, solana or tron"))?;
            let written = super::adapter_new::write(&name, family, &dir, kit.as_deref())?;
            emit(out, &serde_json::to_value(&written)?);
            Ok(())
        }
        AdapterCommand::Check { file, vectors, config } => check(out, &file, vectors.as_deref(), &config).await,
    }
}
