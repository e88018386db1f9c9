// Settle N EIP-3009 payloads through an x402 facilitator's /settle at
// concurrency C, x402 v1 bodies, on the devnet's base chain: the bodies of
// ../shared/bench/x402rs_bench.mjs, with each request's latency kept. The
// same generator drives stablerail and x402-rs, so only the facilitator
// differs. Signing happens before the clock starts.
//   FAC=http://127.0.0.1:PORT/x402 DIR=devnet-dir N=200 C=32 node devnet/bench/bench-x402.mjs
// RATE=R sends at R payments per second instead (open loop, at most C open).
// Prints one JSON line: per_second, latency_ms {p50,p90,p99,max}, ok, bad,
// merchant_credited_units, and gas_per_payment: the gas of every
// transaction the answers name (read from their receipts) over the
// payments settled. Requests go through node:http with kept-alive
// connections, one per worker: a fraction of fetch()'s CPU, so the
// generator (on its own core) is not what limits the facilitator.
import fs from "node:fs";
import http from "node:http";
import { privateKeyToAccount } from "viem/accounts";

const d = JSON.parse(fs.readFileSync(process.env.DIR + "/devnet.json", "utf8"));
const N = +(process.env.N || 200), C = +(process.env.C || 32);
// RATE=R (payments per second): an open-loop load instead of C loops.
const RATE = +(process.env.RATE || 0);
const usdc = d.chains.base.assets.usdc;
const merchant = "0x000000000000000000000000000000000000c0fe";
const rpc = async (m, p) =>
  (await (await fetch(d.chains.base.rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: m, params: p }) })).json()).result;
const balance = async () => BigInt(await rpc("eth_call", [{ to: usdc.address, data: "0x70a08231" + merchant.slice(2).padStart(64, "0") }, "latest"]));

const now = Math.floor(Date.now() / 1000);
const types = {
  TransferWithAuthorization: [
    { name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" },
  ],
};
const bodies = [];
for (let i = 0; i < N; i++) {
  const account = privateKeyToAccount(d.payers[2 + (i % 6)].private_key);
  const nonce = "0x" + Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex");
  const authorization = { from: account.address, to: merchant, value: "10000", validAfter: "0", validBefore: String(now + 900), nonce };
  const signature = await account.signTypedData({
    domain: { name: usdc.name, version: usdc.version, chainId: d.chains.base.chain_id, verifyingContract: usdc.address },
    types,
    primaryType: "TransferWithAuthorization",
    message: { ...authorization, value: 10000n, validAfter: 0n, validBefore: BigInt(authorization.validBefore) },
  });
  bodies.push(JSON.stringify({
    x402Version: 1,
    paymentPayload: { x402Version: 1, scheme: "exact", network: "base", payload: { signature, authorization } },
    paymentRequirements: {
      scheme: "exact", network: "base", maxAmountRequired: "10000", resource: "http://example.test/r", description: "",
      mimeType: "application/json", payTo: merchant, maxTimeoutSeconds: 300, asset: usdc.address,
      extra: { name: usdc.name, version: usdc.version },
    },
  }));
}

const target = new URL(process.env.FAC + "/settle");
const agent = new http.Agent({ keepAlive: true, maxSockets: C });
const post = (body) =>
  new Promise((resolve, reject) => {
    const r = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
      },
    );
    r.on("error", reject);
    r.end(body);
  });

const before = await balance();
const latencies = [];
let next = 0, ok = 0, bad = 0, firstError = "";
const transactions = new Set();
// One request, its latency and outcome kept.
const send = async (body) => {
  const t = performance.now();
  const r = await post(body);
  latencies.push(performance.now() - t);
  let j = {};
  try {
    j = JSON.parse(r.text);
  } catch {}
  if (r.status === 200 && j.success) {
    ok++;
    if (j.transaction) transactions.add(j.transaction);
  } else {
    bad++;
    firstError ||= r.status + " " + r.text.slice(0, 200);
  }
};
const t0 = performance.now();
if (RATE > 0) {
  // Open loop: request i leaves at i / RATE seconds, whatever the answers
  // before it (at most C open at once): the facilitator's capacity, not
  // C per round trip, bounds the throughput.
  const open = [];
  for (let i = 0; i < N; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    open.push(send(bodies[i]));
  }
  await Promise.all(open);
} else {
  await Promise.all(Array.from({ length: C }, async () => {
    while (next < N) await send(bodies[next++]);
  }));
}
const seconds = (performance.now() - t0) / 1000;
const credited = (await balance()) - before;
let gas = 0n;
for (const hash of transactions) {
  const receipt = await rpc("eth_getTransactionReceipt", [hash]);
  if (receipt) gas += BigInt(receipt.gasUsed);
}
agent.destroy();
latencies.sort((a, b) => a - b);
const pct = (p) => +latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))].toFixed(1);
console.log(JSON.stringify({
  n: N, concurrency: C, rate: RATE || undefined, seconds: +seconds.toFixed(3), per_second: +(ok / seconds).toFixed(1),
  latency_ms: { p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: pct(1) },
  ok, bad, first_error: firstError, merchant_credited_units: String(credited),
  transactions: transactions.size, gas_per_payment: ok ? Number(gas / BigInt(ok)) : null,
}));
