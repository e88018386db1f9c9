//! The scheme's payloads as the reference client and server write them
//! (`payload.type`: deposit, voucher, refund, claim, settle), read strictly:
//! addresses as 20-byte hex, amounts as decimal strings that fit a
//! `uint128`, a withdrawal delay within the spec's bounds. Each refusal
//! names its [`Fault`], whose code is the spec's.

use crate::{ChannelConfig, ClaimedVoucher, VoucherClaim, MAX_WITHDRAW_DELAY, MIN_WITHDRAW_DELAY};
use alloy_primitives::{Address, Bytes, B256, U256};

/// Why a payload is refused, by the spec's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    PayloadType,
    DepositPayload,
    VoucherPayload,
    RefundPayload,
    ClaimPayload,
    SettlePayload,
    ChannelIdMismatch,
    WithdrawDelayOutOfRange,
    RefundAmountInvalid,
    TokenMismatch,
    ReceiverMismatch,
    ReceiverAuthorizerMismatch,
    WithdrawDelayMismatch,
    VoucherSignature,
    ChannelNotFound,
    CumulativeExceedsBalance,
    CumulativeBelowClaimed,
    InsufficientBalance,
    ReceiveAuthorizationSignature,
    ValidAfter,
    ValidBefore,
    Permit2InvalidSignature,
    Permit2InvalidSpender,
    Permit2AmountMismatch,
    Permit2DeadlineExpired,
    Permit2AllowanceRequired,
    AuthorizerNotConfigured,
    AuthorizerAddressMismatch,
    NothingToSettle,
    NothingToClaim,
    RefundNoBalance,
    RefundNonce,
}

impl Fault {
    /// Every fault, for reading a code back.
    pub const ALL: [Fault; 32] = [
        Fault::PayloadType,
        Fault::DepositPayload,
        Fault::VoucherPayload,
        Fault::RefundPayload,
        Fault::ClaimPayload,
        Fault::SettlePayload,
        Fault::ChannelIdMismatch,
        Fault::WithdrawDelayOutOfRange,
        Fault::RefundAmountInvalid,
        Fault::TokenMismatch,
        Fault::ReceiverMismatch,
        Fault::ReceiverAuthorizerMismatch,
        Fault::WithdrawDelayMismatch,
        Fault::VoucherSignature,
        Fault::ChannelNotFound,
        Fault::CumulativeExceedsBalance,
        Fault::CumulativeBelowClaimed,
        Fault::InsufficientBalance,
        Fault::ReceiveAuthorizationSignature,
        Fault::ValidAfter,
        Fault::ValidBefore,
        Fault::Permit2InvalidSignature,
        Fault::Permit2InvalidSpender,
        Fault::Permit2AmountMismatch,
        Fault::Permit2DeadlineExpired,
        Fault::Permit2AllowanceRequired,
        Fault::AuthorizerNotConfigured,
        Fault::AuthorizerAddressMismatch,
        Fault::NothingToSettle,
        Fault::NothingToClaim,
        Fault::RefundNoBalance,
        Fault::RefundNonce,
    ];

    /// The spec's code (several faults may share one).
    pub fn code(self) -> &'static str {
        match self {
            Fault::PayloadType => "invalid_batch_settlement_evm_payload_type",
            Fault::DepositPayload => "invalid_batch_settlement_evm_deposit_payload",
            Fault::VoucherPayload => "invalid_batch_settlement_evm_voucher_payload",
            Fault::RefundPayload => "invalid_batch_settlement_evm_refund_payload",
            Fault::ClaimPayload => "invalid_batch_settlement_evm_claim_payload",
            Fault::SettlePayload => "invalid_batch_settlement_evm_settle_payload",
            Fault::ChannelIdMismatch => "invalid_batch_settlement_evm_channel_id_mismatch",
            Fault::WithdrawDelayOutOfRange => "invalid_batch_settlement_evm_withdraw_delay_out_of_range",
            Fault::RefundAmountInvalid => "invalid_batch_settlement_evm_refund_amount_invalid",
            Fault::TokenMismatch => "invalid_batch_settlement_evm_token_mismatch",
            Fault::ReceiverMismatch => "invalid_batch_settlement_evm_receiver_mismatch",
            Fault::ReceiverAuthorizerMismatch => "invalid_batch_settlement_evm_receiver_authorizer_mismatch",
            Fault::WithdrawDelayMismatch => "invalid_batch_settlement_evm_withdraw_delay_mismatch",
            Fault::VoucherSignature => "invalid_batch_settlement_evm_voucher_signature",
            Fault::ChannelNotFound => "invalid_batch_settlement_evm_channel_not_found",
            Fault::CumulativeExceedsBalance => "invalid_batch_settlement_evm_cumulative_exceeds_balance",
            Fault::CumulativeBelowClaimed => "invalid_batch_settlement_evm_cumulative_below_claimed",
            Fault::InsufficientBalance => "invalid_batch_settlement_evm_insufficient_balance",
            Fault::ReceiveAuthorizationSignature => "invalid_batch_settlement_evm_receive_authorization_signature",
            Fault::ValidAfter => "invalid_batch_settlement_evm_payload_authorization_valid_after",
            Fault::ValidBefore => "invalid_batch_settlement_evm_payload_authorization_valid_before",
            Fault::Permit2InvalidSignature => "invalid_batch_settlement_evm_permit2_invalid_signature",
            Fault::Permit2InvalidSpender => "invalid_batch_settlement_evm_permit2_invalid_spender",
            Fault::Permit2AmountMismatch => "invalid_batch_settlement_evm_permit2_amount_mismatch",
            Fault::Permit2DeadlineExpired => "invalid_batch_settlement_evm_permit2_deadline_expired",
            Fault::Permit2AllowanceRequired => "invalid_batch_settlement_evm_permit2_allowance_required",
            Fault::AuthorizerNotConfigured => "invalid_batch_settlement_evm_authorizer_not_configured",
            Fault::AuthorizerAddressMismatch => "invalid_batch_settlement_evm_authorizer_address_mismatch",
            Fault::NothingToSettle => "invalid_batch_settlement_evm_nothing_to_settle",
            Fault::NothingToClaim => "invalid_batch_settlement_evm_claim_payload",
            Fault::RefundNoBalance => "invalid_batch_settlement_evm_refund_no_balance",
            Fault::RefundNonce => "invalid_batch_settlement_evm_refund_payload",
        }
    }

    /// The fixed sentence a caller is told (never a detail).
    pub fn sentence(self) -> &'static str {
        match self {
            Fault::PayloadType => "the payload's type is not one of deposit, voucher, refund, claim or settle",
            Fault::DepositPayload => "the deposit payload is malformed",
            Fault::VoucherPayload => "the voucher payload is malformed",
            Fault::RefundPayload => "the refund payload is malformed",
            Fault::ClaimPayload => "the claim payload is malformed",
            Fault::SettlePayload => "the settle payload is malformed",
            Fault::ChannelIdMismatch => "the channel config does not hash to the voucher's channel id",
            Fault::WithdrawDelayOutOfRange => "the channel's withdrawal delay is outside 15 minutes to 30 days",
            Fault::RefundAmountInvalid => "the refund amount is not a positive amount",
            Fault::TokenMismatch => "the channel's token is not the required asset",
            Fault::ReceiverMismatch => "the channel's receiver is not payTo",
            Fault::ReceiverAuthorizerMismatch => "the channel's receiver authorizer is not the required one",
            Fault::WithdrawDelayMismatch => "the channel's withdrawal delay is not the required one",
            Fault::VoucherSignature => "the voucher is not signed by the channel's payer or payer authorizer",
            Fault::ChannelNotFound => "the channel holds nothing",
            Fault::CumulativeExceedsBalance => "the voucher's cumulative amount is above the channel's balance",
            Fault::CumulativeBelowClaimed => "the voucher's cumulative amount is not above what is claimed",
            Fault::InsufficientBalance => "the payer's balance does not cover the deposit",
            Fault::ReceiveAuthorizationSignature => "the deposit's ERC-3009 authorization is not signed by the payer",
            Fault::ValidAfter => "the deposit's authorization is not valid yet",
            Fault::ValidBefore => "the deposit's authorization has expired",
            Fault::Permit2InvalidSignature => "the deposit's Permit2 authorization is not signed by the payer",
            Fault::Permit2InvalidSpender => "the deposit's Permit2 spender is not the Permit2 deposit collector",
            Fault::Permit2AmountMismatch => "the deposit's Permit2 amount is not the deposit amount",
            Fault::Permit2DeadlineExpired => "the deposit's Permit2 deadline has passed",
            Fault::Permit2AllowanceRequired => "the payer has not approved Permit2 for the deposit",
            Fault::AuthorizerNotConfigured => "the receiver authorizer's signature is missing and this facilitator signs none",
            Fault::AuthorizerAddressMismatch => "the receiver authorizer's signature is not the channel's receiver authorizer's",
            Fault::NothingToSettle => "nothing is claimed and unsettled for this receiver and token",
            Fault::NothingToClaim => "the claim claims nothing that is not claimed already",
            Fault::RefundNoBalance => "the channel has nothing left to refund",
            Fault::RefundNonce => "the refund's nonce is not the channel's next one",
        }
    }

    /// A code back to its fault (the first of those that share it).
    pub fn parse(code: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.code() == code)
    }
}

/// A payload, by its `type`.
#[derive(Debug)]
pub enum Payload {
    Deposit {
        config: ChannelConfig,
        voucher: SignedVoucher,
        deposit: Deposit,
    },
    Voucher {
        config: ChannelConfig,
        voucher: SignedVoucher,
    },
    /// `amount` None: the whole rest. The server's completion (nonce,
    /// claims, signatures) when it made it.
    Refund {
        config: ChannelConfig,
        voucher: SignedVoucher,
        amount: Option<u128>,
        completion: RefundCompletion,
    },
    Claim {
        claims: Vec<VoucherClaim>,
        authorizer_signature: Option<Bytes>,
    },
    Settle {
        receiver: Address,
        token: Address,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedVoucher {
    pub channel_id: B256,
    pub max_claimable: u128,
    pub signature: Bytes,
}

#[derive(Debug)]
pub struct Deposit {
    pub amount: u128,
    pub authorization: DepositAuthorization,
}

#[derive(Debug)]
pub enum DepositAuthorization {
    Erc3009 { valid_after: U256, valid_before: U256, salt: U256, signature: Bytes },
    Permit2 { from: Address, token: Address, amount: U256, spender: Address, nonce: U256, deadline: U256, witness: B256, signature: Bytes },
}

#[derive(Debug, Default)]
pub struct RefundCompletion {
    pub refund_nonce: Option<U256>,
    pub claims: Vec<VoucherClaim>,
    pub refund_authorizer_signature: Option<Bytes>,
    pub claim_authorizer_signature: Option<Bytes>,
}

/// Read a payload (the `payload` object of an x402 v2 payment payload).
pub fn parse(p: &serde_json::Value) -> Result<Payload, Fault> {
    let kind = p.get("type").and_then(|t| t.as_str()).ok_or(Fault::PayloadType)?;
    let fault = match kind {
        "deposit" => Fault::DepositPayload,
        "voucher" => Fault::VoucherPayload,
        "refund" => Fault::RefundPayload,
        "claim" => Fault::ClaimPayload,
        "settle" => Fault::SettlePayload,
        _ => return Err(Fault::PayloadType),
    };
    Ok(match kind {
        "deposit" => {
            let w: wire::Deposit = from(p, fault)?;
            let config = w.channel_config.read(fault)?;
            let amount = uint128(&w.deposit.amount, fault)?;
            // The contract refuses an empty deposit.
            if amount == 0 {
                return Err(fault);
            }
            let authorization = match (w.deposit.authorization.erc3009_authorization, w.deposit.authorization.permit2_authorization) {
                (Some(a), None) => DepositAuthorization::Erc3009 {
                    valid_after: uint256(&a.valid_after, fault)?,
                    valid_before: uint256(&a.valid_before, fault)?,
                    salt: U256::from_be_bytes(b256(&a.salt, fault)?.0),
                    signature: bytes(&a.signature, fault)?,
                },
                (None, Some(a)) => DepositAuthorization::Permit2 {
                    from: address(&a.from, fault)?,
                    token: address(&a.permitted.token, fault)?,
                    amount: uint256(&a.permitted.amount, fault)?,
                    spender: address(&a.spender, fault)?,
                    nonce: uint256(&a.nonce, fault)?,
                    deadline: uint256(&a.deadline, fault)?,
                    witness: b256(&a.witness.channel_id, fault)?,
                    signature: bytes(&a.signature, fault)?,
                },
                // Exactly one of the two.
                _ => return Err(fault),
            };
            Payload::Deposit { config, voucher: w.voucher.read(fault)?, deposit: Deposit { amount, authorization } }
        }
        "voucher" => {
            let w: wire::Voucher = from(p, fault)?;
            Payload::Voucher { config: w.channel_config.read(fault)?, voucher: w.voucher.read(fault)? }
        }
        "refund" => {
            let w: wire::Refund = from(p, fault)?;
            let amount = match &w.amount {
                None => None,
                Some(a) => {
                    Some(
                        uint128(a, Fault::RefundAmountInvalid)
                            .and_then(|a| if a == 0 { Err(Fault::RefundAmountInvalid) } else { Ok(a) })?,
                    )
                }
            };
            let completion = RefundCompletion {
                refund_nonce: w.refund_nonce.as_deref().map(|n| uint256(n, fault)).transpose()?,
                claims: w.claims.unwrap_or_default().iter().map(|c| c.read(fault)).collect::<Result<_, _>>()?,
                refund_authorizer_signature: w.refund_authorizer_signature.as_deref().map(|s| bytes(s, fault)).transpose()?,
                claim_authorizer_signature: w.claim_authorizer_signature.as_deref().map(|s| bytes(s, fault)).transpose()?,
            };
            Payload::Refund { config: w.channel_config.read(fault)?, voucher: w.voucher.read(fault)?, amount, completion }
        }
        "claim" => {
            let w: wire::Claims = from(p, fault)?;
            if w.claims.is_empty() {
                return Err(fault);
            }
            Payload::Claim {
                claims: w.claims.iter().map(|c| c.read(fault)).collect::<Result<_, _>>()?,
                authorizer_signature: w.claim_authorizer_signature.as_deref().map(|s| bytes(s, fault)).transpose()?,
            }
        }
        _ => {
            let w: wire::Settle = from(p, fault)?;
            Payload::Settle { receiver: address(&w.receiver, fault)?, token: address(&w.token, fault)? }
        }
    })
}

/// A channel config as the payloads write it (`channelConfig`).
pub fn config(value: &serde_json::Value) -> Result<ChannelConfig, Fault> {
    from::<wire::Config>(value, Fault::VoucherPayload)?.read(Fault::VoucherPayload)
}

fn from<T: serde::de::DeserializeOwned>(p: &serde_json::Value, fault: Fault) -> Result<T, Fault> {
    T::deserialize(p).map_err(|_| fault)
}

fn address(s: &str, fault: Fault) -> Result<Address, Fault> {
    let hex = s.strip_prefix("0x").ok_or(fault)?;
    if hex.len() != 40 {
        return Err(fault);
    }
    hex.parse().map_err(|_| fault)
}

fn b256(s: &str, fault: Fault) -> Result<B256, Fault> {
    let hex = s.strip_prefix("0x").ok_or(fault)?;
    if hex.len() != 64 {
        return Err(fault);
    }
    hex.parse().map_err(|_| fault)
}

/// One `0x`, then an even, non-zero number of hex digits (a parser that
/// strips a second prefix would take `0x0x…`).
fn bytes(s: &str, fault: Fault) -> Result<Bytes, Fault> {
    let hex = s.strip_prefix("0x").ok_or(fault)?;
    if hex.is_empty() || hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(fault);
    }
    hex.parse().map_err(|_| fault)
}

/// A decimal string of digits only (no sign, no exponent, no hex).
fn uint256(s: &str, fault: Fault) -> Result<U256, Fault> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fault);
    }
    U256::from_str_radix(s, 10).map_err(|_| fault)
}

fn uint128(s: &str, fault: Fault) -> Result<u128, Fault> {
    u128::try_from(uint256(s, fault)?).map_err(|_| fault)
}

/// The JSON as written, before it is read.
mod wire {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Config {
        pub payer: String,
        pub payer_authorizer: String,
        pub receiver: String,
        pub receiver_authorizer: String,
        pub token: String,
        pub withdraw_delay: u64,
        pub salt: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Voucher {
        pub channel_config: Config,
        pub voucher: SignedVoucher,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct SignedVoucher {
        pub channel_id: String,
        pub max_claimable_amount: String,
        pub signature: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Deposit {
        pub channel_config: Config,
        pub voucher: SignedVoucher,
        pub deposit: DepositBody,
    }

    #[derive(Deserialize)]
    pub struct DepositBody {
        pub amount: String,
        pub authorization: Authorization,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Authorization {
        pub erc3009_authorization: Option<Erc3009>,
        pub permit2_authorization: Option<Permit2>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Erc3009 {
        pub valid_after: String,
        pub valid_before: String,
        pub salt: String,
        pub signature: String,
    }

    #[derive(Deserialize)]
    pub struct Permitted {
        pub token: String,
        pub amount: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Witness {
        pub channel_id: String,
    }

    #[derive(Deserialize)]
    pub struct Permit2 {
        pub from: String,
        pub permitted: Permitted,
        pub spender: String,
        pub nonce: String,
        pub deadline: String,
        pub witness: Witness,
        pub signature: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Refund {
        pub channel_config: Config,
        pub voucher: SignedVoucher,
        pub amount: Option<String>,
        pub refund_nonce: Option<String>,
        pub claims: Option<Vec<Claim>>,
        pub refund_authorizer_signature: Option<String>,
        pub claim_authorizer_signature: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ClaimedVoucher {
        pub channel: Config,
        pub max_claimable_amount: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Claim {
        pub voucher: ClaimedVoucher,
        pub signature: String,
        pub total_claimed: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Claims {
        pub claims: Vec<Claim>,
        pub claim_authorizer_signature: Option<String>,
    }

    #[derive(Deserialize)]
    pub struct Settle {
        pub receiver: String,
        pub token: String,
    }
}

impl wire::Config {
    fn read(&self, fault: Fault) -> Result<ChannelConfig, Fault> {
        if !(MIN_WITHDRAW_DELAY..=MAX_WITHDRAW_DELAY).contains(&self.withdraw_delay) {
            return Err(Fault::WithdrawDelayOutOfRange);
        }
        Ok(ChannelConfig {
            payer: address(&self.payer, fault)?,
            payerAuthorizer: address(&self.payer_authorizer, fault)?,
            receiver: address(&self.receiver, fault)?,
            receiverAuthorizer: address(&self.receiver_authorizer, fault)?,
            token: address(&self.token, fault)?,
            withdrawDelay: alloy_primitives::aliases::U40::from(self.withdraw_delay),
            salt: b256(&self.salt, fault)?,
        })
    }
}

impl wire::SignedVoucher {
    fn read(&self, fault: Fault) -> Result<SignedVoucher, Fault> {
        Ok(SignedVoucher {
            channel_id: b256(&self.channel_id, fault)?,
            max_claimable: uint128(&self.max_claimable_amount, fault)?,
            signature: bytes(&self.signature, fault)?,
        })
    }
}

impl wire::Claim {
    fn read(&self, fault: Fault) -> Result<VoucherClaim, Fault> {
        Ok(VoucherClaim {
            voucher: ClaimedVoucher {
                channel: self.voucher.channel.read(fault)?,
                maxClaimableAmount: uint128(&self.voucher.max_claimable_amount, fault)?,
            },
            signature: bytes(&self.signature, fault)?,
            totalClaimed: uint128(&self.total_claimed, fault)?,
        })
    }
}
