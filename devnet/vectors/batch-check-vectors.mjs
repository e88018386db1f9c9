// Vectors for `stablerail adapter check` of the batch-settlement adapter,
// made with the reference client (@x402/evm's batch-settlement client): a
// deposit by ERC-3009 and a voucher of the same channel, signed for a
// route's requirements (the resource server's: the adapter makes none), a
// voucher from a payer that is a contract wallet (ERC-1271) and one its
// owner did not sign, and the chain's answers as the adapter's reads expect
// them (the channel's state, the ERC-3009 nonce, the payer's balance and
// code). Writes JSON to standard output.
//   node devnet/vectors/batch-check-vectors.mjs > adapters/batch-settlement/vectors.json
import { encodeFunctionData, encodeAbiParameters, parseAbi, keccak256, getAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { computeChannelId, createBatchSettlementEIP3009DepositPayload, signVoucher } from "@x402/evm/batch-settlement/client";

const chainId = 8453;
const network = `eip155:${chainId}`;
const SETTLEMENT = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
// anvil's second well-known account: a payer whose key is public anyway.
const payer = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const authorizer = privateKeyToAccount("0x8b7e1e0a0c5b3c4f5e0d8f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e");
const stranger = privateKeyToAccount("0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba");
const token = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const receiver = "0x000000000000000000000000000000000000bEEF";
const wallet = getAddress("0x00000000000000000000000000000000000c0de1");
const context = {
  chain: "base", network, family: "evm", chain_id: chainId, asset: "usdc-batch",
  token, decimals: 6, eip712_name: "USD Coin", eip712_version: "2",
};
const terms = { amount: "1000", pay_to: receiver, max_timeout_seconds: 3600 };
const extra = { receiverAuthorizer: authorizer.address, withdrawDelay: 900, name: "USD Coin", version: "2" };
const requirements = {
  scheme: "batch-settlement", network, amount: terms.amount, asset: token, payTo: receiver,
  maxTimeoutSeconds: terms.max_timeout_seconds, extra,
};
const salt = "0x0000000000000000000000000000000000000000000000000000000000000000";
const config = { payer: payer.address, payerAuthorizer: payer.address, receiver, receiverAuthorizer: authorizer.address, token, withdrawDelay: 900, salt };
const id = computeChannelId(config, network);
const now = Math.floor(Date.now() / 1000);

const deposit = await createBatchSettlementEIP3009DepositPayload(payer, 2, requirements, config, "100000", "1000");
const voucher = { type: "voucher", channelConfig: config, voucher: await signVoucher(payer, id, "3000", network) };
// A payer that is a contract wallet (payerAuthorizer zero: the contract
// checks its ERC-1271 answer), its owner's voucher and a stranger's.
const walletConfig = { ...config, payer: wallet, payerAuthorizer: "0x0000000000000000000000000000000000000000" };
const walletId = computeChannelId(walletConfig, network);
const walletVoucher = async (by) => ({ type: "voucher", channelConfig: walletConfig, voucher: await signVoucher(by, walletId, "2000", network) });
const owners = await walletVoucher(payer);
const strangers = await walletVoucher(stranger);

const settlementAbi = parseAbi([
  "function channels(bytes32 channelId) view returns (uint128 balance, uint128 totalClaimed)",
  "function pendingWithdrawals(bytes32 channelId) view returns (uint128 amount, uint40 initiatedAt)",
  "function refundNonce(bytes32 channelId) view returns (uint256)",
]);
const tokenAbi = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
]);
const walletAbi = parseAbi(["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"]);
const call = (to, abi, fn, args, result) => ({
  method: "eth_call",
  params: [{ to, data: encodeFunctionData({ abi, functionName: fn, args }) }, "latest"],
  result,
});
const words = (types, values) => encodeAbiParameters(types.map((type) => ({ type })), values);
// A channel holding 5,000 with nothing claimed, no withdrawal pending.
const state = (channel) => [
  call(SETTLEMENT, settlementAbi, "channels", [channel], words(["uint128", "uint128"], [5000n, 0n])),
  call(SETTLEMENT, settlementAbi, "pendingWithdrawals", [channel], words(["uint128", "uint40"], [0n, 0])),
  call(SETTLEMENT, settlementAbi, "refundNonce", [channel], words(["uint256"], [0n])),
];
// The deposit's ERC-3009 nonce binds it to its channel: keccak256(channelId, salt).
const auth = deposit.payload.deposit.authorization.erc3009Authorization;
const nonce = keccak256(words(["bytes32", "uint256"], [id, BigInt(auth.salt)]));
const used = (yes) => call(token, tokenAbi, "authorizationState", [payer.address, nonce], words(["bool"], [yes]));
// The voucher digest the wallet is asked about (EIP-712, the settlement domain).
const { hashTypedData } = await import("viem");
const voucherDigest = hashTypedData({
  domain: { name: "x402 Batch Settlement", version: "1", chainId, verifyingContract: SETTLEMENT },
  types: { Voucher: [{ name: "channelId", type: "bytes32" }, { name: "maxClaimableAmount", type: "uint128" }] },
  primaryType: "Voucher",
  message: { channelId: walletId, maxClaimableAmount: 2000n },
});
const MAGIC = `0x1626ba7e${"0".repeat(56)}`;
const isValid = (v, yes) => call(wallet, walletAbi, "isValidSignature", [voucherDigest, v.voucher.signature], yes ? MAGIC : `0xffffffff${"0".repeat(56)}`);
const code = (a, c) => ({ method: "eth_getCode", params: [a, "latest"], result: c });
const proof = (payload) => ({ x402Version: 2, accepted: requirements, payload });
// The deposit's receipt as eth_getTransactionReceipt gives it: the
// contract's Deposited event; and ones that must not read as settled (the
// same reverted, a transaction with no event of the contract).
const { keccak256: k, toHex } = await import("viem");
const DEPOSITED = k(toHex("Deposited(bytes32,address,uint128,uint128)"));
const topic = (a) => `0x${a.slice(2).toLowerCase().padStart(64, "0")}`;
const relayer = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const depositedLog = { address: SETTLEMENT, topics: [DEPOSITED, id, topic(relayer)], data: words(["uint128", "uint128"], [100000n, 105000n]) };
const TRANSFER = k(toHex("Transfer(address,address,uint256)"));
const receipt = (status, logs) => ({ transactionHash: `0x${"5e".repeat(32)}`, status, blockNumber: "0x2a", logs });
const receipts = {
  settled: receipt("0x1", [depositedLog]),
  failed: [receipt("0x0", [depositedLog]), receipt("0x1", [{ address: token, topics: [TRANSFER, topic(payer.address), topic(SETTLEMENT)], data: words(["uint256"], [100000n]) }])],
};

console.log(JSON.stringify({
  scheme: "batch-settlement",
  context,
  now,
  terms,
  other_pay_to: "0x000000000000000000000000000000000000dEaD",
  requirements: { scheme: "batch-settlement", extra, given: requirements },
  // The scheme refuses by the spec's own codes; what each tampering must
  // be refused as. A deposit or voucher binds no per-request price (the
  // resource server holds the charge to its own cumulative total), so
  // the amount tampering does not apply.
  scheme_refusals: {
    amount: [],
    recipient: ["invalid_batch_settlement_evm_receiver_mismatch"],
    window: ["invalid_batch_settlement_evm_payload_authorization_valid_before", "invalid_batch_settlement_evm_payload_authorization_valid_after"],
    signer: ["invalid_batch_settlement_evm_voucher_signature", "invalid_batch_settlement_evm_receive_authorization_signature"],
  },
  proofs: [
    { name: "deposit-eip3009", proof: proof(deposit.payload), payer: payer.address, amount: "100000", signature: "/payload/voucher/signature", replay: [used(true)], receipts },
    // The same deposit, its ERC-3009 signature tampered instead of the voucher's.
    { name: "deposit-authorization", proof: proof(deposit.payload), payer: payer.address, amount: "100000", signature: "/payload/deposit/authorization/erc3009Authorization/signature" },
    { name: "voucher", proof: proof(voucher), payer: payer.address, amount: "0", signature: "/payload/voucher/signature" },
  ],
  contract_payers: [
    { name: "erc1271-voucher", proof: proof(owners), payer: wallet },
    { name: "erc1271-voucher-stranger", proof: proof(strangers), payer: wallet, refusal: "scheme: invalid_batch_settlement_evm_voucher_signature" },
  ],
  chain: [
    ...state(id),
    ...state(walletId),
    used(false),
    call(token, tokenAbi, "balanceOf", [payer.address], words(["uint256"], [10n ** 12n])),
    code(payer.address, "0x"),
    code(wallet, "0x6080604052"),
    isValid(owners, true),
    isValid(strangers, false),
  ],
}, null, 2));
