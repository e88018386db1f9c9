// A devnet script as a function, `main(args, stdin text) → stdout text`, so
// the suite can call it inside one long-lived Node (script-host.mjs) rather
// than paying Node's start and the clients' imports on every call. Run as a
// command (`node pay.mjs …`), the script reads stdin and prints as before.
import fs from "node:fs";
import { pathToFileURL } from "node:url";

export async function command(moduleUrl, main) {
  const invoked = process.argv[1] && pathToFileURL(fs.realpathSync(process.argv[1])).href;
  if (invoked !== moduleUrl) return;
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  process.stdout.write(await main(process.argv.slice(2), Buffer.concat(chunks).toString("utf8")));
}
