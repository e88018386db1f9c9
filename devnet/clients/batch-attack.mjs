// What a stranger can try against the devnet's batch-settlement contract and
// its collectors, each step reported as {step, ok, reason}: a deposit
// authorization replayed or moved to another channel, a collector called
// directly, claims by strangers or above the balance, a forged voucher, a
// forged refund, a voucher with a non-canonical signature, a refund of
// nothing, a withdrawal early or by someone else. Also the payer's own
// timed withdrawal (evm_increaseTime past the delay) and a permissionless
// sweep. viem and the devnet's RPC only.
//
//   node batch-attack.mjs --rpc URL --token A --payer-key 0x.. --authorizer-key 0x.. --receiver A
import crypto from "node:crypto";
import { createWalletClient, createPublicClient, http, parseAbi, encodeAbiParameters, keccak256, getAddress, BaseError } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const arg = (n) => process.argv[process.argv.indexOf(`--${n}`) + 1];
const rpc = arg("rpc");
const token = getAddress(arg("token"));
const payer = privateKeyToAccount(arg("payer-key"));
const authorizer = privateKeyToAccount(arg("authorizer-key"));
const receiver = getAddress(arg("receiver"));
const stranger = privateKeyToAccount(`0x${crypto.randomBytes(32).toString("hex")}`);
const SETTLEMENT = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
const COLLECTOR = "0x4020806089470a89826cB9fB1f4059150b550004";
const pub = createPublicClient({ transport: http(rpc) });
const chainId = await pub.getChainId();
const chain = { id: chainId, name: "devnet", nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpc] } } };
const as = (account) => createWalletClient({ chain, account, transport: http(rpc) });
await pub.request({ method: "anvil_setBalance", params: [stranger.address, "0x56BC75E2D63100000"] });
await pub.request({ method: "anvil_setBalance", params: [payer.address, "0x56BC75E2D63100000"] });

const CONFIG = "(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)";
const CLAIM = `((${CONFIG} channel,uint128 maxClaimableAmount) voucher,bytes signature,uint128 totalClaimed)`;
const abi = parseAbi([
  `function deposit(${CONFIG} config, uint128 amount, address collector, bytes collectorData)`,
  `function claim(${CLAIM}[] voucherClaims)`,
  `function claimWithSignature(${CLAIM}[] voucherClaims, bytes authorizerSignature)`,
  `function refundWithSignature(${CONFIG} config, uint128 amount, uint256 nonce, bytes receiverAuthorizerSignature)`,
  `function initiateWithdraw(${CONFIG} config, uint128 amount)`,
  `function finalizeWithdraw(${CONFIG} config)`,
  "function settle(address receiver, address token)",
  `function getChannelId(${CONFIG} config) view returns (bytes32)`,
  "function channels(bytes32) view returns (uint128 balance, uint128 totalClaimed)",
  "function refundNonce(bytes32) view returns (uint256)",
  "function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes data)",
  "function balanceOf(address) view returns (uint256)",
]);
const domain = { name: "x402 Batch Settlement", version: "1", chainId, verifyingContract: SETTLEMENT };
const config = (salt) => ({ payer: payer.address, payerAuthorizer: payer.address, receiver, receiverAuthorizer: authorizer.address, token, withdrawDelay: 900, salt });
const salt = () => `0x${crypto.randomBytes(32).toString("hex")}`;
const idOf = (c) => pub.readContract({ address: SETTLEMENT, abi, functionName: "getChannelId", args: [c] });
const balanceOf = (who) => pub.readContract({ address: token, abi, functionName: "balanceOf", args: [who] });

async function depositData(c, amount) {
  const s = BigInt(salt());
  const nonce = keccak256(encodeAbiParameters([{ type: "bytes32" }, { type: "uint256" }], [await idOf(c), s]));
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + 3600);
  const signature = await payer.signTypedData({
    domain: { name: "USD Coin", version: "2", chainId, verifyingContract: token },
    types: { ReceiveWithAuthorization: [{ name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" }, { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" }] },
    primaryType: "ReceiveWithAuthorization",
    message: { from: payer.address, to: COLLECTOR, value: amount, validAfter: 0n, validBefore, nonce },
  });
  return encodeAbiParameters([{ type: "uint256" }, { type: "uint256" }, { type: "uint256" }, { type: "bytes" }], [0n, validBefore, s, signature]);
}
const voucher = async (signer, id, max) =>
  signer.signTypedData({ domain, types: { Voucher: [{ name: "channelId", type: "bytes32" }, { name: "maxClaimableAmount", type: "uint128" }] }, primaryType: "Voucher", message: { channelId: id, maxClaimableAmount: max } });
const claimBatch = async (signer, rows) =>
  signer.signTypedData({
    domain,
    types: { ClaimBatch: [{ name: "claims", type: "ClaimEntry[]" }], ClaimEntry: [{ name: "channelId", type: "bytes32" }, { name: "maxClaimableAmount", type: "uint128" }, { name: "totalClaimed", type: "uint128" }] },
    primaryType: "ClaimBatch",
    message: { claims: await Promise.all(rows.map(async (r) => ({ channelId: await idOf(r.voucher.channel), maxClaimableAmount: r.voucher.maxClaimableAmount, totalClaimed: r.totalClaimed }))) },
  });
const refundSig = async (signer, id, nonce, amount) =>
  signer.signTypedData({ domain, types: { Refund: [{ name: "channelId", type: "bytes32" }, { name: "nonce", type: "uint256" }, { name: "amount", type: "uint128" }] }, primaryType: "Refund", message: { channelId: id, nonce, amount } });

const steps = [];
/// Simulated first, so a refusal carries the contract's own reason; sent
/// only when the simulation passes.
async function step(name, account, address, functionName, args) {
  try {
    await pub.simulateContract({ account, address, abi, functionName, args });
  } catch (e) {
    const reason = e instanceof BaseError ? (e.walk((x) => x.reason)?.reason ?? e.shortMessage) : String(e);
    steps.push({ step: name, ok: false, reason });
    return;
  }
  const hash = await as(account).writeContract({ address, abi, functionName, args, gas: 1_000_000n });
  const receipt = await pub.waitForTransactionReceipt({ hash });
  steps.push({ step: name, ok: receipt.status === "success", reason: receipt.status });
}

const C = config(salt());
const id = await idOf(C);
const data = await depositData(C, 50_000n);
await step("a stranger relays the payer's deposit", stranger, SETTLEMENT, "deposit", [C, 50_000n, COLLECTOR, data]);
await step("the same authorization again", stranger, SETTLEMENT, "deposit", [C, 50_000n, COLLECTOR, data]);
await step("the authorization moved to another channel", stranger, SETTLEMENT, "deposit", [config(salt()), 50_000n, COLLECTOR, await depositData(C, 50_000n)]);
await step("the collector called directly", stranger, COLLECTOR, "collect", [payer.address, token, 50_000n, id, await depositData(C, 50_000n)]);
const row = async (signer, max, total) => ({ voucher: { channel: C, maxClaimableAmount: max }, signature: await voucher(signer, id, max), totalClaimed: total });
await step("a stranger claims a real voucher", stranger, SETTLEMENT, "claim", [[await row(payer, 20_000n, 20_000n)]]);
await step("a claim batch signed by a stranger", stranger, SETTLEMENT, "claimWithSignature", [[await row(payer, 20_000n, 20_000n)], await claimBatch(stranger, [await row(payer, 20_000n, 20_000n)])]);
{
  const forged = [await row(stranger, 20_000n, 20_000n)];
  await step("a voucher signed by a stranger", stranger, SETTLEMENT, "claimWithSignature", [forged, await claimBatch(authorizer, forged)]);
}
{
  const above = [await row(payer, 60_000n, 60_000n)];
  await step("a claim above the balance", stranger, SETTLEMENT, "claimWithSignature", [above, await claimBatch(authorizer, above)]);
}
{
  const over = [await row(payer, 20_000n, 25_000n)];
  await step("a claim above its voucher", stranger, SETTLEMENT, "claimWithSignature", [over, await claimBatch(authorizer, over)]);
}
{
  // The payer's own voucher with v as 0/1: common recovery reads it as the
  // payer's; the contract (OpenZeppelin's rules) does not.
  const twin = await row(payer, 20_000n, 20_000n);
  const sig = Buffer.from(twin.signature.slice(2), "hex");
  sig[64] -= 27;
  twin.signature = `0x${sig.toString("hex")}`;
  await step("the payer's voucher with v as 0/1", stranger, SETTLEMENT, "claimWithSignature", [[twin], await claimBatch(authorizer, [twin])]);
}
const good = [await row(payer, 20_000n, 20_000n)];
const goodSig = await claimBatch(authorizer, good);
await step("the authorizer's claim, relayed", stranger, SETTLEMENT, "claimWithSignature", [good, goodSig]);
await step("the same claim again", stranger, SETTLEMENT, "claimWithSignature", [good, goodSig]);
const nonce = await pub.readContract({ address: SETTLEMENT, abi, functionName: "refundNonce", args: [id] });
await step("a refund signed by a stranger", stranger, SETTLEMENT, "refundWithSignature", [C, 1_000n, nonce, await refundSig(stranger, id, nonce, 1_000n)]);
await step("a refund of another amount than signed", stranger, SETTLEMENT, "refundWithSignature", [C, 2_000n, nonce, await refundSig(authorizer, id, nonce, 1_000n)]);
await step("a refund of nothing", stranger, SETTLEMENT, "refundWithSignature", [C, 0n, nonce, await refundSig(authorizer, id, nonce, 0n)]);
await step("a refund at a future nonce", stranger, SETTLEMENT, "refundWithSignature", [C, 1_000n, nonce + 1n, await refundSig(authorizer, id, nonce + 1n, 1_000n)]);
await step("a stranger starts the payer's withdrawal", stranger, SETTLEMENT, "initiateWithdraw", [C, 10_000n]);
await step("a withdrawal above the unclaimed balance", payer, SETTLEMENT, "initiateWithdraw", [C, 30_001n]);
const payerBefore = await balanceOf(payer.address);
await step("the payer starts a withdrawal", payer, SETTLEMENT, "initiateWithdraw", [C, 30_000n]);
await step("the withdrawal finished early", payer, SETTLEMENT, "finalizeWithdraw", [C]);
await pub.request({ method: "evm_increaseTime", params: [900] });
await pub.request({ method: "evm_mine", params: [] });
await step("a stranger finishes the withdrawal", stranger, SETTLEMENT, "finalizeWithdraw", [C]);
await step("the payer finishes the withdrawal after the delay", payer, SETTLEMENT, "finalizeWithdraw", [C]);
const receiverBefore = await balanceOf(receiver);
await step("a stranger sweeps the receiver's claims", stranger, SETTLEMENT, "settle", [receiver, token]);
const [balance, totalClaimed] = await pub.readContract({ address: SETTLEMENT, abi, functionName: "channels", args: [id] });
console.log(
  JSON.stringify({
    steps,
    channel: { balance: balance.toString(), totalClaimed: totalClaimed.toString() },
    withdrawn: ((await balanceOf(payer.address)) - payerBefore).toString(),
    swept: ((await balanceOf(receiver)) - receiverBefore).toString(),
  }),
);
