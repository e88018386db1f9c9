//! What the commands on a deployment's database share: its config and
//! URL, named explicitly.

use std::path::PathBuf;

use crate::config::Config;

/// Commands on a deployment's database name it explicitly: a default file
/// the server does not read would take writes that then go missing.
#[derive(clap::Args)]
pub struct StoreArgs {
    #[arg(long, global = true, default_value = "chains.toml", env = "STABLERAIL_CONFIG")]
    pub config: PathBuf,
    /// The service's database URL (sqlite://FILE or postgres://…). Required.
    #[arg(long, global = true, env = "STABLERAIL_DATABASE")]
    pub database: Option<String>,
}

impl StoreArgs {
    // Checked here, not by clap: clap cannot require a global argument
    // that may come after the subcommand.
    pub fn database(&self) -> anyhow::Result<&str> {
        self.database
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--database (or STABLERAIL_DATABASE) is required: name the database the service uses"))
    }
}

pub async fn open(store: &StoreArgs) -> anyhow::Result<(Config, crate::db::Db)> {
    let cfg = crate::server::load_config(&store.config)?;
    let db = crate::server::connect(store.database()?).await?;
    Ok((cfg, db))
}

/// One row, or "no such" as the error.
pub fn the_one<T: serde::Serialize>(rows: Vec<T>, what: &str, id: &str) -> anyhow::Result<serde_json::Value> {
    let row = rows.into_iter().next().ok_or_else(|| anyhow::anyhow!("no {what} {id}"))?;
    Ok(serde_json::to_value(row)?)
}

pub fn now_ms() -> i64 {
    crate::clock::now_ms()
}
