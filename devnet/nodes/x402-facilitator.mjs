// The reference x402 facilitator over HTTP: @x402/core's x402Facilitator with
// @x402/evm's batch-settlement and exact facilitator schemes, unmodified,
// behind POST /verify, POST /settle and GET /supported (the routes
// HTTPFacilitatorClient calls). For tests and benchmarks that put the
// reference beside stablerail's /x402 on the same devnet.
//
//   node x402-facilitator.mjs --port P --rpc URL --chain-id N --key 0x<relayer key> --authorizer 0x<receiver authorizer key>
//
// Prints "ready <port>" once listening.
import http from "node:http";
import { createWalletClient, http as viemHttp, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/facilitator";

const arg = (n, d) => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
const port = Number(arg("port"));
const rpc = arg("rpc");
const chainId = Number(arg("chain-id"));
const chain = { id: chainId, name: `devnet ${chainId}`, nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpc] } } };
const wallet = createWalletClient({ chain, account: privateKeyToAccount(arg("key")), transport: viemHttp(rpc), pollingInterval: 5 }).extend(publicActions);
// The package reads the signing address from `address` (a wallet client keeps it on `account`).
const signer = toFacilitatorEvmSigner({ ...wallet, address: wallet.account.address });
const authorizer = arg("authorizer") ? privateKeyToAccount(arg("authorizer")) : undefined;
const network = `eip155:${chainId}`;
const facilitator = new x402Facilitator()
  .register(network, new ExactEvmScheme(signer))
  .register(network, new BatchSettlementEvmScheme(signer, authorizer));

const read = (req) =>
  new Promise((resolve, reject) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
const send = (res, status, value) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
};

const server = http.createServer(async (req, res) => {
  try {
    if (req.method === "GET" && req.url === "/supported") return send(res, 200, facilitator.getSupported());
    if (req.method === "POST" && (req.url === "/verify" || req.url === "/settle")) {
      const { paymentPayload, paymentRequirements } = JSON.parse(await read(req));
      const answer = req.url === "/verify" ? await facilitator.verify(paymentPayload, paymentRequirements) : await facilitator.settle(paymentPayload, paymentRequirements);
      return send(res, 200, answer);
    }
    send(res, 404, { error: "not_found" });
  } catch (e) {
    send(res, 500, { error: "facilitator_error", message: String(e?.message ?? e) });
  }
});
server.listen(port, "127.0.0.1", () => console.log(`ready ${port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
