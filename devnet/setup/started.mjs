// Starting one of the devnet's own Node services (the TRON API, the swap
// providers, the Solana node) and waiting until it answers. The wait is
// bounded by time, not by tries: a loaded machine (the test suite runs eight
// devnets on two cores) can take many seconds to load a service's modules.
// A service that dies says so at once, with the end of its own log.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

const SECONDS = Number(process.env.DEVNET_START_SECONDS || 120);

/// Every process this run started. A run that fails stops them all: a
/// devnet left half-started keeps its ports, and the next run on them
/// would talk to these (CI once did, to a leaked anvil whose deployer an
/// earlier run had spent).
export const started = [];
process.on("exit", (code) => {
  if (code === 0) return;
  for (const pid of started) {
    try {
      process.kill(pid);
    } catch {}
  }
});

/// Refuse a port something already answers on: a devnet must never use
/// another's node (or a leaked one) as its own.
export async function portFree(port) {
  const taken = await new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
  if (taken) throw new Error(`port ${port} is taken by another process; stop it (or another devnet) first`);
}

/// Spawn `node script args…` detached, its output in `<dir>/<name>.log` and
/// its pid in `<dir>/<name>.pid`; resolve once `ready()` returns a value
/// other than undefined (a thrown error or a refused connection is "not
/// yet"), and return that value with the child.
export async function startNode({ dir, name, script, args, what, ready, port }) {
  if (port) await portFree(port);
  const log = path.join(dir, `${name}.log`);
  const out = fs.openSync(log, "a");
  // `--devnet-dir` (read by no service) puts the folder in the process's
  // command line: down.mjs stops only processes that name it.
  const child = spawn(process.execPath, [script, ...args, "--devnet-dir", dir], { detached: true, stdio: ["ignore", out, out] });
  fs.closeSync(out);
  child.unref();
  started.push(child.pid);
  fs.writeFileSync(path.join(dir, `${name}.pid`), String(child.pid));
  let exited = null;
  child.on("exit", (code, signal) => (exited = signal ?? code));
  const deadline = Date.now() + SECONDS * 1000;
  let last = "no answer yet";
  for (;;) {
    if (exited !== null) throw new Error(`${what} exited (${exited}) before it answered; the end of ${log}:\n${tail(log)}`);
    try {
      const value = await ready();
      if (value !== undefined) return { child, value };
    } catch (e) {
      last = e.cause?.code ?? e.message;
    }
    if (Date.now() > deadline) throw new Error(`${what} did not answer in ${SECONDS} s (${last}); the end of ${log}:\n${tail(log)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function tail(file) {
  try {
    return fs.readFileSync(file, "utf8").split("\n").slice(-20).join("\n");
  } catch {
    return "(no log)";
  }
}
