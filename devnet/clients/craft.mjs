// Permit2 payloads built by hand with viem (an EIP-712 implementation
// independent of stablerail's), for what the x402 client cannot sign (the
// salted token domain) and for deliberately wrong payloads.
//
//   echo '{"requirements": {...}, "key": "0x…", "rpc": "http://…", "case": "salted"}' | node craft.mjs
//
// Prints the settle_proof (base64 PaymentPayload). Cases:
//   permit          Permit2 + EIP-2612 permit over the token's domain as `extra`
//                   describes it (salted when extra.domainType is "salted")
//   chainid-domain  the permit signed over a chainId domain regardless
//   permit-value    the permit's value differs from the permitted amount
//   wrong-spender | wrong-to | wrong-amount | expired | other-signer
//                   a plain Permit2 authorization with that one fault
//   approval-wrong-token | approval-wrong-spender | approval-garbage
//                   an erc20ApprovalGasSponsoring approve with that fault
//                   (garbage: bytes that are no transaction at all)
import { createPublicClient, encodeFunctionData, getAddress, http, maxUint256, pad, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { permit2Types } from "./permit2-types.mjs";

const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
const PROXY = "0x402085c248EeA27D92E8b30b2C58ed07f9E20001";
const permitTypes = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
};
const abi = [
  { type: "function", name: "nonces", stateMutability: "view", inputs: [{ name: "owner", type: "address" }], outputs: [{ type: "uint256" }] },
  { type: "function", name: "approve", stateMutability: "nonpayable", inputs: [{ name: "spender", type: "address" }, { name: "value", type: "uint256" }], outputs: [{ type: "bool" }] },
];
import { command } from "./command.mjs";

export async function main(args, input) {
  const { requirements: req, key, rpc, case: fault } = JSON.parse(input);
  const payer = privateKeyToAccount(key);
  const stranger = privateKeyToAccount(generatePrivateKey());
  const chainId = Number(req.network.split(":")[1]);
  const client = createPublicClient({ transport: http(rpc) });
  const now = Math.floor(Date.now() / 1000);
  const amount = BigInt(req.amount);

  const auth = {
    from: payer.address,
    permitted: { token: getAddress(req.asset), amount: req.amount },
    spender: fault === "wrong-spender" ? stranger.address : PROXY,
    nonce: BigInt(toHex(crypto.getRandomValues(new Uint8Array(32)))).toString(),
    deadline: String(fault === "expired" ? now - 60 : now + req.maxTimeoutSeconds),
    witness: { to: fault === "wrong-to" ? stranger.address : getAddress(req.payTo), validAfter: "0" },
  };
  if (fault === "wrong-amount") auth.permitted.amount = (amount - 1n).toString();

  const signature = await (fault === "other-signer" ? stranger : payer).signTypedData({
    domain: { name: "Permit2", chainId, verifyingContract: PERMIT2 },
    types: permit2Types,
    primaryType: "PermitWitnessTransferFrom",
    message: {
      permitted: { token: auth.permitted.token, amount: BigInt(auth.permitted.amount) },
      spender: auth.spender,
      nonce: BigInt(auth.nonce),
      deadline: BigInt(auth.deadline),
      witness: { to: auth.witness.to, validAfter: 0n },
    },
  });

  let extensions;
  if (["permit", "chainid-domain", "permit-value"].includes(fault)) {
    const token = getAddress(req.asset);
    const nonce = await client.readContract({ address: token, abi, functionName: "nonces", args: [payer.address] });
    const salted = req.extra.domainType === "salted" && fault !== "chainid-domain";
    const domain = salted
      ? { name: req.extra.name, version: req.extra.version, verifyingContract: token, salt: pad(toHex(chainId), { size: 32 }) }
      : { name: req.extra.name, version: req.extra.version, chainId, verifyingContract: token };
    const value = fault === "permit-value" ? amount + 1n : amount;
    const permitSig = await payer.signTypedData({
      domain,
      types: permitTypes,
      primaryType: "Permit",
      message: { owner: payer.address, spender: PERMIT2, value, nonce, deadline: BigInt(auth.deadline) },
    });
    extensions = {
      eip2612GasSponsoring: {
        info: { from: payer.address, asset: token, spender: PERMIT2, amount: value.toString(), nonce: nonce.toString(), deadline: auth.deadline, signature: permitSig, version: "1" },
      },
    };
  } else if (fault.startsWith("approval-")) {
    const token = getAddress(req.asset);
    const signedTransaction = await payer.signTransaction({
      chainId,
      to: fault === "approval-wrong-token" ? stranger.address : token,
      data: encodeFunctionData({ abi, functionName: "approve", args: [fault === "approval-wrong-spender" ? stranger.address : PERMIT2, maxUint256] }),
      nonce: await client.getTransactionCount({ address: payer.address }),
      gas: 70000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
    });
    extensions = {
      erc20ApprovalGasSponsoring: {
        info: {
          from: payer.address, asset: token, spender: PERMIT2, amount: maxUint256.toString(), version: "1",
          signedTransaction: fault === "approval-garbage" ? "0x02f8deadbeef" : signedTransaction,
        },
      },
    };
  }

  const payload = { x402Version: 2, accepted: req, payload: { signature, permit2Authorization: auth }, ...(extensions ? { extensions } : {}) };
  return Buffer.from(JSON.stringify(payload)).toString("base64");
}

await command(import.meta.url, main);
