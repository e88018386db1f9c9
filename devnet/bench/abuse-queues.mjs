// The shared queues' part of scripts/bench.sh abuse (issue 69), against a
// running service behind a trusted proxy (the generator writes
// X-Forwarded-For as that proxy would):
//   webhooks: a legit agent's endpoint (a receiver here) gets the event of
//     each intent it creates, one every 200 ms: the latency from the
//     event's created_at to its arrival, alone, then while stranger agents'
//     ten endpoints each point at a server here that takes requests and
//     never answers, after each stranger created 40 intents at once (400
//     deliveries there), and one a second after that (the attack);
//   streams: a legit client opens an intent's event stream and waits for
//     its first event, one after another, alone, then while a flooder opens
//     and holds as many streams as it can from one address and from 10,000
//     /64s of one /48.
// Prints one JSON object: each phase's p50/p99 (ms) and the p99 ratio, and
// what the floods were answered.
//
//   node abuse-queues.mjs --url http://127.0.0.1:P --legit BEARER --strangers B1,B2 [--n 50] [--seconds 20]
import http from "node:http";
import net from "node:net";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const url = new URL(arg("url"));
const legitBearer = arg("legit");
const strangers = arg("strangers").split(",");
const n = Number(arg("n", "50"));
const floodSeconds = Number(arg("seconds", "20"));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? +s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(1) : null;
};
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function request(method, path, { body, headers = {}, keep = false } = {}) {
  return new Promise((resolve) => {
    const data = body ? JSON.stringify(body) : undefined;
    const req = http.request(
      { host: url.hostname, port: url.port, path, method, agent: keep ? false : agent,
        headers: { ...(data ? { "content-type": "application/json", "content-length": Buffer.byteLength(data) } : {}), ...headers } },
      (res) => {
        if (keep) return resolve({ status: res.statusCode, res, req });
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          let json = null;
          try { json = JSON.parse(Buffer.concat(chunks).toString()); } catch {}
          resolve({ status: res.statusCode, json });
        });
      },
    );
    req.on("error", () => resolve({ status: 0 }));
    req.end(data);
  });
}

const intentBody = { recipient: "0x000000000000000000000000000000000000bEEF", amount: "1", payer_chain: "base" };
const create = (bearer) => request("POST", "/v2/intents", { body: intentBody, headers: { authorization: `Bearer ${bearer}` } });

// --- webhooks ---------------------------------------------------------------
const arrivals = new Map(); // intent id -> latency ms
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    try {
      const e = JSON.parse(Buffer.concat(chunks).toString());
      const id = e.data?.intent_id;
      if (id && !arrivals.has(id)) arrivals.set(id, Date.now() - Date.parse(e.created_at));
    } catch {}
    res.writeHead(204).end();
  });
});
await new Promise((ok) => receiver.listen(0, "127.0.0.1", ok));
const held = [];
const hole = net.createServer((s) => held.push(s)); // takes requests, never answers
await new Promise((ok) => hole.listen(0, "127.0.0.1", ok));

const made = await request("POST", "/v2/webhook_endpoints", {
  body: { url: `http://127.0.0.1:${receiver.address().port}/legit` },
  headers: { authorization: `Bearer ${legitBearer}` },
});
if (made.status !== 201) throw new Error(`legit endpoint: ${made.status} ${JSON.stringify(made.json)}`);

async function legitWebhooks() {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const r = await create(legitBearer);
    if (r.status === 201) ids.push(r.json.intent_id);
    await sleep(200);
  }
  const until = Date.now() + 30_000;
  while (ids.some((id) => !arrivals.has(id)) && Date.now() < until) await sleep(100);
  const ms = ids.filter((id) => arrivals.has(id)).map((id) => arrivals.get(id));
  return { p50: pct(ms, 50), p99: pct(ms, 99), delivered: ms.length, of: ids.length };
}

const webhooksAlone = await legitWebhooks();
for (const bearer of strangers) {
  for (let k = 0; k < 10; k++) {
    const r = await request("POST", "/v2/webhook_endpoints", {
      body: { url: `http://127.0.0.1:${hole.address().port}/${k}` },
      headers: { authorization: `Bearer ${bearer}` },
    });
    if (r.status !== 201) throw new Error(`stranger endpoint: ${r.status} ${JSON.stringify(r.json)}`);
  }
}
// The attack: each stranger creates 40 intents at once (400
// deliveries to a server that never answers), then keeps creating one a
// second while the legit agent is measured.
const floodAnswers = {};
const strangerCreate = async (bearer) => {
  const r = await create(bearer);
  floodAnswers[r.status] = (floodAnswers[r.status] ?? 0) + 1;
};
await Promise.all(strangers.flatMap((bearer) => Array.from({ length: 40 }, () => strangerCreate(bearer))));
let flooding = true;
const strangerFlood = Promise.all(
  strangers.map(async (bearer) => {
    while (flooding) {
      await strangerCreate(bearer);
      await sleep(1000);
    }
  }),
);
await sleep(3000); // the strangers' deliveries are in the slots first
const webhooksLoaded = await legitWebhooks();
flooding = false;
await strangerFlood;

// --- streams ----------------------------------------------------------------
const target = await request("POST", "/api/intents", { body: { ...intentBody, target_chain: "base" }, headers: { "x-forwarded-for": "198.51.100.7" } });
const streamPath = `/api/intents/${target.json.intent_id}/events`;
async function legitStreams() {
  const ms = [];
  const statuses = {};
  for (let i = 0; i < n; i++) {
    const started = process.hrtime.bigint();
    const r = await request("GET", streamPath, { headers: { "x-forwarded-for": "198.51.100.7" }, keep: true });
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    if (r.status === 200) {
      await new Promise((ok) => r.res.once("data", ok));
      ms.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    r.req?.destroy();
    await sleep(50);
  }
  return { p50: pct(ms, 50), p99: pct(ms, 99), statuses };
}
const streamsAlone = await legitStreams();
const streamAnswers = {};
const open = [];
const until = Date.now() + floodSeconds * 1000;
const streamFlood = Promise.all(
  Array.from({ length: 32 }, async (_, w) => {
    let i = w;
    while (Date.now() < until) {
      const xff = i % 2 ? "203.0.113.9" : `2001:db8:1:${(i % 10000).toString(16)}::1`;
      const r = await request("GET", streamPath, { headers: { "x-forwarded-for": xff }, keep: true });
      streamAnswers[r.status] = (streamAnswers[r.status] ?? 0) + 1;
      if (r.status === 200) open.push(r.req);
      else r.req?.destroy();
      i += 32;
    }
  }),
);
await sleep(2000);
const streamsLoaded = await legitStreams();
await streamFlood;
for (const r of open) r.destroy();

const ratio = (a, b) => (a.p99 && b.p99 ? +(b.p99 / a.p99).toFixed(2) : null);
console.log(
  JSON.stringify({
    webhooks: { alone: webhooksAlone, loaded: webhooksLoaded, p99_ratio: ratio(webhooksAlone, webhooksLoaded), stranger_creates: floodAnswers, held_sockets: held.length },
    streams: { alone: streamsAlone, loaded: streamsLoaded, p99_ratio: ratio(streamsAlone, streamsLoaded), flood: streamAnswers, held_open: open.length },
  }),
);
process.exit(0);
