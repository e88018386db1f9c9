//! The facilitator's verification rules of the scheme (the spec's
//! "Verification Rules" 1–10), as one pure function over what a verifier
//! has read: the requirements, the payload's config and voucher, and the
//! channel's state on chain. Whoever calls it (the adapter, the host) reads
//! the chain and recovers signatures; nothing here trusts the payload for
//! what the requirements or the chain say.

use alloy_primitives::{Address, B256};

use crate::payload::{Fault, SignedVoucher};
use crate::{channel_id, voucher_digest, ChannelConfig, ChannelState, Keccak};

/// The requirements' terms a channel must match.
#[derive(Debug, Clone)]
pub struct Terms {
    pub chain_id: u64,
    pub asset: Address,
    pub pay_to: Address,
    pub receiver_authorizer: Address,
    /// `extra.withdrawDelay`, where the requirements name one.
    pub withdraw_delay: Option<u64>,
}

/// What the voucher comes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Voucher,
    /// A deposit of this amount goes in with it.
    Deposit(u128),
    /// A zero-charge voucher of a cooperative refund.
    Refund,
}

/// Who must have signed the voucher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    /// This EOA (the payer authorizer), checked here by ECDSA.
    Checked,
    /// The payer itself, by EIP-1271 or ECDSA: the caller asks the chain
    /// (`isValidSignature`) or recovers; not decided here.
    Payer(Address),
}

/// The rules, in the spec's order; the channel's id on success.
/// `recover` is ECDSA recovery (the caller's); only canonical signatures
/// count.
pub fn check(
    keccak: Keccak,
    recover: &dyn Fn(&B256, &[u8]) -> Option<Address>,
    terms: &Terms,
    config: &ChannelConfig,
    voucher: &SignedVoucher,
    state: &ChannelState,
    kind: Kind,
) -> Result<(B256, Signer), Fault> {
    // 1. The config hashes to the voucher's channel, on the requirements' chain.
    let id = channel_id(keccak, config, terms.chain_id);
    if id != voucher.channel_id {
        return Err(Fault::ChannelIdMismatch);
    }
    // 2–5. The channel is the one the requirements describe.
    if config.token != terms.asset {
        return Err(Fault::TokenMismatch);
    }
    if config.receiver != terms.pay_to {
        return Err(Fault::ReceiverMismatch);
    }
    if terms.receiver_authorizer == Address::ZERO || config.receiverAuthorizer != terms.receiver_authorizer {
        return Err(Fault::ReceiverAuthorizerMismatch);
    }
    if terms.withdraw_delay.is_some_and(|d| config.withdrawDelay.to::<u64>() != d) {
        return Err(Fault::WithdrawDelayMismatch);
    }
    // 6. The signature: a set payer authorizer by ECDSA only.
    let signer = if config.payerAuthorizer != Address::ZERO {
        let digest = voucher_digest(keccak, id, voucher.max_claimable, terms.chain_id);
        let ok = crate::canonical(&voucher.signature) && recover(&digest, &voucher.signature) == Some(config.payerAuthorizer);
        if !ok {
            return Err(Fault::VoucherSignature);
        }
        Signer::Checked
    } else {
        Signer::Payer(config.payer)
    };
    // 7. The channel holds something (a deposit brings its own).
    let deposit = match kind {
        Kind::Deposit(amount) => amount,
        _ => 0,
    };
    if state.balance == 0 && deposit == 0 {
        return Err(Fault::ChannelNotFound);
    }
    // 9. The ceiling fits what is (or will be) in the channel.
    if voucher.max_claimable > state.balance.saturating_add(deposit) {
        return Err(Fault::CumulativeExceedsBalance);
    }
    // 10. Above what is claimed (a refund's zero-charge voucher may equal it;
    // so may a deposit's, per the spec's codes).
    let below = match kind {
        Kind::Voucher => voucher.max_claimable <= state.total_claimed,
        Kind::Deposit(_) | Kind::Refund => voucher.max_claimable < state.total_claimed,
    };
    if below {
        return Err(Fault::CumulativeBelowClaimed);
    }
    Ok((id, signer))
}
