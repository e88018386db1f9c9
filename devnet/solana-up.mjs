// The devnet's Solana cluster: starts solana.mjs, places a USDC-like mint (6
// decimals) and each payer's associated token account holding 1,000,000
// tokens, funds `gas` wallets with SOL and gives `tokens` wallets token
// accounts with the same holding. Payers are deterministic ed25519 keys.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createKeyPairSignerFromPrivateKeyBytes, none, some } from "@solana/kit";
import { AccountState, findAssociatedTokenPda, getMintEncoder, getTokenEncoder, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";

const here = path.dirname(new URL(import.meta.url).pathname);
const DECIMALS = 6;
const HOLDING = 1_000_000n * 10n ** BigInt(DECIMALS);

async function call(rpc, method, params = []) {
  const r = await (await fetch(rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json();
  if (r.error) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result;
}

const seed = (label) => crypto.createHash("sha256").update(`stablerail devnet solana ${label}`).digest();

export async function startSolana({ dir, port, gas = [], tokens = [], payers = 4 }) {
  const rpc = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [path.join(here, "solana.mjs"), "--port", String(port)], { detached: true, stdio: "ignore" });
  child.unref();
  fs.writeFileSync(path.join(dir, "solana.pid"), String(child.pid));
  for (let i = 0; ; i++) {
    try {
      if ((await call(rpc, "getHealth")) === "ok") break;
    } catch (e) {
      if (i > 200) throw new Error(`the Solana node at ${rpc} did not start: ${e.message}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const genesis = await call(rpc, "getGenesisHash");
  const mint = (await createKeyPairSignerFromPrivateKeyBytes(seed("usdc mint"))).address;
  const authority = (await createKeyPairSignerFromPrivateKeyBytes(seed("usdc authority"))).address;
  const rent = async (len) => call(rpc, "getMinimumBalanceForRentExemption", [len]);
  const put = async (address, data) => {
    const lamports = await rent(data.length);
    await call(rpc, "devnet_setAccount", [address, { lamports, owner: TOKEN_PROGRAM_ADDRESS, data: Buffer.from(data).toString("base64") }]);
  };
  const holders = [];
  const accounts = [];
  for (let i = 0; i < payers; i++) {
    const s = seed(`payer ${i}`);
    const signer = await createKeyPairSignerFromPrivateKeyBytes(s);
    accounts.push({ address: signer.address, seed: s.toString("hex") });
  }
  holders.push(...accounts.map((a) => a.address), ...tokens);
  await put(mint, getMintEncoder().encode({ mintAuthority: some(authority), supply: HOLDING * BigInt(holders.length), decimals: DECIMALS, isInitialized: true, freezeAuthority: none() }));
  for (const owner of holders) {
    const [ata] = await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
    await put(ata, getTokenEncoder().encode({ mint, owner, amount: HOLDING, delegate: none(), state: AccountState.Initialized, isNative: none(), delegatedAmount: 0n, closeAuthority: none() }));
  }
  for (const a of [...accounts.map((a) => a.address), ...gas]) await call(rpc, "requestAirdrop", [a, 100_000_000_000]);
  return {
    rpc,
    port,
    pid: child.pid,
    genesis,
    caip2: `solana:${genesis.slice(0, 32)}`,
    payers: accounts,
    assets: { usdc: { address: mint, decimals: DECIMALS } },
  };
}
