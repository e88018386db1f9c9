// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

interface IERC20 {
    function balanceOf(address) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
}

interface IERC1271 {
    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4);
}

/// What `deposit` asks of a collector: move exactly `amount` of `token` from
/// `payer` to the settlement contract (the caller) under an authorization of
/// the payer's that binds `channelId`, or revert.
interface IDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data) external;
}

/// Safe token calls and signature checks shared by the settlement contract
/// and its collectors.
library Calls {
    function transfer(address token, address to, uint256 value) internal {
        (bool ok, bytes memory ret) = token.call(abi.encodeCall(IERC20.transfer, (to, value)));
        require(ok && (ret.length == 0 || abi.decode(ret, (bool))), "token transfer failed");
    }

    /// ECDSA only (65 bytes, v 27/28, low s): the signer of `digest`, or zero.
    function recover(bytes32 digest, bytes memory sig) internal pure returns (address) {
        if (sig.length != 65) return address(0);
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(sig, 32))
            s := mload(add(sig, 64))
            v := byte(0, mload(add(sig, 96)))
        }
        // OpenZeppelin's rules, as the published contract has them: v 27 or
        // 28 only, s in the lower half (no malleated twin of a signature).
        if (uint256(s) > 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0) return address(0);
        if (v != 27 && v != 28) return address(0);
        return ecrecover(digest, v, r, s);
    }

    /// `signer` signed `digest`: by ECDSA when it has no code, by EIP-1271
    /// when it is a contract.
    function signedBy(address signer, bytes32 digest, bytes memory sig) internal view returns (bool) {
        if (signer == address(0)) return false;
        if (signer.code.length == 0) return recover(digest, sig) == signer;
        (bool ok, bytes memory ret) = signer.staticcall(abi.encodeCall(IERC1271.isValidSignature, (digest, sig)));
        return ok && ret.length >= 32 && abi.decode(ret, (bytes4)) == IERC1271.isValidSignature.selector;
    }
}

/// x402 `batch-settlement` on EVM: unidirectional payment channels, written
/// for the devnet to the published scheme (specs/schemes/batch-settlement/
/// scheme_batch_settlement_evm.md of x402-foundation/x402) and answering to
/// the ABI the reference client ships (devnet/setup/up.mjs compares every
/// selector). A channel is the EIP-712 hash of its immutable config; it
/// holds `balance` (deposited less refunds and withdrawals) and
/// `totalClaimed` (the receiver's cumulative claims, never above `balance`).
/// Vouchers are cumulative, so a claim is idempotent: a row at or below what
/// is claimed changes nothing. Claims only count; `settle` sweeps a
/// receiver's claimed funds of one token in one transfer.
///
/// Placed at its canonical address with anvil_setCode: no constructor state
/// (the EIP-712 domain is read from `address(this)` and `block.chainid` at
/// each call). The berlin EVM has no transient storage, so the reentrancy
/// lock is a storage slot. Test fixture only.
contract X402BatchSettlement {
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    struct Channel {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct Withdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverTotals {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    uint40 internal constant MIN_WITHDRAW_DELAY = 15 minutes;
    uint40 internal constant MAX_WITHDRAW_DELAY = 30 days;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 internal constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 internal constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 internal constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 internal constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    bytes32 internal constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");

    mapping(bytes32 => Channel) public channels;
    mapping(bytes32 => Withdrawal) public pendingWithdrawals;
    mapping(bytes32 => uint256) public refundNonce;
    mapping(address => mapping(address => ReceiverTotals)) public receivers;
    uint256 private locked;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    // The published contract's events, field for field (`sender` is the
    // caller): books and indexers read these, on the devnet as on a chain.
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    modifier nonReentrant() {
        require(locked == 0, "reentrant call");
        locked = 1;
        _;
        locked = 0;
    }

    // ---- deposits ----

    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        require(amount > 0, "zero deposit");
        require(
            config.withdrawDelay >= MIN_WITHDRAW_DELAY && config.withdrawDelay <= MAX_WITHDRAW_DELAY,
            "withdraw delay out of range"
        );
        require(
            config.payer != address(0) && config.receiver != address(0) && config.receiverAuthorizer != address(0)
                && config.token != address(0),
            "incomplete channel config"
        );
        bytes32 id = getChannelId(config);
        // Whatever the collector is, the channel is credited only what
        // arrived: a collector of a stranger's can gift, never mint.
        uint256 before = IERC20(config.token).balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, id, collectorData);
        require(IERC20(config.token).balanceOf(address(this)) - before == amount, "collector moved another amount");
        Channel storage ch = channels[id];
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelCreated(id, config);
        ch.balance += amount;
        emit Deposited(id, msg.sender, amount, ch.balance);
    }

    // ---- claims (accounting only) ----

    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            ChannelConfig calldata c = voucherClaims[i].voucher.channel;
            require(msg.sender == c.receiver || msg.sender == c.receiverAuthorizer, "not the receiver's side");
            _claim(voucherClaims[i]);
        }
    }

    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        require(voucherClaims.length > 0, "no claims");
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        for (uint256 i = 1; i < voucherClaims.length; i++) {
            require(voucherClaims[i].voucher.channel.receiverAuthorizer == authorizer, "claims of several authorizers");
        }
        require(
            Calls.signedBy(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature),
            "claim batch not signed by the receiver authorizer"
        );
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            _claim(voucherClaims[i]);
        }
    }

    function _claim(VoucherClaim calldata row) private {
        ChannelConfig calldata c = row.voucher.channel;
        bytes32 id = getChannelId(c);
        Channel storage ch = channels[id];
        require(row.totalClaimed <= row.voucher.maxClaimableAmount, "claim above the voucher");
        require(row.totalClaimed <= ch.balance, "claim above the balance");
        // Cumulative: what is already claimed is not claimed again.
        if (row.totalClaimed <= ch.totalClaimed) return;
        require(_voucherSigned(c, id, row.voucher.maxClaimableAmount, row.signature), "voucher not signed by the payer");
        uint128 amount = row.totalClaimed - ch.totalClaimed;
        ch.totalClaimed = row.totalClaimed;
        receivers[c.receiver][c.token].totalClaimed += amount;
        emit Claimed(id, msg.sender, amount, row.totalClaimed);
    }

    /// A set payer authorizer signs by ECDSA only; otherwise the payer
    /// itself, by ECDSA or EIP-1271.
    function _voucherSigned(ChannelConfig calldata c, bytes32 id, uint128 maxClaimable, bytes calldata sig)
        private
        view
        returns (bool)
    {
        bytes32 digest = getVoucherDigest(id, maxClaimable);
        if (c.payerAuthorizer != address(0)) return Calls.recover(digest, sig) == c.payerAuthorizer;
        return Calls.signedBy(c.payer, digest, sig);
    }

    // ---- settle (permissionless sweep) ----

    function settle(address receiver, address token) external nonReentrant {
        ReceiverTotals storage r = receivers[receiver][token];
        uint128 amount = r.totalClaimed - r.totalSettled;
        if (amount == 0) return;
        r.totalSettled = r.totalClaimed;
        Calls.transfer(token, receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---- cooperative refunds ----

    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        require(msg.sender == config.receiver || msg.sender == config.receiverAuthorizer, "not the receiver's side");
        _refund(config, getChannelId(config), amount);
    }

    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 id = getChannelId(config);
        require(nonce == refundNonce[id], "stale refund nonce");
        require(
            Calls.signedBy(config.receiverAuthorizer, getRefundDigest(id, nonce, amount), receiverAuthorizerSignature),
            "refund not signed by the receiver authorizer"
        );
        _refund(config, id, amount);
    }

    /// The nonce moves first, so a refund with nothing left to return still
    /// spends it.
    function _refund(ChannelConfig calldata config, bytes32 id, uint128 amount) private {
        require(amount > 0, "zero refund");
        refundNonce[id]++;
        Channel storage ch = channels[id];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 paid = amount < available ? amount : available;
        if (paid == 0) return;
        ch.balance -= paid;
        Withdrawal storage w = pendingWithdrawals[id];
        if (w.amount > 0) {
            if (paid >= w.amount) delete pendingWithdrawals[id];
            else w.amount -= paid;
        }
        Calls.transfer(config.token, config.payer, paid);
        emit Refunded(id, msg.sender, paid);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(id, config);
    }

    // ---- the payer's timed withdrawal ----

    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        _onlyPayerSide(config);
        bytes32 id = getChannelId(config);
        Channel storage ch = channels[id];
        require(amount > 0 && amount <= ch.balance - ch.totalClaimed, "withdrawal above the unclaimed balance");
        require(pendingWithdrawals[id].amount == 0, "a withdrawal is pending");
        pendingWithdrawals[id] = Withdrawal(amount, uint40(block.timestamp));
        emit WithdrawInitiated(id, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        _onlyPayerSide(config);
        bytes32 id = getChannelId(config);
        Withdrawal memory w = pendingWithdrawals[id];
        require(w.amount > 0, "no withdrawal pending");
        require(block.timestamp >= uint256(w.initiatedAt) + config.withdrawDelay, "withdraw delay not over");
        delete pendingWithdrawals[id];
        Channel storage ch = channels[id];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 paid = w.amount < available ? w.amount : available;
        ch.balance -= paid;
        if (paid > 0) Calls.transfer(config.token, config.payer, paid);
        emit WithdrawFinalized(id, msg.sender, paid);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(id, config);
    }

    function _onlyPayerSide(ChannelConfig calldata config) private view {
        require(
            msg.sender == config.payer || (config.payerAuthorizer != address(0) && msg.sender == config.payerAuthorizer),
            "not the payer's side"
        );
    }

    // ---- batching ----

    function multicall(bytes[] calldata data) external returns (bytes[] memory results) {
        results = new bytes[](data.length);
        for (uint256 i = 0; i < data.length; i++) {
            (bool ok, bytes memory ret) = address(this).delegatecall(data[i]);
            if (!ok) {
                assembly {
                    revert(add(ret, 32), mload(ret))
                }
            }
            results[i] = ret;
        }
    }

    // ---- EIP-712 ----

    function getChannelId(ChannelConfig calldata c) public view returns (bytes32) {
        return _typed(
            keccak256(
                abi.encode(
                    CHANNEL_CONFIG_TYPEHASH,
                    c.payer,
                    c.payerAuthorizer,
                    c.receiver,
                    c.receiverAuthorizer,
                    c.token,
                    c.withdrawDelay,
                    c.salt
                )
            )
        );
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _typed(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _typed(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH,
                    getChannelId(voucherClaims[i].voucher.channel),
                    voucherClaims[i].voucher.maxClaimableAmount,
                    voucherClaims[i].totalClaimed
                )
            );
        }
        return _typed(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    function _typed(bytes32 structHash) private view returns (bytes32) {
        bytes32 domain = keccak256(
            abi.encode(DOMAIN_TYPEHASH, keccak256("x402 Batch Settlement"), keccak256("1"), block.chainid, address(this))
        );
        return keccak256(abi.encodePacked("\x19\x01", domain, structHash));
    }
}
