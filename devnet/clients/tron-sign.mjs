// Sign a prepared TRON transaction the way a payer's wallet does: tronweb's
// trx.sign, which rebuilds the protobuf from the `raw_data` object and
// refuses it unless that gives the same txID and raw_data_hex.
//
//   echo '{"tx_id","raw_data","raw_data_hex"}' | node tron-sign.mjs 0xPRIVATE [--cosign]
//
// --cosign signs even though the key is not the transaction's owner.
// Prints the 65-byte signature, hex.
import { TronWeb } from "tronweb";

const input = JSON.parse(await new Promise((resolve) => {
  let text = "";
  process.stdin.on("data", (d) => (text += d)).on("end", () => resolve(text));
}));
const key = process.argv[2].replace(/^0x/, "");
const tronWeb = new TronWeb({ fullHost: "http://127.0.0.1:1" });
const tx = { visible: false, txID: input.tx_id, raw_data: input.raw_data, raw_data_hex: input.raw_data_hex };
const cosign = process.argv.includes("--cosign");
const signed = await tronWeb.trx.sign(tx, key, true, cosign);
console.log(signed.signature[0]);
