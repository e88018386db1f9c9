// A Solana JSON-RPC node over LiteSVM (an in-process SVM with the SPL Token,
// Token-2022, associated-token and memo programs), for the devnet. It speaks
// the real protocol for the methods stablerail and the @x402/svm client use,
// and refuses what a real node refuses: a transaction with an unknown or
// expired blockhash, one already processed, one whose signatures do not
// verify, or one that fails its preflight simulation; a v0 transaction asked
// for without `maxSupportedTransactionVersion`; an old signature status
// without `searchTransactionHistory`.
//
//   node solana.mjs --port 18899 [--slot-ms 400] [--genesis HASH] [--ready FILE]
//
// The genesis hash (and so the CAIP-2 id) is mainnet's unless told
// otherwise, as the anvils take mainnet chain ids: clients such as
// @x402/svm serve only the public clusters' ids, and a config keeps real
// values.
// Slots advance on a timer; each slot has a fresh blockhash, valid for 150
// blocks as on mainnet. Methods that are not real (like anvil's `anvil_*`),
// for tests: `devnet_advanceSlots` moves time on; `devnet_setAccount` writes
// an account (mints and token accounts for the devnet's fixtures);
// `devnet_hold` makes the node accept transactions without processing them,
// as a leader that has not got to them yet, and `devnet_release` then lands
// or drops what it holds.
import http from "node:http";
import fs from "node:fs";
import { LiteSVM } from "litesvm";
import {
  address,
  getAddressDecoder,
  getBase58Decoder,
  getBase58Encoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from "@solana/kit";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const port = Number(arg("port", "18899"));
const slotMs = Number(arg("slot-ms", "400"));
const genesis = arg("genesis", "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d");
const VALID_BLOCKS = 150n;
const STATUS_CACHE_SLOTS = 150n;
const FINALIZED_AFTER = 32n;
const TOKEN_PROGRAMS = new Set(["TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"]);

const b58 = getBase58Decoder(); // bytes -> string
const b58e = getBase58Encoder(); // string -> bytes
const b64e = getBase64Encoder(); // string -> bytes
const addr = getAddressDecoder();
const txDecoder = getTransactionDecoder();
const msgDecoder = getCompiledTransactionMessageDecoder();

// Blockhash validity is ours: LiteSVM would accept only its latest one.
const svm = new LiteSVM().withBlockhashCheck(false);
let slot = 1n;
let height = 1n;
const valid = new Map(); // blockhash -> last valid block height
const processed = new Map(); // signature -> { slot, err, tx, meta }
const known = new Set(); // accounts seen, for getTokenAccountsByOwner
let holding = false;
const held = []; // [wire, config] accepted while holding

function newBlock() {
  slot += 1n;
  height += 1n;
  svm.warpToSlot(slot);
  svm.expireBlockhash();
  const hash = svm.latestBlockhash();
  valid.set(hash, height + VALID_BLOCKS);
  for (const [h, last] of valid) if (last < height) valid.delete(h);
}
newBlock();
setInterval(newBlock, slotMs).unref?.();

class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

const context = () => ({ slot: Number(slot), apiVersion: "2.2.0" });
const withContext = (value) => ({ context: context(), value });

function account(key) {
  const a = svm.getAccount(address(key));
  return a.exists ? a : null;
}

function encodeAccount(a, encoding) {
  if (!a) return null;
  const data = Buffer.from(a.data);
  return {
    lamports: Number(a.lamports),
    owner: a.programAddress,
    data: encoding === "base58" ? b58.decode(data) : [data.toString("base64"), "base64"],
    executable: a.executable,
    rentEpoch: 18446744073709551615,
    space: data.length,
  };
}

// SPL token account layout: mint 0..32, owner 32..64, amount u64 LE 64..72.
function tokenAccount(key) {
  const a = account(key);
  if (!a || !TOKEN_PROGRAMS.has(a.programAddress) || a.data.length < 165) return null;
  const d = Buffer.from(a.data);
  const mint = addr.decode(d.subarray(0, 32));
  const m = account(mint);
  const decimals = m ? Buffer.from(m.data)[44] : 0;
  return { mint, owner: addr.decode(d.subarray(32, 64)), amount: d.readBigUInt64LE(64), decimals, programId: a.programAddress };
}

function uiAmount(amount, decimals) {
  const s = amount.toString().padStart(decimals + 1, "0");
  const text = decimals ? `${s.slice(0, -decimals)}.${s.slice(-decimals)}`.replace(/\.?0+$/, "") : s;
  return { amount: amount.toString(), decimals, uiAmount: Number(text), uiAmountString: text };
}

function tokenBalances(keys) {
  const out = [];
  keys.forEach((k, i) => {
    const t = tokenAccount(k);
    if (t) out.push({ accountIndex: i, mint: t.mint, owner: t.owner, programId: t.programId, uiTokenAmount: uiAmount(t.amount, t.decimals) });
  });
  return out;
}

function decodeWire(text, encoding) {
  const bytes = encoding === "base58" ? b58e.encode(text) : b64e.encode(text);
  let tx;
  try {
    tx = txDecoder.decode(bytes);
  } catch (e) {
    throw new RpcError(-32602, `invalid transaction: failed to deserialize VersionedTransaction: ${e.message}`);
  }
  const message = msgDecoder.decode(tx.messageBytes);
  const signatures = Object.values(tx.signatures);
  const first = signatures[0];
  return { tx, message, signature: first ? b58.decode(first) : null, bytes };
}

function errorName(err) {
  if (err === null || err === undefined) return null;
  if (typeof err === "number") return ["AccountInUse", "AccountLoadedTwice", "AccountNotFound", "ProgramAccountNotFound", "InsufficientFundsForFee", "InvalidAccountForFee", "AlreadyProcessed", "BlockhashNotFound", "CallChainTooDeep", "MissingSignatureForFee", "InvalidAccountIndex", "SignatureFailure"][err] ?? `TransactionError(${err})`;
  if (err.index !== undefined) return { InstructionError: [err.index, String(err.err?.toString?.() ?? err.err)] };
  return String(err.toString?.() ?? err);
}

function send([wire, config = {}]) {
  const { tx, message, signature, bytes } = decodeWire(wire, config.encoding);
  if (!signature || Object.values(tx.signatures).some((s) => !s)) {
    throw new RpcError(-32003, "Transaction signature verification failure");
  }
  if (processed.has(signature)) {
    throw new RpcError(-32002, "Transaction simulation failed: This transaction has already been processed", { err: "AlreadyProcessed", logs: [] });
  }
  const blockhash = message.lifetimeToken;
  if (!valid.has(blockhash) || valid.get(blockhash) < height) {
    throw new RpcError(-32002, "Transaction simulation failed: Blockhash not found", { err: "BlockhashNotFound", logs: [] });
  }
  if (holding) {
    held.push([wire, config]);
    return signature;
  }
  const keys = message.staticAccounts;
  keys.forEach((k) => known.add(k));
  const preBalances = keys.map((k) => Number(account(k)?.lamports ?? 0n));
  const preTokenBalances = tokenBalances(keys);
  if (!config.skipPreflight) {
    const sim = svm.simulateTransaction(tx);
    if (typeof sim.err === "function") {
      const err = errorName(sim.err());
      if (err === "SignatureFailure") throw new RpcError(-32003, "Transaction signature verification failure");
      const logs = sim.meta().logs();
      throw new RpcError(-32002, `Transaction simulation failed: ${JSON.stringify(err)}`, { err, logs, unitsConsumed: Number(sim.meta().computeUnitsConsumed()) });
    }
  }
  const result = svm.sendTransaction(tx);
  const failed = typeof result.err === "function";
  const meta = failed ? result.meta() : result;
  const err = failed ? errorName(result.err()) : null;
  if (err === "SignatureFailure") throw new RpcError(-32003, "Transaction signature verification failure");
  const fee = 5000 * message.header.numSignerAccounts;
  processed.set(signature, {
    slot,
    err,
    bytes,
    message,
    signatures: Object.values(tx.signatures).map((s) => b58.decode(s)),
    meta: {
      err,
      status: err ? { Err: err } : { Ok: null },
      fee,
      preBalances,
      postBalances: keys.map((k) => Number(account(k)?.lamports ?? 0n)),
      preTokenBalances,
      postTokenBalances: tokenBalances(keys),
      logMessages: meta.logs(),
      computeUnitsConsumed: Number(meta.computeUnitsConsumed()),
      innerInstructions: [],
      loadedAddresses: { readonly: [], writable: [] },
      rewards: [],
    },
  });
  return signature;
}

function statuses([sigs, config = {}]) {
  return withContext(
    sigs.map((s) => {
      const p = processed.get(s);
      if (!p) return null;
      const age = slot - p.slot;
      if (age > STATUS_CACHE_SLOTS && !config.searchTransactionHistory) return null;
      const finalized = age >= FINALIZED_AFTER;
      return {
        slot: Number(p.slot),
        confirmations: finalized ? null : Number(age),
        err: p.err,
        status: p.meta.status,
        confirmationStatus: finalized ? "finalized" : "confirmed",
      };
    }),
  );
}

function transaction([sig, config = {}]) {
  const p = processed.get(sig);
  if (!p) return null;
  const version = p.message.version;
  if (version !== "legacy" && config.maxSupportedTransactionVersion === undefined) {
    throw new RpcError(-32015, `Transaction version (${version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0`);
  }
  const m = p.message;
  return {
    slot: Number(p.slot),
    blockTime: Math.floor(Date.now() / 1000),
    version,
    meta: p.meta,
    transaction: {
      signatures: p.signatures,
      message: {
        accountKeys: m.staticAccounts,
        header: {
          numRequiredSignatures: m.header.numSignerAccounts,
          numReadonlySignedAccounts: m.header.numReadonlySignerAccounts,
          numReadonlyUnsignedAccounts: m.header.numReadonlyNonSignerAccounts,
        },
        recentBlockhash: m.lifetimeToken,
        instructions: m.instructions.map((ix) => ({
          programIdIndex: ix.programAddressIndex,
          accounts: ix.accountIndices ?? [],
          data: b58.decode(ix.data ?? new Uint8Array()),
        })),
        addressTableLookups: m.addressTableLookups ?? [],
      },
    },
  };
}

const methods = {
  getHealth: () => "ok",
  getVersion: () => ({ "solana-core": "2.2.0", "feature-set": 0 }),
  getGenesisHash: () => genesis,
  getSlot: ([config = {}] = []) => Number(config.commitment === "finalized" ? (slot > FINALIZED_AFTER ? slot - FINALIZED_AFTER : 0n) : slot),
  // Newest first, paged by `before`; `commitment: "finalized"` leaves out
  // what is not final yet (the accounts a transaction names statically).
  getSignaturesForAddress: ([key, config = {}]) => {
    const rows = [];
    let skipping = Boolean(config.before);
    for (const [signature, p] of [...processed.entries()].reverse()) {
      if (skipping) {
        if (signature === config.before) skipping = false;
        continue;
      }
      if (config.until && signature === config.until) break;
      if (!p.message.staticAccounts.includes(key)) continue;
      const age = slot - p.slot;
      if (config.commitment === "finalized" && age < FINALIZED_AFTER) continue;
      rows.push({ signature, slot: Number(p.slot), err: p.err, memo: null, blockTime: null, confirmationStatus: age >= FINALIZED_AFTER ? "finalized" : "confirmed" });
      if (rows.length >= Math.min(config.limit ?? 1000, 1000)) break;
    }
    return rows;
  },
  getBlockHeight: () => Number(height),
  getLatestBlockhash: () => {
    const hash = svm.latestBlockhash();
    return withContext({ blockhash: hash, lastValidBlockHeight: Number(valid.get(hash)) });
  },
  isBlockhashValid: ([hash]) => withContext(valid.has(hash) && valid.get(hash) >= height),
  getBalance: ([key]) => withContext(Number(account(key)?.lamports ?? 0n)),
  getAccountInfo: ([key, config = {}]) => withContext(encodeAccount(account(key), config.encoding)),
  getMultipleAccounts: ([keys, config = {}]) => withContext(keys.map((k) => encodeAccount(account(k), config.encoding))),
  getTokenAccountBalance: ([key]) => {
    const t = tokenAccount(key);
    if (!t) throw new RpcError(-32602, "Invalid param: not a Token account");
    return withContext(uiAmount(t.amount, t.decimals));
  },
  getTokenAccountsByOwner: ([owner, filter, config = {}]) => {
    const rows = [];
    for (const k of known) {
      const t = tokenAccount(k);
      if (!t || t.owner !== owner) continue;
      if (filter?.mint && t.mint !== filter.mint) continue;
      if (filter?.programId && t.programId !== filter.programId) continue;
      rows.push({ pubkey: k, account: encodeAccount(account(k), config.encoding) });
    }
    return withContext(rows);
  },
  getMinimumBalanceForRentExemption: ([len]) => Number(svm.minimumBalanceForRentExemption(BigInt(len))),
  getFeeForMessage: ([wire]) => {
    const m = msgDecoder.decode(b64e.encode(wire));
    return withContext(5000 * m.header.numSignerAccounts);
  },
  getRecentPrioritizationFees: () => [],
  sendTransaction: send,
  // As a node simulates: `sigVerify: false` runs a transaction whose
  // signatures are missing, and `accounts.addresses` asks for those
  // accounts' state after it (null where an account does not exist then).
  simulateTransaction: ([wire, config = {}]) => {
    const { tx } = decodeWire(wire, config.encoding);
    const unsigned = config.sigVerify === false;
    if (unsigned) svm.withSigverify(false);
    let sim;
    try {
      sim = svm.simulateTransaction(tx);
    } finally {
      if (unsigned) svm.withSigverify(true);
    }
    const failed = typeof sim.err === "function";
    const meta = sim.meta();
    let accounts = null;
    if (config.accounts?.addresses && !failed) {
      const after = new Map(sim.postAccounts().map((a) => [String(a.address), a]));
      accounts = config.accounts.addresses.map((k) => {
        const a = after.has(k) ? after.get(k) : account(k);
        return a && BigInt(a.lamports) > 0n ? encodeAccount(a, config.accounts.encoding ?? "base64") : null;
      });
    }
    return withContext({ err: failed ? errorName(sim.err()) : null, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()), accounts, returnData: null });
  },
  getSignatureStatuses: statuses,
  getTransaction: transaction,
  requestAirdrop: ([key, lamports]) => {
    known.add(key);
    svm.airdrop(address(key), BigInt(lamports));
    return b58.decode(Buffer.alloc(64, Number(slot % 255n) + 1));
  },
  // Devnet only.
  devnet_advanceSlots: ([n]) => {
    for (let i = 0; i < n; i++) newBlock();
    return Number(slot);
  },
  devnet_hold: () => {
    holding = true;
    return null;
  },
  // How many transactions are held, without releasing them.
  devnet_held: () => ({ held: held.length }),
  // "land": process what is held (what expired meanwhile fails as it would);
  // "drop": forget it, as a network that lost it.
  devnet_release: ([mode]) => {
    holding = false;
    const out = held.splice(0);
    let landed = 0;
    for (const h of out) {
      if (mode !== "land") continue;
      try {
        send(h);
        landed += 1;
      } catch {}
    }
    return { held: out.length, landed };
  },
  devnet_setAccount: ([key, { lamports, owner, data, executable = false }]) => {
    known.add(key);
    svm.setAccount({ address: address(key), lamports: BigInt(lamports), programAddress: address(owner), data: Buffer.from(data, "base64"), executable });
    return null;
  },
};

function answer(req) {
  const base = { jsonrpc: "2.0", id: req?.id ?? null };
  const f = methods[req?.method];
  if (!f) return { ...base, error: { code: -32601, message: "Method not found" } };
  try {
    return { ...base, result: f(req.params ?? []) };
  } catch (e) {
    if (e instanceof RpcError) return { ...base, error: { code: e.code, message: e.message, ...(e.data ? { data: e.data } : {}) } };
    return { ...base, error: { code: -32602, message: `Invalid params: ${e.message}` } };
  }
}

const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    let parsed;
    try {
      parsed = JSON.parse(body);
    } catch {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }));
    }
    const out = Array.isArray(parsed) ? parsed.map(answer) : answer(parsed);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(out, (_, v) => (typeof v === "bigint" ? Number(v) : v)));
  });
});
server.listen(port, "127.0.0.1", () => {
  const ready = arg("ready", null);
  if (ready) fs.writeFileSync(ready, JSON.stringify({ rpc: `http://127.0.0.1:${port}`, pid: process.pid, genesis }));
});
