// The devnet's Solana swap provider: the subset of Jupiter's Swap API that
// stablerail calls (`GET /swap/v1/quote`, `POST /swap/v1/swap`), over a
// pool of the devnet's own: token accounts of a pool authority holding
// USDC and USDT, priced as a constant-product pool with a 0.3% fee. The
// swap transaction moves both sides at once: the user's input to the pool
// (signed by the user, the fee payer) and the pool's output to the user
// (signed here by the pool authority, so the transaction comes partially
// signed), or to `destinationTokenAccount` when the request names one
// (which, as on Jupiter, must exist). The output is priced again at /swap time; if the pool moved
// past the quote's threshold, the swap is refused as Jupiter would.
//
//   node jupiter.mjs --port P --rpc URL
//
// Devnet only: GET /devnet/pool (the authority, its token accounts and
// reserves).
import crypto from "node:crypto";
import http from "node:http";
import {
  address, appendTransactionMessageInstructions, createKeyPairSignerFromPrivateKeyBytes, createNoopSigner,
  createSolanaRpc, createTransactionMessage, getBase64EncodedWireTransaction, partiallySignTransactionMessageWithSigners,
  pipe, setTransactionMessageFeePayerSigner, setTransactionMessageLifetimeUsingBlockhash,
} from "@solana/kit";
import {
  findAssociatedTokenPda, getCreateAssociatedTokenIdempotentInstructionAsync, getTransferCheckedInstruction, TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { putTokenAccount, MINTS } from "../setup/solana-up.mjs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const url = arg("rpc");
const rpc = createSolanaRpc(url);
const DECIMALS = 6;
/// What the pool starts with of each token: 500,000.
const SEED = 500_000n * 10n ** BigInt(DECIMALS);
const FEE_BPS = 30n;
const LABEL = "devnet-pool";

const pool = await createKeyPairSignerFromPrivateKeyBytes(crypto.createHash("sha256").update("stablerail devnet solana jupiter pool").digest());
const vaults = {};
for (const mint of Object.values(MINTS)) vaults[mint] = await putTokenAccount(url, mint, pool.address, SEED);

class Refusal extends Error {
  constructor(status, errorCode, message) {
    super(message);
    this.status = status;
    this.errorCode = errorCode;
  }
}
const bad = (message) => new Refusal(400, "INVALID_REQUEST", message);

async function reserve(mint) {
  const { value } = await rpc.getTokenAccountBalance(vaults[mint]).send();
  return BigInt(value.amount);
}

/// Both sides of a swap at the pool's present reserves.
async function price(inputMint, outputMint, amount, exactOut) {
  if (!vaults[inputMint] || !vaults[outputMint]) throw new Refusal(400, "TOKEN_NOT_TRADABLE", "The token is not tradable");
  if (inputMint === outputMint) throw new Refusal(400, "CIRCULAR_ARBITRAGE_IS_DISABLED", "Circular arbitrage is disabled");
  const [rin, rout] = [await reserve(inputMint), await reserve(outputMint)];
  let inAmount, outAmount;
  if (exactOut) {
    outAmount = amount;
    if (outAmount >= rout) throw new Refusal(400, "ROUTE_PLAN_DOES_NOT_CONSUME_ALL_THE_AMOUNT", "The route plan does not consume all the amount, please lower your amount");
    inAmount = (rin * outAmount * 10_000n) / ((rout - outAmount) * (10_000n - FEE_BPS)) + 1n;
  } else {
    inAmount = amount;
    if (inAmount > rin) throw new Refusal(400, "ROUTE_PLAN_DOES_NOT_CONSUME_ALL_THE_AMOUNT", "The route plan does not consume all the amount, please lower your amount");
    const net = inAmount * (10_000n - FEE_BPS);
    outAmount = (net * rout) / (rin * 10_000n + net);
  }
  if (outAmount === 0n) throw new Refusal(400, "COULD_NOT_FIND_ANY_ROUTE", "Could not find any route");
  // Against the spot price, as a fraction (Jupiter's unit).
  const impact = 1 - (Number(outAmount) / Number(inAmount)) / (Number(rout) / Number(rin));
  return { inAmount, outAmount, rin, rout, impact };
}

async function quote(q) {
  for (const k of ["inputMint", "outputMint", "amount"]) if (!q[k]) throw bad(`Query parameter ${k} is required`);
  if (!/^[0-9]+$/.test(q.amount) || BigInt(q.amount) === 0n) throw bad("Query parameter amount cannot be parsed");
  const mode = q.swapMode ?? "ExactIn";
  if (mode !== "ExactIn" && mode !== "ExactOut") throw bad("Query parameter swapMode is invalid");
  const slippageBps = Number(q.slippageBps ?? 50);
  if (!Number.isInteger(slippageBps) || slippageBps < 0 || slippageBps > 10_000) throw bad("Query parameter slippageBps is invalid");
  const exactOut = mode === "ExactOut";
  const p = await price(q.inputMint, q.outputMint, BigInt(q.amount), exactOut);
  const bps = BigInt(slippageBps);
  const threshold = exactOut ? (p.inAmount * (10_000n + bps)) / 10_000n : (p.outAmount * (10_000n - bps)) / 10_000n;
  const slot = await rpc.getSlot().send();
  return {
    inputMint: q.inputMint,
    inAmount: p.inAmount.toString(),
    outputMint: q.outputMint,
    outAmount: p.outAmount.toString(),
    otherAmountThreshold: threshold.toString(),
    swapMode: mode,
    slippageBps,
    platformFee: null,
    priceImpactPct: p.impact.toFixed(12),
    routePlan: [{
      swapInfo: {
        ammKey: pool.address, label: LABEL, inputMint: q.inputMint, outputMint: q.outputMint,
        inAmount: p.inAmount.toString(), outAmount: p.outAmount.toString(),
        feeAmount: ((p.inAmount * FEE_BPS) / 10_000n).toString(), feeMint: q.inputMint,
      },
      percent: 100,
      bps: 10_000,
    }],
    contextSlot: Number(slot),
    timeTaken: 0.001,
  };
}

async function swap(body) {
  const q = body?.quoteResponse;
  if (!q?.inputMint || !q?.outputMint || !q?.inAmount || !q?.outAmount || !q?.otherAmountThreshold) throw bad("quoteResponse is required");
  let user;
  try {
    user = address(String(body.userPublicKey ?? ""));
  } catch {
    throw bad("userPublicKey is invalid");
  }
  const exactOut = q.swapMode === "ExactOut";
  // Priced again now; the quote's threshold bounds what the user accepts.
  const p = await price(q.inputMint, q.outputMint, BigInt(exactOut ? q.outAmount : q.inAmount), exactOut);
  const threshold = BigInt(q.otherAmountThreshold);
  if (exactOut ? p.inAmount > threshold : p.outAmount < threshold) throw new Refusal(422, "SLIPPAGE_TOLERANCE_EXCEEDED", "The pool moved past the quote's slippage");
  const [userIn] = await findAssociatedTokenPda({ owner: user, mint: address(q.inputMint), tokenProgram: TOKEN_PROGRAM_ADDRESS });
  const payer = createNoopSigner(user);
  // As Jupiter: a given destination token account is assumed to exist;
  // otherwise the user's associated account, created if missing.
  let out;
  const instructions = [];
  if (body.destinationTokenAccount) {
    try {
      out = address(String(body.destinationTokenAccount));
    } catch {
      throw bad("destinationTokenAccount is invalid");
    }
  } else {
    [out] = await findAssociatedTokenPda({ owner: user, mint: address(q.outputMint), tokenProgram: TOKEN_PROGRAM_ADDRESS });
    instructions.push(await getCreateAssociatedTokenIdempotentInstructionAsync({ payer, owner: user, mint: address(q.outputMint) }));
  }
  instructions.push(
    getTransferCheckedInstruction({ source: userIn, mint: address(q.inputMint), destination: vaults[q.inputMint], authority: payer, amount: p.inAmount, decimals: DECIMALS }),
    getTransferCheckedInstruction({ source: vaults[q.outputMint], mint: address(q.outputMint), destination: out, authority: pool, amount: p.outAmount, decimals: DECIMALS }),
  );
  const { value: blockhash } = await rpc.getLatestBlockhash().send();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const tx = await partiallySignTransactionMessageWithSigners(message);
  return {
    swapTransaction: getBase64EncodedWireTransaction(tx),
    lastValidBlockHeight: Number(blockhash.lastValidBlockHeight),
    prioritizationFeeLamports: 0,
    computeUnitLimit: 200_000,
    dynamicSlippageReport: null,
    simulationError: null,
  };
}

const routes = {
  "GET /swap/v1/quote": quote,
  "POST /swap/v1/swap": (_, body) => swap(body),
  "GET /devnet/pool": async () => ({
    authority: pool.address,
    vaults,
    reserves: Object.fromEntries(await Promise.all(Object.keys(vaults).map(async (m) => [m, (await reserve(m)).toString()]))),
  }),
};

const server = http.createServer(async (req, res) => {
  const where = new URL(req.url, "http://devnet");
  const answer = (code, body) => {
    res.writeHead(code, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const route = routes[`${req.method} ${where.pathname}`];
  if (!route) return answer(404, { error: `${req.method} ${where.pathname} is not a route`, errorCode: "NOT_FOUND" });
  try {
    let text = "";
    for await (const c of req) text += c;
    let body;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      throw bad("the body is not JSON");
    }
    answer(200, await route(Object.fromEntries(where.searchParams), body));
  } catch (e) {
    if (e instanceof Refusal) return answer(e.status, { error: e.message, errorCode: e.errorCode });
    answer(500, { error: String(e.message ?? e), errorCode: "INTERNAL_ERROR" });
  }
});
server.listen(Number(arg("port")), "127.0.0.1");
