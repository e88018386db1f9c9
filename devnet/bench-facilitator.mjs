// Settle N EIP-3009 payloads through a facilitator at concurrency C on the
// devnet's base chain: the same generator as ../shared/bench/x402rs_bench.mjs
// (payers, amounts, signing), in x402 v2 bodies for stablerail's /x402
// until it accepts v1. Env: FAC (url, with /x402), KEY (facilitator key),
// DIR (devnet dir), N, C, LABEL.
import fs from "node:fs";
import { privateKeyToAccount } from "viem/accounts";

const d = JSON.parse(fs.readFileSync(process.env.DIR + "/devnet.json", "utf8"));
const N = +(process.env.N || 200), C = +(process.env.C || 32);
const usdc = d.chains.base.assets.usdc;
const network = `eip155:${d.chains.base.chain_id}`;
const merchant = "0x000000000000000000000000000000000000c0fe";
const rpc = async (m, p) =>
  (await (await fetch(d.chains.base.rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: m, params: p }) })).json()).result;
const bal = async () => BigInt(await rpc("eth_call", [{ to: usdc.address, data: "0x70a08231" + merchant.slice(2).toLowerCase().padStart(64, "0") }, "latest"]));
const now = Math.floor(Date.now() / 1000);
const requirements = { scheme: "exact", network, amount: "10000", asset: usdc.address, payTo: merchant, maxTimeoutSeconds: 300, extra: { name: usdc.name, version: usdc.version } };
const bodies = [];
for (let i = 0; i < N; i++) {
  const acct = privateKeyToAccount(d.payers[2 + (i % 6)].private_key);
  const nonce = "0x" + [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
  const auth = { from: acct.address, to: merchant, value: "10000", validAfter: "0", validBefore: String(now + 900), nonce };
  const signature = await acct.signTypedData({
    domain: { name: usdc.name, version: usdc.version, chainId: d.chains.base.chain_id, verifyingContract: usdc.address },
    types: { TransferWithAuthorization: [{ name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" }] },
    primaryType: "TransferWithAuthorization",
    message: { ...auth, value: BigInt(auth.value), validAfter: 0n, validBefore: BigInt(auth.validBefore) },
  });
  bodies.push(JSON.stringify({ x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: { signature, authorization: auth } }, paymentRequirements: requirements }));
}
const b0 = await bal();
let next = 0, ok = 0, bad = 0, firstErr = "";
const headers = { "content-type": "application/json", authorization: `Bearer ${process.env.KEY}` };
const t0 = performance.now();
await Promise.all(Array.from({ length: C }, async () => {
  while (next < N) {
    const body = bodies[next++];
    const r = await fetch(process.env.FAC + "/settle", { method: "POST", headers, body });
    const j = await r.json().catch(() => ({}));
    if (r.ok && j.success) ok++;
    else { bad++; if (!firstErr) firstErr = r.status + " " + JSON.stringify(j).slice(0, 200); }
  }
}));
const secs = (performance.now() - t0) / 1000;
const credited = (await bal()) - b0;
console.log(JSON.stringify({ peer: process.env.LABEL || "stablerail /x402 (v2 bodies)", n: N, concurrency: C, seconds: +secs.toFixed(3), per_second: +(ok / secs).toFixed(1), ok, bad, firstErr, merchant_credited_units: String(credited) }));
