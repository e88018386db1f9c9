//! Chain families. Each family is a driver that the settlement engine calls
//! for everything chain-specific: signing an adapter's signing request with a
//! host-held key, turning a settle step into signed bytes that are stored
//! before they are broadcast, re-sending stored bytes, following a
//! transaction to finality, and reading balances. The engine's state machine
//! knows none of it; a new family is a crate beside `stablerail-evm`, its
//! facts (`stablerail_types::facts`), an adapter and config.

pub use stablerail_chain::chain;
pub use stablerail_types::facts;
pub mod keys;
pub mod module;
pub mod permit2;

use std::collections::HashMap;
use std::sync::Arc;

use self::chain::ChainError;
use self::keys::Role;
use crate::config::Family;
use crate::payment::{Authorization, Movement, SigningRequest, Submission, VerifiedPayment};
use crate::store::settlement::{StoredTx, TxRow};

pub use facts::{Facts, ALL};

/// Why signed bytes did not go out, or what the node made of them. The
/// strings are for the logs only.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SendError {
    /// The node (or the database) could not be reached: try again later.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The call would fail on chain (simulation or estimation): nothing was sent.
    #[error("transaction would revert: {0}")]
    WouldRevert(String),
    /// The transaction's slot (its nonce) is used by another transaction:
    /// unless this one was mined, it never will be, so the step is signed again.
    #[error("superseded by another transaction")]
    Superseded,
    /// A payer's own signed transaction can never land (its slot is used).
    #[error("the payer's transaction can never land: {0}")]
    Lost(String),
    /// The sender cannot pay the network fee.
    #[error("sender cannot pay the network fee: {0}")]
    Unfunded(String),
    /// The node refused the signed bytes for another reason (fees, size, …).
    #[error("node refused the transaction: {0}")]
    Refused(String),
    /// The submission is not one this family can send.
    #[error("cannot submit: {0}")]
    Unsupported(String),
    /// The call, run from the relayer, needs more gas than a payer-caused
    /// call may (`contract_payer_gas_cap`): nothing was sent.
    #[error("the call needs more gas than a payment may: {0}")]
    OverGasCap(String),
}

/// What a stored transaction's re-send found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resent {
    /// It is on chain or in the node's pool: follow it.
    InFlight,
    /// Dropped for good: its slot (an EVM nonce; a Solana blockhash once
    /// expired) is used or gone and the chain does not have it. The step is
    /// signed again; the authorization inside is the same, so money moves once.
    Superseded,
}

/// A transaction's final record, as the chain gives it, for the adapter's
/// `read-receipt` (the text) and the driver (the JSON).
pub struct Receipt {
    pub json: serde_json::Value,
    pub text: String,
}

/// Most `finality` reads at once when a family reads them one by one.
pub const FINALITY_READS_AT_ONCE: usize = 16;

/// Where a transaction stands.
pub enum Finality {
    /// Not included yet, or not as deep as required.
    Pending,
    /// Included and executed, with at least the confirmations asked for.
    Confirmed(Arc<Receipt>),
    /// Included and failed.
    Failed,
}

/// How a submission is sent.
#[derive(Debug, Clone, Default)]
pub struct Submit {
    /// Re-read the sender's chain state (nonce) before signing: the last
    /// attempt found its slot taken.
    pub resync: bool,
    /// Whether it may share a transaction with other callers' calls.
    pub share: Share,
    /// It carries a payer's authorization, whose checks the payer's
    /// contract may make costly: its gas, measured from the relayer, must
    /// stay under the chain's cap or nothing is sent.
    pub payer_caused: bool,
}

/// Whether a relayer call may go out in one transaction (a Multicall3
/// batch) with other callers' calls, and with which.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Share {
    /// Sent alone: a call that checks its sender, or whose proof on chain
    /// could be taken for another call's.
    #[default]
    Alone,
    /// With calls of the same `group` only, none of which holds one of
    /// its `keys`: a receipt's events are read per group, and two calls
    /// with a key in common (one channel) could each take the other's.
    /// `signers`: addresses whose signatures the call has checked on chain;
    /// one with code would run it inside the shared transaction (gas it
    /// can make cheap in a simulation and dear in the block, starving the
    /// calls after it), so the call goes alone then.
    Apart { group: &'static str, keys: Vec<[u8; 32]>, signers: Vec<String> },
}

impl Share {
    /// A payment's transfer, which its own proof (its authorization's
    /// nonce, its Transfer) tells from every other call's. A contract
    /// payer's is measured against the chain's cap instead
    /// (`Submit::payer_caused`).
    pub const TRANSFERS: Share = Share::Apart { group: "transfers", keys: Vec::new(), signers: Vec::new() };

    pub fn shared(&self) -> bool {
        *self != Share::Alone
    }
}

/// One balance: the chain's native coin (under its `native_asset` key) or
/// a served asset, in base units.
pub struct Balance {
    pub chain: String,
    pub asset: String,
    pub raw: alloy_primitives::U256,
    pub decimals: u8,
}

/// Per-process memory of the upkeep between passes: each (chain, sender)'s
/// progress at the previous look.
pub type Upkeep = HashMap<(String, String), u64>;

/// What a keyless budget counts for a settlement whose cost the payer
/// cannot change (an EOA's EVM transfer in a batch costs 40,000-90,000).
pub const USUAL_SETTLEMENT_GAS: u64 = 100_000;

#[async_trait::async_trait]
pub trait Driver: Send + Sync {
    fn family(&self) -> Family;

    /// A host-held wallet's address, in this family's form.
    async fn address(&self, wallet: &Role) -> anyhow::Result<String>;

    /// Sign an adapter's signing request with a host-held wallet.
    async fn sign(&self, wallet: &Role, request: &SigningRequest) -> anyhow::Result<Vec<u8>>;

    /// Turn a step's submission into signed bytes (`wallet` signs what the
    /// host signs), store them under `row`, and only then broadcast.
    /// Returns the transaction's id.
    async fn submit(&self, chain: &str, wallet: &Role, submission: &Submission, row: TxRow, how: Submit) -> Result<String, SendError>;

    /// Send stored bytes again, as they are.
    async fn resend(&self, chain: &str, stored: &StoredTx) -> Result<Resent, SendError>;

    /// Where a transaction stands; `Confirmed` only with `confirmations`.
    async fn finality(&self, chain: &str, tx: &str, confirmations: u64) -> Result<Finality, SendError>;

    /// `finality` of many transactions at once (one pass of the follower):
    /// a family whose node reads them in one request says so here.
    async fn finality_many(&self, chain: &str, txs: &[String], confirmations: u64) -> Vec<Result<Finality, SendError>> {
        let mut out = Vec::with_capacity(txs.len());
        for some in txs.chunks(FINALITY_READS_AT_ONCE) {
            out.extend(futures::future::join_all(some.iter().map(|tx| self.finality(chain, tx, confirmations))).await);
        }
        out
    }

    /// The chain's head (block or slot number), when a read of it is
    /// cheap: the follower of parked transactions reads their receipts only
    /// when it moves. `None`: every look reads them.
    async fn head(&self, _chain: &str) -> Result<Option<u64>, SendError> {
        Ok(None)
    }

    /// Did a stored transaction carry other intents' calls too (a batch)?
    /// Then its failure says nothing certain about any one of them.
    fn shared(&self, chain: &str, stored: &StoredTx) -> bool;

    /// Could a stored transaction still be included? `true` when unsure.
    async fn can_land(&self, chain: &str, stored: &StoredTx) -> bool;

    /// Transactions mined since `since_ms` that used the payer's
    /// authorization `auth` to move `payment` (its amount of the asset's
    /// token from payer to payTo), whoever sent them: a front-runner may
    /// land an authorization before the service does. Only the chain's
    /// proof of the authorization's own use counts (`payment::Authorization`);
    /// a family, or an authorization, whose use only the service's own
    /// transaction can prove finds none.
    async fn landed(
        &self,
        _chain: &str,
        _asset: &crate::config::Asset,
        _payment: &VerifiedPayment,
        _auth: &Authorization,
        _since_ms: i64,
    ) -> Result<Vec<String>, SendError> {
        Ok(vec![])
    }

    /// The token movements confirmed transaction `tx` (its `receipt`) may
    /// credit to `payment` made under `auth`, in the order the books should
    /// try them (each is credited to one payment at most): the exact one
    /// where the chain pairs it with the authorization. By default the one
    /// transfer a payer-signed transaction carries (a Solana payment: the
    /// adapter's reading of the receipt checked it).
    fn movements(&self, tx: &str, _receipt: &Receipt, token: &str, payment: &VerifiedPayment, _auth: &Authorization) -> Vec<Movement> {
        vec![Movement {
            tx: tx.to_string(),
            index: 0,
            token: token.to_string(),
            from: payment.payer.clone(),
            to: payment.pay_to.clone(),
            amount: payment.amount.clone(),
            block: 0,
            fee: None,
        }]
    }

    /// The newest block of `chain` with the confirmations it needs, and
    /// never the node's head (whose state may be the next block's in the
    /// making): what the books' reconciler reads up to. `None` where the family has no
    /// reconciliation read (its movements are only the ones it credits).
    async fn final_block(&self, _chain: &str) -> Result<Option<u64>, SendError> {
        Ok(None)
    }

    /// `wallet`'s balance of `token` as of `block`.
    async fn balance_at(&self, _chain: &str, _token: &str, _wallet: &str, _block: u64) -> Result<alloy_primitives::U256, SendError> {
        Err(SendError::Unsupported("no reconciliation read in this family".into()))
    }

    /// Every movement of `token` into or out of `wallet` in blocks
    /// `from..=to`, whoever made it.
    async fn wallet_movements(&self, _chain: &str, _token: &str, _wallet: &str, _from: u64, _to: u64) -> Result<Vec<Movement>, SendError> {
        Err(SendError::Unsupported("no reconciliation read in this family".into()))
    }

    /// The most relayer gas settling one payment of `payer` (its x402
    /// `payload`) can cost on `chain`: what a keyless budget counts. Where
    /// a payer cannot change the fee (a Solana or TRON settlement), each
    /// counts as a usual EVM call does, so the budget bounds their number.
    async fn most_settlement_gas(&self, _chain: &str, _payer: &str, _payload: &str) -> Result<u64, SendError> {
        Ok(USUAL_SETTLEMENT_GAS)
    }

    /// Most blocks one `wallet_movements` call reads (a pass of the books'
    /// reconciler; a long outage catches up over passes).
    fn most_blocks_per_read(&self) -> u64 {
        50_000
    }

    /// Can `owner` receive `token` on `chain` without the sender paying to
    /// open an account for it first (a Solana associated token account)?
    /// Families without such accounts always can.
    async fn can_receive(&self, _chain: &str, _token: &str, _owner: &str) -> Result<bool, SendError> {
        Ok(true)
    }

    /// What confirmed transaction `receipt` credited `recipient` in `token`,
    /// in base units; `None` where the family cannot tell.
    fn credited(&self, _receipt: &Receipt, _token: &str, _recipient: &str) -> Option<alloy_primitives::U256> {
        None
    }

    /// What confirmed transaction `receipt` took from `sender` in `token`,
    /// in base units; `None` where the family cannot tell.
    fn debited(&self, _receipt: &Receipt, _token: &str, _sender: &str) -> Option<alloy_primitives::U256> {
        None
    }

    /// What `chain` says differently from chains.toml about a served asset
    /// (no contract at a configured address, other decimals or EIP-712
    /// domain), one sentence each: each withholds the asset until the
    /// chain agrees. Families with nothing to check find none.
    async fn asset_differences(&self, _chain: &str, _asset: &crate::config::Asset) -> Result<Vec<String>, ChainError> {
        Ok(vec![])
    }

    /// An off-chain grant from `wallet` that lets the asset's spender take
    /// `amount` when the wallet cannot send the approval itself (it holds
    /// no native coin for gas): an x402 payload extension, (name, value),
    /// that the relayer submits with the payment. `None` when no grant is
    /// needed, or the family or the token has none.
    async fn sponsored_allowance(
        &self,
        _chain: &str,
        _asset: &crate::config::Asset,
        _wallet: &Role,
        _amount: &str,
    ) -> Result<Option<(&'static str, serde_json::Value)>, SendError> {
        Ok(None)
    }

    /// What the relayer sends `wallet` (a hosted wallet) so that it can pay
    /// for `calls`, the setup it is about to send itself (an approval of
    /// Permit2 for a token without EIP-2612), when it holds less than they
    /// may cost: the shortfall, never more. `None` when it holds enough, or
    /// the family has no such top-up.
    async fn gas_shortfall(
        &self,
        _chain: &str,
        _wallet: &Role,
        _calls: &[crate::payment::SettleStep],
    ) -> Result<Option<crate::payment::Submission>, SendError> {
        Ok(None)
    }

    /// The sender (the account that signed and owns it) of transaction `tx`
    /// if the chain knows it yet (in a block, or in the node's pool where it
    /// keeps one); `None` while it does not.
    async fn sender_of(&self, chain: &str, tx: &str) -> Result<Option<String>, SendError>;

    /// Native and served-asset balances of `owner` on `chain`.
    async fn balances(&self, chain: &str, owner: &str) -> Result<Vec<Balance>, ChainError>;

    /// Repair what a crash or a lost mempool left behind (stalled senders).
    async fn upkeep(&self, seen: &mut Upkeep) -> anyhow::Result<()>;
}

/// The exactly-once rule every driver keeps: a signed transaction's bytes
/// are stored under its row (durable before the call returns) and only then
/// handed to `broadcast`. A crash after the store is a re-send of the same
/// bytes (`Driver::resend`), never a second transaction. (An EVM relayer's
/// transaction is stored with its nonce in one database transaction:
/// `evm::tx::sign_store_send`.)
#[allow(clippy::too_many_arguments)]
pub async fn store_then_broadcast<T, F, Fut>(
    db: &crate::db::Db,
    row: &TxRow,
    chain: &str,
    sender: &str,
    raw: &[u8],
    id: &str,
    broadcast: F,
) -> Result<T, SendError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T, SendError>>,
{
    let new = crate::store::settlement::NewTx {
        intent_id: &row.intent_id,
        leg: &row.leg,
        step: row.step,
        label: &row.label,
        chain,
        sender,
        nonce: -1,
        raw,
        tx_hash: id,
    };
    crate::store::settlement::insert_tx(db, &new, crate::clock::now_ms())
        .await
        .map_err(|e| SendError::Unavailable(format!("database: {e}")))?;
    broadcast().await
}
