// The payer side on Solana. Reads PaymentRequirements JSON on stdin and
// prints a settle_proof (base64 of the x402 v2 PaymentPayload).
//
//   echo '<requirements>' | node sol-pay.mjs <payer seed hex> <rpc url> [case]
//
// Without a case, the real client signs: @x402/svm's ExactSvmScheme. A case
// builds the same transaction by hand with @solana/kit, with one fault:
//   amount             transfers one base unit less
//   recipient          pays another owner's token account
//   fee-payer-pays     the transfer's authority is the fee payer
//   extra-instruction  a SOL transfer from the payer after the token transfer
//   price              a compute-unit price above the scheme's cap
//   priority           a price under the scheme's cap whose fee (price × limit) is above the service's
//   unsigned           the payer's signature is missing
//   fee-payer-signed   the fee payer's slot holds a signature
import {
  address, appendTransactionMessageInstructions, createKeyPairSignerFromPrivateKeyBytes, createNoopSigner,
  createSolanaRpc, createTransactionMessage, getBase64EncodedWireTransaction, getBase64Encoder, getTransactionDecoder,
  getTransactionEncoder, generateKeyPairSigner, partiallySignTransactionMessageWithSigners, pipe,
  setTransactionMessageFeePayerSigner, setTransactionMessageLifetimeUsingBlockhash,
} from "@solana/kit";
import { findAssociatedTokenPda, getTransferCheckedInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { getTransferSolInstruction } from "@solana-program/system";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { command } from "./command.mjs";

export async function main(args, input) {
  const requirements = JSON.parse(input);
  const [seed, url, fault] = args;
  const payer = await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(seed, "hex"));

  async function byClient() {
    const made = await new ExactSvmScheme(payer, { rpcUrl: url }).createPaymentPayload(2, requirements);
    return made.payload.transaction;
  }

  const COMPUTE_BUDGET = address("ComputeBudget111111111111111111111111111111");
  const MEMO = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
  const le = (n, bytes) => {
    const b = Buffer.alloc(bytes);
    bytes === 4 ? b.writeUInt32LE(Number(n)) : b.writeBigUInt64LE(BigInt(n));
    return b;
  };

  async function byHand(fault) {
    const rpc = createSolanaRpc(url);
    const mint = address(requirements.asset);
    const feePayer = createNoopSigner(address(requirements.extra.feePayer));
    const authority = fault === "fee-payer-pays" ? feePayer : payer;
    const owner = fault === "recipient" ? (await generateKeyPairSigner()).address : address(requirements.payTo);
    const [source] = await findAssociatedTokenPda({ owner: authority.address, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
    const [destination] = await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
    const amount = BigInt(requirements.amount) - (fault === "amount" ? 1n : 0n);
    const price = { price: 6_000_000, priority: 4_000_000 }[fault] ?? 1;
    const instructions = [
      { programAddress: COMPUTE_BUDGET, accounts: [], data: Buffer.concat([Buffer.from([2]), le(20_000, 4)]) },
      { programAddress: COMPUTE_BUDGET, accounts: [], data: Buffer.concat([Buffer.from([3]), le(price, 8)]) },
      getTransferCheckedInstruction({ source, mint, destination, authority, amount, decimals: requirements.extra.decimals }),
      { programAddress: MEMO, accounts: [], data: Buffer.from(Math.random().toString(16).slice(2)) },
    ];
    if (fault === "extra-instruction") instructions.push(getTransferSolInstruction({ source: payer, destination: owner, amount: 1n }));
    const { value: blockhash } = await rpc.getLatestBlockhash().send();
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const tx = await partiallySignTransactionMessageWithSigners(message);
    if (fault === "unsigned" || fault === "fee-payer-signed") {
      // Edit the signature slots of the wire bytes.
      const decoded = getTransactionDecoder().decode(getBase64Encoder().encode(getBase64EncodedWireTransaction(tx)));
      const signatures = { ...decoded.signatures };
      if (fault === "unsigned") signatures[payer.address] = null;
      else signatures[feePayer.address] = new Uint8Array(64).fill(7);
      return Buffer.from(getTransactionEncoder().encode({ ...decoded, signatures })).toString("base64");
    }
    return getBase64EncodedWireTransaction(tx);
  }

  const transaction = fault ? await byHand(fault) : await byClient();
  const payload = { x402Version: 2, accepted: requirements, payload: { transaction } };
  return Buffer.from(JSON.stringify(payload)).toString("base64");
}

await command(import.meta.url, main);
