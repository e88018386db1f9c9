// batch-settlement through a facilitator, on the devnet's base chain, with
// the reference client and server (issue 66's measure):
//  1. N paid requests by vouchers through the resource server SHOP (a
//     batch-settlement route, metered 1..9 units), then one claim and sweep
//     (SHOP's /channels/claim-and-settle): the gas of every transaction that
//     took (deposits, claim, settle) over the requests charged;
//  2. the same for `exact` through EXACT (one transfer per request);
//  3. V vouchers (EOA payer authorizer) POSTed to FAC's /verify at
//     concurrency C: vouchers verified per second and p50/p99. Signed
//     before the clock starts.
//   DIR=devnet-dir FAC=http://…/ [KEY=facilitator-key] SHOP=http://…/paid EXACT=http://…/paid PAYER=6 N=60 V=400 C=16 node devnet/bench/bench-batch.mjs
// Prints one JSON line.
import fs from "node:fs";
import http from "node:http";
import { createPublicClient, http as viemHttp } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Client, wrapFetchWithPayment, x402HTTPClient } from "@x402/fetch";
import { toClientEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";

const d = JSON.parse(fs.readFileSync(process.env.DIR + "/devnet.json", "utf8"));
const N = +(process.env.N || 60), V = +(process.env.V || 400), C = +(process.env.C || 16);
const base = d.chains.base;
const usdc = base.assets.usdc.address;
const pub = createPublicClient({ transport: viemHttp(base.rpc) });
const gasOf = async (hashes) => {
  let gas = 0n;
  for (const hash of hashes) gas += (await pub.getTransactionReceipt({ hash })).gasUsed;
  return gas;
};

// 1. Requests by vouchers, then one claim and one sweep.
const account = privateKeyToAccount(d.payers[+(process.env.PAYER || 6)].private_key);
const signer = toClientEvmSigner(account, pub);
const batch = new BatchSettlementEvmScheme(signer, { rpcUrl: base.rpc });
const client = new x402Client().register("eip155:*", batch).register("eip155:*", new ExactEvmScheme(signer));
client.setSpendControls({ allowedAssets: [{ network: "eip155:*", asset: usdc }] });
const pay = wrapFetchWithPayment(fetch, client);
const answers = new x402HTTPClient(client);
const settled = async (url) => {
  const r = await pay(url, { method: "GET" });
  await r.text();
  if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
  return answers.getPaymentSettleResponse((name) => r.headers.get(name));
};
const onChain = [];
for (let i = 0; i < N; i++) {
  const p = await settled(`${process.env.SHOP}?use=${1 + (i % 9)}`);
  if (p.transaction) onChain.push(p.transaction);
}
const swept = await (await fetch(new URL("/channels/claim-and-settle", process.env.SHOP), { method: "POST" })).json();
for (const c of swept.claims ?? []) onChain.push(c.transaction);
if (swept.settle?.transaction) onChain.push(swept.settle.transaction);
const batchGas = await gasOf(onChain);

// 2. exact: one transfer per request.
const exactTx = [];
for (let i = 0; i < 3; i++) exactTx.push((await settled(process.env.EXACT)).transaction);
const exactGas = await gasOf(exactTx);

// 3. Vouchers at the facilitator's /verify: the channel's next voucher, as
// the client signs it for the route's requirements (V of them, signed first).
const required = await fetch(process.env.SHOP);
const requirements = JSON.parse(Buffer.from(required.headers.get("payment-required"), "base64").toString()).accepts[0];
const bodies = [];
for (let i = 0; i < V; i++) {
  const made = await batch.createPaymentPayload(2, requirements);
  if (made.payload.type !== "voucher") throw new Error(`expected a voucher, got ${made.payload.type}`);
  bodies.push(JSON.stringify({ x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: made.payload }, paymentRequirements: requirements }));
}
const fac = new URL(process.env.FAC);
const agent = new http.Agent({ keepAlive: true, maxSockets: C });
const post = (body) =>
  new Promise((resolve, reject) => {
    const req = http.request({ host: fac.hostname, port: fac.port, path: `${fac.pathname.replace(/\/$/, "")}/verify`, method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...(process.env.KEY ? { authorization: `Bearer ${process.env.KEY}` } : {}) } }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve(JSON.parse(text)));
    });
    req.on("error", reject);
    req.end(body);
  });
const latencies = [];
let ok = 0, bad = 0, next = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: C }, async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const t = performance.now();
      const answer = await post(body);
      latencies.push(performance.now() - t);
      if (answer.isValid) ok++;
      else bad++;
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p) => +latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))].toFixed(2);
console.log(
  JSON.stringify({
    vouchers: { per_second: +(V / seconds).toFixed(1), latency_ms: { p50: pct(50), p99: pct(99) }, ok, bad, concurrency: C },
    gas_per_request: { batch_settlement: Number(batchGas / BigInt(N)), exact: Number(exactGas / BigInt(exactTx.length)), requests: N, batch_transactions: onChain.length },
  }),
);
agent.destroy();
