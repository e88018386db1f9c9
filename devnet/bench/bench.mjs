// Settlement throughput on the devnet, in one run:
//   A. the x402 reference facilitator (@x402/evm ExactEvmScheme.settle),
//      settling N EIP-3009 payloads one after another on `base`;
//   B. a running stablerail settling N intents submitted at once:
//      proof → source leg settled, and proof → TARGET_SETTLED;
//   C. one stablerail intent alone, for its latency.
// Signing happens before any clock starts. Prints one JSON report.
//
//   node devnet/bench/bench.mjs --dir DIR --url http://127.0.0.1:PORT [--n 40] [--c C] [--skip-reference] [--bearer B]
// --c: at most C proofs posted at once (C clients, each posting its next
// proof once the last was accepted); without it every proof is posted at
// once. A payer of an intent does not wait for the settlement (the service
// settles it after accepting the proof), so C bounds submissions, not
// settlements in flight; settlement times are the service's own timestamps.
// --bearer: intents are an agent's (`POST /v2/intents` with `Authorization:
// B`), paid through the public flow as before (what webhooks announce).
import fs from "node:fs";
import path from "node:path";
import nodeHttp from "node:http";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount, mnemonicToAccount } from "viem/accounts";
import { ExactEvmScheme as Client } from "@x402/evm/exact/client";
import { ExactEvmScheme as Facilitator } from "@x402/evm/exact/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";

const arg = (n, d) => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
const dir = path.resolve(arg("dir", ".stablerail/bench"));
const url = arg("url", "http://127.0.0.1:8402");
const N = Number(arg("n", "40"));
const C = Number(arg("c", "0")) || N;
const skipReference = process.argv.includes("--skip-reference");
const bearer = arg("bearer", "");
const devnet = JSON.parse(fs.readFileSync(path.join(dir, "devnet.json"), "utf8"));
const base = devnet.chains.base;
const chain = { id: base.chain_id, name: "base", nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [base.rpc] } } };
const payers = devnet.payers.map((p) => new Client(privateKeyToAccount(p.private_key)));
const now = () => performance.now();

async function api(method, p, body, auth) {
  const headers = { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) };
  const r = await fetch(`${url}${p}`, { method, headers, body: body && JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

// A. Reference facilitator, sequential. Its own wallet (anvil account 9) pays gas.
const facilitatorAccount = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 9 });
// A short polling interval keeps the reference at its fastest: viem would
// otherwise wait 4 s whenever a receipt is not there at the first look.
const wallet = createWalletClient({ chain, account: facilitatorAccount, transport: http(base.rpc), pollingInterval: 5 }).extend(publicActions);
const facilitator = new Facilitator(toFacilitatorEvmSigner(wallet));
const requirements = {
  scheme: "exact", network: `eip155:${base.chain_id}`, amount: "1000000", asset: base.assets.usdc.address,
  payTo: "0x00000000000000000000000000000000000FEE00", maxTimeoutSeconds: 600,
  extra: { name: "USD Coin", version: "2", decimals: 6 },
};
const refPayloads = [];
for (let i = 0; i < N; i++) {
  const made = await payers[i % payers.length].createPaymentPayload(2, requirements);
  refPayloads.push({ x402Version: 2, accepted: requirements, payload: made.payload });
}
let t0 = now();
for (const p of skipReference ? [] : refPayloads) {
  const r = await facilitator.settle(p, requirements);
  if (!r.success) throw new Error(`reference settle failed: ${JSON.stringify(r)}`);
}
const refSeconds = (now() - t0) / 1000;

// B. stablerail, N intents at once.
async function prepare(n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const ask = { recipient: "0x000000000000000000000000000000000000bEEF", amount: "1", payer_chain: "base", target_chain: "arbitrum" };
    const intent = bearer ? await api("POST", "/v2/intents", ask, bearer) : await api("POST", "/api/intents", ask);
    const made = await payers[i % payers.length].createPaymentPayload(2, intent.payment_requirements);
    const proof = Buffer.from(JSON.stringify({ x402Version: 2, accepted: intent.payment_requirements, payload: made.payload })).toString("base64");
    out.push({ id: intent.intent_id, proof });
  }
  return out;
}
// Proofs go through node:http with kept-alive connections, one per payer
// (as devnet/bench/bench-x402.mjs posts its bodies): a fraction of fetch()'s CPU,
// which shares its core with the devnets.
const agent = new nodeHttp.Agent({ keepAlive: true, maxSockets: C });
const target = new URL(url);
const postProof = (id, proof) =>
  new Promise((resolve, reject) => {
    const body = JSON.stringify({ settle_proof: proof });
    const r = nodeHttp.request(
      { host: target.hostname, port: target.port, path: `/api/intents/${id}`, method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => (res.statusCode < 300 ? resolve() : reject(new Error(`POST proof ${id}: ${res.statusCode} ${Buffer.concat(chunks)}`))));
      },
    );
    r.on("error", reject);
    r.end(body);
  });
async function run(batch, c) {
  const start = Date.now();
  const posted = new Map();
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(c, batch.length) }, async () => {
    while (next < batch.length) {
      const b = batch[next++];
      posted.set(b.id, Date.now());
      await postProof(b.id, b.proof);
    }
  }));
  const accepted = Date.now() - start;
  // Completion times come from the service's own settlement timestamps
  // (millisecond RFC 3339, same machine clock), so the harness need not
  // poll hard: it waits on one unsettled intent at a time, gently.
  const settled = [];
  for (const b of batch) {
    for (;;) {
      const i = await api("GET", `/api/intents/${b.id}`);
      if (i.status === "TARGET_SETTLED") {
        settled.push(i);
        break;
      }
      if (["VERIFICATION_FAILED", "BLOCKED", "PARTIAL_SETTLEMENT", "EXPIRED"].includes(i.status)) throw new Error(`${b.id} ended ${i.status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const times = (leg) => settled.map((i) => Date.parse(i[leg].settled_at) - start).sort((a, b) => a - b);
  const waits = settled.map((i) => Date.parse(i.source_payment.settled_at) - posted.get(i.intent_id ?? i.id)).sort((a, b) => a - b);
  const src = times("source_payment");
  const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))];
  return {
    source: src[src.length - 1] / 1000,
    target: Math.max(...times("target_payment")) / 1000,
    source_ms: { all_proofs_accepted: accepted, p50: pct(src, 0.5), p90: pct(src, 0.9), max: src[src.length - 1] },
    latency_ms: { p50: pct(waits, 0.5), p90: pct(waits, 0.9), p99: pct(waits, 0.99), max: waits[waits.length - 1] },
  };
}
const one = await prepare(1);
const batch = await prepare(N);
const single = await run(one, 1);
const many = await run(batch, C);

// Chain time: what one EIP-3009 settlement costs on this anvil (send + receipt).
const chainPerTx = refSeconds / N;
const report = {
  n: N,
  concurrency: C,
  reference_facilitator: skipReference ? null : { seconds: +refSeconds.toFixed(3), per_second: +(N / refSeconds).toFixed(2), ms_per_settlement: +(chainPerTx * 1000).toFixed(1) },
  stablerail: {
    source_leg: { seconds: +many.source.toFixed(3), per_second: +(N / many.source).toFixed(2), completion_ms: many.source_ms, latency_ms: many.latency_ms },
    proof_to_target_settled: { seconds: +many.target.toFixed(3), per_second: +(N / many.target).toFixed(2) },
    single_intent_ms: +(single.target * 1000).toFixed(1),
  },
  ratio_source_leg_vs_reference: skipReference ? null : +((N / many.source) / (N / refSeconds)).toFixed(2),
  // One intent is two settlements (source + payout): what stablerail adds beyond them.
  overhead_ms_per_intent: skipReference ? null : +((single.target - 2 * chainPerTx) * 1000).toFixed(1),
};
console.log(JSON.stringify(report, null, 2));
