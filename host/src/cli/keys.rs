//! `stablerail keys`: the master key, the pepper and the service wallets.

use clap::Subcommand;
use serde_json::json;

use super::store::{open, StoreArgs};
use crate::output::{emit, Output};

#[derive(Subcommand)]
pub enum KeysCommand {
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

pub async fn keys(out: Output, cmd: KeysCommand, store: StoreArgs) -> anyhow::Result<()> {
    let (cfg, db) = open(&store).await?;
    match cmd {
        KeysCommand::Init => {
            let files = (cfg.resolve(&cfg.service.master_key_file), cfg.resolve(&cfg.service.pepper_file));
            let done = crate::family::keys::init(&files.0, &files.1, db, &cfg.families()).await?;
            emit(out, &serde_json::to_value(&done)?);
        }
        KeysCommand::Import { name } => {
            let mut key = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut key)?;
            let keys = crate::family::keys::Keystore::open(db, &cfg.resolve(&cfg.service.master_key_file))?;
            let address = keys.import(&name, &key).await?;
            emit(out, &json!({ "name": name, "address": address }));
        }
    }
    Ok(())
}
