//! The x402 exact-Permit2 scheme, chain-neutral: the typed data a payer
//! signs (Permit2's `PermitWitnessTransferFrom` with the x402 witness), the
//! proxy's calls, and the payload's JSON. The EVM adapter and the TRON one
//! (whose addresses are the same 20 bytes, written in base58check) share it.

pub mod payload;

use std::borrow::Cow;

use alloy_primitives::{Address, U256};
use alloy_sol_types::{sol, Eip712Domain};

sol! {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct Witness {
        address to;
        uint256 validAfter;
    }

    struct PermitWitnessTransferFrom {
        TokenPermissions permitted;
        address spender;
        uint256 nonce;
        uint256 deadline;
        Witness witness;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    function settle(PermitTransferFrom permit, address owner, Witness witness, bytes signature) external;
    function settleWithPermit(EIP2612Permit permit2612, PermitTransferFrom permit, address owner, Witness witness, bytes signature) external;
    function nonceBitmap(address owner, uint256 wordPos) external view returns (uint256);
    function nonces(address owner) external view returns (uint256);
}

/// Permit2's EIP-712 domain (TIP-712 on TRON, with TRON's chain id).
pub fn domain(chain_id: u64, permit2: Address) -> Eip712Domain {
    Eip712Domain::new(Some(Cow::Borrowed("Permit2")), None, Some(U256::from(chain_id)), Some(permit2), None)
}

/// The x402 `upto` scheme's Permit2 authorization: the witness also names
/// the facilitator, the only caller the upto proxy lets settle, and the
/// proxy's `settle` takes the amount to move (at most the permitted one).
pub mod upto {
    // sol! resolves struct types within one invocation only: the shared
    // Permit2 structs are declared again here.
    alloy_sol_types::sol! {
        struct TokenPermissions {
            address token;
            uint256 amount;
        }

        struct PermitTransferFrom {
            TokenPermissions permitted;
            uint256 nonce;
            uint256 deadline;
        }

        struct Witness {
            address to;
            address facilitator;
            uint256 validAfter;
        }

        struct PermitWitnessTransferFrom {
            TokenPermissions permitted;
            address spender;
            uint256 nonce;
            uint256 deadline;
            Witness witness;
        }

        struct EIP2612Permit {
            uint256 value;
            uint256 deadline;
            bytes32 r;
            bytes32 s;
            uint8 v;
        }

        function settle(PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature) external;
        function settleWithPermit(
            EIP2612Permit permit2612,
            PermitTransferFrom permit,
            uint256 amount,
            address owner,
            Witness witness,
            bytes signature
        ) external;
    }
}
