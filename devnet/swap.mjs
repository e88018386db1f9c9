// The devnet's swap provider: the subset of the LI.FI API that stablerail
// calls (`/v1/quote`, `/v1/quote/toAmount`, `/v1/status`, `/v1/tokens`,
// `/v1/chains`, `/v1/connections`), answering from the devnet's Uniswap V2
// pools: quotes from the pools' reserves (the router's getAmountsOut /
// getAmountsIn), transactions that are real Router02 calldata.
//
//   node swap.mjs --port P --devnet DIR/devnet.json
//
// For tests only: GET /devnet/hits (requests per path), POST /devnet/delay
// {"ms": N} (answer every request N ms late, to act as a stalled upstream).
import fs from "node:fs";
import http from "node:http";
import crypto from "node:crypto";
import { createPublicClient, encodeFunctionData, http as transport, parseAbiItem, decodeEventLog } from "viem";
import { routerArtifact, factoryArtifact } from "./uniswap.mjs";

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
  const t = c.tokens[String(address ?? "").toLowerCase()];
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

async function quote(q, exactOut) {
  const from = chainOf(q.fromChain);
  const toChain = chainOf(q.toChain ?? q.fromChain);
  if (toChain !== from) throw noQuote("NO_POSSIBLE_ROUTE", "cross-chain routes are not served by this provider");
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
    const receipt = await c.client.getTransactionReceipt({ hash: q.txHash }).catch(() => null);
    if (!receipt) continue;
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

const tokens = (q) => {
  const wanted = q.chains ? new Set(q.chains.split(",")) : null;
  const out = {};
  for (const [id, c] of chains) if (!wanted || wanted.has(id)) out[id] = Object.values(c.tokens);
  return { tokens: out };
};
const chainList = () => ({ chains: [...chains.values()].map((c) => ({ key: c.name, chainType: "EVM", name: c.name, id: c.chainId, nativeToken: { symbol: "ETH", decimals: 18, address: ZERO } })) });
const connections = (q) => ({
  connections: [...chains.values()]
    .filter((c) => !q.fromChain || String(c.chainId) === q.fromChain)
    .map((c) => ({ fromChainId: c.chainId, toChainId: c.chainId, fromTokens: Object.values(c.tokens), toTokens: Object.values(c.tokens) })),
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
