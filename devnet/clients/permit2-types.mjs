// Permit2's PermitWitnessTransferFrom with the x402 witness, as EIP-712 (and
// TIP-712) types: what an x402 Permit2 payer signs on EVM and on TRON.
export const permit2Types = {
  PermitWitnessTransferFrom: [
    { name: "permitted", type: "TokenPermissions" },
    { name: "spender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
    { name: "witness", type: "Witness" },
  ],
  TokenPermissions: [{ name: "token", type: "address" }, { name: "amount", type: "uint256" }],
  Witness: [{ name: "to", type: "address" }, { name: "validAfter", type: "uint256" }],
};
