//! Why an intent failed, or why it is waiting: a stable code that programs
//! branch on, beside one fixed sentence that people read. Node errors, URLs
//! and other internals never go into either; they go to the logs.

use crate::payment::ProofError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A chain's node did not answer; the engine keeps trying.
    ChainUnavailable,
    /// The service's relayer cannot pay gas on a chain.
    RelayerUnfunded,
    /// The payout wallet cannot cover the payout (or its setup).
    PayoutWalletShort,
    /// The payout could not be sent for another reason; retried.
    PayoutNotDispatched,
    /// The `/v2` agent's wallet holds less than the payment.
    AgentWalletShort,
    /// The agent's wallet could not make its one-time token approval.
    AgentWalletNotReady,
    /// Another payment the agent's gasless wallet signed a permit for is
    /// still settling on this chain; this one follows it.
    AgentWalletBusy,
    /// The payer's balance does not cover the payment.
    InsufficientFunds,
    /// The payer's authorization was used already.
    AuthorizationUsed,
    /// The payer has not approved the token's spender.
    NotApproved,
    /// The proof does not verify (signature, amount, window, …).
    ProofInvalid,
    /// The source transaction was mined and reverted: nothing moved.
    SourceReverted,
    /// The compliance screen declined the payer.
    Declined,
    /// Payer funds were collected and no stored payout can land any more.
    NeedsReconciliation,
    /// The payout would have to create the recipient's token account, whose
    /// rent the payment's fee did not include.
    RecipientAccountMissing,
    /// The transfer that used the payer's authorization is credited to
    /// another payment in the books (one movement, one credit).
    CreditedElsewhere,
    /// The payer's contract needs more gas to check than the chain allows.
    GasCapExceeded,
}

impl Failure {
    pub const ALL: [Failure; 17] = [
        Failure::ChainUnavailable,
        Failure::RelayerUnfunded,
        Failure::PayoutWalletShort,
        Failure::PayoutNotDispatched,
        Failure::AgentWalletShort,
        Failure::AgentWalletNotReady,
        Failure::AgentWalletBusy,
        Failure::InsufficientFunds,
        Failure::AuthorizationUsed,
        Failure::NotApproved,
        Failure::ProofInvalid,
        Failure::SourceReverted,
        Failure::Declined,
        Failure::NeedsReconciliation,
        Failure::RecipientAccountMissing,
        Failure::CreditedElsewhere,
        Failure::GasCapExceeded,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Failure::ChainUnavailable => "chain_unavailable",
            Failure::RelayerUnfunded => "relayer_unfunded",
            Failure::PayoutWalletShort => "payout_wallet_short",
            Failure::PayoutNotDispatched => "payout_not_dispatched",
            Failure::AgentWalletShort => "agent_wallet_short",
            Failure::AgentWalletNotReady => "agent_wallet_not_ready",
            Failure::AgentWalletBusy => "agent_wallet_busy",
            Failure::InsufficientFunds => "insufficient_funds",
            Failure::AuthorizationUsed => "authorization_used",
            Failure::NotApproved => "not_approved",
            Failure::ProofInvalid => "proof_invalid",
            Failure::SourceReverted => "source_reverted",
            Failure::Declined => "payment_declined",
            Failure::NeedsReconciliation => "needs_reconciliation",
            Failure::RecipientAccountMissing => "recipient_account_missing",
            Failure::CreditedElsewhere => "credited_elsewhere",
            Failure::GasCapExceeded => "payer_gas_cap_exceeded",
        }
    }

    pub fn parse(code: &str) -> Option<Failure> {
        Failure::ALL.into_iter().find(|f| f.code() == code)
    }

    /// The fixed sentence users read.
    pub fn sentence(self) -> &'static str {
        match self {
            Failure::ChainUnavailable => "a chain's node is not answering; the service keeps trying",
            Failure::RelayerUnfunded => "the service's relayer cannot pay gas on this chain yet; the service keeps trying",
            Failure::PayoutWalletShort => "service temporarily unavailable: payment wallet has insufficient balance",
            Failure::PayoutNotDispatched => "the payout could not be sent yet; the service keeps trying",
            Failure::AgentWalletShort => "agent wallet has insufficient balance on payer chain",
            Failure::AgentWalletNotReady => "agent wallet could not approve its token spender",
            Failure::AgentWalletBusy => "another payment from the agent wallet is settling on this chain; this one follows",
            Failure::InsufficientFunds => "proof validation failed: insufficient funds",
            Failure::AuthorizationUsed => "proof validation failed: authorization was already used",
            Failure::NotApproved => "proof validation failed: token allowance missing",
            Failure::ProofInvalid => "proof validation failed",
            Failure::SourceReverted => "source settlement failed: the payer's authorization was not used on chain; nothing was credited",
            Failure::Declined => "payment declined by the compliance screen",
            Failure::NeedsReconciliation => {
                "payer funds were collected and the payout cannot land; an operator must reconcile this payment"
            }
            Failure::RecipientAccountMissing => {
                "the recipient's token account was closed after the payment was quoted; the payout waits until the recipient opens it again"
            }
            Failure::GasCapExceeded => "proof validation failed: the paying contract needs more gas to check than this chain allows",
            Failure::CreditedElsewhere => {
                "the transfer that used this payment's authorization is credited to another payment; nothing was credited to this one"
            }
        }
    }
}

/// A code and what users read about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub code: Failure,
    pub message: String,
}

impl From<Failure> for Reason {
    fn from(code: Failure) -> Reason {
        Reason { code, message: code.sentence().to_string() }
    }
}

impl Reason {
    /// A payer's proof was refused by its adapter. The adapter's own words
    /// about the proof are kept (they say what to fix, e.g. "send
    /// approve(Permit2, 0) first"); a chain error is only ever the fixed
    /// sentence.
    pub fn proof(e: &ProofError) -> Reason {
        let code = match e {
            ProofError::ChainUnavailable(_) => return Failure::ChainUnavailable.into(),
            ProofError::InsufficientFunds(_) => Failure::InsufficientFunds,
            ProofError::AlreadyUsed => Failure::AuthorizationUsed,
            ProofError::NotApproved(_) => Failure::NotApproved,
            ProofError::GasCapExceeded => return Failure::GasCapExceeded.into(),
            _ => Failure::ProofInvalid,
        };
        Reason { code, message: proof_message(e) }
    }
}

/// What the API says when a chain's node cannot be reached.
pub const CHAIN_UNAVAILABLE: &str = "service temporarily unavailable: a chain's node is not answering; try again shortly";

/// The words for a refused proof: the adapter's account of what is wrong
/// with the proof itself (never a node's answer).
pub fn proof_message(e: &ProofError) -> String {
    let detail = match e {
        ProofError::ChainUnavailable(_) => return CHAIN_UNAVAILABLE.into(),
        ProofError::Malformed(m) => format!("malformed payment payload: {m}"),
        ProofError::Unsupported(m) => format!("unsupported payment: {m}"),
        ProofError::RequirementsMismatch(m) => format!("payment does not match the intent: {m}"),
        ProofError::WrongRecipient(m) => format!("wrong recipient: {m}"),
        ProofError::WrongAmount(m) => format!("wrong amount: {m}"),
        ProofError::NotYetValid => "authorization is not valid yet".into(),
        ProofError::Expired => "authorization has expired".into(),
        ProofError::InvalidSignature(m) => format!("invalid signature: {m}"),
        ProofError::SignerMismatch(m) => format!("signature is not the payer's: {m}"),
        ProofError::AlreadyUsed => "authorization was already used".into(),
        ProofError::InsufficientFunds(m) => format!("insufficient funds: {m}"),
        ProofError::NotApproved(m) => format!("token allowance missing: {m}"),
        ProofError::UndeployedSmartWallet(m) => format!("the paying smart wallet is not deployed: {m}"),
        ProofError::FactoryNotAllowed(m) => format!("the paying smart wallet's factory is not allowed here: {m}"),
        ProofError::GasCapExceeded => "the paying contract needs more gas to check than this chain allows".into(),
        // The detail is the adapter's, for the log; the code says what it is.
        ProofError::Scheme { code, .. } => format!("refused by the scheme ({code})"),
    };
    format!("proof validation failed: {detail}")
}
