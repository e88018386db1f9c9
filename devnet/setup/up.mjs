// Start one anvil per EVM chain, place canonical Permit2 and our x402 Permit2
// proxy, deploy the token fixtures each (chain, asset) needs, fund wallets, and
// describe it all in DIR/devnet.json and DIR/chains.toml.
//
//   node up.mjs --dir DIR [--port 18545] [--chains base,arbitrum,polygon,bsc | all]
//               [--gas 0xA,0xB] [--tokens 0xC,0xD] [--adapters-dir PATH]
//               [--sol-gas A,B] [--sol-tokens C] [--sol-accounts D]   (with `solana` in --chains)
//               [--tron-gas A,B] [--tron-tokens C]                    (with `tron` in --chains)
//               [--no-swaps]   (no Uniswap pools and no swap provider)
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { createPublicClient, createWalletClient, http, parseEther, toFunctionSelector } from "viem";
import { x402ExactPermit2ProxyABI, x402UptoPermit2ProxyABI } from "@x402/evm";
import { privateKeyToAccount, mnemonicToAccount } from "viem/accounts";
import { compile } from "./compile.mjs";
import { portFree, startNode, started } from "./started.mjs";
import { deployFiatToken, fiatTokenAbi } from "./fiattoken.mjs";
import { multicall3Creation, permit2Runtime, MULTICALL3_ADDRESS, PERMIT2_ADDRESS } from "./canonical.mjs";

// The devnet folder (this file is in one of its role folders).
const here = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
const ANVIL = path.join(here, "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
const PROXY_ADDRESS = "0x402085c248EeA27D92E8b30b2C58ed07f9E20001";
const UPTO_PROXY_ADDRESS = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002";
// x402 batch-settlement: the channels contract and its two deposit
// collectors, at the addresses the reference client signs for.
const BATCH_SETTLEMENT = {
  settlement: "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003",
  erc3009_collector: "0x4020806089470a89826cB9fB1f4059150b550004",
  permit2_collector: "0x4020425FAf3B746C082C2f942b4E5159887B0005",
};

// Tokens, one per kind of contract the spec's (chain, asset) table needs.
// fiattoken: Circle's FiatTokenV2_2 (USDC and the USDC-derived tokens,
// domain version "2"; fiattoken.mjs), published; the rest are fixtures of
// our own where no published contract fits:
// fiat: DevUSD (EIP-3009 + EIP-2612 with a domain FiatToken cannot have:
// USDT0's OpenZeppelin domain with EIP-5267, version "1", or polygon's
// salted one; MegaUSD's version "1");
// tether: TetherLike (no permit, no domain; `reset` = ethereum USDT's approve rule).
const usdc = (decimals = 6) => ({ kind: "fiattoken", scheme: "eip3009", name: "USD Coin", version: "2", decimals });
// USDT0 is an OpenZeppelin-based token: it has eip712Domain() (EIP-5267).
const usdt0 = (name) => ({ kind: "fiat", scheme: "eip3009", name, version: "1", decimals: 6, erc5267: true });
const tether = (decimals, reset = false) => ({ kind: "tether", scheme: "permit2", decimals, reset });

// Chain ids as on mainnet (REFERENCE.md). Fees are devnet values. The assets,
// schemes, roles and transaction types mirror the shipped chains.toml
// (assets the operator must still fill in there are live here). skale-base
// runs without EIP-1559 (anvil's berlin hardfork), as the real chain does.
const PAYER_ONLY = ["payer"];
const CHAINS = {
  base: { id: 8453, fee: "0.01", assets: { usdc: usdc(), usdt: tether(6) } },
  arbitrum: { id: 42161, fee: "0.01", assets: { usdc: usdc(), usdt0: usdt0("USD\u20ae0") }, aliases: { usdt: "usdt0" } },
  polygon: {
    id: 137, fee: "0.01",
    assets: { usdc: usdc(), usdt0: { ...usdt0("USDT0"), scheme: "permit2", salted: true } },
    aliases: { usdt: "usdt0" },
  },
  bsc: { id: 56, fee: "0.02", assets: { usdc: tether(18), usdt: tether(18) } },
  ethereum: { id: 1, fee: "0.05", assets: { usdc: usdc(), usdt: tether(6, true) } },
  monad: { id: 143, fee: "0.01", assets: { usdc: { ...usdc(), name: "USDC", scheme: "permit2" }, usdt0: usdt0("USDT0") } },
  hyperevm: { id: 999, fee: "0.01", assets: { usdc: usdc(), usdt0: usdt0("USD\u20ae0") } },
  megaeth: {
    id: 4326, fee: "0.01", roles: PAYER_ONLY,
    assets: { usdc: { kind: "fiat", scheme: "permit2", name: "MegaUSD", version: "1", decimals: 18 }, usdt0: usdt0("USDT0") },
  },
  "skale-base": {
    id: 1187947933, fee: "0.00", roles: PAYER_ONLY, legacy: true,
    assets: { usdc: { ...usdc(), name: "Bridged USDC (SKALE Bridge)" } },
  },
};
// TRON: an anvil with TRON's chain id behind devnet/nodes/tron.mjs (the full
// node's HTTP API). It charges no gas: energy and bandwidth are not modelled.
const TRON = { id: 728126428, fee: "0.01", assets: { usdt: tether(6) }, extraArgs: ["--block-base-fee-per-gas", "0"] };
const MNEMONIC = "test test test test test test test test test test test junk";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
const list = (s) => (s ? s.split(",").filter(Boolean) : []);

const dir = path.resolve(arg("dir", path.join(here, "..", ".stablerail", "devnet")));
const basePort = Number(arg("port", "18545"));
const chosen = arg("chains", "base,arbitrum,polygon,bsc");
const requested = chosen === "all" ? Object.keys(CHAINS) : list(chosen);
// Solana is its own cluster (solana-up.mjs); the rest are anvils.
const solana = requested.includes("solana");
const chains = requested.filter((n) => n !== "solana");
const gas = list(arg("gas", ""));
const tokens = list(arg("tokens", ""));
const swaps = !process.argv.includes("--no-swaps");
// Serve x402 batch-settlement (`stablerail devnet up` asks for it): each EVM
// chain's USDC and USDT a second time under the scheme, and the
// facilitator's own receiver authorizer for servers that delegate.
const batchSettlement = process.argv.includes("--batch-settlement");
// tronweb, the Solana tools and the Uniswap fixtures load only for a devnet
// that has their chains or pools: most devnets are EVM alone, and the
// suite starts dozens (each import costs Node a few hundred milliseconds).
const tron = requested.includes("tron");
const { utils: tronUtils } = tron ? await import("tronweb") : {};
const { deployBridge, deployUniswap } = swaps ? await import("./uniswap.mjs") : {};
// The service's TRON wallets (base58check) get TRX and USDT on the TRON anvil.
const tronEvm = (a) => `0x${tronUtils.address.toHex(a).slice(2)}`;
const tronGas = tron ? list(arg("tron-gas", "")).map(tronEvm) : [];
const tronTokens = tron ? list(arg("tron-tokens", "")).map(tronEvm) : [];
const adaptersDir = path.resolve(arg("adapters-dir", path.join(here, "..", "adapters/target/wasm32-wasip2/release")));
fs.mkdirSync(dir, { recursive: true });

async function waitFor(rpc, child) {
  let exited = null;
  child.on("exit", (code) => (exited = code));
  const deadline = Date.now() + Number(process.env.DEVNET_START_SECONDS || 120) * 1000;
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`anvil for ${rpc} exited with ${exited} (port taken?)`);
    try {
      const r = await fetch(rpc, { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' });
      if (r.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`anvil at ${rpc} did not start`);
}

const artifacts = { fiattoken: { abi: fiatTokenAbi }, fiat: compile("DevUSD"), tether: compile("TetherLike"), proxy: compile("X402Permit2Proxy"), upto: compile("X402UptoPermit2Proxy"),
  batch: compile("X402BatchSettlement"), erc3009Collector: compile("ERC3009DepositCollector", "X402DepositCollectors"), permit2Collector: compile("Permit2DepositCollector", "X402DepositCollectors") };
const permit2Code = permit2Runtime();
const deployer = mnemonicToAccount(MNEMONIC, { addressIndex: 0 });
const payers = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => {
  const acct = mnemonicToAccount(MNEMONIC, { addressIndex: i });
  return { address: acct.address, private_key: `0x${Buffer.from(acct.getHdKey().privateKey).toString("hex")}` };
});

// Transaction type of the chain being set up: legacy on a berlin chain.
let txType = {};

async function deploy(pub, wallet, artifact, args) {
  const hash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args, ...txType });
  return (await pub.waitForTransactionReceipt({ hash })).contractAddress;
}

// Our proxy must answer to the published interface: same selectors as the ABI
// the real x402 client ships.
{
  const selectors = (abi) => abi.filter((f) => f.type === "function").map((f) => toFunctionSelector(f)).sort().join();
  if (selectors(artifacts.proxy.abi) !== selectors(x402ExactPermit2ProxyABI)) {
    throw new Error("X402Permit2Proxy.sol does not match @x402/evm's x402ExactPermit2ProxyABI");
  }
  if (selectors(artifacts.upto.abi) !== selectors(x402UptoPermit2ProxyABI)) {
    throw new Error("X402UptoPermit2Proxy.sol does not match @x402/evm's x402UptoPermit2ProxyABI");
  }
  if (selectors(artifacts.batch.abi) !== selectors(await batchSettlementAbi())) {
    throw new Error("X402BatchSettlement.sol does not match @x402/evm's batchSettlementABI");
  }
}

// The package ships batchSettlementABI in a chunk of its build, not among
// its exports: found by name.
async function batchSettlementAbi() {
  const dist = path.join(here, "node_modules", "@x402", "evm", "dist", "esm");
  for (const f of fs.readdirSync(dist).filter((f) => f.endsWith(".mjs"))) {
    const text = fs.readFileSync(path.join(dist, f), "utf8");
    if (/^\s*batchSettlementABI,?$/m.test(text) && text.includes("var batchSettlementABI")) {
      return (await import(path.join(dist, f))).batchSettlementABI;
    }
  }
  throw new Error("@x402/evm ships no batchSettlementABI");
}

// Deploy creation code, then move the runtime code to `address`.
async function place(pub, wallet, artifact, address) {
  const built = await deploy(pub, wallet, artifact, []);
  const code = await pub.getCode({ address: built });
  await pub.request({ method: "anvil_setCode", params: [address, code] });
}

// Canonical Permit2, our x402 exact- and upto-Permit2 proxies and
// Multicall3, at their canonical addresses.
async function placeCanonical(pub, wallet) {
  await pub.request({ method: "anvil_setCode", params: [PERMIT2_ADDRESS, permit2Code] });
  await place(pub, wallet, artifacts.proxy, PROXY_ADDRESS);
  await place(pub, wallet, artifacts.upto, UPTO_PROXY_ADDRESS);
  await place(pub, wallet, artifacts.batch, BATCH_SETTLEMENT.settlement);
  await place(pub, wallet, artifacts.erc3009Collector, BATCH_SETTLEMENT.erc3009_collector);
  await place(pub, wallet, artifacts.permit2Collector, BATCH_SETTLEMENT.permit2_collector);
  await place(pub, wallet, { abi: [], bytecode: multicall3Creation() }, MULTICALL3_ADDRESS);
}

async function deployAsset(pub, wallet, a) {
  if (a.kind === "fiattoken") return deployFiatToken(pub, wallet, deploy, a, txType);
  return a.kind === "fiat"
    ? deploy(pub, wallet, artifacts.fiat, [a.name, a.version, "USD", a.decimals, Boolean(a.salted), Boolean(a.erc5267)])
    : deploy(pub, wallet, artifacts.tether, ["Tether USD", "USDT", a.decimals, Boolean(a.reset)]);
}

const out = { chains: {}, payers, deployer: deployer.address, permit2: PERMIT2_ADDRESS, permit2_proxy: PROXY_ADDRESS, upto_proxy: UPTO_PROXY_ADDRESS, multicall3: MULTICALL3_ADDRESS, batch_settlement: BATCH_SETTLEMENT };
let port = basePort;
for (const name of chains) {
  const c = name === "tron" ? TRON : CHAINS[name];
  if (!c) throw new Error(`unknown devnet chain ${name}`);
  const rpc = `http://127.0.0.1:${port}`;
  const hardfork = [...(c.legacy ? ["--hardfork", "berlin"] : []), ...(c.extraArgs ?? [])];
  txType = c.legacy ? { type: "legacy" } : {};
  await portFree(port);
  const child = spawn(ANVIL, ["--chain-id", String(c.id), "--port", String(port), "--host", "127.0.0.1", "--silent", "--mnemonic", MNEMONIC, "--state", path.join(dir, `${name}.state.json`), ...hardfork], {
    detached: true,
    stdio: "ignore",
  });
  child.unref();
  started.push(child.pid);
  fs.writeFileSync(path.join(dir, `${name}.pid`), String(child.pid));
  await waitFor(rpc, child);
  const chain = { id: c.id, name, nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpc] } } };
  const pub = createPublicClient({ chain, transport: http(rpc), pollingInterval: 50 });
  const wallet = createWalletClient({ chain, account: deployer, transport: http(rpc) });
  await placeCanonical(pub, wallet);
  const assets = {};
  for (const [key, a] of Object.entries(c.assets)) {
    const address = await deployAsset(pub, wallet, a);
    const million = 1_000_000n * 10n ** BigInt(a.decimals);
    for (const to of [...payers.map((p) => p.address), ...tokens, ...(name === "tron" ? tronTokens : [])]) {
      const h = await wallet.writeContract({ address, abi: artifacts[a.kind].abi, functionName: "mint", args: [to, million], ...txType });
      await pub.waitForTransactionReceipt({ hash: h });
    }
    assets[key] = { address, kind: a.kind, scheme: a.scheme, decimals: a.decimals, name: a.name, version: a.version, salted: Boolean(a.salted), reset: Boolean(a.reset) };
  }
  for (const [alias, of] of Object.entries(c.aliases ?? {})) assets[alias] = { ...assets[of], alias_of: of };
  const uniswap = !swaps ? undefined : name === "tron" ? await deployBridge(pub, wallet, deploy, assets, txType) : await deployUniswap(pub, wallet, deploy, assets, txType);
  for (const a of [...gas, ...(name === "tron" ? tronGas : [])]) {
    await pub.request({ method: "anvil_setBalance", params: [a, `0x${parseEther("1000").toString(16)}`] });
  }
  // DEVNET_BLOCK_TIME=N (benchmarks): once set up (mined at once), the
  // chain mines a block every N seconds, as a real one does.
  const blockTime = Number(process.env.DEVNET_BLOCK_TIME || 0);
  if (blockTime > 0 && name !== "tron") {
    await pub.request({ method: "evm_setAutomine", params: [false] });
    await pub.request({ method: "evm_setIntervalMining", params: [blockTime] });
  }
  out.chains[name] = { chain_id: c.id, rpc, port, pid: child.pid, fee: c.fee, roles: c.roles ?? ["payer", "target"], legacy: Boolean(c.legacy), assets, uniswap, block_time: blockTime || undefined };
  port += 1;
}
if (out.chains.tron) {
  // The TRON node's HTTP API in front of its anvil; addresses in base58check.
  const t = out.chains.tron;
  delete out.chains.tron;
  const b58 = (a) => tronUtils.address.fromHex(`41${a.slice(2)}`);
  const api = `http://127.0.0.1:${port}`;
  const { child } = await startNode({
    dir, name: "tron-api", what: `the TRON node at ${api}`, port,
    script: path.join(here, "nodes", "tron.mjs"), args: ["--port", String(port), "--anvil", t.rpc],
    ready: async () => ((await fetch(`${api}/wallet/getnowblock`, { method: "POST" })).ok ? true : undefined),
  });
  out.tron = {
    ...t,
    http: api,
    anvil: t.rpc,
    api_pid: child.pid,
    assets: Object.fromEntries(Object.entries(t.assets).map(([k, a]) => [k, { ...a, address: b58(a.address), evm_address: a.address }])),
    permit2: b58(PERMIT2_ADDRESS),
    permit2_proxy: b58(PROXY_ADDRESS),
    payers: payers.map((p) => ({ address: b58(p.address), private_key: p.private_key })),
  };
  if (t.uniswap) out.tron.uniswap = { ...t.uniswap, bridge_evm: t.uniswap.bridge, bridge: b58(t.uniswap.bridge) };
  delete out.tron.rpc;
  port += 1;
}
if (solana) {
  const { startSolana } = await import("./solana-up.mjs");
  out.solana = await startSolana({ dir, port, gas: list(arg("sol-gas", "")), tokens: list(arg("sol-tokens", "")), accounts: list(arg("sol-accounts", "")) });
  port += 1;
}
fs.writeFileSync(path.join(dir, "devnet.json"), JSON.stringify(out, null, 2));
if (swaps && Object.values(out.chains).some((c) => c.uniswap)) {
  // The swap provider (LI.FI's API over the pools), reading devnet.json.
  const url = `http://127.0.0.1:${port}`;
  const { child } = await startNode({
    dir, name: "swap", what: `the swap provider at ${url}`, port,
    script: path.join(here, "nodes", "swap.mjs"), args: ["--port", String(port), "--devnet", path.join(dir, "devnet.json")],
    ready: async () => ((await fetch(`${url}/v1/chains`)).ok ? true : undefined),
  });
  out.swap = { url: `${url}/v1`, control: url, pid: child.pid };
  port += 1;
  fs.writeFileSync(path.join(dir, "devnet.json"), JSON.stringify(out, null, 2));
}
if (swaps && out.solana) {
  // Solana's swap provider (Jupiter's API over a pool of the devnet's own).
  const url = `http://127.0.0.1:${port}`;
  const { child, value: pool } = await startNode({
    dir, name: "jupiter", what: `the Solana swap provider at ${url}`, port,
    script: path.join(here, "nodes", "jupiter.mjs"), args: ["--port", String(port), "--rpc", out.solana.rpc],
    ready: async () => {
      const r = await fetch(`${url}/devnet/pool`);
      return r.ok ? await r.json() : undefined;
    },
  });
  out.solana.pool = pool;
  out.jupiter = { url: `${url}/swap/v1`, pid: child.pid };
  port += 1;
  fs.writeFileSync(path.join(dir, "devnet.json"), JSON.stringify(out, null, 2));
}

// A stablerail config for this devnet: every chain payer and target, every
// asset of the devnet live (USDT's gate is on).
let toml = `# Generated by devnet/setup/up.mjs for the local devnet. Do not edit.
[service]
adapters_dir = ${JSON.stringify(adaptersDir)}
cache_dir = ${JSON.stringify(path.join(dir, "cache"))}
pepper_file = ${JSON.stringify(path.join(dir, "pepper"))}
master_key_file = ${JSON.stringify(path.join(dir, "master.key"))}
default_target_chain = ${JSON.stringify(chains.includes("base") ? "base" : chains.find((n) => CHAINS[n] && !CHAINS[n].roles) ?? chains[0])}
# The devnet's metrics on the API's address, for this token (a deployment
# keeps them off it: metrics_listen, or a secret token).
metrics_token = "devnet"
# Probes read the chains at most once a second here (default 5).
probe_cache_seconds = 1

[flags]
USDT_ENABLED = true

[fees]
platform_fee_percentage = "0.3"

[limits]
requests_per_minute = 100000

# Webhook receivers on this machine (a deployment refuses both).
[webhooks]
allow_private_networks = true
allow_plain_http_loopback = true
${out.swap || out.jupiter ? `\n[swap]\nlifi_url = "${out.swap?.url ?? "http://127.0.0.1:9/v1"}"\n${out.jupiter ? `jupiter_url = "${out.jupiter.url}"\n` : ""}track_interval_ms = 300\ntimeout_ms = 3000\n` : ""}
[adapters]
eip3009 = "eip3009.wasm"
permit2 = "permit2.wasm"
`;
// The dashboard, its codes sent to the devnet's SMTP sink (devnet/mail/sink.mjs).
const mailPort = arg("mail-port", "");
if (mailPort) {
  toml += `
[dashboard]
enabled = true
signup = "open"
smtp_url = "smtp://127.0.0.1:${mailPort}"
from = "stablerail devnet <dashboard@stablerail.localhost>"
`;
}
for (const [name, c] of Object.entries(out.chains)) {
  toml += `
[chains.${name}]
family = "evm"
chain_id = ${c.chain_id}
roles = ${JSON.stringify(c.roles)}
rpc_urls = [${JSON.stringify(c.rpc)}]
explorer_tx_url = "${c.rpc}/tx/{tx}"
fee = "${c.fee}"
`;
  if (c.legacy) toml += `transaction_type = "legacy"\n`;
  // What a hosted wallet may call and approve when it swaps: the devnet's router and bridge.
  if (c.uniswap) toml += `swap_contracts = ${JSON.stringify([c.uniswap.router, c.uniswap.bridge])}\n`;
  for (const [key, a] of Object.entries(c.assets)) {
    toml += `
[chains.${name}.assets.${key}]
state = "live"
scheme = "${a.scheme}"
token = "${a.address}"
decimals = ${a.decimals}
`;
    if (a.kind !== "tether") toml += `eip712_name = ${JSON.stringify(a.name)}\neip712_version = "${a.version}"\n`;
    toml += `domain = "${a.kind === "tether" ? "none" : a.salted ? "salted" : "standard"}"\n`;
    if (a.reset) toml += `params = { reset-allowance-first = "true" }\n`;
  }
  if (batchSettlement) {
    for (const key of ["usdc", "usdt"].filter((k) => c.assets[k])) {
      toml += `
[chains.${name}.assets.${key}-batch]
alias_of = "${key}"
scheme = "batch-settlement"
x402_scheme = "batch-settlement"
`;
    }
  }
}
if (batchSettlement) {
  toml = toml.replace(`permit2 = "permit2.wasm"\n`, `permit2 = "permit2.wasm"\nbatch-settlement = "batch_settlement.wasm"\n`);
}
if (out.tron) {
  // TRON pays and is paid: payers sign Permit2 witness transfers, host-held
  // wallets (the proxy, agents) send plain TRC-20 transfers.
  const t = out.tron;
  toml = toml.replace(`permit2 = "permit2.wasm"\n`, `permit2 = "permit2.wasm"\ntron-permit2 = "tron_permit2.wasm"\n`).replace("[flags]\n", "[flags]\nTRON_ENABLED = true\n");
  toml += `
[chains.tron]
family = "tron"
gate = "TRON_ENABLED"
chain_id = ${t.chain_id}
caip2 = "tron:0x${t.chain_id.toString(16)}"
roles = ["payer", "target"]
rpc_urls = [${JSON.stringify(t.http)}]
explorer_tx_url = "${t.http}/wallet/gettransactionbyid?value={tx}"
native_asset = "trx"
fee = "${t.fee}"
`;
  if (t.uniswap) toml += `swap_contracts = ${JSON.stringify([t.uniswap.bridge])}\n`;
  for (const [key, a] of Object.entries(t.assets)) {
    toml += `
[chains.tron.assets.${key}]
state = "gated"
flag = "TRON_ENABLED"
scheme = "tron-permit2"
token = "${a.address}"
decimals = ${a.decimals}
params = { permit2-address = "${t.permit2}", proxy-address = "${t.permit2_proxy}" }
`;
  }
}
if (out.solana) {
  const s = out.solana;
  toml = toml.replace(`permit2 = "permit2.wasm"\n`, `permit2 = "permit2.wasm"\nsolana-spl = "solana_spl.wasm"\n`);
  toml += `
[chains.solana]
family = "solana"
caip2 = "${s.caip2}"
roles = ["payer", "target"]
rpc_urls = [${JSON.stringify(s.rpc)}]
explorer_tx_url = "https://explorer.solana.com/tx/{tx}?cluster=custom&customUrl=${encodeURIComponent(s.rpc)}"
native_asset = "sol"
fee = "0.01"
`;
  for (const [key, a] of Object.entries(s.assets)) {
    toml += `
[chains.solana.assets.${key}]
state = "live"
scheme = "solana-spl"
token = "${a.address}"
decimals = ${a.decimals}
`;
  }
}
// Always present (scripts add their settings under the header, never a
// second one), the facilitator's own receiver authorizer with batch-settlement.
toml += `
[facilitator]
${batchSettlement ? "receiver_authorizer = true\n" : ""}`;
fs.writeFileSync(path.join(dir, "chains.toml"), toml);
console.log(JSON.stringify(out));
