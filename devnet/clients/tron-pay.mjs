// The payer side on TRON: read PaymentRequirements JSON (x402 exact, Permit2)
// on stdin, sign Permit2's PermitWitnessTransferFrom with the x402 witness
// over TIP-712 with tronweb (TRON's chain id, base58check addresses), print
// the settle_proof (base64 of the x402 v2 PaymentPayload).
//
//   echo '<requirements>' | node tron-pay.mjs 0x<payer key> [chain id] [hex]
//
// With `hex`, the addresses inside permit2Authorization are written as
// x402-rs's TRON client writes them: 0x + the 20 bytes (base58 minus the
// 0x41 prefix). The signature is the same: TIP-712 signs the 20 bytes.
import crypto from "node:crypto";
import { TronWeb, Trx } from "tronweb";
import { permit2Types } from "./permit2-types.mjs";
import { command } from "./command.mjs";

export async function main(args, input) {
  const req = JSON.parse(input);
  const key = args[0].replace(/^0x/, "");
  const chainId = Number(args[1] ?? 728126428);
  const from = TronWeb.address.fromPrivateKey(key);
  const now = Math.floor(Date.now() / 1000);
  const domain = { name: "Permit2", chainId, verifyingContract: req.extra.permit2Address };
  const authorization = {
    from,
    permitted: { token: req.asset, amount: req.amount },
    spender: req.extra.spender,
    nonce: BigInt(`0x${crypto.randomBytes(16).toString("hex")}`).toString(),
    deadline: String(now + Math.min(req.maxTimeoutSeconds, 3600)),
    witness: { to: req.payTo, validAfter: String(now - 60) },
  };
  const value = { permitted: authorization.permitted, spender: authorization.spender, nonce: authorization.nonce, deadline: authorization.deadline, witness: authorization.witness };
  const signature = Trx._signTypedData(domain, permit2Types, value, key);
  const hex = (a) => `0x${TronWeb.address.toHex(a).slice(2)}`;
  const written =
    args[2] === "hex"
      ? {
          ...authorization,
          from: hex(authorization.from),
          permitted: { ...authorization.permitted, token: hex(authorization.permitted.token) },
          spender: hex(authorization.spender),
          witness: { ...authorization.witness, to: hex(authorization.witness.to) },
        }
      : authorization;
  const payload = { x402Version: 2, accepted: req, payload: { signature, permit2Authorization: written } };
  return Buffer.from(JSON.stringify(payload)).toString("base64");
}

await command(import.meta.url, main);
