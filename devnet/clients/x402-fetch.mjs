// A buyer as x402 clients write one: @x402/fetch's wrapFetchWithPayment with
// @x402/evm's client scheme and a viem account, or @x402/svm's with a
// Solana keypair. Unmodified packages.
//
//   node x402-fetch.mjs <url> 0x<payer private key> <asset> [rpc url]
//   node x402-fetch.mjs <url> smart:<base64 wallet JSON> <asset> [rpc url]   (smart-signer.mjs)
//   node x402-fetch.mjs <url> <payer ed25519 seed hex> <mint> <solana rpc url>
//
// Prints {status, body, payment} where payment is the decoded
// PAYMENT-RESPONSE header (the facilitator's settle answer).
import { createPublicClient, http } from "viem";
import { payerSigner } from "./smart-signer.mjs";
import { x402Client, wrapFetchWithPayment, x402HTTPClient } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { toClientEvmSigner } from "@x402/evm";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { createKeyPairSignerFromPrivateKeyBytes } from "@solana/kit";

const [url, key, asset, rpc] = process.argv.slice(2);
const client = new x402Client();
if (key.startsWith("0x") || key.startsWith("smart:")) {
  const account = payerSigner(key);
  const signer = rpc ? toClientEvmSigner(account, createPublicClient({ transport: http(rpc) })) : account;
  client.register("eip155:*", new ExactEvmScheme(signer));
  client.register("eip155:*", new UptoEvmScheme(signer));
  // The devnet's tokens are not x402's default assets: allow this one.
  client.setSpendControls({ allowedAssets: [{ network: "eip155:*", asset }] });
} else {
  const payer = await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(key, "hex"));
  client.register("solana:*", new ExactSvmScheme(payer, { rpcUrl: rpc }));
  client.setSpendControls({ allowedAssets: [{ network: "solana:*", asset }] });
}
const pay = wrapFetchWithPayment(fetch, client);
const response = await pay(url, { method: "GET" });
const text = await response.text();
let body;
try {
  body = JSON.parse(text);
} catch {
  body = text;
}
let payment = null;
try {
  payment = new x402HTTPClient(client).getPaymentSettleResponse((name) => response.headers.get(name));
} catch {
  payment = null;
}
console.log(JSON.stringify({ status: response.status, body, payment }));
