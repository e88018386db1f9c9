//! x402's reason codes, from the adapters' typed refusals and the
//! facilitator's own checks, each with a fixed sentence. The only place a
//! refusal becomes a code; adapter detail goes to the log, never the answer.
//!
//! Refusals of a payload's content carry the x402 family whose codes they
//! use (`invalid_exact_evm_…`, `invalid_exact_svm_…`, `invalid_exact_tron_…`),
//! so each client reads the codes its own SDK defines.

use crate::config::Family;
use crate::payment::ProofError;

/// What a payload got wrong, in terms every family has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    RecipientMismatch,
    ValueMismatch,
    ValidAfter,
    ValidBefore,
    Signature,
    NonceAlreadyUsed,
    /// SVM: the transaction does not decode or breaks the scheme's layout.
    Transaction,
    /// SVM: the requirements name a fee payer this facilitator does not hold.
    FeePayerNotManaged,
    /// SVM: payTo has no token account for the asset, so the transfer
    /// cannot land (and the fee payer would pay for its failure).
    ReceiverAccountMissing,
}

impl Fault {
    const ALL: [Fault; 9] = [
        Fault::RecipientMismatch,
        Fault::ValueMismatch,
        Fault::ValidAfter,
        Fault::ValidBefore,
        Fault::Signature,
        Fault::NonceAlreadyUsed,
        Fault::Transaction,
        Fault::FeePayerNotManaged,
        Fault::ReceiverAccountMissing,
    ];
}

/// Why a payment is not valid (verify) or did not settle (settle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    InvalidX402Version,
    InvalidNetwork,
    UnsupportedScheme,
    InvalidPaymentRequirements,
    InvalidPayload,
    /// A payload fault, coded in its family's terms.
    Payload(Family, Fault),
    InsufficientFunds,
    AllowanceRequired,
    /// The transfer was refused by the chain or mined without effect.
    TransactionState,
    /// This authorization (or Solana transaction) was settled already, or is
    /// being settled for another request.
    DuplicateSettlement,
    /// payment-identifier: same payer and id, another payload.
    PaymentIdentifierConflict,
    /// Keyless access: below `public_min_amount` or to a payTo not allowed.
    NotAllowed,
    /// A transaction is out and not final yet.
    SettlementPending,
    /// The chain could not be asked: nothing is known either way.
    ChainUnavailable,
    /// An ERC-6492 payer (a smart wallet not deployed yet) where the scheme
    /// cannot deploy it first (Permit2).
    UndeployedSmartWallet,
    /// An ERC-6492 payer whose factory is not on the chain's allowlist.
    FactoryNotAllowed,
    /// The payer's contract needs more gas to check than the chain allows.
    GasCapExceeded,
    /// A refusal by the batch-settlement spec's own code.
    Batch(batch_wire::payload::Fault),
}

impl Reason {
    /// Every reason, for reading stored codes back and for the docs' table.
    pub fn all() -> Vec<Reason> {
        use Reason::*;
        let mut all = vec![
            InvalidX402Version,
            InvalidNetwork,
            UnsupportedScheme,
            InvalidPaymentRequirements,
            InvalidPayload,
            InsufficientFunds,
            AllowanceRequired,
            TransactionState,
            DuplicateSettlement,
            PaymentIdentifierConflict,
            NotAllowed,
            SettlementPending,
            ChainUnavailable,
            UndeployedSmartWallet,
            FactoryNotAllowed,
            GasCapExceeded,
        ];
        for family in crate::family::ALL {
            all.extend(Fault::ALL.into_iter().map(|f| Payload(family, f)));
        }
        all.extend(batch_wire::payload::Fault::ALL.into_iter().map(Batch));
        all
    }

    pub fn code(self) -> &'static str {
        match self {
            Reason::InvalidX402Version => "invalid_x402_version",
            Reason::InvalidNetwork => "invalid_network",
            Reason::UnsupportedScheme => "unsupported_scheme",
            Reason::InvalidPaymentRequirements => "invalid_payment_requirements",
            Reason::InvalidPayload => "invalid_payload",
            Reason::Payload(family, fault) => payload_code(family, fault),
            Reason::InsufficientFunds => "insufficient_funds",
            Reason::AllowanceRequired => "permit2_allowance_required",
            Reason::TransactionState => "invalid_transaction_state",
            Reason::DuplicateSettlement => "duplicate_settlement",
            Reason::PaymentIdentifierConflict => "payment_identifier_conflict",
            Reason::NotAllowed => "payment_not_allowed",
            Reason::SettlementPending => "settlement_pending",
            Reason::ChainUnavailable => "unexpected_settle_error",
            Reason::UndeployedSmartWallet => "invalid_exact_evm_payload_undeployed_smart_wallet",
            Reason::FactoryNotAllowed => "eip6492_factory_not_allowed",
            Reason::GasCapExceeded => "payer_gas_cap_exceeded",
            Reason::Batch(f) => f.code(),
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Reason::InvalidX402Version => "this x402 version is not supported",
            Reason::InvalidNetwork => "the network is not served by this facilitator",
            Reason::UnsupportedScheme => "the scheme is not served for this network and asset",
            Reason::InvalidPaymentRequirements => "the payment requirements are malformed or name an asset that is not served",
            Reason::InvalidPayload => "the payment payload is malformed or does not answer the requirements",
            Reason::Payload(_, Fault::RecipientMismatch) => "the payment pays another recipient than payTo",
            Reason::Payload(_, Fault::ValueMismatch) => "the authorized amount is not the required amount",
            Reason::Payload(_, Fault::ValidAfter) => "the authorization is not valid yet",
            Reason::Payload(Family::Solana, Fault::ValidBefore) => "the transaction's blockhash has expired; it can never land",
            Reason::Payload(_, Fault::ValidBefore) => "the authorization has expired",
            Reason::Payload(_, Fault::Signature) => "the signature is not the payer's over this payment",
            Reason::Payload(_, Fault::NonceAlreadyUsed) => "the authorization was already used",
            Reason::Payload(_, Fault::Transaction) => "the transaction is malformed or breaks the exact scheme's rules",
            Reason::Payload(_, Fault::FeePayerNotManaged) => "extra.feePayer is not a fee payer of this facilitator",
            Reason::Payload(_, Fault::ReceiverAccountMissing) => {
                "payTo has no token account for this asset; it must open one before it can be paid"
            }
            Reason::InsufficientFunds => "the payer's balance does not cover the amount",
            Reason::AllowanceRequired => "the payer has not approved Permit2 for this token",
            Reason::TransactionState => "the settlement transaction was refused by the chain, or its transfer is credited to another payment; the authorization moved nothing for this one",
            Reason::DuplicateSettlement => "this payment was already settled",
            Reason::PaymentIdentifierConflict => "this payment identifier was used with another payload",
            Reason::NotAllowed => "this payment is not allowed without a facilitator key",
            Reason::SettlementPending => "the transfer is broadcast and not final yet; settle the same payload again",
            Reason::ChainUnavailable => "the chain could not be reached; nothing was settled, try again",
            Reason::UndeployedSmartWallet => "the payer is a smart wallet that is not deployed yet; this scheme cannot deploy it",
            Reason::FactoryNotAllowed => "the payer's smart wallet would be deployed by a factory this facilitator does not allow",
            Reason::GasCapExceeded => "the paying contract needs more gas to check than this facilitator allows on this chain",
            Reason::Batch(f) => f.sentence(),
        }
    }

    /// An adapter's refusal, in the codes of the chain's family.
    pub fn refusal(family: Family, e: &ProofError) -> Reason {
        let fault = |f| Reason::Payload(family, f);
        let svm = family == Family::Solana;
        match e {
            ProofError::Malformed(_) | ProofError::Unsupported(_) if svm => fault(Fault::Transaction),
            ProofError::Malformed(_) | ProofError::RequirementsMismatch(_) => Reason::InvalidPayload,
            ProofError::Unsupported(_) => Reason::UnsupportedScheme,
            ProofError::WrongRecipient(_) => fault(Fault::RecipientMismatch),
            ProofError::WrongAmount(_) => fault(Fault::ValueMismatch),
            ProofError::NotYetValid => fault(Fault::ValidAfter),
            ProofError::Expired => fault(Fault::ValidBefore),
            ProofError::InvalidSignature(_) | ProofError::SignerMismatch(_) => fault(Fault::Signature),
            // A Solana transaction is spent by landing: the same one again is a duplicate.
            ProofError::AlreadyUsed if svm => Reason::DuplicateSettlement,
            ProofError::AlreadyUsed => fault(Fault::NonceAlreadyUsed),
            ProofError::InsufficientFunds(_) => Reason::InsufficientFunds,
            ProofError::NotApproved(_) => Reason::AllowanceRequired,
            ProofError::ChainUnavailable(_) => Reason::ChainUnavailable,
            ProofError::UndeployedSmartWallet(_) => Reason::UndeployedSmartWallet,
            ProofError::FactoryNotAllowed(_) => Reason::FactoryNotAllowed,
            ProofError::GasCapExceeded => Reason::GasCapExceeded,
            // Codes the host knows, each with its sentence; any other an
            // adapter names is not passed on as a code of ours.
            ProofError::Scheme { code, .. } => batch_wire::payload::Fault::parse(code).map_or(Reason::InvalidPayload, Reason::Batch),
        }
    }
}

/// The codes of `@x402/evm` and `@x402/svm` 2.27, and of the x402 TRON
/// scheme draft (which mirrors EVM's where it names none).
fn payload_code(family: Family, fault: Fault) -> &'static str {
    match (family, fault) {
        (Family::Solana, Fault::RecipientMismatch) => "invalid_exact_svm_payload_recipient_mismatch",
        (Family::Solana, Fault::ValueMismatch) => "invalid_exact_svm_payload_amount_mismatch",
        (Family::Solana, Fault::Signature) => "invalid_exact_svm_payload_signature_invalid",
        (Family::Solana, Fault::ValidBefore) => "invalid_exact_svm_transaction_simulation_failed",
        (Family::Solana, Fault::FeePayerNotManaged) => "invalid_exact_svm_fee_payer_not_managed_by_facilitator",
        (Family::Solana, Fault::ReceiverAccountMissing) => "invalid_exact_svm_payload_transaction_receiver_ata_not_found",
        (Family::Solana, _) => "invalid_exact_svm_payload_transaction",
        (Family::Tron, Fault::RecipientMismatch) => "invalid_exact_tron_payload_recipient_mismatch",
        (Family::Tron, Fault::ValueMismatch) => "invalid_exact_tron_payload_authorization_value_mismatch",
        (Family::Tron, Fault::ValidAfter) => "invalid_exact_tron_payload_authorization_valid_after",
        (Family::Tron, Fault::ValidBefore) => "invalid_exact_tron_payload_authorization_valid_before",
        (Family::Tron, Fault::Signature) => "invalid_exact_tron_payload_signature",
        (Family::Tron, Fault::NonceAlreadyUsed) => "invalid_exact_tron_nonce_already_used",
        (Family::Tron, _) => "invalid_payload",
        (_, Fault::RecipientMismatch) => "invalid_exact_evm_payload_recipient_mismatch",
        (_, Fault::ValueMismatch) => "invalid_exact_evm_payload_authorization_value_mismatch",
        (_, Fault::ValidAfter) => "invalid_exact_evm_payload_authorization_valid_after",
        (_, Fault::ValidBefore) => "invalid_exact_evm_payload_authorization_valid_before",
        (_, Fault::Signature) => "invalid_exact_evm_payload_signature",
        (_, Fault::NonceAlreadyUsed) => "invalid_exact_evm_nonce_already_used",
        (_, _) => "invalid_payload",
    }
}

/// A stored reason code back to its reason (for answers from the ledger).
/// Codes shared by several reasons read back as the first; they say the same.
pub fn parse(code: &str) -> Option<Reason> {
    Reason::all().into_iter().find(|r| r.code() == code)
}
