//! `stablerail keys`: the master key, the pepper and the service wallets.

use clap::Subcommand;
use serde_json::json;

use super::store::{open, StoreArgs};
use crate::output::{emit, Output};

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Create what is missing (master key file unless STABLERAIL_MASTER_KEY
    /// is set, pepper file unless STABLERAIL_PEPPER is set, the relayer,
    /// collection and proxy wallets, and `authorizer:evm` when
    /// `[facilitator] receiver_authorizer` is on) and keep what exists.
    /// Safe to re-run.
    Init,
    /// Store an existing private key (hex, read from standard input) as a
    /// wallet, e.g. `relayer:evm`. Refuses a name that exists.
    Import {
        #[arg(long)]
        name: String,
    },
    /// Seal every key kept in the database under a new master key, which
    /// then replaces the old one in `master_key_file`. Stop the service
    /// first. A run that is interrupted leaves every key usable; run it
    /// again to finish. Keys held in a hardware module are not touched.
    RotateMaster,
}

pub async fn keys(out: Output, cmd: KeysCommand, store: StoreArgs) -> anyhow::Result<()> {
    let (cfg, db) = open(&store).await?;
    match cmd {
        KeysCommand::Init => {
            let files = (cfg.resolve(&cfg.service.master_key_file), cfg.resolve(&cfg.service.pepper_file));
            let held = crate::family::module::Held::from_config(&cfg)?;
            let done = crate::family::keys::init(&files.0, &files.1, db.clone(), &cfg.families(), held).await?;
            let mut answer = serde_json::to_value(&done)?;
            if cfg.facilitator.receiver_authorizer {
                // Its own key, never a wallet: it signs claims and refunds only.
                let keys = crate::family::keys::Keystore::open(db, &files.0)?;
                let authorizer = crate::x402::facilitator::Authorizer::load(&keys).await?;
                answer["receiver_authorizer"] = json!({ "name": crate::x402::facilitator::AUTHORIZER_KEY, "address": authorizer.address });
            }
            emit(out, &answer);
        }
        KeysCommand::Import { name } => {
            let mut key = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut key)?;
            let keys = crate::family::keys::Keystore::open(db, &cfg.resolve(&cfg.service.master_key_file))?;
            let address = keys.import(&name, &key).await?;
            emit(out, &json!({ "name": name, "address": address }));
        }
        KeysCommand::RotateMaster => {
            // A pause between keys: how the suite stops a run half-way.
            let pause = std::env::var("STABLERAIL_ROTATE_PAUSE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
            let master = cfg.resolve(&cfg.service.master_key_file);
            let done = crate::family::keys::rotate_master(db, &master, std::time::Duration::from_millis(pause)).await?;
            emit(out, &serde_json::to_value(&done)?);
        }
    }
    Ok(())
}
