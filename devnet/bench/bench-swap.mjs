// Swap proxying, measured against the devnet's provider called directly in
// the same run: quote latency (p50, p99) and discovery throughput (the
// service from its cache vs the provider computing each answer).
//
//   node bench-swap.mjs --dir DIR --url http://127.0.0.1:PORT [--n 200] [--seconds 5] [--concurrency 16]
import fs from "node:fs";
import path from "node:path";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const devnet = JSON.parse(fs.readFileSync(path.join(arg("dir"), "devnet.json"), "utf8"));
const service = arg("url");
const provider = devnet.swap.url;
const n = Number(arg("n", "200"));
const seconds = Number(arg("seconds", "5"));
const concurrency = Number(arg("concurrency", "16"));
const base = devnet.chains.base;
const [usdc, usdt] = [base.assets.usdc.address, base.assets.usdt.address];
const user = devnet.payers[0].address;

async function timed(url) {
  const started = process.hrtime.bigint();
  const r = await fetch(url);
  await r.arrayBuffer();
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

async function latency(url) {
  for (let i = 0; i < 10; i++) await timed(url); // warm up
  const ms = [];
  for (let i = 0; i < n; i++) ms.push(await timed(url));
  ms.sort((a, b) => a - b);
  return { p50_ms: +pct(ms, 50).toFixed(3), p99_ms: +pct(ms, 99).toFixed(3) };
}

async function throughput(url) {
  await timed(url);
  const until = Date.now() + seconds * 1000;
  let done = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < until) {
      await timed(url);
      done += 1;
    }
  }));
  return +(done / seconds).toFixed(1);
}

// The same quote both ways: ExactIn 1 USDC → USDT on base, with a signer.
const direct = await latency(`${provider}/quote?fromChain=${base.chain_id}&toChain=${base.chain_id}&fromToken=${usdc}&toToken=${usdt}&fromAddress=${user}&fromAmount=1000000&slippage=0.005`);
const through = await latency(`${service}/api/swap/quote?chain=base&input_token=${usdc}&output_token=${usdt}&from_amount=1000000&user_address=${user}`);
// Solana through the Jupiter-shaped provider: a price quote (one upstream
// call both ways; with a signer the service also asks /swap).
let solana;
if (devnet.jupiter) {
  const [mintIn, mintOut] = [devnet.solana.assets.usdc.address, devnet.solana.assets.usdt.address];
  const d = await latency(`${devnet.jupiter.url}/quote?inputMint=${mintIn}&outputMint=${mintOut}&amount=1000000&slippageBps=50&swapMode=ExactIn`);
  const t = await latency(`${service}/api/swap/quote?chain=solana&input_token=${mintIn}&output_token=${mintOut}&from_amount=1000000`);
  solana = { provider_direct: d, through_stablerail: t, p50_overhead_ms: +(t.p50_ms - d.p50_ms).toFixed(3), p50_ratio: +(t.p50_ms / d.p50_ms).toFixed(3) };
}
const tokensDirect = await throughput(`${provider}/tokens`);
const tokensCached = await throughput(`${service}/api/swap/tokens`);
console.log(JSON.stringify({
  quote: { provider_direct: direct, through_stablerail: through, p50_overhead_ms: +(through.p50_ms - direct.p50_ms).toFixed(3), p50_ratio: +(through.p50_ms / direct.p50_ms).toFixed(3) },
  solana_quote: solana,
  discovery_tokens_rps: { provider_direct: tokensDirect, stablerail_cached: tokensCached, ratio: +(tokensCached / tokensDirect).toFixed(2) },
  n, seconds, concurrency,
}, null, 2));
