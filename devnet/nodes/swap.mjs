// The devnet's swap provider: the subset of the LI.FI API that stablerail
// calls (`/v1/quote`, `/v1/quote/toAmount`, `/v1/status`, `/v1/tokens`,
// `/v1/chains`, `/v1/connections`), answering from the devnet's Uniswap V2
// pools: quotes from the pools' reserves (the router's getAmountsOut /
// getAmountsIn), transactions that are real Router02 calldata.
//
//   node swap.mjs --port P --devnet DIR/devnet.json
//
// TRON (LI.FI's chain 728126428) is cross-chain only, as on LI.FI: a route
// out of TRON is a TRON transaction (TriggerSmartContract of the TRON
// chain's bridge, built by the TRON node, its raw_data_hex as `data` and
// the object as `customData.tronTransaction`), and a release on TRON is a
// TRON transfer signed by the deployer's key; TRON tokens and addresses are
// base58.
//
// For tests only: GET /devnet/hits (requests per path), POST /devnet/delay
// {"ms": N} (answer every request N ms late, to act as a stalled upstream).
import fs from "node:fs";
import http from "node:http";
import crypto from "node:crypto";
import { createPublicClient, encodeAbiParameters, encodeFunctionData, http as transport, parseAbiItem, decodeEventLog } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { utils as tronUtils } from "tronweb";
import { routerArtifact, factoryArtifact, bridgeArtifact } from "../setup/uniswap.mjs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const devnet = JSON.parse(fs.readFileSync(arg("devnet"), "utf8"));
const TOOL = "devnet-uniswap-v2";
const ZERO = "0x0000000000000000000000000000000000000000";
const transferEvent = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");
const erc20Abi = [parseAbiItem("function balanceOf(address) view returns (uint256)")];
const pairAbi = [parseAbiItem("function getReserves() view returns (uint112, uint112, uint32)"), parseAbiItem("function token0() view returns (address)")];

// chain id → {name, client, uniswap, tokens: {lower address → {address, symbol, decimals}}}
const chains = new Map();
for (const [name, c] of Object.entries(devnet.chains)) {
  if (!c.uniswap) continue;
  const client = createPublicClient({ transport: transport(c.rpc) });
  const tokens = {};
  for (const [key, a] of Object.entries(c.assets)) {
    if (a.alias_of) continue;
    tokens[a.address.toLowerCase()] = { address: a.address, symbol: key.toUpperCase(), decimals: a.decimals, chainId: c.chain_id, name: key.toUpperCase() };
  }
  tokens[c.uniswap.weth.toLowerCase()] = { address: c.uniswap.weth, symbol: "WETH", decimals: 18, chainId: c.chain_id, name: "Wrapped Ether" };
  chains.set(String(c.chain_id), { name, chainId: c.chain_id, client, uniswap: c.uniswap, tokens });
}
/// The deployer releases bridged tokens; on TRON it signs TRON transactions.
const deployerKey = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 0 });
/// fee_limit of the TRON transactions built here: 50 TRX.
const TRON_FEE_LIMIT = 50_000_000;
const tronToEvm = (b58) => {
  if (typeof b58 !== "string" || !tronUtils.address.isAddress(b58) || !b58.startsWith("T")) throw invalid(`${b58} is not a base58 TRON address`);
  return `0x${tronUtils.address.toHex(b58).slice(2)}`;
};
if (devnet.tron?.uniswap) {
  const t = devnet.tron;
  const tokens = {};
  const evmOf = {};
  for (const [key, a] of Object.entries(t.assets)) {
    tokens[a.address] = { address: a.address, symbol: key.toUpperCase(), decimals: a.decimals, chainId: t.chain_id, name: key.toUpperCase() };
    evmOf[a.address] = a.evm_address;
  }
  chains.set(String(t.chain_id), { name: "tron", chainId: t.chain_id, tron: true, api: t.http, uniswap: { bridge: t.uniswap.bridge, bridgeEvm: t.uniswap.bridge_evm }, tokens, evmOf });
}

async function tronApi(c, path, body) {
  const r = await fetch(`${c.api}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

/// A call of `contract` by `owner` (base58) built by the TRON node.
async function tronCall(c, owner, contract, selector, types, args) {
  const parameter = encodeAbiParameters(types.map((type) => ({ type })), args).slice(2);
  const r = await tronApi(c, "/wallet/triggersmartcontract", { owner_address: owner, contract_address: contract, function_selector: selector, parameter, fee_limit: TRON_FEE_LIMIT, call_value: 0, visible: true });
  if (!r.transaction?.raw_data_hex) throw new Error(`triggersmartcontract: ${JSON.stringify(r)}`);
  return r.transaction;
}

/// Send `amount` of `token` to `to` (a 20-byte address) on `dest` from the
/// deployer's float; the transaction's hash (a TRON txID on TRON).
async function release(dest, token, to, amount) {
  if (dest.tron) {
    const owner = tronUtils.address.fromHex(`41${deployerKey.address.slice(2)}`);
    const tx = await tronCall(dest, owner, token.address, "transfer(address,uint256)", ["address", "uint256"], [to, amount]);
    const signature = await deployerKey.sign({ hash: `0x${tx.txID}` });
    const b = await tronApi(dest, "/wallet/broadcasttransaction", { ...tx, signature: [signature.slice(2)] });
    if (!b.result) throw new Error(`broadcast: ${JSON.stringify(b)}`);
    return tx.txID;
  }
  const data = encodeFunctionData({ abi: transferAbi, functionName: "transfer", args: [to, amount] });
  const hash = await dest.client.request({ method: "eth_sendTransaction", params: [{ from: devnet.deployer, to: token.address, data }] });
  await dest.client.waitForTransactionReceipt({ hash });
  return hash;
}

const depositEvent = bridgeArtifact.abi.find((e) => e.type === "event" && e.name === "Deposit");
const transferAbi = [parseAbiItem("function transfer(address to, uint256 value) returns (bool)")];
/// Bridge fee, basis points of the amount.
const BRIDGE_FEE_BPS = 5n;
// source tx hash → {status, receiving}
const bridged = new Map();

const hits = {};
let delayMs = 0;

class Answer extends Error {
  constructor(status, body) {
    super(body.message);
    this.status = status;
    this.body = body;
  }
}
const noQuote = (code, message) => new Answer(404, { message: "No available quotes for the requested transfer", code: 1002, errors: [{ errorType: "NO_QUOTE", code, tool: TOOL, message }] });
const invalid = (message) => new Answer(400, { message, code: 1011 });

function chainOf(id) {
  const c = chains.get(String(id));
  if (!c) throw invalid(`chain ${id} is not supported`);
  return c;
}

function tokenOf(c, address) {
  const t = c.tron ? c.tokens[String(address ?? "")] : c.tokens[String(address ?? "").toLowerCase()];
  if (!t) throw invalid(`token ${address} is not known on chain ${c.chainId}`);
  return t;
}

const usd = (t, amount) => (t.symbol.startsWith("USD") ? (Number(amount) / 10 ** t.decimals).toFixed(6) : undefined);

async function reservesOf(c, from, to) {
  const pair = await c.client.readContract({ address: c.uniswap.factory, abi: factoryArtifact.abi, functionName: "getPair", args: [from.address, to.address] });
  if (pair === ZERO) throw noQuote("NO_POSSIBLE_ROUTE", `no ${from.symbol}/${to.symbol} pool`);
  const [[r0, r1], token0] = await Promise.all([
    c.client.readContract({ address: pair, abi: pairAbi, functionName: "getReserves" }),
    c.client.readContract({ address: pair, abi: pairAbi, functionName: "token0" }),
  ]);
  return token0.toLowerCase() === from.address.toLowerCase() ? [r0, r1] : [r1, r0];
}

async function bridgeQuote(q, from, to, exactOut) {
  const tin = tokenOf(from, q.fromToken);
  const tout = tokenOf(to, q.toToken);
  if (tin.symbol !== tout.symbol || tin.symbol === "WETH") throw noQuote("NO_POSSIBLE_ROUTE", "the bridge moves a token to the same token");
  if (!q.fromAddress) throw invalid("fromAddress is required");
  let amountIn, amountOut;
  if (exactOut) {
    amountOut = BigInt(q.toAmount);
    amountIn = (amountOut * 10_000n + (10_000n - BRIDGE_FEE_BPS) - 1n) / (10_000n - BRIDGE_FEE_BPS);
  } else {
    amountIn = BigInt(q.fromAmount);
    amountOut = (amountIn * (10_000n - BRIDGE_FEE_BPS)) / 10_000n;
  }
  const recipient = q.toAddress ?? q.fromAddress;
  const args = [from.tron ? from.evmOf[tin.address] : tin.address, amountIn, BigInt(to.chainId), to.tron ? to.evmOf[tout.address] : tout.address, to.tron ? tronToEvm(recipient) : recipient];
  let transactionRequest;
  if (from.tron) {
    tronToEvm(q.fromAddress);
    const tx = await tronCall(from, q.fromAddress, from.uniswap.bridge, "deposit(address,uint256,uint256,address,address)", ["address", "uint256", "uint256", "address", "address"], args);
    transactionRequest = { to: from.uniswap.bridge, from: q.fromAddress, data: `0x${tx.raw_data_hex}`, value: "0x0", gasLimit: `0x${TRON_FEE_LIMIT.toString(16)}`, chainId: from.chainId, customData: { contractType: "TriggerSmartContract", tronTransaction: tx } };
  } else {
    const data = encodeFunctionData({ abi: bridgeArtifact.abi, functionName: "deposit", args });
    transactionRequest = { to: from.uniswap.bridge, from: q.fromAddress, data, value: "0x0", gasLimit: "0x30d40", chainId: from.chainId };
  }
  return {
    type: "cross",
    id: crypto.randomUUID(),
    tool: "devnet-bridge",
    action: { fromChainId: from.chainId, toChainId: to.chainId, fromToken: tin, toToken: tout, fromAmount: amountIn.toString(), slippage: Number(q.slippage ?? "0.005"), fromAddress: q.fromAddress, toAddress: recipient },
    estimate: { tool: "devnet-bridge", fromAmount: amountIn.toString(), toAmount: amountOut.toString(), toAmountMin: amountOut.toString(), approvalAddress: from.uniswap.bridge, executionDuration: 2, fromAmountUSD: usd(tin, amountIn), toAmountUSD: usd(tout, amountOut) },
    transactionRequest,
  };
}

async function quote(q, exactOut) {
  const from = chainOf(q.fromChain);
  const toChain = chainOf(q.toChain ?? q.fromChain);
  if (toChain !== from) return bridgeQuote(q, from, toChain, exactOut);
  if (from.tron) throw noQuote("NO_POSSIBLE_ROUTE", "same-chain swaps on TRON are not supported");
  const [tin, tout] = [tokenOf(from, q.fromToken), tokenOf(from, q.toToken)];
  if (!q.fromAddress) throw invalid("fromAddress is required");
  const slippage = Number(q.slippage ?? "0.005");
  if (!(slippage >= 0 && slippage < 1)) throw invalid("slippage must be a fraction");
  const [reserveIn, reserveOut] = await reservesOf(from, tin, tout);
  const path = [tin.address, tout.address];
  const recipient = q.toAddress ?? q.fromAddress;
  const deadline = BigInt(Math.floor(Date.now() / 1000) + 600);
  const bps = BigInt(Math.round(slippage * 10_000));
  let amountIn, amountOut, minOut, data;
  if (exactOut) {
    amountOut = BigInt(q.toAmount);
    if (amountOut >= reserveOut) throw noQuote("INSUFFICIENT_LIQUIDITY", "the pool holds less than the amount out");
    [amountIn] = await from.client.readContract({ address: from.uniswap.router, abi: routerArtifact.abi, functionName: "getAmountsIn", args: [amountOut, path] });
    minOut = amountOut;
    const maxIn = (amountIn * (10_000n + bps) + 9_999n) / 10_000n;
    data = encodeFunctionData({ abi: routerArtifact.abi, functionName: "swapTokensForExactTokens", args: [amountOut, maxIn, path, recipient, deadline] });
  } else {
    amountIn = BigInt(q.fromAmount);
    if (amountIn > reserveIn) throw noQuote("INSUFFICIENT_LIQUIDITY", "the amount is more than the pool holds");
    [, amountOut] = await from.client.readContract({ address: from.uniswap.router, abi: routerArtifact.abi, functionName: "getAmountsOut", args: [amountIn, path] });
    minOut = (amountOut * (10_000n - bps)) / 10_000n;
    data = encodeFunctionData({ abi: routerArtifact.abi, functionName: "swapExactTokensForTokens", args: [amountIn, minOut, path, recipient, deadline] });
  }
  const estimate = {
    tool: TOOL,
    fromAmount: amountIn.toString(),
    toAmount: amountOut.toString(),
    toAmountMin: minOut.toString(),
    approvalAddress: from.uniswap.router,
    executionDuration: 0,
    fromAmountUSD: usd(tin, amountIn),
    toAmountUSD: usd(tout, amountOut),
  };
  return {
    type: "swap",
    id: crypto.randomUUID(),
    tool: TOOL,
    action: { fromChainId: from.chainId, toChainId: from.chainId, fromToken: tin, toToken: tout, fromAmount: amountIn.toString(), slippage, fromAddress: q.fromAddress, toAddress: recipient },
    estimate,
    transactionRequest: { to: from.uniswap.router, from: q.fromAddress, data, value: "0x0", gasLimit: "0x3d090", chainId: from.chainId },
  };
}

async function status(q) {
  const candidates = q.fromChain ? [chainOf(q.fromChain)] : [...chains.values()];
  for (const c of candidates) {
    if (c.tron) {
      const found = await tronStatus(c, q);
      if (found) return found;
      continue;
    }
    if (!/^0x[0-9a-fA-F]{64}$/.test(q.txHash ?? "")) continue;
    const receipt = await c.client.getTransactionReceipt({ hash: q.txHash }).catch(() => null);
    if (!receipt) continue;
    const deposit = receipt.status === "success" && receipt.logs.find((l) => l.address.toLowerCase() === c.uniswap.bridge.toLowerCase());
    if (deposit) {
      const done = bridged.get(q.txHash.toLowerCase());
      const args = decodeEventLog({ abi: [depositEvent], data: deposit.data, topics: deposit.topics }).args;
      const sending = { txHash: q.txHash, chainId: c.chainId, amount: args.amount.toString(), token: c.tokens[args.token.toLowerCase()] };
      if (!done) return { status: "PENDING", substatus: "WAIT_DESTINATION_TRANSACTION", substatusMessage: "The bridge has not released the tokens yet.", tool: "devnet-bridge", sending };
      return { status: "DONE", substatus: "COMPLETED", substatusMessage: "The transfer is complete.", tool: "devnet-bridge", sending, receiving: done, lifiExplorerLink: `${devnet.chains[c.name].rpc}/tx/${q.txHash}` };
    }
    if (receipt.status !== "success") return { status: "FAILED", substatus: "UNKNOWN_ERROR", substatusMessage: "the transaction reverted", tool: TOOL, sending: { txHash: q.txHash, chainId: c.chainId } };
    // What the swap paid out: the last Transfer in the receipt.
    const transfers = receipt.logs.flatMap((l) => {
      try {
        return [{ token: l.address, ...decodeEventLog({ abi: [transferEvent], data: l.data, topics: l.topics }).args }];
      } catch {
        return [];
      }
    });
    const first = transfers[0];
    const last = transfers[transfers.length - 1];
    return {
      status: "DONE",
      substatus: "COMPLETED",
      substatusMessage: "The transfer is complete.",
      tool: TOOL,
      sending: { txHash: q.txHash, chainId: c.chainId, amount: first?.value?.toString(), token: first && c.tokens[first.token.toLowerCase()] },
      receiving: { txHash: q.txHash, chainId: c.chainId, amount: last?.value?.toString(), token: last && c.tokens[last.token.toLowerCase()] },
      lifiExplorerLink: `${devnet.chains[c.name].rpc}/tx/${q.txHash}`,
    };
  }
  return { status: "NOT_FOUND" };
}

/// A TRON transaction's bridge deposit, as LI.FI reports a transfer.
async function tronStatus(c, q) {
  const id = String(q.txHash ?? "").replace(/^0x/, "").toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(id)) return null;
  const info = await tronApi(c, "/wallet/gettransactioninfobyid", { value: id });
  if (!info.id) return null;
  if (info.receipt?.result !== "SUCCESS") return { status: "FAILED", substatus: "UNKNOWN_ERROR", substatusMessage: "the transaction reverted", tool: "devnet-bridge", sending: { txHash: id, chainId: c.chainId } };
  const args = tronDeposit(c, info);
  if (!args) return null;
  const token = Object.values(c.tokens).find((t) => c.evmOf[t.address].toLowerCase() === args.token.toLowerCase());
  const sending = { txHash: id, chainId: c.chainId, amount: args.amount.toString(), token };
  const done = bridged.get(id);
  if (!done) return { status: "PENDING", substatus: "WAIT_DESTINATION_TRANSACTION", substatusMessage: "The bridge has not released the tokens yet.", tool: "devnet-bridge", sending };
  return { status: "DONE", substatus: "COMPLETED", substatusMessage: "The transfer is complete.", tool: "devnet-bridge", sending, receiving: done, lifiExplorerLink: `${c.api}/wallet/gettransactionbyid?value=${id}` };
}

/// The Deposit a TRON transaction info's logs carry from the bridge, if any.
function tronDeposit(c, info) {
  for (const l of info.log ?? []) {
    if (`0x${l.address}`.toLowerCase() !== c.uniswap.bridgeEvm.toLowerCase()) continue;
    try {
      return decodeEventLog({ abi: [depositEvent], data: `0x${l.data}`, topics: l.topics.map((t) => `0x${t}`) }).args;
    } catch {}
  }
  return null;
}

// As LI.FI's list: each token with its USD price and logo, the native coin
// first at the zero address, as LI.FI lists it. The devnet's dollars are
// worth a dollar; its ETH and WETH a round 3000.
const priced = (t) => ({ ...t, priceUSD: t.symbol.startsWith("USD") ? "1.00" : "3000.00", logoURI: `https://devnet.invalid/${t.symbol.toLowerCase()}.png` });
const native = (c) => ({ address: ZERO, symbol: "ETH", decimals: 18, chainId: c.chainId, name: "ETH" });
const tokens = (q) => {
  const wanted = q.chains ? new Set(q.chains.split(",")) : null;
  const out = {};
  for (const [id, c] of chains) if (!wanted || wanted.has(id)) out[id] = [native(c), ...Object.values(c.tokens)].map(priced);
  return { tokens: out };
};
const chainList = () => ({
  chains: [...chains.values()].map((c) =>
    c.tron
      ? { key: "trn", chainType: "TVM", name: "Tron", id: c.chainId, nativeToken: { symbol: "TRX", decimals: 6, address: "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb" } }
      : { key: c.name, chainType: "EVM", name: c.name, id: c.chainId, nativeToken: { symbol: "ETH", decimals: 18, address: ZERO } },
  ),
});
const connections = (q) => ({
  connections: [...chains.values()].flatMap((c) =>
    [...chains.values()]
      .filter((d) => (!q.fromChain || String(c.chainId) === q.fromChain) && (!q.toChain || String(d.chainId) === q.toChain))
      .map((d) => ({ fromChainId: c.chainId, toChainId: d.chainId, fromTokens: Object.values(c.tokens), toTokens: Object.values(d.tokens) })),
  ),
});

const routes = {
  "/v1/quote": (q) => quote(q, false),
  "/v1/quote/toAmount": (q) => quote(q, true),
  "/v1/status": status,
  "/v1/tokens": tokens,
  "/v1/chains": chainList,
  "/v1/connections": connections,
  "/devnet/hits": () => hits,
};

// The bridge's watcher: every chain's Deposit events, each released once on
// its destination chain from the deployer's tokens.
async function settle(key, args) {
  if (bridged.has(key)) return;
  const { amount, toChainId, toToken, to } = args;
  const dest = chains.get(String(toChainId));
  if (!dest) return;
  const token = dest.tron ? Object.values(dest.tokens).find((t) => dest.evmOf[t.address].toLowerCase() === toToken.toLowerCase()) : dest.tokens[toToken.toLowerCase()];
  if (!token) return;
  const out = (amount * (10_000n - BRIDGE_FEE_BPS)) / 10_000n;
  const hash = await release(dest, token, to, out);
  bridged.set(key, { txHash: hash, chainId: dest.chainId, amount: out.toString(), token });
}

async function watch() {
  const from = new Map();
  for (;;) {
    for (const c of chains.values()) {
      try {
        if (c.tron) {
          // The TRON node's transaction infos, block by block; the last few
          // blocks again (an info is recorded just after its block).
          const head = (await tronApi(c, "/wallet/getnowblock", {})).block_header.raw_data.number;
          const start = from.get(c.chainId) ?? 0;
          for (let n = start; n <= head; n++) {
            for (const info of await tronApi(c, "/wallet/gettransactioninfobyblocknum", { num: n })) {
              const args = tronDeposit(c, info);
              if (args) await settle(info.id, args);
            }
          }
          from.set(c.chainId, Math.max(0, head - 5));
          continue;
        }
        const head = await c.client.getBlockNumber();
        const start = from.get(c.chainId) ?? 0n;
        if (head < start) continue;
        const logs = await c.client.getLogs({ address: c.uniswap.bridge, event: depositEvent, fromBlock: start, toBlock: head });
        from.set(c.chainId, head + 1n);
        for (const log of logs) await settle(log.transactionHash.toLowerCase(), log.args);
      } catch (e) {
        console.error(`bridge watcher on ${c.name}: ${e.message}`);
      }
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}
watch();

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://devnet");
  const answer = (code, body) => {
    res.writeHead(code, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (req.method === "POST" && url.pathname === "/devnet/delay") {
    let text = "";
    for await (const c of req) text += c;
    delayMs = Number(JSON.parse(text || "{}").ms ?? 0);
    return answer(200, { delay_ms: delayMs });
  }
  hits[url.pathname] = (hits[url.pathname] ?? 0) + 1;
  if (delayMs && !url.pathname.startsWith("/devnet/")) await new Promise((r) => setTimeout(r, delayMs));
  const route = routes[url.pathname];
  if (!route || req.method !== "GET") return answer(404, { message: `${req.method} ${url.pathname} is not a route of this provider`, code: 1003 });
  try {
    answer(200, await route(Object.fromEntries(url.searchParams)));
  } catch (e) {
    if (e instanceof Answer) return answer(e.status, e.body);
    answer(500, { message: String(e.message ?? e), code: 1006 });
  }
});
server.listen(Number(arg("port")), "127.0.0.1");
