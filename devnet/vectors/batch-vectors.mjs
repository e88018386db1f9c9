// Vectors for batch-settlement's wire (adapters/batch-wire), made by the
// reference package itself (@x402/evm's batch-settlement client and its
// signing helpers, viem): channel ids of several configs, a deposit payload
// by ERC-3009 and one by Permit2 as the client builds them, vouchers, a
// claim batch and a refund signed by the receiver authorizer. Printed as
// JSON; adapters/batch-wire/vectors.json is one run of it, and the suite
// checks a fresh run against batch-wire every time.
//   node devnet/vectors/batch-vectors.mjs > adapters/batch-wire/vectors.json
import { privateKeyToAccount } from "viem/accounts";
import { computeChannelId, createBatchSettlementEIP3009DepositPayload, signVoucher, BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";

const chainId = 8453;
const network = `eip155:${chainId}`;
const payer = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const delegate = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const authorizer = privateKeyToAccount("0x8b7e1e0a0c5b3c4f5e0d8f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e");
const usdc = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const receiver = "0x000000000000000000000000000000000000bEEF";
const zero = "0x0000000000000000000000000000000000000000";
const config = (over = {}) => ({
  payer: payer.address, payerAuthorizer: payer.address, receiver, receiverAuthorizer: authorizer.address, token: usdc, withdrawDelay: 900,
  salt: "0x0000000000000000000000000000000000000000000000000000000000000000", ...over,
});
const configs = [
  config(),
  config({ payerAuthorizer: zero }),
  config({ payerAuthorizer: delegate.address, withdrawDelay: 2592000, salt: "0x00000000000000000000000000000000000000000000000000000000000000ff" }),
];
const channels = configs.map((c) => ({ config: c, chain_id: chainId, channel_id: computeChannelId(c, network) }));
channels.push({ config: configs[0], chain_id: 1, channel_id: computeChannelId(configs[0], 1) });

const requirements = {
  scheme: "batch-settlement", network, amount: "1000", asset: usdc, payTo: receiver, maxTimeoutSeconds: 3600,
  extra: { receiverAuthorizer: authorizer.address, withdrawDelay: 900, name: "USD Coin", version: "2" },
};
const id = channels[0].channel_id;
const erc3009 = await createBatchSettlementEIP3009DepositPayload(payer, 2, requirements, configs[0], "100000", "1000");
// Permit2: the client's own path, with a Permit2 route's requirements.
const permit2Requirements = { ...requirements, extra: { ...requirements.extra, assetTransferMethod: "permit2" } };
const scheme = new BatchSettlementEvmScheme(payer, { salt: configs[0].salt });
const permit2 = await scheme.createPaymentPayload(2, permit2Requirements);
const vouchers = [];
for (const [c, signer] of [[configs[0], payer], [configs[2], delegate]]) {
  const channelId = computeChannelId(c, network);
  for (const max of ["1", "5000", "340282366920938463463374607431768211455"]) {
    vouchers.push({ config: c, ...(await signVoucher(signer, channelId, max, network)), signer: signer.address });
  }
}
// The receiver authorizer's signatures, as the reference facilitator and
// server make them (authorizerSigner.ts's types).
const domain = { name: "x402 Batch Settlement", version: "1", chainId, verifyingContract: "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003" };
const claims = [
  { voucher: { channel: configs[0], maxClaimableAmount: "5000" }, signature: vouchers[1].signature, totalClaimed: "4200" },
  { voucher: { channel: configs[2], maxClaimableAmount: "1" }, signature: vouchers[3].signature, totalClaimed: "1" },
];
const claimSignature = await authorizer.signTypedData({
  domain,
  types: { ClaimBatch: [{ name: "claims", type: "ClaimEntry[]" }], ClaimEntry: [{ name: "channelId", type: "bytes32" }, { name: "maxClaimableAmount", type: "uint128" }, { name: "totalClaimed", type: "uint128" }] },
  primaryType: "ClaimBatch",
  message: { claims: claims.map((c) => ({ channelId: computeChannelId(c.voucher.channel, network), maxClaimableAmount: BigInt(c.voucher.maxClaimableAmount), totalClaimed: BigInt(c.totalClaimed) })) },
});
const refund = { channel_id: id, nonce: "3", amount: "1500" };
refund.signature = await authorizer.signTypedData({
  domain,
  types: { Refund: [{ name: "channelId", type: "bytes32" }, { name: "nonce", type: "uint256" }, { name: "amount", type: "uint128" }] },
  primaryType: "Refund",
  message: { channelId: id, nonce: 3n, amount: 1500n },
});
console.log(
  JSON.stringify(
    {
      chain_id: chainId,
      authorizer: authorizer.address,
      channels,
      requirements,
      deposits: { erc3009: erc3009.payload, permit2: permit2.payload },
      vouchers,
      claim: { type: "claim", claims, claimAuthorizerSignature: claimSignature },
      refund,
    },
    null,
    2,
  ),
);
