//! x402 `batch-settlement` on EVM, without bindings (the scheme of
//! `specs/schemes/batch-settlement/scheme_batch_settlement_evm.md`): a
//! channel's typed data and id, vouchers, claim batches and refunds as the
//! channels contract and the receiver authorizer sign them, the deposit
//! collectors' data, the contract's calls, and the payloads' JSON
//! ([`payload`]). An adapter hashes with its host's keccak (passed in as
//! `keccak`), the host and the tests with alloy's; both give the same bytes.

pub mod payload;
pub mod rules;
pub mod vectors;

use alloy_primitives::{address, Address, B256, U256};
use alloy_sol_types::{sol, SolCall, SolStruct, SolValue};

/// Where the reference client and facilitator expect the scheme's contracts
/// (the same address on every chain, by CREATE2).
pub const SETTLEMENT: Address = address!("4020074e9dF2ce1deE5A9C1b5c3f541D02a10003");
pub const ERC3009_COLLECTOR: Address = address!("4020806089470a89826cB9fB1f4059150b550004");
pub const PERMIT2_COLLECTOR: Address = address!("4020425FAf3B746C082C2f942b4E5159887B0005");
/// Canonical Permit2.
pub const PERMIT2: Address = address!("000000000022D473030F116dDEE9F6B43aC78BA3");

/// The withdrawal delay's bounds, in seconds (15 minutes to 30 days).
pub const MIN_WITHDRAW_DELAY: u64 = 900;
pub const MAX_WITHDRAW_DELAY: u64 = 2_592_000;
/// At most this many claim rows in one payload (a claim, or a refund's
/// claims): the reference manager sends 100, and each row costs the
/// verifier reads (and the facilitator, when it is the authorizer, a hash).
pub const MAX_CLAIM_ROWS: usize = 100;

sol! {
    /// A channel's immutable config; its EIP-712 hash is the channel's id.
    #[derive(Debug, PartialEq, Eq)]
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    /// What the payer (or its authorizer) signs per request: a cumulative ceiling.
    struct Voucher {
        bytes32 channelId;
        uint128 maxClaimableAmount;
    }

    /// What the receiver authorizer signs to return unclaimed funds.
    struct Refund {
        bytes32 channelId;
        uint256 nonce;
        uint128 amount;
    }

    struct ClaimEntry {
        bytes32 channelId;
        uint128 maxClaimableAmount;
        uint128 totalClaimed;
    }

    /// What the receiver authorizer signs to claim many channels at once.
    struct ClaimBatch {
        ClaimEntry[] claims;
    }

    /// ERC-3009's authorization, as the ERC-3009 collector redeems it.
    struct ReceiveWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }

    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct DepositWitness {
        bytes32 channelId;
    }

    /// Permit2's witness transfer, as the Permit2 collector spends it.
    struct PermitWitnessTransferFrom {
        TokenPermissions permitted;
        address spender;
        uint256 nonce;
        uint256 deadline;
        DepositWitness witness;
    }

    /// The contract's claim row (its ABI tuple; the names are ours).
    #[derive(Debug)]
    struct ClaimedVoucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    #[derive(Debug)]
    struct VoucherClaim {
        ClaimedVoucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    // The contract's events (the published ones; `sender` is the caller).
    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    function deposit(ChannelConfig config, uint128 amount, address collector, bytes collectorData);
    function claimWithSignature(VoucherClaim[] voucherClaims, bytes authorizerSignature);
    function settle(address receiver, address token);
    function refundWithSignature(ChannelConfig config, uint128 amount, uint256 nonce, bytes receiverAuthorizerSignature);
    function multicall(bytes[] data) returns (bytes[] results);
    function channels(bytes32 channelId) returns (uint128 balance, uint128 totalClaimed);
    function pendingWithdrawals(bytes32 channelId) returns (uint128 amount, uint40 initiatedAt);
    function refundNonce(bytes32 channelId) returns (uint256);
    function receivers(address receiver, address token) returns (uint128 totalClaimed, uint128 totalSettled);
}

/// Whether a payer's or authorizer's ECDSA signature is one the contract
/// takes: 65 bytes, `v` 27 or 28, `s` in the lower half of the curve
/// order (OpenZeppelin's ECDSA, as the published contract uses it). Common
/// recovery (alloy's, viem's) also accepts `v` 0/1 and high `s` (flipping
/// it): a voucher verified that way could be one the claim reverts on, and
/// one bad row reverts a whole claim batch. Check this before recovering.
pub fn canonical(signature: &[u8]) -> bool {
    const HALF_ORDER: U256 =
        U256::from_be_bytes(alloy_primitives::hex!("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0"));
    signature.len() == 65 && matches!(signature[64], 27 | 28) && {
        let (r, s) = (U256::from_be_slice(&signature[..32]), U256::from_be_slice(&signature[32..64]));
        r != U256::ZERO && s != U256::ZERO && s <= HALF_ORDER
    }
}

/// A keccak-256: the adapter's host import, or alloy's natively.
pub type Keccak<'a> = &'a dyn Fn(&[u8]) -> [u8; 32];

fn domain_separator(keccak: Keccak, name: &str, version: Option<&str>, chain_id: u64, contract: Address) -> [u8; 32] {
    let type_ = if version.is_some() {
        "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
    } else {
        "EIP712Domain(string name,uint256 chainId,address verifyingContract)"
    };
    let mut data = keccak(type_.as_bytes()).to_vec();
    data.extend_from_slice(&keccak(name.as_bytes()));
    if let Some(version) = version {
        data.extend_from_slice(&keccak(version.as_bytes()));
    }
    data.extend_from_slice(&U256::from(chain_id).to_be_bytes::<32>());
    data.extend_from_slice(contract.into_word().as_slice());
    keccak(&data)
}

/// keccak256(0x1901 ‖ domain separator ‖ hashStruct(message)). Nested
/// structs (a claim batch's entries) are hashed inside `eip712_encode_data`
/// by alloy; flat ones (config, voucher, refund) only by `keccak`.
fn typed<S: SolStruct>(keccak: Keccak, separator: &[u8; 32], message: &S) -> B256 {
    let mut data = keccak(S::eip712_encode_type().as_bytes()).to_vec();
    data.extend_from_slice(&message.eip712_encode_data());
    let mut digest = [0u8; 66];
    digest[..2].copy_from_slice(b"\x19\x01");
    digest[2..34].copy_from_slice(separator);
    digest[34..].copy_from_slice(&keccak(&data));
    B256::from(keccak(&digest))
}

/// The `x402 Batch Settlement` domain on `chain_id`.
pub fn settlement_separator(keccak: Keccak, chain_id: u64) -> [u8; 32] {
    domain_separator(keccak, "x402 Batch Settlement", Some("1"), chain_id, SETTLEMENT)
}

/// A channel's id: its config's EIP-712 hash, bound to the chain and the
/// contract.
pub fn channel_id(keccak: Keccak, config: &ChannelConfig, chain_id: u64) -> B256 {
    typed(keccak, &settlement_separator(keccak, chain_id), config)
}

/// What a voucher's signer signs.
pub fn voucher_digest(keccak: Keccak, channel_id: B256, max_claimable: u128, chain_id: u64) -> B256 {
    typed(keccak, &settlement_separator(keccak, chain_id), &Voucher { channelId: channel_id, maxClaimableAmount: max_claimable })
}

/// What the receiver authorizer signs for a refund.
pub fn refund_digest(keccak: Keccak, channel_id: B256, nonce: U256, amount: u128, chain_id: u64) -> B256 {
    typed(keccak, &settlement_separator(keccak, chain_id), &Refund { channelId: channel_id, nonce, amount })
}

/// What the receiver authorizer signs for a claim of these rows.
pub fn claim_batch_digest(keccak: Keccak, claims: &[VoucherClaim], chain_id: u64) -> B256 {
    let claims = claims
        .iter()
        .map(|c| ClaimEntry {
            channelId: channel_id(keccak, &c.voucher.channel, chain_id),
            maxClaimableAmount: c.voucher.maxClaimableAmount,
            totalClaimed: c.totalClaimed,
        })
        .collect();
    typed(keccak, &settlement_separator(keccak, chain_id), &ClaimBatch { claims })
}

/// The ERC-3009 nonce of a deposit: it binds the authorization to its
/// channel, so it can fund no other.
pub fn erc3009_nonce(keccak: Keccak, channel_id: B256, salt: U256) -> B256 {
    B256::from(keccak(&(channel_id, salt).abi_encode()))
}

/// What the payer signs for an ERC-3009 deposit (`to` is the collector),
/// under the token's domain (its name and version).
pub fn erc3009_digest(keccak: Keccak, token: (&str, &str, Address), chain_id: u64, auth: &ReceiveWithAuthorization) -> B256 {
    typed(keccak, &domain_separator(keccak, token.0, Some(token.1), chain_id, token.2), auth)
}

/// What the payer signs for a Permit2 deposit (spender: the collector).
pub fn permit2_digest(keccak: Keccak, chain_id: u64, permit: &PermitWitnessTransferFrom) -> B256 {
    typed(keccak, &domain_separator(keccak, "Permit2", None, chain_id, PERMIT2), permit)
}

/// The ERC-3009 collector's data: (validAfter, validBefore, salt, signature).
pub fn erc3009_collector_data(valid_after: U256, valid_before: U256, salt: U256, signature: &[u8]) -> Vec<u8> {
    (valid_after, valid_before, salt, signature.to_vec()).abi_encode_params()
}

/// The Permit2 collector's data: (nonce, deadline, signature, EIP-2612 permit or empty).
pub fn permit2_collector_data(nonce: U256, deadline: U256, signature: &[u8], eip2612: &[u8]) -> Vec<u8> {
    (nonce, deadline, signature.to_vec(), eip2612.to_vec()).abi_encode_params()
}

pub fn deposit_call(config: ChannelConfig, amount: u128, collector: Address, data: Vec<u8>) -> Vec<u8> {
    depositCall { config, amount, collector, collectorData: data.into() }.abi_encode()
}

pub fn claim_call(claims: Vec<VoucherClaim>, authorizer_signature: Vec<u8>) -> Vec<u8> {
    claimWithSignatureCall { voucherClaims: claims, authorizerSignature: authorizer_signature.into() }.abi_encode()
}

pub fn settle_call(receiver: Address, token: Address) -> Vec<u8> {
    settleCall { receiver, token }.abi_encode()
}

pub fn refund_call(config: ChannelConfig, amount: u128, nonce: U256, signature: Vec<u8>) -> Vec<u8> {
    refundWithSignatureCall { config, amount, nonce, receiverAuthorizerSignature: signature.into() }.abi_encode()
}

/// `multicall` of the settlement contract's own calls (a refund's claim and
/// refund in one transaction).
pub fn multicall(calls: Vec<Vec<u8>>) -> Vec<u8> {
    multicallCall { data: calls.into_iter().map(Into::into).collect() }.abi_encode()
}

/// The state `/verify` and `/settle` answer about a channel, read from the
/// contract (`channels`, `pendingWithdrawals`, `refundNonce`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelState {
    pub balance: u128,
    pub total_claimed: u128,
    pub withdraw_requested_at: u64,
    pub refund_nonce: U256,
}

/// The calls that read a channel's state, in [`ChannelState::decode`]'s order.
pub fn state_calls(channel_id: B256) -> [Vec<u8>; 3] {
    [
        channelsCall { channelId: channel_id }.abi_encode(),
        pendingWithdrawalsCall { channelId: channel_id }.abi_encode(),
        refundNonceCall { channelId: channel_id }.abi_encode(),
    ]
}

impl ChannelState {
    /// From the answers of [`state_calls`], each decoded strictly (no
    /// dirty high bits, no trailing bytes); an answer that breaks the
    /// contract's own invariant (claimed above the balance) is an error, not
    /// a number to subtract.
    pub fn decode(answers: [&[u8]; 3]) -> Result<ChannelState, String> {
        let channel = channelsCall::abi_decode_returns_validate(answers[0]).map_err(|e| format!("channels: {e}"))?;
        let pending = pendingWithdrawalsCall::abi_decode_returns_validate(answers[1]).map_err(|e| format!("pendingWithdrawals: {e}"))?;
        let nonce = refundNonceCall::abi_decode_returns_validate(answers[2]).map_err(|e| format!("refundNonce: {e}"))?;
        if channel.totalClaimed > channel.balance {
            return Err(format!("channels: claimed {} above the balance {}", channel.totalClaimed, channel.balance));
        }
        Ok(ChannelState {
            balance: channel.balance,
            total_claimed: channel.totalClaimed,
            withdraw_requested_at: pending.initiatedAt.to::<u64>(),
            refund_nonce: nonce,
        })
    }

    /// The snapshot's JSON, as `/verify`'s `extra` and `/settle`'s
    /// `extra.channelState` carry it.
    pub fn to_json(&self, channel_id: B256) -> serde_json::Value {
        serde_json::json!({
            "channelId": channel_id.to_string(),
            "balance": self.balance.to_string(),
            "totalClaimed": self.total_claimed.to_string(),
            "withdrawRequestedAt": self.withdraw_requested_at,
            "refundNonce": self.refund_nonce.to_string(),
        })
    }
}

#[cfg(test)]
mod tests;
