// The devnet's Solana cluster: starts solana.mjs and places USDC and USDT
// mints (6 decimals, the Token program) at their mainnet addresses, so that
// a config keeps real values. Each payer's associated token accounts hold
// 1,000,000 of each; `gas` wallets get SOL, `tokens` wallets the same token
// holdings, `accounts` wallets empty token accounts (a collection wallet
// must have one to be paid). Payers are deterministic ed25519 keys.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { createKeyPairSignerFromPrivateKeyBytes, none, some } from "@solana/kit";
import { startNode } from "./started.mjs";
import { AccountState, findAssociatedTokenPda, getMintEncoder, getTokenEncoder, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";

// The devnet folder (this file is in one of its role folders).
const here = path.join(path.dirname(new URL(import.meta.url).pathname), "..");
const DECIMALS = 6;
const HOLDING = 1_000_000n * 10n ** BigInt(DECIMALS);

async function call(rpc, method, params = []) {
  const r = await (await fetch(rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json();
  if (r.error) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result;
}

/// Write `owner`'s associated token account for `mint` holding `amount`
/// (devnet_setAccount, rent-exempt, Token program).
export async function putTokenAccount(rpc, mint, owner, amount) {
  const [ata] = await findAssociatedTokenPda({ owner, mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
  const data = getTokenEncoder().encode({ mint, owner, amount: BigInt(amount), delegate: none(), state: AccountState.Initialized, isNative: none(), delegatedAmount: 0n, closeAuthority: none() });
  const lamports = await call(rpc, "getMinimumBalanceForRentExemption", [data.length]);
  await call(rpc, "devnet_setAccount", [ata, { lamports, owner: TOKEN_PROGRAM_ADDRESS, data: Buffer.from(data).toString("base64") }]);
  return ata;
}

const seed = (label) => crypto.createHash("sha256").update(`stablerail devnet solana ${label}`).digest();

// Mainnet mints; the devnet holds their authority.
export const MINTS = { usdc: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", usdt: "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB" };

export async function startSolana({ dir, port, gas = [], tokens = [], accounts: empty = [], payers = 4 }) {
  const rpc = `http://127.0.0.1:${port}`;
  const { child } = await startNode({
    dir, name: "solana", what: `the Solana node at ${rpc}`, port,
    script: path.join(here, "nodes", "solana.mjs"), args: ["--port", String(port)],
    ready: async () => ((await call(rpc, "getHealth")) === "ok" ? true : undefined),
  });
  const genesis = await call(rpc, "getGenesisHash");
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
  for (const mint of Object.values(MINTS)) {
    await put(mint, getMintEncoder().encode({ mintAuthority: some(authority), supply: HOLDING * BigInt(holders.length), decimals: DECIMALS, isInitialized: true, freezeAuthority: none() }));
    const owners = [...holders.map((o) => [o, HOLDING]), ...empty.map((o) => [o, 0n])];
    for (const [owner, amount] of owners) await putTokenAccount(rpc, mint, owner, amount);
  }
  for (const a of [...accounts.map((a) => a.address), ...gas]) await call(rpc, "requestAirdrop", [a, 100_000_000_000]);
  return {
    rpc,
    port,
    pid: child.pid,
    genesis,
    caip2: `solana:${genesis.slice(0, 32)}`,
    payers: accounts,
    assets: Object.fromEntries(Object.entries(MINTS).map(([k, address]) => [k, { address, decimals: DECIMALS }])),
  };
}
