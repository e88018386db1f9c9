// The abuse load of scripts/bench.sh abuse, against a running service behind a
// trusted proxy (the generator writes X-Forwarded-For as that proxy would):
//   1. a legit client creates intents at a steady pace, alone: its latencies;
//   2. the same, while a flooder posts creates as fast as it can from
//      10,000 rotating IPv6 /64s (of one /48) and a holder keeps 1,000
//      connections that
//      dribble their headers and never finish them (reconnecting when cut);
//   3. the service's RSS is sampled throughout.
// Prints one JSON object: each phase's p50/p99 (ms), the p99 ratio, the
// flood's answers by status, and RSS (KiB) before, peak and after.
//
//   node abuse.mjs --url http://127.0.0.1:P --pid PID [--legit 200] [--seconds 30]
import http from "node:http";
import net from "node:net";
import fs from "node:fs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const url = new URL(arg("url"));
const pid = Number(arg("pid"));
const legitCount = Number(arg("legit", "200"));
const floodSeconds = Number(arg("seconds", "30"));
const body = JSON.stringify({ recipient: "0x000000000000000000000000000000000000bEEF", amount: "1", payer_chain: "base", target_chain: "base" });

const rss = () => {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)[1]);
  } catch {
    return 0;
  }
};

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 });
function post(xff, agent = keepAlive) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const req = http.request(
      { host: url.hostname, port: url.port, path: "/api/intents", method: "POST", agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), "x-forwarded-for": xff } },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
      },
    );
    req.on("error", () => resolve({ status: 0, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
    req.end(body);
  });
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : null;
};

// The legit client: one create every 120 ms (under its 600/min budget).
async function legit(n) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const ms = [];
  const statuses = {};
  for (let i = 0; i < n; i++) {
    const r = await post("198.51.100.7", agent);
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    if (r.status === 201) ms.push(r.ms);
    await new Promise((ok) => setTimeout(ok, 120));
  }
  return { p50: pct(ms, 50), p99: pct(ms, 99), statuses };
}

// The flooder: 64 at a time, each from the next of 10,000 /64s of one
// /48 (what one customer of a host is given).
async function flood(until, answers) {
  let i = 0;
  const worker = async () => {
    while (Date.now() < until) {
      const n = i++ % 10000;
      const r = await post(`2001:db8:1:${n.toString(16)}::${(i % 65535).toString(16)}`);
      answers[r.status] = (answers[r.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
}

// The holder: 1,000 sockets that send a header byte now and then and never
// end their headers; each one the service closes is opened again.
function hold(until, counts) {
  const open = () => {
    if (Date.now() >= until) return;
    const s = net.connect({ host: url.hostname, port: Number(url.port) });
    let timer;
    s.on("connect", () => {
      counts.opened++;
      s.write("POST /api/intents HTTP/1.1\r\nHost: stablerail\r\nX-Slow: ");
      timer = setInterval(() => s.write("a"), 1000);
    });
    s.on("error", () => {});
    s.on("close", () => {
      clearInterval(timer);
      counts.closed++;
      setTimeout(open, 100);
    });
    setTimeout(() => s.destroy(), until - Date.now());
  };
  for (let k = 0; k < 1000; k++) open();
}

const rssStart = rss();
const alone = await legit(legitCount);
let peak = rss();
const sampler = setInterval(() => (peak = Math.max(peak, rss())), 250);
const until = Date.now() + floodSeconds * 1000;
const answers = {};
const held = { opened: 0, closed: 0 };
hold(until, held);
const [loaded] = await Promise.all([legit(legitCount), flood(until, answers)]);
clearInterval(sampler);
await new Promise((ok) => setTimeout(ok, 2000));
console.log(
  JSON.stringify({
    legit_alone: alone,
    legit_loaded: loaded,
    p99_ratio: loaded.p99 && alone.p99 ? +(loaded.p99 / alone.p99).toFixed(2) : null,
    flood: answers,
    slow_connections: held,
    rss_kib: { start: rssStart, peak, end: rss() },
  }),
);
process.exit(0);
