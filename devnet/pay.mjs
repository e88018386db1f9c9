// The payer side, with the real x402 client: read PaymentRequirements JSON
// on stdin, sign with @x402/evm's ExactEvmScheme, print the settle_proof
// (base64 of the x402 v2 PaymentPayload).
//
//   echo '<requirements>' | node pay.mjs 0x<payer private key>
import { privateKeyToAccount } from "viem/accounts";
import { ExactEvmScheme } from "@x402/evm/exact/client";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const requirements = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const scheme = new ExactEvmScheme(privateKeyToAccount(process.argv[2]));
const made = await scheme.createPaymentPayload(2, requirements);
const payload = { x402Version: 2, accepted: requirements, payload: made.payload };
process.stdout.write(Buffer.from(JSON.stringify(payload)).toString("base64"));
