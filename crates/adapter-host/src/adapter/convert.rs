//! Adapter interface records to the host's payment types and back
//! (`crate::payment`). 0.2.0 uses 0.1.0's records, so one set of
//! conversions serves both versions.

use super::wit::types as wit;
use crate::payment as p;

pub(super) fn family(f: p::Family) -> wit::Family {
    match f {
        p::Family::Evm => wit::Family::Evm,
        p::Family::Solana => wit::Family::Solana,
        p::Family::Tron => wit::Family::Tron,
    }
}

pub(super) fn family_of(f: wit::Family) -> p::Family {
    match f {
        wit::Family::Evm => p::Family::Evm,
        wit::Family::Solana => p::Family::Solana,
        wit::Family::Tron => p::Family::Tron,
    }
}

pub(super) fn terms(t: &p::Terms) -> wit::Terms {
    wit::Terms { amount: t.amount.clone(), pay_to: t.pay_to.clone(), max_timeout_seconds: t.max_timeout_seconds }
}

pub(super) fn requirements(r: &p::PaymentRequirements) -> wit::PaymentRequirements {
    wit::PaymentRequirements {
        scheme: r.scheme.clone(),
        network: r.network.clone(),
        amount: r.amount.clone(),
        asset: r.asset.clone(),
        pay_to: r.pay_to.clone(),
        max_timeout_seconds: r.max_timeout_seconds,
        extra: r.extra.clone(),
    }
}

pub(super) fn payment(v: &p::VerifiedPayment) -> wit::VerifiedPayment {
    wit::VerifiedPayment {
        payer: v.payer.clone(),
        pay_to: v.pay_to.clone(),
        amount: v.amount.clone(),
        valid_after: v.valid_after,
        valid_before: v.valid_before,
        replay_key: v.replay_key.clone(),
    }
}

pub(super) fn transfer(t: &p::Transfer) -> wit::Transfer {
    wit::Transfer {
        sender: t.sender.clone(),
        recipient: t.recipient.clone(),
        amount: t.amount.clone(),
        valid_after: t.valid_after,
        valid_before: t.valid_before,
        nonce: t.nonce.clone(),
    }
}

impl From<wit::PaymentRequirements> for p::PaymentRequirements {
    fn from(r: wit::PaymentRequirements) -> Self {
        p::PaymentRequirements {
            scheme: r.scheme,
            network: r.network,
            amount: r.amount,
            asset: r.asset,
            pay_to: r.pay_to,
            max_timeout_seconds: r.max_timeout_seconds,
            extra: r.extra,
        }
    }
}

impl From<wit::VerifiedPayment> for p::VerifiedPayment {
    fn from(v: wit::VerifiedPayment) -> Self {
        p::VerifiedPayment {
            payer: v.payer,
            pay_to: v.pay_to,
            amount: v.amount,
            valid_after: v.valid_after,
            valid_before: v.valid_before,
            replay_key: v.replay_key,
        }
    }
}

impl From<wit::EvmCall> for p::EvmCall {
    fn from(c: wit::EvmCall) -> Self {
        p::EvmCall { to: c.to, data: c.data, value: c.value, gas_limit: c.gas_limit }
    }
}

impl From<wit::SettleStep> for p::SettleStep {
    fn from(s: wit::SettleStep) -> Self {
        let submission = match s.submission {
            wit::Submission::EvmCall(c) => p::Submission::EvmCall(c.into()),
            wit::Submission::EvmRaw(raw) => p::Submission::EvmRaw(raw),
            wit::Submission::SolanaCosign(c) => {
                p::Submission::SolanaCosign(p::SolanaCosign { transaction: c.transaction, fee_payer_index: c.fee_payer_index })
            }
            wit::Submission::TronSigned(t) => {
                p::Submission::TronSigned(p::TronTransaction { raw_data: t.raw_data, signatures: t.signatures })
            }
        };
        p::SettleStep { label: s.label, submission }
    }
}

impl From<wit::SigningRequest> for p::SigningRequest {
    fn from(r: wit::SigningRequest) -> Self {
        match r {
            wit::SigningRequest::Eip712Digest(d) => p::SigningRequest::Eip712Digest(d),
            wit::SigningRequest::TronTxid(d) => p::SigningRequest::TronTxid(d),
            wit::SigningRequest::SolanaMessage(m) => p::SigningRequest::SolanaMessage(m),
        }
    }
}

impl From<wit::ReceiptStatus> for p::ReceiptStatus {
    fn from(r: wit::ReceiptStatus) -> Self {
        match r {
            wit::ReceiptStatus::Pending => p::ReceiptStatus::Pending,
            wit::ReceiptStatus::Settled(t) => {
                p::ReceiptStatus::Settled(p::SettledTransfer { tx_hash: t.tx_hash, to: t.to, amount: t.amount, block: t.block })
            }
            wit::ReceiptStatus::Failed(m) => p::ReceiptStatus::Failed(m),
        }
    }
}

/// `proof-error` of a version into the host's: the thirteen cases 0.1.0
/// named, what a later version added (`$more`), and cases of another shape
/// (after `;`).
macro_rules! proof_error_from {
    ($wit:ty $(, $more:ident)* $(; $($pat:pat => $to:expr),*)?) => {
        impl From<$wit> for p::ProofError {
            fn from(e: $wit) -> Self {
                type W = $wit;
                match e {
                    W::Malformed(m) => p::ProofError::Malformed(m),
                    W::Unsupported(m) => p::ProofError::Unsupported(m),
                    W::RequirementsMismatch(m) => p::ProofError::RequirementsMismatch(m),
                    W::WrongRecipient(m) => p::ProofError::WrongRecipient(m),
                    W::WrongAmount(m) => p::ProofError::WrongAmount(m),
                    W::NotYetValid => p::ProofError::NotYetValid,
                    W::Expired => p::ProofError::Expired,
                    W::InvalidSignature(m) => p::ProofError::InvalidSignature(m),
                    W::SignerMismatch(m) => p::ProofError::SignerMismatch(m),
                    W::AlreadyUsed => p::ProofError::AlreadyUsed,
                    W::InsufficientFunds(m) => p::ProofError::InsufficientFunds(m),
                    W::NotApproved(m) => p::ProofError::NotApproved(m),
                    W::ChainUnavailable(m) => p::ProofError::ChainUnavailable(m),
                    $( W::$more(m) => p::ProofError::$more(m), )*
                    $($( $pat => $to, )*)?
                }
            }
        }
    };
}

proof_error_from!(wit::ProofError);
// 0.5.0: smart-wallet payers.
proof_error_from!(super::wit::v0_5::ProofError, UndeployedSmartWallet, FactoryNotAllowed);
// 0.7.0: a refusal the scheme's spec names by code.
proof_error_from!(super::wit::v0_7::ProofError, UndeployedSmartWallet, FactoryNotAllowed;
    W::Scheme(r) => p::ProofError::Scheme { code: r.code, detail: r.detail });

impl From<wit::AdapterError> for p::AdapterError {
    fn from(e: wit::AdapterError) -> Self {
        use wit::AdapterError as W;
        match e {
            W::InvalidAddress(m) => p::AdapterError::InvalidAddress(m),
            W::InvalidAmount(m) => p::AdapterError::InvalidAmount(m),
            W::Unsupported(m) => p::AdapterError::Unsupported(m),
            W::Config(m) => p::AdapterError::Config(m),
            W::ChainUnavailable(m) => p::AdapterError::ChainUnavailable(m),
            W::Malformed(m) => p::AdapterError::Malformed(m),
        }
    }
}

/// An adapter's answer in host types: `Ok` and `Err` each converted.
pub(super) fn answer<T, E, U: From<T>, F: From<E>>(r: Result<T, E>) -> Result<U, F> {
    r.map(U::from).map_err(F::from)
}
