// Stop the processes that up.mjs (and the tests) started for the devnet in
// DIR: each `<name>.pid`, if that process still names DIR on its command
// line. A pid file can outlive its process (a test killed it), and Linux
// hands pids out again (pid_max is often 32768): without the check, a
// stale file stopped whatever process had its number now, such as another
// test's server.
import fs from "node:fs";
import path from "node:path";

const i = process.argv.indexOf("--dir");
const dir = path.resolve(i > 0 ? process.argv[i + 1] : path.join(path.dirname(new URL(import.meta.url).pathname), "..", "..", ".stablerail", "devnet"));
const stopping = [];
for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
  if (!f.endsWith(".pid")) continue;
  const pid = Number(fs.readFileSync(path.join(dir, f), "utf8"));
  if (!ours(pid)) {
    fs.rmSync(path.join(dir, f));
    continue;
  }
  try {
    process.kill(pid, "SIGTERM");
    stopping.push([f.replace(".pid", ""), pid]);
  } catch {}
  fs.rmSync(path.join(dir, f));
}
// Stopped means gone: anvil writes its state file as it exits, and a caller
// that removes the folder next must not race it. SIGKILL after 10 s.
const deadline = Date.now() + 10_000;
for (const [name, pid] of stopping) {
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  if (alive(pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  console.log(`stopped ${name} (${pid})`);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (exited, not yet reaped by its parent) counts as gone.
  try {
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

function ours(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir);
  } catch (e) {
    // No such process, or no /proc (not Linux): gone, or ask the OS.
    return e.code !== "ENOENT" || !fs.existsSync("/proc/self/cmdline");
  }
}
