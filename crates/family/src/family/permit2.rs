//! The x402 exact Permit2 proxy's entry points, as EVM and TRON both call
//! them: how a transaction is proven to have settled one exact permit.
//! Permit2 logs nothing of its own when it spends a nonce, so the proof is
//! the call itself: a successful transaction whose top-level call is the
//! proxy's `settle` or `settleWithPermit` carrying exactly the payer's
//! permit (owner, token, amount, nonce, deadline, witness). Its signature
//! bytes are not compared: Permit2 checked a signature over exactly these
//! fields, and the same signature has other encodings (EIP-2098's 64
//! bytes) that a front-runner may use.
//! A call wrapped in someone else's contract cannot be read without a
//! trace, so it proves nothing, and such a payment is not credited.

use alloy_primitives::{Address, U256};
use alloy_sol_types::{sol, SolCall};

use crate::payment::Permit2Authorization;

sol! {
    struct TokenPermissions { address token; uint256 amount; }
    struct PermitTransferFrom { TokenPermissions permitted; uint256 nonce; uint256 deadline; }
    struct Witness { address to; uint256 validAfter; }
    struct Permit2612 { uint256 value; uint256 deadline; bytes32 r; bytes32 s; uint8 v; }
    function settle(PermitTransferFrom permit, address owner, Witness witness, bytes signature) external;
    function settleWithPermit(Permit2612 permit2612, PermitTransferFrom permit, address owner, Witness witness, bytes signature) external;
    function nonceBitmap(address owner, uint256 wordPos) external view returns (uint256);
}

/// Does `input`, the calldata of a call to the permit's spender, settle
/// exactly `auth`? `parse` reads the family's address form.
pub fn settles(input: &[u8], auth: &Permit2Authorization, parse: impl Fn(&str) -> Option<Address>) -> bool {
    let (permit, owner, witness) = if let Ok(c) = settleCall::abi_decode(input) {
        (c.permit, c.owner, c.witness)
    } else if let Ok(c) = settleWithPermitCall::abi_decode(input) {
        (c.permit, c.owner, c.witness)
    } else {
        return false;
    };
    let number = |s: &str| U256::from_str_radix(s, 10).ok();
    Some(owner) == parse(&auth.owner)
        && Some(permit.permitted.token) == parse(&auth.token)
        && Some(permit.permitted.amount) == number(&auth.amount)
        && Some(permit.nonce) == number(&auth.nonce)
        && Some(permit.deadline) == number(&auth.deadline)
        && Some(witness.to) == parse(&auth.to)
        && Some(witness.validAfter) == number(&auth.valid_after)
}

/// Calldata of Permit2's `nonceBitmap(owner, nonce >> 8)` and the bit that
/// says `nonce` is spent.
pub fn bitmap_query(owner: Address, nonce: U256) -> (Vec<u8>, U256) {
    let call = nonceBitmapCall { owner, wordPos: nonce >> 8 };
    (call.abi_encode(), U256::from(1) << (nonce & U256::from(0xff)).to::<usize>())
}
