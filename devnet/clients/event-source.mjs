// Follow an intent with a browser's own EventSource (Debian's Chromium,
// headless, driven by puppeteer-core) until a final status; print what it
// received: [{id, type, status}].
//
//   node event-source.mjs BASE_URL INTENT_ID
import { launch } from "./chromium.mjs";

const [base, intent] = process.argv.slice(2);
const browser = await launch();
try {
  const page = await browser.newPage();
  // The page's "open" reaches the test on stdout: it pays only then.
  page.on("console", (m) => { if (m.text() === "open") console.log("open"); });
  await page.goto(`${base}/api/chains`);
  const got = await page.evaluate((intent) => new Promise((resolve, reject) => {
    const seen = [];
    const source = new EventSource(`/api/intents/${intent}/events`);
    const types = ["awaiting_payment", "pending", "source_settled", "target_settling", "target_settled", "partial_settlement", "verification_failed", "blocked", "expired"];
    for (const t of types) {
      source.addEventListener(`intent.${t}`, (e) => {
        const data = JSON.parse(e.data);
        seen.push({ id: e.lastEventId, type: e.type, status: data.status });
        if (["TARGET_SETTLED", "VERIFICATION_FAILED", "BLOCKED", "EXPIRED"].includes(data.status)) {
          source.close();
          resolve(seen);
        }
      });
    }
    // Announce the connection (the first event is the status then), then wait.
    source.onopen = () => console.log("open");
    setTimeout(() => reject(new Error(`timed out with ${JSON.stringify(seen)}`)), 120000);
  }), intent);
  console.log(JSON.stringify(got));
} finally {
  await browser.close();
}
