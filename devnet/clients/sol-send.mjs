// A Solana wallet: signs a base64 wire transaction (as a swap API returns
// it, possibly signed by others already) with the key of `seed`, sends it,
// and waits until it is confirmed. Prints {signature, err}.
//
//   echo '<base64 transaction>' | node sol-send.mjs <seed hex> <rpc url>
import {
  createKeyPairFromPrivateKeyBytes, createSolanaRpc, getBase64EncodedWireTransaction, getBase64Encoder,
  getSignatureFromTransaction, getTransactionDecoder, partiallySignTransaction,
} from "@solana/kit";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const [seed, url] = process.argv.slice(2);
const rpc = createSolanaRpc(url);
const keys = await createKeyPairFromPrivateKeyBytes(Buffer.from(seed, "hex"));
const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(Buffer.concat(chunks).toString("utf8").trim()));
const signed = await partiallySignTransaction([keys], unsigned);
const signature = getSignatureFromTransaction(signed);
await rpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: "base64", preflightCommitment: "confirmed" }).send();
for (let i = 0; i < 100; i++) {
  const { value: [status] } = await rpc.getSignatureStatuses([signature], { searchTransactionHistory: true }).send();
  if (status?.confirmationStatus === "confirmed" || status?.confirmationStatus === "finalized") {
    console.log(JSON.stringify({ signature, err: status.err }));
    process.exit(0);
  }
  await new Promise((r) => setTimeout(r, 100));
}
throw new Error(`${signature} was not confirmed`);
