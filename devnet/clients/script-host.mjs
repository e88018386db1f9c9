// The suite's devnet scripts in one Node process (tests/common/devnet.rs):
// one JSON line per call on stdin, {id, script, args, input}; one per answer
// on stdout, {id, output} or {id, error}. Calls run side by side. The scripts
// are the same files the commands run (see command.mjs).
import readline from "node:readline";

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", async (line) => {
  const { id, script, args, input } = JSON.parse(line);
  let answer;
  try {
    if (!/^[a-z0-9-]+\.mjs$/.test(script)) throw new Error(`not a devnet script: ${script}`);
    const { main } = await import(new URL(script, import.meta.url));
    if (typeof main !== "function") throw new Error(`${script} has no main`);
    answer = { id, output: await main(args, input) };
  } catch (e) {
    answer = { id, error: String(e?.stack ?? e) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
});
