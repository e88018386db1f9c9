// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.26;

import {Calls, IDepositCollector} from "./X402BatchSettlement.sol";
import {ISignatureTransfer} from "./X402Permit2Proxy.sol";

interface IERC3009Receive {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

interface IERC2612 {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external;
}

// The settlement contract's canonical address: collectors answer only to it
// (a collector anyone could call would spend a payer's authorization into
// the escrow without crediting the channel).
address constant SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

/// Deposits by ERC-3009 `receiveWithAuthorization` (USDC): the payer signs
/// `to` = this collector and a nonce of keccak256(abi.encode(channelId,
/// salt)), so the authorization can fund only its own channel, and only
/// this contract can redeem it. `data` = abi.encode(validAfter, validBefore,
/// salt, signature). Test fixture, written to the published scheme.
contract ERC3009DepositCollector is IDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data)
        external
    {
        require(msg.sender == SETTLEMENT, "only the settlement contract");
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(data, (uint256, uint256, uint256, bytes));
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        IERC3009Receive(token).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, nonce, signature
        );
        Calls.transfer(token, SETTLEMENT, amount);
    }
}

/// Deposits through Permit2's witness transfer: the payer signs this
/// collector as spender and a `DepositWitness(bytes32 channelId)`, and
/// Permit2 pays the settlement contract directly. `data` = abi.encode(nonce,
/// deadline, signature, eip2612) where `eip2612`, when not empty, is
/// abi.encode(value, deadline, v, r, s) of an EIP-2612 permit giving Permit2
/// its allowance first, for the deposit's amount (a permit someone already
/// used is no reason to fail).
/// Test fixture, written to the published scheme.
contract Permit2DepositCollector is IDepositCollector {
    ISignatureTransfer internal constant PERMIT2 = ISignatureTransfer(0x000000000022D473030F116dDEE9F6B43aC78BA3);
    bytes32 internal constant DEPOSIT_WITNESS_TYPEHASH = keccak256("DepositWitness(bytes32 channelId)");
    string internal constant WITNESS_TYPE_STRING =
        "DepositWitness witness)DepositWitness(bytes32 channelId)TokenPermissions(address token,uint256 amount)";

    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data)
        external
    {
        require(msg.sender == SETTLEMENT, "only the settlement contract");
        (uint256 nonce, uint256 deadline, bytes memory signature, bytes memory eip2612) =
            abi.decode(data, (uint256, uint256, bytes, bytes));
        if (eip2612.length > 0) _permit(token, payer, amount, eip2612);
        PERMIT2.permitWitnessTransferFrom(
            ISignatureTransfer.PermitTransferFrom(ISignatureTransfer.TokenPermissions(token, amount), nonce, deadline),
            ISignatureTransfer.SignatureTransferDetails(SETTLEMENT, amount),
            payer,
            keccak256(abi.encode(DEPOSIT_WITNESS_TYPEHASH, channelId)),
            WITNESS_TYPE_STRING,
            signature
        );
    }

    function _permit(address token, address payer, uint256 amount, bytes memory eip2612) private {
        (uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) =
            abi.decode(eip2612, (uint256, uint256, uint8, bytes32, bytes32));
        require(value == amount, "permit for another amount");
        try IERC2612(token).permit(payer, address(PERMIT2), value, deadline, v, r, s) {} catch {}
    }
}
