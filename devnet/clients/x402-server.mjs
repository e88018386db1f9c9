// A resource server as x402 sellers write one: Express with @x402/express's
// paymentMiddleware, @x402/evm's or @x402/svm's server scheme (by the
// network), and @x402/core's HTTPFacilitatorClient pointed at stablerail's
// /x402. Unmodified packages.
//
//   node x402-server.mjs '<json config>'
//   config: { port, facilitator, key?, network, asset, amount, payTo, name?, version?, extra?,
//             extensions?: ["eip2612GasSponsoring" | "erc20ApprovalGasSponsoring"],
//             scheme?: "exact" | "upto" | "batch-settlement", unitPrice?, storage?, authorizerKey? }
//
// Serves GET /paid behind the payment and prints "ready <port>" once
// listening. With scheme "upto", `amount` is the most a request may cost and
// GET /paid?use=N charges what it used: N × unitPrice base units (the
// route names it with setSettlementOverrides; the facilitator settles that).
// With "batch-settlement" the same holds per voucher (the charge below the
// voucher's ceiling), the server keeps its channels in `storage` (the
// package's file storage), and POST /channels/claim-and-settle and
// POST /channels/refund run its channel manager (they print the results).
import express from "express";
import { paymentMiddleware, setSettlementOverrides, x402ResourceServer } from "@x402/express";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { UptoEvmScheme } from "@x402/evm/upto/server";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/server";
import { FileChannelStorage } from "@x402/evm/batch-settlement/server/file-storage";
import { ExactSvmScheme } from "@x402/svm/exact/server";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { privateKeyToAccount } from "viem/accounts";
import { declareEip2612GasSponsoringExtension, declareErc20ApprovalGasSponsoringExtension } from "@x402/extensions";

const cfg = JSON.parse(process.argv[2]);
const auth = cfg.key ? { Authorization: `Bearer ${cfg.key}` } : {};
const facilitator = new HTTPFacilitatorClient({
  url: cfg.facilitator,
  createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }),
});
const extra = { ...(cfg.name ? { name: cfg.name, version: cfg.version } : {}), ...(cfg.extra ?? {}) };
// The gas-sponsoring extensions this route offers (Permit2 assets).
const declare = { eip2612GasSponsoring: declareEip2612GasSponsoringExtension, erc20ApprovalGasSponsoring: declareErc20ApprovalGasSponsoringExtension };
const extensions = Object.assign({}, ...(cfg.extensions ?? []).map((name) => declare[name]()));
const scheme = cfg.scheme ?? "exact";
const serverScheme =
  scheme === "upto"
    ? new UptoEvmScheme()
    : scheme === "batch-settlement"
      ? new BatchSettlementEvmScheme(cfg.payTo, {
          storage: new FileChannelStorage({ directory: cfg.storage }),
          withdrawDelay: cfg.withdrawDelay ?? 900,
          // The server's own receiver authorizer, for a facilitator that
          // advertises none (it then signs its claims and refunds itself).
          ...(cfg.authorizerKey ? { receiverAuthorizerSigner: privateKeyToAccount(cfg.authorizerKey) } : {}),
        })
      : cfg.network.startsWith("solana:")
        ? new ExactSvmScheme()
        : new ExactEvmScheme();
const metered = scheme === "upto" || scheme === "batch-settlement";
const app = express();
let served = 0;
app.use(
  paymentMiddleware(
    {
      "GET /paid": {
        accepts: [{ scheme, network: cfg.network, payTo: cfg.payTo, price: { amount: cfg.amount, asset: cfg.asset, extra } }],
        extensions,
        description: "A paid answer",
        mimeType: "application/json",
      },
    },
    new x402ResourceServer(facilitator).register(cfg.network, serverScheme),
  ),
);
app.get("/paid", (req, res) => {
  served += 1;
  if (metered) {
    const used = BigInt(req.query.use ?? "1");
    setSettlementOverrides(res, { amount: String(used * BigInt(cfg.unitPrice ?? 1)) });
  }
  res.json({ paid: true, served });
});
app.get("/served", (_req, res) => res.json({ served }));
if (scheme === "batch-settlement") {
  const manager = serverScheme.createChannelManager(facilitator, cfg.network, cfg.asset);
  const run = (what) => async (_req, res) => {
    try {
      res.json(await what());
    } catch (e) {
      res.status(500).json({ error: String(e?.message ?? e) });
    }
  };
  app.post("/channels/claim-and-settle", run(() => manager.claimAndSettle()));
  app.post("/channels/refund", run(() => manager.refund()));
}
const server = app.listen(cfg.port, "127.0.0.1", () => console.log(`ready ${cfg.port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
