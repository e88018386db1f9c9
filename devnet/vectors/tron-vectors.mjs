// Vectors for `stablerail adapter check` of the TRON Permit2 adapter: the
// proof is signed by tronweb (tron-pay.mjs, TIP-712 over TRON's chain id)
// for the requirements the adapter makes of the terms, and the chain's
// answers are what /wallet/triggerconstantcontract and /wallet/getnowblock
// return for the reads the adapter makes. Writes JSON to standard output.
//   node devnet/vectors/tron-vectors.mjs > adapters/tron-permit2/vectors.json
import { execFileSync } from "node:child_process";
import path from "node:path";
import { TronWeb } from "tronweb";

// The devnet folder (this file is in one of its role folders).
const here = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
// Nile's chain id and its SUN.io Permit2 and x402 exact-Permit2 proxy.
const chainId = 3448148188;
const permit2 = "TCJjTtzwRJYPapGTdyJdKcr7MqkngRRWQx";
const proxy = "TTjbkCh8sC4gNTWG48iWNssrLBqZq2tiTy";
const token = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
// anvil's well-known keys: a payer, the relayer, two recipients (public anyway).
const keyOf = (n) => ["ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80", "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a", "7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6"][n];
const addr = (n) => TronWeb.address.fromPrivateKey(keyOf(n));
const [relayer, payer, payTo, other] = [0, 1, 2, 3].map(addr);

const context = {
  chain: "tron", network: `tron:0x${chainId.toString(16)}`, family: "tron", chain_id: chainId, asset: "usdt",
  token, decimals: 6, params: { "permit2-address": permit2, "proxy-address": proxy },
};
const terms = { amount: "10000", pay_to: payTo, max_timeout_seconds: 600 };
// What the adapter answers for these terms (`adapter check` without proofs prints it).
const requirements = {
  scheme: "exact", network: context.network, amount: terms.amount, asset: token, payTo, maxTimeoutSeconds: terms.max_timeout_seconds,
  extra: { assetTransferMethod: "permit2", permit2Address: permit2, spender: proxy, decimals: 6, asset: token, amount: terms.amount },
};
const now = Math.floor(Date.now() / 1000);
const b64 = execFileSync("node", [path.join(here, "clients", "tron-pay.mjs"), `0x${keyOf(1)}`, String(chainId)], { input: JSON.stringify(requirements) });
const proof = JSON.parse(Buffer.from(b64.toString(), "base64").toString("utf8"));

// A view call as the adapter asks it, and the node's answer.
const raw = (a) => TronWeb.address.toHex(a).toLowerCase();
const word = (v) => v.toString(16).padStart(64, "0");
const view = (contract, selector, args, value) => ({
  method: "/wallet/triggerconstantcontract",
  params: { owner_address: raw(args[0]), contract_address: raw(contract), function_selector: selector, parameter: args.map((a) => raw(a).slice(2).padStart(64, "0")).join("") },
  result: { result: { result: true }, constant_result: [word(value)] },
});

// The settlement as /wallet/gettransactioninfobyid gives it, and ones that
// must not read as this payment (reverted, another amount).
const TRANSFER = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const info = (result, value) => ({
  id: "5e".repeat(32), blockNumber: 70000001, receipt: { result },
  log: [{ address: raw(token).slice(2), topics: [TRANSFER, raw(payer).slice(2).padStart(64, "0"), raw(payTo).slice(2).padStart(64, "0")], data: word(value) }],
});
const receipts = { settled: info("SUCCESS", 10000n), failed: [info("REVERT", 10000n), info("SUCCESS", 9999n)] };

console.log(JSON.stringify({
  scheme: "tron-permit2",
  context,
  relayer,
  now,
  terms,
  other_pay_to: other,
  requirements: { scheme: "exact", extra: { assetTransferMethod: "permit2", permit2Address: permit2, spender: proxy } },
  proofs: [{ name: "x402-v2", proof, payer, signature: "/payload/signature", receipts }],
  chain: [
    view(token, "balanceOf(address)", [payer], 10n ** 12n),
    view(token, "allowance(address,address)", [payer, permit2], 10n ** 12n),
    // The reference block a host-held wallet's transfer names (authorize).
    { method: "/wallet/getnowblock", params: {}, result: { blockID: `${"00".repeat(24)}${word(BigInt(now - 3)).slice(-16)}`, block_header: { raw_data: { number: 70000000, timestamp: (now - 3) * 1000 } } } },
  ],
}, null, 2));
