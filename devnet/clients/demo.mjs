// One real payment through a running stablerail on the devnet:
// create an intent, sign it with the x402 client as a devnet payer, submit
// the proof, and follow it to TARGET_SETTLED.
//
//   node devnet/clients/demo.mjs [--url http://127.0.0.1:8402] [--dir .stablerail/devnet]
//                        [--from base] [--to arbitrum] [--amount 10]
import fs from "node:fs";
import path from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { ExactEvmScheme } from "@x402/evm/exact/client";

const arg = (n, d) => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
// The devnet folder (this file is in one of its role folders).
const here = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
const url = arg("url", "http://127.0.0.1:8402");
const dir = path.resolve(arg("dir", path.join(here, "..", ".stablerail", "devnet")));
const devnet = JSON.parse(fs.readFileSync(path.join(dir, "devnet.json"), "utf8"));
const payer = devnet.payers[0];
const merchant = "0x000000000000000000000000000000000000bEEF";

async function api(method, p, body) {
  const r = await fetch(`${url}${p}`, { method, headers: { "content-type": "application/json" }, body: body && JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

const intent = await api("POST", "/api/intents", {
  recipient: merchant, amount: arg("amount", "10"), payer_chain: arg("from", "base"), target_chain: arg("to", "arbitrum"),
});
console.log(`intent ${intent.intent_id}: pay ${intent.sending_amount} on ${intent.payer_chain}, merchant gets ${intent.receiving_amount} on ${intent.target_chain}`);
const made = await new ExactEvmScheme(privateKeyToAccount(payer.private_key)).createPaymentPayload(2, intent.payment_requirements);
const proof = Buffer.from(JSON.stringify({ x402Version: 2, accepted: intent.payment_requirements, payload: made.payload })).toString("base64");
const accepted = await api("POST", `/api/intents/${intent.intent_id}`, { settle_proof: proof });
console.log(`proof accepted by payer ${payer.address}: ${accepted.status}`);
for (let i = 0; i < 300; i++) {
  const now = await api("GET", `/api/intents/${intent.intent_id}`);
  if (["TARGET_SETTLED", "VERIFICATION_FAILED", "BLOCKED", "PARTIAL_SETTLEMENT", "EXPIRED"].includes(now.status)) {
    console.log(JSON.stringify(now, null, 2));
    process.exit(now.status === "TARGET_SETTLED" ? 0 : 1);
  }
  await new Promise((r) => setTimeout(r, 200));
}
console.error("timed out");
process.exit(1);
