// An OTLP/HTTP traces collector for benchmarks: takes POST /v1/traces
// (protobuf), answers an empty ExportTraceServiceResponse (200, zero
// bytes: every field default), and writes how many exports and bytes it
// was sent to OUT after each one.
//   node devnet/bench/otlp-sink.mjs PORT OUT
import fs from "node:fs";
import http from "node:http";

const [port, out] = process.argv.slice(2);
const seen = { exports: 0, bytes: 0 };
fs.writeFileSync(out, JSON.stringify(seen));
http
  .createServer((req, res) => {
    let bytes = 0;
    req.on("data", (c) => (bytes += c.length));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/traces") {
        seen.exports += 1;
        seen.bytes += bytes;
        fs.writeFileSync(out, JSON.stringify(seen));
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      } else {
        res.writeHead(404).end();
      }
    });
  })
  .listen(+port, "127.0.0.1");
