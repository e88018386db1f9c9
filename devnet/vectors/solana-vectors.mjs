// Vectors for `stablerail adapter check` of the Solana SPL adapter. A
// Solana node of the devnet's own (solana.mjs over litesvm, USDC at its
// mainnet mint) is started for the run; the proof is signed by @x402/svm's
// own client (sol-pay.mjs) against it for the requirements the adapter
// makes of the terms, and the chain's answers are that node's answers to
// the exact questions the adapter asks. Writes JSON to standard output.
//   node devnet/vectors/solana-vectors.mjs > adapters/solana-spl/vectors.json
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  createKeyPairSignerFromPrivateKeyBytes, getBase58Decoder, getBase64Encoder, getCompiledTransactionMessageDecoder, getTransactionDecoder,
} from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { MINTS, startSolana } from "../setup/solana-up.mjs";

// The devnet folder (this file is in one of its role folders).
const here = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
const key = async (label) => createKeyPairSignerFromPrivateKeyBytes(crypto.createHash("sha256").update(`stablerail vectors ${label}`).digest());
const [relayer, payTo, other] = await Promise.all(["relayer", "pay-to", "other"].map(async (l) => (await key(l)).address));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "solana-vectors-"));
const port = 20000 + (process.pid % 10000);
const node = await startSolana({ dir, port, gas: [relayer], accounts: [payTo, other], payers: 1 });
try {
  const rpc = async (method, params) => {
    const r = await (await fetch(node.rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json();
    if (r.error) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
    return r.result;
  };
  // An answer as the adapter's recorded chain matches it: method and exact params.
  const answer = async (method, params) => ({ method, params, result: await rpc(method, params) });
  const confirmed = { commitment: "confirmed" };
  const account = (address) => answer("getAccountInfo", [address, { encoding: "base64", ...confirmed }]);
  const ata = async (owner) => (await findAssociatedTokenPda({ owner, mint: MINTS.usdc, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];

  const payer = node.payers[0];
  const context = {
    chain: "solana", network: node.caip2, family: "solana", chain_id: 0, asset: "usdc",
    token: MINTS.usdc, decimals: 6, params: {},
  };
  const terms = { amount: "10000", pay_to: payTo, max_timeout_seconds: 600 };
  // What the adapter answers for these terms.
  const requirements = {
    scheme: "exact", network: node.caip2, amount: terms.amount, asset: MINTS.usdc, payTo, maxTimeoutSeconds: terms.max_timeout_seconds,
    extra: { feePayer: relayer, decimals: 6, asset: MINTS.usdc, amount: terms.amount },
  };
  const b64 = execFileSync(process.execPath, [path.join(here, "clients", "sol-pay.mjs"), payer.seed, node.rpc], { input: JSON.stringify(requirements) });
  const proof = JSON.parse(Buffer.from(b64.toString(), "base64").toString("utf8"));
  const raw = Buffer.from(proof.payload.transaction, "base64");
  // The payer's signature: slot 1 (slot 0 is the fee payer's, empty).
  const signature = raw.subarray(1 + 64, 1 + 128);

  // The settlement as getTransaction (JSON encoding) gives it, and ones
  // that must not read as this payment: failed, another amount, another owner.
  const bs58 = (bytes) => getBase58Decoder().decode(bytes);
  const [payerAta, payToAta, otherAta] = await Promise.all([ata(payer.address), ata(payTo), ata(other)]);
  const balance = (index, amount) => ({ accountIndex: index, mint: MINTS.usdc, programId: TOKEN_PROGRAM_ADDRESS, uiTokenAmount: { amount: String(amount), decimals: 6 } });
  const receipt = (err, to, received) => ({
    slot: 4242,
    transaction: { signatures: [bs58(Buffer.alloc(64, 0x5e)), bs58(signature)], message: { accountKeys: [relayer, payer.address, payerAta, to, MINTS.usdc, TOKEN_PROGRAM_ADDRESS] } },
    meta: { err, preTokenBalances: [balance(2, 1_000_000n), balance(3, 0n)], postTokenBalances: [balance(2, 1_000_000n - received), balance(3, received)] },
  });
  const amount = BigInt(terms.amount);
  const receipts = {
    settled: receipt(null, payToAta, amount),
    failed: [receipt({ InstructionError: [2, { Custom: 1 }] }, payToAta, 0n), receipt(null, payToAta, amount - 1n), receipt(null, otherAta, amount)],
  };

  // The questions the adapter asks: the mint's program and the payer's
  // balance (preflight), the recipient's token account and a blockhash
  // (a host-held wallet's transfer, authorize).
  const chain = [await account(MINTS.usdc), await account(payerAta), await account(payToAta), await answer("getLatestBlockhash", [confirmed])];

  console.log(JSON.stringify({
    scheme: "solana-spl",
    context,
    relayer,
    now: Math.floor(Date.now() / 1000),
    terms,
    other_pay_to: other,
    requirements: { scheme: "exact", extra: { feePayer: relayer, decimals: 6, asset: MINTS.usdc, amount: terms.amount } },
    proofs: [{ name: "x402-v2", proof, payer: payer.address, signature: "/payload/transaction", signature_bytes: [1 + 64, 1 + 128], receipts, expired: await expiredAnswers(rpc, proof) }],
    chain,
  }, null, 2));
} finally {
  try { process.kill(-node.pid); } catch { try { process.kill(node.pid); } catch {} }
  fs.rmSync(dir, { recursive: true, force: true });
}

// The proof's lifetime is its blockhash: isBlockhashValid for it as the
// adapter asks, answered as the node answers once the blockhash is gone.
async function expiredAnswers(rpc, proof) {
  const tx = getTransactionDecoder().decode(getBase64Encoder().encode(proof.payload.transaction));
  const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  const params = [message.lifetimeToken, { commitment: "confirmed" }];
  const now = await rpc("isBlockhashValid", params);
  return [{ method: "isBlockhashValid", params, result: { ...now, value: false } }];
}
