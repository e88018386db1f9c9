// A buyer of a batch-settlement route as x402 clients write one:
// @x402/fetch's wrapFetchWithPayment with @x402/evm's batch-settlement client
// scheme (its channel state in memory), unmodified. N paid requests in one
// process, each `GET <url>?use=K` with K from --uses (cycled).
//
//   node batch-pay.mjs --url URL --key 0x<payer key> --asset A --rpc URL --n N --uses 1,2,3 [--refund]
//
// Prints {paid, statuses, charged, transactions, last}: `charged` is the sum
// of the charges the server reported (extra.chargedAmount), `transactions`
// the on-chain ones its answers named (deposits; with --refund, the refund).
import { privateKeyToAccount } from "viem/accounts";
import { createPublicClient, http } from "viem";
import { x402Client, wrapFetchWithPayment, x402HTTPClient } from "@x402/fetch";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";

const arg = (n, d) => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
const url = arg("url");
const asset = arg("asset");
const n = Number(arg("n", "1"));
const uses = arg("uses", "1").split(",").map(Number);
const signer = toClientEvmSigner(privateKeyToAccount(arg("key")), createPublicClient({ transport: http(arg("rpc")) }));
const scheme = new BatchSettlementEvmScheme(signer, { rpcUrl: arg("rpc") });
const client = new x402Client();
client.register("eip155:*", scheme);
client.setSpendControls({ allowedAssets: [{ network: "eip155:*", asset }] });
const pay = wrapFetchWithPayment(fetch, client);
const http402 = new x402HTTPClient(client);

const statuses = {};
const transactions = [];
let charged = 0n;
let last = null;
for (let i = 0; i < n; i++) {
  const response = await pay(`${url}?use=${uses[i % uses.length]}`, { method: "GET" });
  await response.text();
  statuses[response.status] = (statuses[response.status] ?? 0) + 1;
  let payment = null;
  try {
    payment = http402.getPaymentSettleResponse((name) => response.headers.get(name));
  } catch {}
  if (payment?.extra?.chargedAmount) charged += BigInt(payment.extra.chargedAmount);
  if (payment?.transaction) transactions.push(payment.transaction);
  last = payment;
}
console.log(JSON.stringify({ paid: statuses[200] ?? 0, statuses, charged: charged.toString(), transactions, last }));
