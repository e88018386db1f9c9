// A resource server's facilitator calls, made by @x402/core's
// HTTPFacilitatorClient (unmodified): verify, then settle, one payload.
//
//   echo '{"url": "http://…/x402", "key": "srfk_…", "payload": {...}, "requirements": {...}}' | node x402-facilitate.mjs
//
// Prints {supported, verify, settle}; a non-2xx verdict the client throws
// is printed as the body it carried.
import { HTTPFacilitatorClient } from "@x402/core/server";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const { url, key, payload, requirements } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const auth = key ? { Authorization: `Bearer ${key}` } : {};
const client = new HTTPFacilitatorClient({ url, createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }) });
const settle = async (f) => {
  try {
    return await f();
  } catch (e) {
    return { thrown: e.name, status: e.statusCode, reason: e.invalidReason ?? e.errorReason, transaction: e.transaction };
  }
};
const supported = await client.getSupported();
const verify = await settle(() => client.verify(payload, requirements));
const settled = await settle(() => client.settle(payload, requirements));
console.log(JSON.stringify({ supported, verify, settle: settled }));
