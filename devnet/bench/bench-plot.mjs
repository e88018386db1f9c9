// Draw scripts/bench.sh peers's rows as one SVG: throughput by concurrency
// (left) and latency percentiles p50/p99 by concurrency (right), one block
// time (BLOCK_SECONDS, default 0: instant blocks). Open-loop rows (RATE=)
// are grouped by the offered rate instead; rows of several runs can be
// drawn together by concatenating their results.jsonl.
//   node devnet/bench/bench-plot.mjs results.jsonl > benchmarks.svg
import fs from "node:fs";

const blockSeconds = Number(process.env.BLOCK_SECONDS || 0);
const rows = fs
  .readFileSync(process.argv[2], "utf8")
  .trim()
  .split("\n")
  .filter(Boolean)
  .map((l) => JSON.parse(l))
  .filter((r) => (r.block_seconds ?? 0) === blockSeconds);
const series = [
  { what: "stablerail-x402-settle", label: "stablerail /x402/settle", color: "#1f6feb" },
  { what: "stablerail-intents", label: "stablerail intents, source leg", color: "#2da44e" },
  { what: "x402-rs", label: "x402-rs facilitator", color: "#cf222e" },
  { what: "x402-facilitator-fork", label: "x402-facilitator 0.11 (the fork)", color: "#bc4c00" },
  { what: "x402-rs-2.0.2", label: "x402-rs 2.0.2 (poll 250 ms)", color: "#cf222e" },
  { what: "typescript-reference", label: "TypeScript reference (@x402/evm), sequential", color: "#8250df" },
].filter((s) => rows.some((r) => r.what === s.what));
const key = rows.some((r) => r.rate) ? "rate" : "concurrency";
const levels = [...new Set(rows.map((r) => r[key]))].sort((a, b) => a - b);
const find = (what, c) => rows.find((r) => r.what === what && r[key] === c);
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;");
const nice = (v) => {
  const p = 10 ** Math.floor(Math.log10(v || 1));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((x) => x >= v);
};

const W = 980, H = 420, top = 60, bottom = 330, plotW = 400;
const out = [];
out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
const commit = rows.find((r) => r.commit)?.commit ?? "";
const n = rows.find((r) => r.n)?.n ?? "";
const blocks = blockSeconds ? `, blocks every ${blockSeconds} s` : ", instant blocks";
out.push(`<text x="20" y="24" font-size="15" font-weight="bold">Settling EIP-3009 payments on one devnet chain${blocks}, ${n} per row${commit ? ` (${esc(commit)})` : ""}</text>`);

// One grouped-bar panel: a group per concurrency, a bar per (series, key).
function panel(x0, title, unit, bars) {
  const values = levels.flatMap((c) => bars.map((b) => b.value(c) ?? 0));
  const max = nice(Math.max(...values, 1));
  const scale = (v) => bottom - ((bottom - top) * v) / max;
  out.push(`<text x="${x0}" y="${top - 14}" font-weight="bold">${esc(title)}</text>`);
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4, y = scale(v);
    out.push(`<line x1="${x0 + 40}" x2="${x0 + 40 + plotW}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${x0 + 34}" y="${y + 4}" text-anchor="end">${Math.round(v)}</text>`);
  }
  out.push(`<text x="${x0}" y="${(top + bottom) / 2}" transform="rotate(-90 ${x0} ${(top + bottom) / 2})" text-anchor="middle" dy="10">${esc(unit)}</text>`);
  const groupW = plotW / levels.length, barW = Math.min(22, (groupW - 16) / bars.length);
  levels.forEach((c, g) => {
    const gx = x0 + 40 + g * groupW + (groupW - barW * bars.length) / 2;
    bars.forEach((b, k) => {
      const v = b.value(c);
      if (v == null) return;
      const y = scale(v);
      out.push(`<rect x="${gx + k * barW}" y="${y}" width="${barW - 2}" height="${bottom - y}" fill="${b.color}" opacity="${b.opacity ?? 1}"><title>${esc(b.label)} at ${c}: ${v}</title></rect>`);
      out.push(`<text x="${gx + k * barW + (barW - 2) / 2}" y="${y - 3}" text-anchor="middle" font-size="9">${Math.round(v)}</text>`);
    });
    const level = key === "rate" ? `${c}/s offered` : `${c} at once`;
    out.push(`<text x="${x0 + 40 + g * groupW + groupW / 2}" y="${bottom + 16}" text-anchor="middle">${level}</text>`);
  });
}

panel(20, "Throughput (payments settled per second, higher is better)", "per second",
  series.map((s) => ({ ...s, value: (c) => find(s.what, c)?.per_second })));
const timed = series.filter((s) => rows.some((r) => r.what === s.what && r.latency_ms));
panel(500, "Latency per payment, p50 (solid) and p99 (light), ms", "ms",
  timed.flatMap((s) => [
    { ...s, label: `${s.label} p50`, value: (c) => find(s.what, c)?.latency_ms?.p50 },
    { ...s, label: `${s.label} p99`, opacity: 0.45, value: (c) => find(s.what, c)?.latency_ms?.p99 },
  ]));

series.forEach((s, i) => {
  const x = 20 + (i % 2) * 470, y = bottom + 40 + Math.floor(i / 2) * 18;
  out.push(`<rect x="${x}" y="${y - 10}" width="12" height="12" fill="${s.color}"/><text x="${x + 18}" y="${y}">${esc(s.label)}</text>`);
});
out.push(`</svg>`);
console.log(out.join("\n"));
