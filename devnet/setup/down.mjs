// Stop the anvils that up.mjs started in DIR.
import fs from "node:fs";
import path from "node:path";

const i = process.argv.indexOf("--dir");
const dir = path.resolve(i > 0 ? process.argv[i + 1] : path.join(path.dirname(new URL(import.meta.url).pathname), "..", "..", ".stablerail", "devnet"));
for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
  if (!f.endsWith(".pid")) continue;
  const pid = Number(fs.readFileSync(path.join(dir, f), "utf8"));
  try {
    process.kill(pid, "SIGTERM");
    console.log(`stopped ${f.replace(".pid", "")} (${pid})`);
  } catch {}
  fs.rmSync(path.join(dir, f));
}
