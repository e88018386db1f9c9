// Compile a contract of contracts/ with the npm solc, caching artifacts by the sources' hash.
// Target: the berlin EVM (no PUSH0, no MCOPY), so the same bytecode runs on
// every devnet chain, skale-base's berlin chain included.
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// The devnet folder (this file is in one of its role folders).
const here = path.join(path.dirname(new URL(import.meta.url).pathname), "..");

const EVM_VERSION = "berlin";

/// Contract `name` of `contracts/<file>.sol` (by default the file of its name).
export function compile(name, file = name) {
  // Every contract source goes in, so imports between them resolve.
  const dir = path.join(here, "setup", "contracts");
  const sources = {};
  const hasher = crypto.createHash("sha256");
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".sol")).sort()) {
    const content = fs.readFileSync(path.join(dir, f), "utf8");
    sources[f] = { content };
    hasher.update(f).update(content);
  }
  hasher.update(`evm:${EVM_VERSION}`);
  const hash = hasher.digest("hex").slice(0, 16);
  const cache = path.join(here, "build", `${file === name ? name : `${file}.${name}`}-${hash}.json`);
  if (fs.existsSync(cache)) return JSON.parse(fs.readFileSync(cache, "utf8"));
  const solc = require("solc");
  const input = {
    language: "Solidity",
    sources,
    settings: { evmVersion: EVM_VERSION, optimizer: { enabled: true, runs: 200 }, outputSelection: { [`${file}.sol`]: { [name]: ["abi", "evm.bytecode.object"] } } },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (out.errors || []).filter((e) => e.severity === "error");
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const c = out.contracts[`${file}.sol`][name];
  const artifact = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  fs.mkdirSync(path.dirname(cache), { recursive: true });
  // Written whole, then renamed: devnets starting side by side on a fresh
  // clone read the cache while another writes it (CI once read half a file).
  const partial = `${cache}.${process.pid}.tmp`;
  fs.writeFileSync(partial, JSON.stringify(artifact));
  fs.renameSync(partial, cache);
  return artifact;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const a = compile(process.argv[2] || "DevUSD");
  console.log(`compiled: ${a.bytecode.length / 2 - 1} bytes`);
}
