// A new user's whole journey through the dashboard, in Debian's Chromium
// driven by puppeteer-core: ask for a code, read it from the SMTP sink's
// log, sign in, create an agent, copy its key pair with the page's copy
// buttons, use it on /v2 (me, an intent executed to TARGET_SETTLED), see
// the payment on the payments page, set a payout address and see a payment
// by email arrive (balance read on chain), become operator, revoke the key
// and see /v2/me answer 401. axe-core checks every page (no serious or
// critical violation); with `shots` set, each page is saved as a PNG.
//
// Input (stdin, JSON): base, mail, email, shots|null, cli[] (stablerail with
// --config/--database), fund[] (`stablerail devnet fund` with --dir),
// payer_chain, target_chain, merchant, payout, target_rpc, target_token.
// Output (stdout, JSON): what happened, for the test to check again.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { launch } from "./chromium.mjs";
import { createPublicClient, http, parseAbi } from "viem";

const input = JSON.parse(fs.readFileSync(0, "utf8"));
const require = createRequire(import.meta.url);
const AXE = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const base = input.base;
const log = (m) => process.stderr.write(`[dashboard] ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = { axe: {}, pages: [] };

async function api(method, url, token, body) {
  const r = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: token, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: await r.json().catch(() => null) };
}

async function waitFor(what, fn, ms = 90_000) {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/// The newest code the sink received for `email` after `since`.
async function codeFor(email, since) {
  return waitFor(`a code mailed to ${email}`, async () => {
    if (!fs.existsSync(input.mail)) return null;
    const lines = fs.readFileSync(input.mail, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const hit = lines.filter((m) => m.to.includes(email) && Date.parse(m.at) >= since && m.code).pop();
    return hit?.code ?? null;
  }, 30_000);
}

const browser = await launch();
try {
  await browser.defaultBrowserContext().overridePermissions(base, ["clipboard-read", "clipboard-write", "clipboard-sanitized-write"]);
  const page = await browser.newPage();
  // axe is injected as a script; the dashboard's CSP would rightly refuse it.
  await page.setBypassCSP(true);
  await page.setViewport({ width: 1200, height: 860 });
  page.on("pageerror", (e) => { throw new Error(`script error on ${page.url()}: ${e.message}`); });

  // Every page: no serious or critical accessibility violation, and a picture.
  async function check(name) {
    await page.evaluate(AXE);
    const found = await page.evaluate(async () => {
      const r = await window.axe.run(document, { resultTypes: ["violations"] });
      return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) }));
    });
    const bad = found.filter((v) => v.impact === "serious" || v.impact === "critical");
    out.axe[name] = found.map((v) => `${v.impact}:${v.id}`);
    if (bad.length) throw new Error(`axe on ${name}: ${JSON.stringify(bad)}`);
    if (input.shots) {
      fs.mkdirSync(input.shots, { recursive: true });
      await page.screenshot({ path: path.join(input.shots, `${name}.png`), fullPage: true });
    }
    out.pages.push(name);
  }
  async function submit(selector) {
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
  }

  // 1. Sign in with a code from the mail.
  await page.goto(`${base}/dashboard`, { waitUntil: "load" });
  if (!page.url().endsWith("/dashboard/sign-in")) throw new Error(`/dashboard led to ${page.url()}`);
  await check("sign-in");
  const asked = Date.now() - 1000;
  await page.type("#email", input.email);
  await submit("form button[type=submit]");
  await check("check-email");
  const code = await codeFor(input.email, asked);
  await page.type("#code", code);
  await submit("form button[type=submit]");
  if (!page.url().endsWith("/dashboard/agents")) throw new Error(`sign-in led to ${page.url()}`);
  const cookies = await browser.cookies();
  out.cookie = cookies.filter((c) => c.name.endsWith("sr_session")).map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite, secure: c.secure }));
  await check("agents-empty");

  // 2. An agent and its key pair, copied with the page's buttons.
  await page.type("#name", "checkout-bot");
  await submit("form[action='/dashboard/agents'] button[type=submit]");
  await check("new-key-pair");
  const copied = {};
  for (const id of ["api-key", "secret-key"]) {
    await page.click(`button[data-copy='${id}']`);
    copied[id] = await page.evaluate(() => navigator.clipboard.readText());
    const shown = await page.$eval(`#${id}`, (e) => e.value);
    if (copied[id] !== shown) throw new Error(`the copy button of ${id} copied ${copied[id]}, not ${shown}`);
  }
  const bearer = `Bearer ${Buffer.from(`${copied["api-key"]}:${copied["secret-key"]}`).toString("base64")}`;
  const me = await api("GET", "/v2/me", bearer);
  if (me.status !== 200) throw new Error(`/v2/me with the new key: ${me.status} ${JSON.stringify(me.body)}`);
  out.agent_id = me.body.agent_id ?? me.body.id;
  out.api_key = copied["api-key"];
  await submit("main a[href^='/dashboard/agents/']");
  const agentUrl = page.url();
  await check("agent");

  // 3. Its wallets: fund the EVM one from what the page shows.
  await page.goto(`${base}/dashboard/wallets`, { waitUntil: "load" });
  const wallet = await page.$eval("input[id^='addr-'][id$='-evm']", (e) => e.value);
  const qr = await page.$$eval(".qr svg", (s) => s.length);
  if (!qr) throw new Error("no QR code on the wallets page");
  execFileSync(input.fund[0], [...input.fund.slice(1), wallet, "25", "--chain", input.payer_chain, "--asset", "usdc"]);
  execFileSync(input.fund[0], [...input.fund.slice(1), wallet, "1", "--chain", input.payer_chain]);
  out.wallet = wallet;
  await page.reload({ waitUntil: "load" });
  const shown = await page.$$eval("table td.num.mono", (cells) => cells.map((c) => c.textContent.trim()));
  if (!shown.includes("25")) throw new Error(`the wallets page does not show the 25 USDC sent: ${shown}`);
  await check("wallets");

  // 3b. An account webhook endpoint; its secret copied with the page's button
  // to where the receiver reads it.
  await page.goto(`${base}/dashboard/webhooks`, { waitUntil: "load" });
  await page.type("#url", input.hook_url);
  await submit("form[action='/dashboard/webhooks'] button[type=submit]");
  await check("webhook-secret");
  await page.click("button[data-copy='webhook-secret']");
  const hookSecret = await page.evaluate(() => navigator.clipboard.readText());
  if (!hookSecret.startsWith("whsec_")) throw new Error(`copied ${hookSecret}`);
  fs.writeFileSync(input.hook_secrets, JSON.stringify([hookSecret]));
  await submit("main a[href^='/dashboard/webhooks/']");
  await check("webhook");

  // 4. Pay with the key; see it on the payments page.
  async function payAndSettle(body) {
    const created = await api("POST", "/v2/intents", bearer, body);
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.intent_id;
    const executed = await api("POST", `/v2/intents/${id}/execute`, bearer);
    if (executed.status >= 300) throw new Error(`execute: ${executed.status} ${JSON.stringify(executed.body)}`);
    await waitFor(`${id} settled`, async () => (await api("GET", `/v2/intents/${id}`, bearer)).body?.status === "TARGET_SETTLED");
    return created.body;
  }
  const paid = await payAndSettle({ recipient: input.merchant, amount: "1", payer_chain: input.payer_chain, target_chain: input.target_chain });
  out.intent_id = paid.intent_id;
  await page.goto(`${base}/dashboard/payments`, { waitUntil: "load" });
  const row = await page.$eval(`#sent tr[data-intent='${paid.intent_id}']`, (r) => r.textContent);
  if (!row.includes("TARGET_SETTLED")) throw new Error(`the payments page shows ${row}`);
  const links = await page.$$eval(`#sent tr[data-intent='${paid.intent_id}'] a`, (a) => a.map((x) => x.href));
  out.explorer_links = links;
  await check("payments");
  await page.goto(`${base}/dashboard/payments?status=EXPIRED&chain=${input.payer_chain}`, { waitUntil: "load" });
  if (await page.$(`tr[data-intent='${paid.intent_id}']`)) throw new Error("the status filter let a settled intent through");

  // 5. Where my email is paid, and a payment by email arriving there.
  await page.goto(`${base}/dashboard/payout`, { waitUntil: "load" });
  await page.select("#chain", input.target_chain);
  await page.type("#address", input.payout);
  await submit("form[action='/dashboard/payout'] button[type=submit]");
  const listed = await page.$$eval("td.mono", (c) => c.map((x) => x.textContent.trim().toLowerCase()));
  if (!listed.includes(input.payout.toLowerCase())) throw new Error(`the payout page lists ${listed}`);
  await check("payout");
  const byEmail = await payAndSettle({ email: input.email, amount: "2", payer_chain: input.payer_chain, target_chain: input.target_chain });
  out.email_intent_id = byEmail.intent_id;
  out.email_receiving = byEmail.receiving_amount;
  const chain = createPublicClient({ transport: http(input.target_rpc) });
  out.payout_balance = (await chain.readContract({ address: input.target_token, abi: parseAbi(["function balanceOf(address) view returns (uint256)"]), functionName: "balanceOf", args: [input.payout] })).toString();
  await page.goto(`${base}/dashboard/payments`, { waitUntil: "load" });
  const received = await page.$eval(`#received tr[data-intent='${byEmail.intent_id}']`, (r) => r.textContent);
  if (!received.includes("TARGET_SETTLED")) throw new Error(`received: ${received}`);

  // A phone's view of the payments page.
  await page.setViewport({ width: 390, height: 844, isMobile: true });
  await page.reload({ waitUntil: "load" });
  await check("payments-phone");
  await page.setViewport({ width: 1200, height: 860 });

  // 6. The operator's pages, once the CLI says so.
  const accounts = JSON.parse(execFileSync(input.cli[0], ["account", "list", ...input.cli.slice(1)], { encoding: "utf8" }));
  const mine = accounts.find((a) => a.email === input.email);
  execFileSync(input.cli[0], ["account", "operator", mine.account_id, ...input.cli.slice(1)]);
  await page.goto(`${base}/dashboard/operator`, { waitUntil: "load" });
  const floats = await page.$$eval("#floats tbody tr", (r) => r.length);
  if (!floats) throw new Error("the operator page shows no float");
  const books = await page.$eval("#books-alarms", (e) => e.textContent);
  if (!/balanced/.test(books)) throw new Error(`the operator page's books: ${books}`);
  await check("operator");

  // 7. Revoke the key: /v2 refuses it at once.
  await page.goto(agentUrl, { waitUntil: "load" });
  await submit("form[action$='/keys/revoke'] button[type=submit]");
  out.revoked_status = (await api("GET", "/v2/me", bearer)).status;
  if (out.revoked_status !== 401) throw new Error(`/v2/me after revoking: ${out.revoked_status}`);
  const badge = await page.$eval("tbody tr td:nth-child(4)", (c) => c.textContent.trim());
  if (badge !== "revoked") throw new Error(`the key shows ${badge}`);

  // 8. Sign out: the pages ask to sign in again.
  await submit("form[action='/dashboard/sign-out'] button");
  await page.goto(`${base}/dashboard/payments`, { waitUntil: "load" });
  if (!page.url().endsWith("/dashboard/sign-in")) throw new Error(`after sign-out: ${page.url()}`);
  out.signed_out = true;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
