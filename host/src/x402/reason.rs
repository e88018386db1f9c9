//! x402's reason codes, from the adapters' typed refusals and the
//! facilitator's own checks, each with a fixed sentence. The only place a
//! refusal becomes a code; adapter detail goes to the log, never the answer.

use crate::payment::ProofError;

/// Why a payment is not valid (verify) or did not settle (settle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    InvalidX402Version,
    InvalidNetwork,
    UnsupportedScheme,
    InvalidPaymentRequirements,
    InvalidPayload,
    RecipientMismatch,
    ValueMismatch,
    ValidAfter,
    ValidBefore,
    Signature,
    NonceAlreadyUsed,
    InsufficientFunds,
    AllowanceRequired,
    /// The transfer was refused by the chain or mined without effect.
    TransactionState,
    /// Another payload with the same authorization was settled or is settling.
    DuplicateSettlement,
    /// payment-identifier: same payer and id, another payload.
    PaymentIdentifierConflict,
    /// Keyless access: below `public_min_amount` or to a payTo not allowed.
    NotAllowed,
    /// A transaction is out and not final yet.
    SettlementPending,
    /// The chain could not be asked: nothing is known either way.
    ChainUnavailable,
}

impl Reason {
    pub const ALL: [Reason; 19] = {
        use Reason::*;
        [
            InvalidX402Version,
            InvalidNetwork,
            UnsupportedScheme,
            InvalidPaymentRequirements,
            InvalidPayload,
            RecipientMismatch,
            ValueMismatch,
            ValidAfter,
            ValidBefore,
            Signature,
            NonceAlreadyUsed,
            InsufficientFunds,
            AllowanceRequired,
            TransactionState,
            DuplicateSettlement,
            PaymentIdentifierConflict,
            NotAllowed,
            SettlementPending,
            ChainUnavailable,
        ]
    };

    pub fn code(self) -> &'static str {
        match self {
            Reason::InvalidX402Version => "invalid_x402_version",
            Reason::InvalidNetwork => "invalid_network",
            Reason::UnsupportedScheme => "unsupported_scheme",
            Reason::InvalidPaymentRequirements => "invalid_payment_requirements",
            Reason::InvalidPayload => "invalid_payload",
            Reason::RecipientMismatch => "invalid_exact_evm_payload_recipient_mismatch",
            Reason::ValueMismatch => "invalid_exact_evm_payload_authorization_value_mismatch",
            Reason::ValidAfter => "invalid_exact_evm_payload_authorization_valid_after",
            Reason::ValidBefore => "invalid_exact_evm_payload_authorization_valid_before",
            Reason::Signature => "invalid_exact_evm_payload_signature",
            Reason::NonceAlreadyUsed => "invalid_exact_evm_nonce_already_used",
            Reason::InsufficientFunds => "insufficient_funds",
            Reason::AllowanceRequired => "permit2_allowance_required",
            Reason::TransactionState => "invalid_transaction_state",
            Reason::DuplicateSettlement => "duplicate_settlement",
            Reason::PaymentIdentifierConflict => "payment_identifier_conflict",
            Reason::NotAllowed => "payment_not_allowed",
            Reason::SettlementPending => "settlement_pending",
            Reason::ChainUnavailable => "unexpected_settle_error",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Reason::InvalidX402Version => "this x402 version is not supported",
            Reason::InvalidNetwork => "the network is not served by this facilitator",
            Reason::UnsupportedScheme => "the scheme is not served for this network and asset",
            Reason::InvalidPaymentRequirements => "the payment requirements are malformed or name an asset that is not served",
            Reason::InvalidPayload => "the payment payload is malformed or does not answer the requirements",
            Reason::RecipientMismatch => "the authorization pays another recipient than payTo",
            Reason::ValueMismatch => "the authorized amount is not the required amount",
            Reason::ValidAfter => "the authorization is not valid yet",
            Reason::ValidBefore => "the authorization has expired",
            Reason::Signature => "the signature is not the payer's over this authorization",
            Reason::NonceAlreadyUsed => "the authorization was already used",
            Reason::InsufficientFunds => "the payer's balance does not cover the amount",
            Reason::AllowanceRequired => "the payer has not approved Permit2 for this token",
            Reason::TransactionState => "the settlement transaction was refused by the chain; no funds moved",
            Reason::DuplicateSettlement => "this authorization was already settled with another payload",
            Reason::PaymentIdentifierConflict => "this payment identifier was used with another payload",
            Reason::NotAllowed => "this payment is not allowed without a facilitator key",
            Reason::SettlementPending => "the transfer is broadcast and not final yet; settle the same payload again",
            Reason::ChainUnavailable => "the chain could not be reached; nothing was settled, try again",
        }
    }
}

impl From<&ProofError> for Reason {
    fn from(e: &ProofError) -> Self {
        match e {
            ProofError::Malformed(_) | ProofError::RequirementsMismatch(_) => Reason::InvalidPayload,
            ProofError::Unsupported(_) => Reason::UnsupportedScheme,
            ProofError::WrongRecipient(_) => Reason::RecipientMismatch,
            ProofError::WrongAmount(_) => Reason::ValueMismatch,
            ProofError::NotYetValid => Reason::ValidAfter,
            ProofError::Expired => Reason::ValidBefore,
            ProofError::InvalidSignature(_) | ProofError::SignerMismatch(_) => Reason::Signature,
            ProofError::AlreadyUsed => Reason::NonceAlreadyUsed,
            ProofError::InsufficientFunds(_) => Reason::InsufficientFunds,
            ProofError::NotApproved(_) => Reason::AllowanceRequired,
            ProofError::ChainUnavailable(_) => Reason::ChainUnavailable,
        }
    }
}

/// A stored reason code back to its reason (for answers from the ledger).
pub fn parse(code: &str) -> Option<Reason> {
    Reason::ALL.into_iter().find(|r| r.code() == code)
}
