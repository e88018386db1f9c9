// Vectors for `stablerail adapter check`, made with the ecosystem's own
// client: the payer's proof is signed by @x402/evm for the requirements the
// adapter makes of the terms, and the chain's answers are the ABI encodings
// the adapter's reads expect. Writes JSON to standard output.
//   node devnet/vectors/adapter-vectors.mjs eip3009 > adapters/eip3009/vectors.json
//   node devnet/vectors/adapter-vectors.mjs permit2 > adapters/permit2/vectors.json
//   node devnet/vectors/adapter-vectors.mjs upto > adapters/upto/vectors.json
import { encodeFunctionData, encodeAbiParameters, parseAbi, keccak256, toHex, getAddress, hashTypedData, parseErc6492Signature } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { smartSigner } from "../clients/smart-signer.mjs";

const which = process.argv[2];
if (!["eip3009", "permit2", "upto"].includes(which)) throw new Error(`no vectors recipe for ${which}`);
// upto: the facilitator (the host's relayer) the payer's witness names.
const relayer = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
// The canonical Permit2 contract, which the adapter uses unless configured otherwise.
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

// anvil's second well-known account: a payer whose key is public anyway.
const PAYER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const payer = privateKeyToAccount(PAYER_KEY);
const token = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const context = {
  chain: "base", network: "eip155:8453", family: "evm", chain_id: 8453, asset: "usdc",
  token, decimals: 6, eip712_name: "USD Coin", eip712_version: "2",
};
const terms = { amount: "10000", pay_to: "0x000000000000000000000000000000000000bEEF", max_timeout_seconds: 600 };
// What the adapter answers for these terms (`adapter check` without proofs prints it).
const extra = {
  eip3009: { amount: terms.amount, asset: token, decimals: 6, name: "USD Coin", version: "2" },
  permit2: { amount: terms.amount, asset: token, assetTransferMethod: "permit2", decimals: 6, extensions: ["eip2612GasSponsoring"], name: "USD Coin", version: "2" },
  upto: { amount: terms.amount, asset: token, assetTransferMethod: "permit2", decimals: 6, facilitatorAddress: relayer, name: "USD Coin", version: "2" },
}[which];
const scheme = which === "upto" ? "upto" : "exact";
const requirements = {
  scheme, network: context.network, amount: terms.amount, asset: token, payTo: terms.pay_to,
  maxTimeoutSeconds: terms.max_timeout_seconds, extra,
};
const now = Math.floor(Date.now() / 1000);
const client = which === "upto" ? new UptoEvmScheme(payer) : new ExactEvmScheme(payer);
const made = await client.createPaymentPayload(2, requirements);
const proof = { x402Version: 2, accepted: requirements, payload: made.payload };

const abi = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
  "function nonceBitmap(address owner, uint256 wordPos) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
]);
const call = (to, fn, args, result) => ({
  method: "eth_call",
  params: [{ to, data: encodeFunctionData({ abi, functionName: fn, args }) }, "latest"],
  result,
});
const word = (v) => encodeAbiParameters([{ type: "uint256" }], [v]);
let used;
if (which === "eip3009") {
  const auth = made.payload.authorization;
  used = (yes) => call(token, "authorizationState", [auth.from, auth.nonce], encodeAbiParameters([{ type: "bool" }], [yes]));
} else {
  // Permit2's unordered nonces: bit (nonce & 255) of word (nonce >> 8).
  const nonce = BigInt(made.payload.permit2Authorization.nonce);
  used = (yes) => call(PERMIT2, "nonceBitmap", [payer.address, nonce >> 8n], word(yes ? 1n << (nonce & 255n) : 0n));
}

// The settlement's receipt as eth_getTransactionReceipt gives it (the parts
// read-receipt reads), and ones that must not read as this payment.
const TRANSFER = keccak256(toHex("Transfer(address,address,uint256)"));
const topic = (a) => `0x${a.slice(2).toLowerCase().padStart(64, "0")}`;
const receipt = (status, to, value) => ({
  transactionHash: `0x${"5e".repeat(32)}`, status, blockNumber: "0x2a",
  logs: [{ address: token, topics: [TRANSFER, topic(payer.address), topic(to)], data: word(value) }],
});
const amount = BigInt(terms.amount);
const receipts = {
  settled: receipt("0x1", terms.pay_to, amount),
  failed: [receipt("0x0", terms.pay_to, amount), receipt("0x1", terms.pay_to, amount - 1n), receipt("0x1", "0x000000000000000000000000000000000000dEaD", amount)],
};
// Payers are EOAs: no code (the adapter asks before it checks a
// signature), for the vectors' payer and the round trip's wallet
// (`adapter check`'s fixed key, keccak256("stablerail adapter check wallet")).
const ROUND_TRIP_WALLET = "0x18820040E13957645300D6ADf6994449012c3965";
const noCode = [payer.address, ROUND_TRIP_WALLET].map((a) => ({ method: "eth_getCode", params: [a, "latest"], result: "0x" }));
// upto also reads the payer's Permit2 allowance.
const allowance = which === "upto" ? [call(token, "allowance", [payer.address, PERMIT2], word(10n ** 12n))] : [];
// Payers that are contracts, signed through smart-signer.mjs as wallets
// sign, with the chain's answers a wallet gives: code at a deployed wallet
// (here a MockERC1271Wallet-like one, answering for its owner), its
// `isValidSignature`, and, for a wallet not deployed yet (ERC-6492), no code
// and Multicall3's simulation of the factory call then the transfer.
const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
const FACTORY = getAddress("0x000000000000000000000000000000000000fac7");
const OTHER_FACTORY = getAddress("0x000000000000000000000000000000000000fac8");
const stranger = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba";
const wallets = {
  erc1271: getAddress("0x00000000000000000000000000000000000c0de1"),
  counterfactual: getAddress("0x00000000000000000000000000000000000c0de2"),
  elsewhere: getAddress("0x00000000000000000000000000000000000c0de3"),
};
const code = (a, c) => ({ method: "eth_getCode", params: [a, "latest"], result: c });
const MAGIC = `0x1626ba7e${"0".repeat(56)}`;
const isValid = parseAbi(["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"]);
const aggregate3 = parseAbi(["function aggregate3((address target, bool allowFailure, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[])"]);
const transferBytes = parseAbi(["function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)"]);
// The typed data a smart signer was asked to sign, kept to answer for it.
async function signedAs(kind, address, key, factory) {
  const asked = [];
  const inner = smartSigner({ kind, address, key, chain_id: 8453, factory, factory_data: "0xabcdef" });
  const signer = { address, signTypedData: async (td) => (asked.push(td), inner.signTypedData(td)) };
  const c = which === "upto" ? new UptoEvmScheme(signer) : new ExactEvmScheme(signer);
  const made = await c.createPaymentPayload(2, requirements);
  return { proof: { x402Version: 2, accepted: requirements, payload: made.payload }, digest: hashTypedData(asked[0]) };
}
const contractPayers = [];
const contractChain = [code(wallets.erc1271, "0x6080604052"), code(wallets.counterfactual, "0x"), code(wallets.elsewhere, "0x")];
for (const [name, key, valid] of [["erc1271", PAYER_KEY, true], ["erc1271-stranger", stranger, false]]) {
  const { proof, digest } = await signedAs("erc1271", wallets.erc1271, key);
  const signature = proof.payload.signature;
  contractChain.push({ method: "eth_call", params: [{ to: wallets.erc1271, data: encodeFunctionData({ abi: isValid, functionName: "isValidSignature", args: [digest, signature] }) }, "latest"], result: valid ? MAGIC : `0xffffffff${"0".repeat(56)}` });
  contractPayers.push({ name, proof, payer: wallets.erc1271, ...(valid ? {} : { refusal: "invalid-signature" }) });
}
{
  const { proof } = await signedAs("erc6492", wallets.counterfactual, PAYER_KEY, FACTORY);
  if (which === "eip3009") {
    const a = proof.payload.authorization;
    const inner = parseErc6492Signature(proof.payload.signature).signature;
    const transfer = encodeFunctionData({ abi: transferBytes, functionName: "transferWithAuthorization", args: [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, inner] });
    const data = encodeFunctionData({ abi: aggregate3, functionName: "aggregate3", args: [[{ target: FACTORY, allowFailure: true, callData: "0xabcdef" }, { target: token, allowFailure: true, callData: transfer }]] });
    const ok = encodeAbiParameters([{ type: "tuple[]", components: [{ name: "success", type: "bool" }, { name: "returnData", type: "bytes" }] }], [[{ success: true, returnData: "0x" }, { success: true, returnData: "0x" }]]);
    contractChain.push({ method: "eth_call", params: [{ to: MULTICALL3, data }, "latest"], result: ok });
    contractPayers.push({ name: "erc6492-allowed-factory", proof, payer: wallets.counterfactual });
  } else {
    // Permit2 cannot deploy a wallet before paying, whatever the allowlist.
    contractPayers.push({ name: "erc6492-permit2", proof, payer: wallets.counterfactual, refusal: "undeployed-smart-wallet" });
  }
}
if (which === "eip3009") {
  const { proof } = await signedAs("erc6492", wallets.elsewhere, PAYER_KEY, OTHER_FACTORY);
  contractPayers.push({ name: "erc6492-factory-not-allowed", proof, payer: wallets.elsewhere, refusal: "factory-not-allowed" });
}

console.log(JSON.stringify({
  scheme: which,
  context: { ...context, params: { "erc6492-factories": FACTORY } },
  ...(which === "upto" ? { relayer } : {}),
  now,
  terms,
  other_pay_to: "0x000000000000000000000000000000000000dEaD",
  requirements: { scheme, extra: which === "upto" ? { facilitatorAddress: relayer, name: "USD Coin", version: "2" } : { name: "USD Coin", version: "2" } },
  proofs: [{ name: "x402-v2", proof, payer: payer.address, signature: "/payload/signature", replay: [used(true)], receipts }],
  contract_payers: contractPayers,
  chain: [used(false), call(token, "balanceOf", [payer.address], word(10n ** 12n)), ...allowance, ...noCode, ...contractChain],
}, null, 2));
