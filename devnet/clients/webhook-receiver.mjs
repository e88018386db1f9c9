// A webhook receiver that checks every delivery with the published
// `standardwebhooks` library, unchanged. Each request is verified against
// every secret in SECRETS (a JSON array, re-read per request so a test can
// add a rotated secret); one JSON line per request goes to OUT:
// {id, type, status, version, subject, created_at (the event's), verified:
// [index of each secret that verifies], at}. Answers 204 when some secret verifies, else 400.
//
//   node webhook-receiver.mjs --port P --secrets FILE --out FILE [--delay-ms N]
// With --delay-ms, each answer is held that long after the request is logged.
import fs from "node:fs";
import http from "node:http";
import { Webhook } from "standardwebhooks";

const arg = (n) => (process.argv.includes(`--${n}`) ? process.argv[process.argv.indexOf(`--${n}`) + 1] : undefined);
const port = Number(arg("port"));
const secretsFile = arg("secrets");
const out = arg("out");
const delay = Number(arg("delay-ms") ?? 0);

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const secrets = fs.existsSync(secretsFile) ? JSON.parse(fs.readFileSync(secretsFile, "utf8")) : [];
    const verified = [];
    secrets.forEach((s, i) => {
      try {
        new Webhook(s).verify(body, req.headers);
        verified.push(i);
      } catch {}
    });
    let event = {};
    try { event = JSON.parse(body); } catch {}
    fs.appendFileSync(out, JSON.stringify({
      id: req.headers["webhook-id"] ?? null,
      type: event.type ?? null,
      status: event.data?.status ?? null,
      subject: event.data?.intent_id ?? event.data?.id ?? null,
      version: event.version ?? null,
      created_at: event.created_at ?? null,
      verified,
      at: Date.now(),
    }) + "\n");
    setTimeout(() => res.writeHead(verified.length ? 204 : 400).end(), delay);
  });
});
server.listen(port, "127.0.0.1");
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(0));
