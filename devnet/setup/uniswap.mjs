// Uniswap V2 on a devnet chain, from the bytecode npm's @uniswap/v2-core and
// @uniswap/v2-periphery ship: WETH9, the factory, Router02, and pools seeded
// by the deployer: USDC/USDT (1,000,000 each side) where the chain has both,
// and USDC/WETH (2,000,000 USDC against 1,000 ETH). Beside them, the devnet's
// bridge (contracts/DevBridge.sol); the deployer's remaining 1,000,000 USDC
// is the liquidity the swap provider releases on destination chains. TRON
// gets the bridge alone (`deployBridge`): LI.FI routes out of and into TRON
// are cross-chain only.
import fs from "node:fs";
import path from "node:path";
import { keccak256, maxUint256 } from "viem";
import { compile } from "./compile.mjs";

// The devnet folder (this file is in one of its role folders).
const here = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
const artifact = (pkg, name) => {
  const a = JSON.parse(fs.readFileSync(path.join(here, "node_modules", pkg, "build", `${name}.json`), "utf8"));
  const bytecode = a.bytecode ?? a.evm?.bytecode?.object;
  return { abi: a.abi, bytecode: bytecode.startsWith("0x") ? bytecode : `0x${bytecode}` };
};
export const factoryArtifact = artifact("@uniswap/v2-core", "UniswapV2Factory");
export const pairArtifact = artifact("@uniswap/v2-core", "UniswapV2Pair");
export const routerArtifact = artifact("@uniswap/v2-periphery", "UniswapV2Router02");
export const wethArtifact = artifact("@uniswap/v2-periphery", "WETH9");

// Router02 finds pairs by CREATE2 with this init code hash baked in; the
// v2-core pair bytecode must hash to it, or every route would miss its pool.
const INIT_CODE_HASH = "96e8ac4277198ff8b6f785478aa9a39f403cb768dd02cbee326c3e7da348845f";
if (keccak256(pairArtifact.bytecode).slice(2) !== INIT_CODE_HASH || !routerArtifact.bytecode.includes(INIT_CODE_HASH)) {
  throw new Error("@uniswap/v2-core's pair bytecode does not match the init code hash in @uniswap/v2-periphery's router");
}

const erc20 = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "value", type: "uint256" }], outputs: [] },
  { type: "function", name: "approve", stateMutability: "nonpayable", inputs: [{ name: "spender", type: "address" }, { name: "value", type: "uint256" }], outputs: [{ type: "bool" }] },
];

export const bridgeArtifact = compile("DevBridge");

/// Deploy and seed; returns {weth, factory, router, bridge, pools: [[a, b], …]}.
export async function deployUniswap(pub, wallet, deploy, assets, txType) {
  const me = wallet.account.address;
  const send = async (req) => pub.waitForTransactionReceipt({ hash: await wallet.writeContract({ ...req, ...txType }) });
  const weth = await deploy(pub, wallet, wethArtifact, []);
  const factory = await deploy(pub, wallet, factoryArtifact, [me]);
  const router = await deploy(pub, wallet, routerArtifact, [factory, weth]);
  const bridge = await deploy(pub, wallet, bridgeArtifact, []);
  const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600);
  const usdc = assets.usdc;
  const usdt = assets.usdt ?? assets.usdt0;
  const units = (a, n) => BigInt(n) * 10n ** BigInt(a.decimals);
  const pools = [];
  for (const [a, amount] of [[usdc, 4_000_000], [usdt, 2_000_000]]) {
    if (!a) continue;
    await send({ address: a.address, abi: erc20, functionName: "mint", args: [me, units(a, amount)] });
    await send({ address: a.address, abi: erc20, functionName: "approve", args: [router, maxUint256] });
  }
  if (usdc && usdt) {
    await send({ address: router, abi: routerArtifact.abi, functionName: "addLiquidity", args: [usdc.address, usdt.address, units(usdc, 1_000_000), units(usdt, 1_000_000), 0n, 0n, me, deadline] });
    pools.push([usdc.address, usdt.address]);
  }
  if (usdc) {
    await send({ address: router, abi: routerArtifact.abi, functionName: "addLiquidityETH", args: [usdc.address, units(usdc, 2_000_000), 0n, 0n, me, deadline], value: 1000n * 10n ** 18n });
    pools.push([usdc.address, weth]);
  }
  return { weth, factory, router, bridge, pools };
}

/// The bridge alone, and 1,000,000 of each asset for the deployer to
/// release on this chain; returns {bridge, pools: []}.
export async function deployBridge(pub, wallet, deploy, assets, txType) {
  const me = wallet.account.address;
  for (const a of Object.values(assets)) {
    if (a.alias_of) continue;
    const hash = await wallet.writeContract({ address: a.address, abi: erc20, functionName: "mint", args: [me, 1_000_000n * 10n ** BigInt(a.decimals)], ...txType });
    await pub.waitForTransactionReceipt({ hash });
  }
  return { bridge: await deploy(pub, wallet, bridgeArtifact, []), pools: [] };
}
