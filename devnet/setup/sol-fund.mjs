// Give `--owner` a token account for `--mint` holding `--amount` base units
// (the devnet holds the mints' authority), and `--sol` lamports if given.
//
//   node sol-fund.mjs --rpc URL --owner ADDRESS --mint MINT --amount N [--sol LAMPORTS]
import { putTokenAccount } from "./solana-up.mjs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const rpc = arg("rpc");
const ata = await putTokenAccount(rpc, arg("mint"), arg("owner"), arg("amount", "0"));
if (arg("sol")) {
  await fetch(rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "requestAirdrop", params: [arg("owner"), Number(arg("sol"))] }) });
}
console.log(JSON.stringify({ account: ata }));
