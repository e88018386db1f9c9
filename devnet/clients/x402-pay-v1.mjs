// An x402 v1 payer: @x402/evm's v1 client scheme (ExactEvmSchemeV1, EIP-3009)
// signs v1 PaymentRequirements (network names such as `base`,
// `maxAmountRequired`) read as JSON on stdin; prints the v1 PaymentPayload
// `{x402Version: 1, scheme, network, payload}` as JSON.
//
//   echo '<v1 requirements>' | node x402-pay-v1.mjs 0x<payer private key>
import { privateKeyToAccount } from "viem/accounts";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/client";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const requirements = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const scheme = new ExactEvmSchemeV1(privateKeyToAccount(process.argv[2]));
process.stdout.write(JSON.stringify(await scheme.createPaymentPayload(1, requirements)));
