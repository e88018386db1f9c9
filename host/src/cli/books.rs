//! `stablerail books`: the operator's view of the books (one row per
//! on-chain movement at the service's wallets, and what it is credited to).
//! Each command first reads the chains up to their final blocks
//! (`settle::books::reconcile`), so its answer is current.

use clap::Subcommand;
use serde_json::json;

use super::store::StoreArgs;
use crate::adapter::system_clock;
use crate::output::{emit, Output};

#[derive(Subcommand)]
pub enum BooksCommand {
    /// Money that arrived at a service wallet and belongs to no payment
    /// (oldest first): a plain transfer, a payment whose authorization was
    /// never used, a refund to make by hand.
    Unmatched {
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Per service wallet and asset: the chain's balance at the last block
    /// read, the books' (opening + in - out), and the difference. Exits 1
    /// when any differs, or when something moved that no payment explains.
    Check,
    /// Mark a movement no payment claims as handled by hand (a refund made,
    /// a top-up of the wallet): it leaves the unmatched list and the
    /// alarms, and no payment can be credited with it afterwards. Only a
    /// movement the reconciler read more than five minutes ago.
    Acknowledge {
        #[arg(long)]
        chain: String,
        /// The transaction id, as `books unmatched` shows it.
        #[arg(long)]
        tx: String,
        /// The movement's `log_index`, as `books unmatched` shows it.
        #[arg(long)]
        index: i64,
        /// What was done about it (kept in the books).
        #[arg(long)]
        note: String,
    },
}

pub async fn books(out: Output, cmd: BooksCommand, store: StoreArgs) -> anyhow::Result<()> {
    let state = crate::server::build_state(&store.config, store.database()?, system_clock()).await?;
    let deps = &state.engine_deps();
    let alarms = crate::settle::books::reconcile(deps).await?;
    match cmd {
        BooksCommand::Unmatched { limit } => {
            let rows = crate::store::books::unmatched(&state.db, limit.clamp(1, 10_000)).await?;
            emit(out, &json!({ "unmatched": rows }));
            Ok(())
        }
        BooksCommand::Acknowledge { chain, tx, index, note } => {
            anyhow::ensure!(!note.trim().is_empty(), "--note says what was done about it");
            let now = crate::clock::now_ms();
            let done =
                crate::store::books::acknowledge(&state.db, &chain, &tx, index, note.trim(), now - crate::settle::books::GRACE_MS, now)
                    .await?;
            emit(out, &json!({ "acknowledged": done, "chain": chain, "tx_id": tx, "log_index": index }));
            anyhow::ensure!(done, "no unclaimed movement {chain} {tx} #{index} read more than five minutes ago");
            Ok(())
        }
        BooksCommand::Check => {
            let wallets = crate::settle::books::check(deps).await?;
            let differ = wallets.iter().filter(|w| w.difference != "0").count();
            emit(out, &json!({ "wallets": wallets, "alarms": alarms, "differences": differ }));
            anyhow::ensure!(differ == 0, "{differ} wallet(s) differ from the chain");
            anyhow::ensure!(
                alarms.unexplained_outgoing == 0 && alarms.unseen_credits == 0 && alarms.stalled_wallets == 0,
                "the books hold movements no payment explains: {alarms:?}"
            );
            Ok(())
        }
    }
}
