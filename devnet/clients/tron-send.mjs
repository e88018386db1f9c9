// A TRC-20 transfer with tronweb against a TRON node's HTTP API: tronweb asks
// the node to build the TriggerSmartContract, signs it, and (unless
// --no-broadcast) broadcasts it. Prints {from, transaction, broadcast, info}.
//
//   node tron-send.mjs --api URL --key 0xPRIVATE --token T… --to T… --amount N
//                      [--no-broadcast] [--signer 0xOTHER] [--local expired|unknown-block]
//                      [--approve SPENDER]   (approve(SPENDER, amount) instead of a transfer)
//                      [--fee-limit SUN]     (default 50 TRX)
//
// --memo HEX puts bytes in the transaction's `raw_data.data` (its memo, which
// the txID covers): what an attacker copies signatures into.
// --signer signs with another key than the owner's; --local builds the
// transaction offline (tronweb's txLocal) with an expiry in the past or a
// reference block the chain never had.
import { TronWeb } from "tronweb";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const tronWeb = new TronWeb({ fullHost: arg("api") });
const key = arg("key").replace(/^0x/, "");
const from = tronWeb.address.fromPrivateKey(key);
const options = { feeLimit: Number(arg("fee-limit", "50000000")) };
const local = arg("local");
if (local) {
  const head = await tronWeb.trx.getCurrentBlock();
  const number = BigInt(head.block_header.raw_data.number);
  options.txLocal = true;
  options.blockHeader = {
    ref_block_bytes: (number & 0xffffn).toString(16).padStart(4, "0"),
    ref_block_hash: local === "unknown-block" ? "00000000deadbeef" : head.blockID.slice(16, 32),
    expiration: local === "expired" ? Date.now() - 1_000 : Date.now() + 60_000,
    timestamp: Date.now() - 2_000,
  };
}
const approve = arg("approve");
const built = await tronWeb.transactionBuilder.triggerSmartContract(
  arg("token"),
  approve ? "approve(address,uint256)" : "transfer(address,uint256)",
  options,
  [{ type: "address", value: approve ?? arg("to") }, { type: "uint256", value: arg("amount") }],
  from,
);
if (!built.result?.result) throw new Error(`the node did not build the transaction: ${JSON.stringify(built)}`);
const memo = arg("memo");
if (memo) built.transaction = await tronWeb.transactionBuilder.addUpdateData(built.transaction, memo.replace(/^0x/, ""), "hex", { txLocal: true });
// tronweb refuses to sign for another owner unless asked as a co-signer.
const signer = arg("signer");
const transaction = signer ? await tronWeb.trx.sign(built.transaction, signer.replace(/^0x/, ""), true, true) : await tronWeb.trx.sign(built.transaction, key);
const out = { from, transaction };
if (!process.argv.includes("--no-broadcast")) {
  out.broadcast = await tronWeb.trx.sendRawTransaction(transaction);
  out.info = await tronWeb.trx.getTransactionInfo(transaction.txID);
}
console.log(JSON.stringify(out));
