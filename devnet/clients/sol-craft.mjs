// A SOL transfer from a fresh, funded payer, with `--fee-payer` (a wallet
// the service holds) as fee payer whose signature slot is left empty: the
// shape of an x402 exact-SVM payment, for the Solana driver's tests.
// Prints {transaction (base64), payer, recipient, blockhash}.
//
//   node sol-craft.mjs --rpc URL --fee-payer ADDRESS [--lamports N]
import {
  appendTransactionMessageInstruction, createNoopSigner, createTransactionMessage, generateKeyPairSigner,
  getBase64EncodedWireTransaction, partiallySignTransactionMessageWithSigners, pipe, address,
  setTransactionMessageFeePayerSigner, setTransactionMessageLifetimeUsingBlockhash,
} from "@solana/kit";
import { getTransferSolInstruction } from "@solana-program/system";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const url = arg("rpc");
const rpc = async (method, params = []) => {
  const r = await (await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json();
  if (r.error) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result;
};
const payer = await generateKeyPairSigner();
const recipient = await generateKeyPairSigner();
await rpc("requestAirdrop", [payer.address, 1_000_000_000]);
const { value: { blockhash, lastValidBlockHeight } } = await rpc("getLatestBlockhash");
const message = pipe(
  createTransactionMessage({ version: 0 }),
  (m) => setTransactionMessageFeePayerSigner(createNoopSigner(address(arg("fee-payer"))), m),
  (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash, lastValidBlockHeight: BigInt(lastValidBlockHeight) }, m),
  (m) => appendTransactionMessageInstruction(getTransferSolInstruction({ source: payer, destination: recipient.address, amount: BigInt(arg("lamports", "1000000")) }), m),
);
const tx = await partiallySignTransactionMessageWithSigners(message);
console.log(JSON.stringify({ transaction: getBase64EncodedWireTransaction(tx), payer: payer.address, recipient: recipient.address, blockhash }));
