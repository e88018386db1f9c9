// A TRON full node's HTTP API over an anvil started with TRON's chain id, for
// the devnet (no TRON node installs here). Transactions are real TRON
// transactions: protobuf `raw_data` built and read with tronweb's own codec,
// txID = sha256(raw_data), secp256k1 signatures over the txID that must
// recover to the owner. The node refuses what a real one refuses, with its
// error codes: a bad signature (SIGERROR), an expired transaction
// (TRANSACTION_EXPIRATION_ERROR), one it has seen (DUP_TRANSACTION_ERROR), a
// reference block it does not know (TAPOS_ERROR). A valid transaction is
// executed on the anvil as its owner (impersonated): a TRON address is
// 0x41 ‖ the 20-byte EVM address of the same key.
//
// Not modelled: energy, bandwidth and their prices (the anvil charges no
// gas; `fee_limit` is recorded, not enforced), resource delegation,
// multi-signature permissions, TRC-10 tokens, block production by
// witnesses (blocks are the anvil's).
//
//   node tron.mjs --port P --anvil URL [--ready FILE]
import http from "node:http";
import fs from "node:fs";
import crypto from "node:crypto";
import { TronWeb, utils } from "tronweb";
import { recoverAddress } from "viem";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const port = Number(arg("port", "18190"));
const anvil = arg("anvil", "http://127.0.0.1:8545");
/// A transaction may not be set to expire further out than this.
const MAX_EXPIRATION_MS = 24 * 60 * 60 * 1000;
const builder = new TronWeb({ fullHost: "http://127.0.0.1:1" });

async function eth(method, params = []) {
  const r = await (await fetch(anvil, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json();
  if (r.error) throw Object.assign(new Error(r.error.message), { rpc: r.error });
  return r.result;
}

const hex = (s) => s.replace(/^0x/, "").toLowerCase();
const textHex = (s) => Buffer.from(s, "utf8").toString("hex");

/// `41…` hex (21 bytes) or base58check `T…` to the 20-byte EVM address.
function evm(address) {
  if (typeof address !== "string") throw new Refusal("INVALID_ADDRESS", "address is missing");
  const h = address.startsWith("T") ? utils.address.toHex(address) : hex(address);
  if (!/^41[0-9a-f]{40}$/.test(h)) throw new Refusal("INVALID_ADDRESS", `invalid address ${address}`);
  return `0x${h.slice(2)}`;
}
const tronHex = (evmAddress) => `41${hex(evmAddress)}`;
const show = (evmAddress, visible) => (visible ? utils.address.fromHex(tronHex(evmAddress)) : tronHex(evmAddress));

/// A TRON API refusal: `{code, message: hex(text)}` as the node answers.
class Refusal extends Error {
  constructor(code, text) {
    super(text);
    this.code = code;
  }
}

/// A block as TRON shows it: blockID = 8-byte number ‖ the last 24 bytes of the hash.
async function block(tag) {
  const b = await eth("eth_getBlockByNumber", [tag, false]);
  const number = BigInt(b.number);
  const blockID = number.toString(16).padStart(16, "0") + hex(b.hash).slice(16);
  return {
    blockID,
    block_header: {
      raw_data: { number: Number(number), timestamp: Number(BigInt(b.timestamp)) * 1000, parentHash: hex(b.parentHash), version: 30, txTrieRoot: hex(b.transactionsRoot), witness_address: "41" + "00".repeat(20) },
      witness_signature: "",
    },
  };
}

const seen = new Map(); // txID -> { info, tx }
// Tests: the clock can be moved on (expiry), and broadcasts held unexecuted
// (accepted, as by a node that has not relayed them yet), then landed or dropped.
let skewMs = 0;
const clock = () => Date.now() + skewMs;
let holding = false;
const held = []; // [txID, run]

async function constant({ owner_address, contract_address, function_selector, parameter = "", data, call_value = 0, visible }) {
  const calldata = data ? hex(data) : selector(function_selector) + hex(parameter);
  // TRX is SUN on TRON and wei (10^12 per SUN) on the anvil underneath.
  const call = { from: owner_address ? evm(owner_address) : undefined, to: evm(contract_address), data: `0x${calldata}`, value: `0x${(BigInt(call_value) * 10n ** 12n).toString(16)}` };
  try {
    const out = await eth("eth_call", [call, "latest"]);
    const gas = await eth("eth_estimateGas", [call]).catch(() => "0x0");
    // The call's event logs, as java-tron's TransactionExtention carries
    // them: 20-byte hex addresses, hex topics and data, no 0x.
    const sim = await eth("eth_simulateV1", [{ blockStateCalls: [{ calls: [call] }], validation: false }, "latest"]).catch(() => null);
    const logs = (sim?.[0]?.calls?.[0]?.logs ?? []).map((l) => ({ address: l.address.slice(2).toLowerCase(), topics: l.topics.map((t) => t.slice(2)), data: l.data.slice(2) }));
    return { result: { result: true }, energy_used: Number(BigInt(gas)), constant_result: [hex(out)], logs };
  } catch (e) {
    if (e instanceof Refusal) throw e;
    return { result: { code: "CONTRACT_EXE_ERROR", message: textHex(e.message) }, energy_used: 0, constant_result: [hex(e.rpc?.data ?? "")] };
  }
}

function selector(signature) {
  if (!signature) throw new Refusal("CONTRACT_VALIDATE_ERROR", "function_selector is required");
  return utils.ethersUtils.id(signature).slice(2, 10);
}

async function trigger({ owner_address, contract_address, function_selector, parameter = "", fee_limit = 0, call_value = 0, visible }) {
  evm(owner_address);
  evm(contract_address);
  selector(function_selector);
  const head = await block("latest");
  const number = BigInt(head.block_header.raw_data.number);
  const blockHeader = {
    ref_block_bytes: (number & 0xffffn).toString(16).padStart(4, "0"),
    ref_block_hash: head.blockID.slice(16, 32),
    expiration: clock() + 60_000,
    timestamp: clock(),
  };
  const options = { feeLimit: fee_limit, callValue: call_value, txLocal: true, blockHeader, rawParameter: hex(parameter) };
  const owner = tronHex(evm(owner_address));
  const contract = tronHex(evm(contract_address));
  const built = await builder.transactionBuilder.triggerSmartContract(contract, function_selector, options, [], owner);
  built.transaction.visible = Boolean(visible);
  return built;
}

/// The transaction inside `raw_data_hex`, by its contract type.
function decode(rawHex) {
  for (const type of ["TriggerSmartContract", "TransferContract"]) {
    try {
      return { type, raw: utils.deserializeTx.deserializeTransaction(type, rawHex) };
    } catch {}
  }
  throw new Refusal("OTHER_ERROR", "unsupported or undecodable transaction");
}

async function tapos(raw) {
  const head = BigInt((await eth("eth_blockNumber")));
  const low = BigInt(parseInt(raw.ref_block_bytes, 16));
  const n = head - ((head - low) & 0xffffn);
  if (n < 0n) throw new Refusal("TAPOS_ERROR", "Tapos check error");
  const b = await block(`0x${n.toString(16)}`);
  if (b.blockID.slice(16, 32) !== raw.ref_block_hash.toLowerCase()) throw new Refusal("TAPOS_ERROR", "Tapos check error");
}

async function broadcast(tx) {
  const rawHex = hex(tx.raw_data_hex ?? "");
  if (!rawHex) throw new Refusal("OTHER_ERROR", "raw_data_hex is required");
  // The id is recomputed from the bytes; a given txID is never trusted.
  const txID = crypto.createHash("sha256").update(Buffer.from(rawHex, "hex")).digest("hex");
  if (seen.has(txID)) throw new Refusal("DUP_TRANSACTION_ERROR", "dup transaction");
  const { type, raw } = decode(rawHex);
  const now = clock();
  if (raw.expiration <= now) throw new Refusal("TRANSACTION_EXPIRATION_ERROR", "Transaction expired");
  if (raw.expiration > now + MAX_EXPIRATION_MS) throw new Refusal("TRANSACTION_EXPIRATION_ERROR", "expiration is too far in the future");
  const value = raw.contract[0].parameter.value;
  const owner = evm(value.owner_address.toLowerCase());
  const signatures = tx.signature ?? [];
  if (signatures.length !== 1) throw new Refusal("SIGERROR", "validate signature error: one signature from the owner is required");
  let signer;
  try {
    signer = await recoverAddress({ hash: `0x${txID}`, signature: `0x${hex(signatures[0])}` });
  } catch {
    throw new Refusal("SIGERROR", "validate signature error: malformed signature");
  }
  if (signer.toLowerCase() !== owner) throw new Refusal("SIGERROR", `validate signature error: ${tronHex(signer)} is not the owner`);
  await tapos(raw);
  seen.set(txID, { pending: true });
  const run = () => execute(txID, type, raw, rawHex, signatures, owner, value);
  if (holding) {
    held.push([txID, run]);
    return { result: true, txid: txID };
  }
  return run();
}

async function execute(txID, type, raw, rawHex, signatures, owner, value) {
  const call =
    type === "TriggerSmartContract"
      ? { from: owner, to: evm(value.contract_address.toLowerCase()), data: `0x${value.data.toLowerCase()}`, value: `0x${BigInt(value.call_value ?? 0).toString(16)}` }
      : { from: owner, to: evm(value.to_address.toLowerCase()), value: `0x${(BigInt(value.amount) * 10n ** 12n).toString(16)}` };
  await eth("anvil_impersonateAccount", [owner]);
  let hash;
  try {
    hash = await eth("eth_sendTransaction", [{ ...call, gas: "0x989680", maxFeePerGas: "0x0", maxPriorityFeePerGas: "0x0" }]);
  } finally {
    await eth("anvil_stopImpersonatingAccount", [owner]);
  }
  // Automine under load can answer before the receipt is readable.
  let receipt = await eth("eth_getTransactionReceipt", [hash]);
  for (let i = 0; !receipt && i < 200; i++) {
    await new Promise((r) => setTimeout(r, 25));
    receipt = await eth("eth_getTransactionReceipt", [hash]);
  }
  if (!receipt) throw new Error(`anvil has no receipt for ${hash}`);
  const b = await block(receipt.blockNumber);
  const ok = receipt.status === "0x1";
  const info = {
    id: txID,
    fee: 0,
    blockNumber: b.block_header.raw_data.number,
    blockTimeStamp: b.block_header.raw_data.timestamp,
    contractResult: [""],
    receipt: { energy_usage_total: Number(BigInt(receipt.gasUsed)), net_usage: rawHex.length / 2, result: ok ? "SUCCESS" : "REVERT" },
    log: receipt.logs.map((l) => ({ address: hex(l.address), topics: l.topics.map(hex), data: hex(l.data) })),
  };
  if (type === "TriggerSmartContract") info.contract_address = tronHex(call.to);
  if (!ok) Object.assign(info, { result: "FAILED", resMessage: textHex("REVERT opcode executed") });
  const record = { visible: false, txID, raw_data: raw, raw_data_hex: rawHex, signature: signatures, ret: [{ contractRet: ok ? "SUCCESS" : "REVERT" }] };
  seen.set(txID, { info, tx: record });
  return { result: true, txid: txID };
}

/// `protocol.Transaction` bytes: raw_data (field 1) and signatures (field 2).
function splitTransaction(bytes) {
  const out = { raw: null, signatures: [] };
  let i = 0;
  const varint = () => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (i >= bytes.length) throw new Refusal("OTHER_ERROR", "truncated transaction");
      const b = bytes[i++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < bytes.length) {
    const key = Number(varint());
    const wire = key & 7;
    if (wire === 2) {
      const len = Number(varint());
      const value = bytes.subarray(i, i + len);
      i += len;
      if (key >> 3 === 1) out.raw = value;
      if (key >> 3 === 2) out.signatures.push(Buffer.from(value).toString("hex"));
    } else if (wire === 0) varint();
    else throw new Refusal("OTHER_ERROR", "unexpected field in transaction");
  }
  if (!out.raw) throw new Refusal("OTHER_ERROR", "transaction has no raw_data");
  return out;
}

const refused = (e, txid = "") => {
  if (e instanceof Refusal) return { code: e.code, txid, message: textHex(e.message) };
  throw e;
};

const routes = {
  "/wallet/getnowblock": () => block("latest"),
  "/wallet/getblockbynum": async ({ num }) => block(`0x${BigInt(num).toString(16)}`),
  "/wallet/triggerconstantcontract": constant,
  "/wallet/triggersmartcontract": trigger,
  "/wallet/broadcasttransaction": (tx) => broadcast(tx).catch((e) => refused(e, tx.txID ?? "")),
  // The whole signed Transaction protobuf, as hex.
  "/wallet/broadcasthex": async ({ transaction }) => {
    try {
      const { raw, signatures } = splitTransaction(Buffer.from(hex(transaction ?? ""), "hex"));
      return await broadcast({ raw_data_hex: Buffer.from(raw).toString("hex"), signature: signatures });
    } catch (e) {
      return refused(e);
    }
  },
  "/wallet/gettransactioninfobyid": async ({ value }) => seen.get(hex(value ?? ""))?.info ?? {},
  // Every executed transaction's info in block `num` (what watchers poll).
  "/wallet/gettransactioninfobyblocknum": async ({ num }) => [...seen.values()].filter((s) => s.info?.blockNumber === Number(num)).map((s) => s.info),
  "/wallet/gettransactionbyid": async ({ value }) => seen.get(hex(value ?? ""))?.tx ?? {},
  "/wallet/getaccount": async ({ address, visible }) => {
    const a = evm(address);
    const wei = BigInt(await eth("eth_getBalance", [a, "latest"]));
    const code = await eth("eth_getCode", [a, "latest"]);
    // A node knows no account that never received anything.
    if (wei === 0n && code === "0x") return {};
    return { address: show(a, visible), balance: Number(wei / 10n ** 12n), create_time: 0 };
  },
  // A contract's record, or {} where the address holds none (as a full node answers).
  "/wallet/getcontract": async ({ value, visible }) => {
    const a = evm(value);
    const code = await eth("eth_getCode", [a, "latest"]);
    if (code === "0x") return {};
    return { contract_address: show(a, visible), bytecode: code.slice(2) };
  },
  // Devnet only, like anvil's anvil_*: move the clock, hold and release broadcasts.
  "/devnet/advance_time": async ({ seconds }) => {
    skewMs += Number(seconds) * 1000;
    // Blocks keep up: new transactions reference a block of the new time.
    await eth("evm_increaseTime", [Number(seconds)]);
    await eth("evm_mine");
    return { now: clock() };
  },
  "/devnet/hold": async () => {
    holding = true;
    return {};
  },
  // How many broadcasts are held, without releasing them.
  "/devnet/held": async () => ({ held: held.length }),
  // `order: "newest-first"` lands the last broadcast first, as a block
  // producer paid more by a later sender would.
  "/devnet/release": async ({ mode, order }) => {
    holding = false;
    const out = held.splice(0);
    if (order === "newest-first") out.reverse();
    let landed = 0;
    for (const [txID, run] of out) {
      if (mode === "land") {
        await run();
        landed += 1;
      } else seen.delete(txID);
    }
    return { held: out.length, landed };
  },
  "/wallet/getchainparameters": async () => ({ chainParameter: [{ key: "getEnergyFee", value: 420 }, { key: "getTransactionFee", value: 1000 }] }),
};

// The solidity node's view (what is confirmed): on the devnet, everything
// executed is final at once.
for (const path of ["getnowblock", "getblockbynum", "gettransactioninfobyid", "gettransactionbyid", "getaccount", "triggerconstantcontract", "gettransactioninfobyblocknum"]) {
  routes[`/walletsolidity/${path}`] = routes[`/wallet/${path}`];
}

const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", async () => {
    const path = req.url.split("?")[0];
    const answer = (status, value) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    const route = routes[path];
    if (!route) return answer(404, { Error: `${path} is not a route of this node` });
    let params = {};
    try {
      params = body ? JSON.parse(body) : Object.fromEntries(new URL(req.url, "http://x").searchParams);
    } catch {
      return answer(200, { Error: "class com.alibaba.fastjson.JSONException : malformed JSON" });
    }
    try {
      answer(200, await route(params));
    } catch (e) {
      if (e instanceof Refusal) return answer(200, { Error: `${e.code}: ${e.message}` });
      answer(200, { Error: `class java.lang.IllegalStateException : ${e.message}` });
    }
  });
});
server.listen(port, "127.0.0.1", () => {
  const ready = arg("ready", null);
  if (ready) fs.writeFileSync(ready, JSON.stringify({ http: `http://127.0.0.1:${port}`, pid: process.pid }));
});
