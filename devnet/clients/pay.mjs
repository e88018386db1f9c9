// The payer side, with the real x402 client: read PaymentRequirements JSON
// on stdin, sign with @x402/evm's ExactEvmScheme, print the settle_proof
// (base64 of the x402 v2 PaymentPayload).
//
//   echo '<requirements>' | node pay.mjs 0x<payer private key> [rpc url]
//   echo '<requirements>' | node pay.mjs smart:<base64 wallet JSON> [rpc url]   (smart-signer.mjs)
//   echo '[<requirements>, …]' | node pay.mjs 0x<key>   (a JSON array of proofs)
//
// With an RPC URL the signer can read chain state, which Permit2 payments
// need: the client checks the payer's Permit2 allowance and, when it falls
// short, signs whichever gas-sponsoring extension `extra.extensions` offers.
import { createPublicClient, http } from "viem";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { toClientEvmSigner } from "@x402/evm";
import { command } from "./command.mjs";
import { payerSigner } from "./smart-signer.mjs";

export async function main(args, input) {
  const given = JSON.parse(input);
  // An array of requirements: a JSON array of proofs, one process for all.
  if (Array.isArray(given)) {
    const proofs = [];
    for (const one of given) proofs.push(await main(args, JSON.stringify(one)));
    return JSON.stringify(proofs);
  }
  const requirements = given;
  const account = payerSigner(args[0]);
  const rpc = args[1];
  const signer = rpc ? toClientEvmSigner(account, createPublicClient({ transport: http(rpc) })) : account;
  const scheme = new ExactEvmScheme(signer);
  // The service lists accepted extensions in `extra`; the client takes them as
  // the PaymentRequired's `extensions` object.
  const context = { extensions: Object.fromEntries((requirements.extra?.extensions ?? []).map((n) => [n, {}])) };
  const made = await scheme.createPaymentPayload(2, requirements, context);
  const payload = { x402Version: 2, accepted: requirements, payload: made.payload };
  if (made.extensions) payload.extensions = made.extensions;
  return Buffer.from(JSON.stringify(payload)).toString("base64");
}

await command(import.meta.url, main);
