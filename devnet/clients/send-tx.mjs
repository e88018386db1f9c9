// Send a transaction the way a user's wallet does: viem signs it with the
// user's key and sends it, then waits for its receipt. For the transactions
// stablerail's swap endpoints return (approval, swap).
//
//   node send-tx.mjs --rpc URL --key 0xPRIVATE --to 0x… --data 0x… [--value 0x0] [--gas 0x…]
// Prints {hash, status, block}.
import { createPublicClient, createWalletClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const rpc = arg("rpc");
const pub = createPublicClient({ transport: http(rpc) });
const chain = { id: await pub.getChainId(), name: "devnet", nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpc] } } };
const wallet = createWalletClient({ chain, account: privateKeyToAccount(arg("key")), transport: http(rpc) });
const gas = arg("gas");
const hash = await wallet.sendTransaction({ to: arg("to"), data: arg("data"), value: BigInt(arg("value", "0x0")), ...(gas ? { gas: BigInt(gas) } : {}) });
const receipt = await pub.waitForTransactionReceipt({ hash });
console.log(JSON.stringify({ hash, status: receipt.status, block: Number(receipt.blockNumber) }));
