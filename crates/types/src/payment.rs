//! The host's payment vocabulary, in its own types: what adapters compute
//! (requirements, verified payments, settle steps, signing requests,
//! receipts) and why they refuse. The engine, the API and the drivers speak
//! these; adapter interface types are converted to and from them in
//! `adapter/convert.rs` only, whatever interface version an adapter has.

pub use crate::config::Family;

/// What the host asks a payer to pay.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Terms {
    /// Base units, decimal integer string.
    pub amount: String,
    /// The wallet that receives the funds (x402 `payTo`).
    pub pay_to: String,
    pub max_timeout_seconds: u64,
}

/// x402 v2 PaymentRequirements; `extra` is the adapter's JSON object text.
/// Its JSON form is x402's (`payTo`, `maxTimeoutSeconds`, `extra` as an
/// object), the form an intent stores and shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirements {
    pub scheme: String,
    pub network: String,
    pub amount: String,
    pub asset: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    #[serde(with = "json_text", default = "json_text::empty")]
    pub extra: String,
}

/// A JSON value kept as its text in Rust and written as the value itself.
mod json_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        serde_json::from_str::<Value>(text).unwrap_or(Value::Null).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(Value::deserialize(d)?.to_string())
    }

    pub fn empty() -> String {
        "{}".into()
    }
}

/// A payment whose proof checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPayment {
    pub payer: String,
    pub pay_to: String,
    /// Base units, decimal integer string.
    pub amount: String,
    pub valid_after: u64,
    pub valid_before: u64,
    /// Unique per authorization on its chain; accepted once.
    pub replay_key: String,
}

/// A transfer a host-held wallet authorizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub sender: String,
    pub recipient: String,
    pub amount: String,
    pub valid_after: u64,
    pub valid_before: u64,
    /// 32 bytes from the host, the authorization nonce where the scheme has one.
    pub nonce: Vec<u8>,
}

/// An EVM call the host sends from one of its wallets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvmCall {
    pub to: String,
    pub data: Vec<u8>,
    /// Wei, decimal integer string.
    pub value: String,
    pub gas_limit: Option<u64>,
}

/// A Solana v0 transaction the payer signed, for the host to co-sign as fee payer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SolanaCosign {
    pub transaction: Vec<u8>,
    pub fee_payer_index: u8,
}

/// A TRON transaction: protobuf `raw_data` and its signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TronTransaction {
    pub raw_data: Vec<u8>,
    pub signatures: Vec<Vec<u8>>,
}

/// One transaction the host must get on chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submission {
    /// Signed by a host-held wallet.
    EvmCall(EvmCall),
    /// Signed by someone else already; broadcast as it is.
    EvmRaw(Vec<u8>),
    SolanaCosign(SolanaCosign),
    TronSigned(TronTransaction),
}

/// One step of a settlement; steps land in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettleStep {
    pub label: String,
    pub submission: Submission,
}

/// What a host-held wallet must sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SigningRequest {
    Eip712Digest(Vec<u8>),
    /// A TRON txID as a 0.1.0–0.3.0 adapter computed it.
    TronTxid(Vec<u8>),
    /// TRON `raw_data` bytes (0.4.0): the host computes the txID itself.
    TronRawData(Vec<u8>),
    SolanaMessage(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledTransfer {
    pub tx_hash: String,
    pub to: String,
    pub amount: String,
    pub block: u64,
}

/// What a receipt says about a settlement transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiptStatus {
    Pending,
    Settled(SettledTransfer),
    Failed(String),
}

/// Why a proof was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProofError {
    Malformed(String),
    Unsupported(String),
    RequirementsMismatch(String),
    WrongRecipient(String),
    WrongAmount(String),
    NotYetValid,
    Expired,
    InvalidSignature(String),
    SignerMismatch(String),
    AlreadyUsed,
    InsufficientFunds(String),
    NotApproved(String),
    ChainUnavailable(String),
    /// The payer is a smart wallet not deployed yet (ERC-6492), and the
    /// scheme cannot deploy it before paying (0.5.0 on).
    UndeployedSmartWallet(String),
    /// The wallet's ERC-6492 factory is not on the chain's allowlist.
    FactoryNotAllowed(String),
    /// A check the payer's contract causes (ERC-1271, an ERC-6492
    /// deployment, 7702 code) needs more gas than the chain's
    /// `contract_payer_gas_cap`. Raised by the host, never by an adapter.
    GasCapExceeded,
    /// A refusal the scheme's spec names by its code (0.7.0 on): answered
    /// with the code where the host knows it; `detail` is for the log.
    Scheme {
        code: String,
        detail: String,
    },
}

/// Why an adapter refused any other request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdapterError {
    InvalidAddress(String),
    InvalidAmount(String),
    Unsupported(String),
    Config(String),
    ChainUnavailable(String),
    Malformed(String),
}

/// One token movement on chain, where the chain put it: the unit the books
/// credit (`store::books`). Addresses in the family's own form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Movement {
    pub tx: String,
    /// The log's index in its block (EVM), its place in the transaction's
    /// log (TRON), or the instruction's (Solana).
    pub index: i64,
    pub token: String,
    pub from: String,
    pub to: String,
    /// Base units, decimal integer string, as the chain recorded it.
    pub amount: String,
    pub block: i64,
    /// The transaction's whole network fee in native base units, when the
    /// family can read it; the books keep it only for the relayer's own.
    pub fee: Option<String>,
}

/// What only the use of one payer authorization leaves on chain, read from
/// the payer's proof by the host itself (`settle::authorization`): how a
/// movement is proven to be this payment's and no other's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization {
    /// EIP-3009: the token logs `AuthorizationUsed(authorizer, nonce)` in
    /// the transaction that used it, just before the Transfer it made.
    Eip3009 { authorizer: String, nonce: [u8; 32] },
    /// A Permit2 `PermitWitnessTransferFrom` that the x402 exact proxy
    /// (`spender`) settles: its nonce is spent in Permit2's bitmap by the
    /// proxy call that carries exactly this permit.
    Permit2(Permit2Authorization),
    /// The payer's own signed transaction (Solana, a TRON transfer), or a
    /// scheme the host cannot read: only the service's own transaction
    /// can be credited, never someone else's.
    Own,
    /// An x402 batch-settlement step, in the service's own transaction:
    /// the settlement contract's own event proves it (a claim moves value
    /// inside the escrow and no token at all).
    BatchSettlement(BatchStep),
}

/// Which event of the batch-settlement contract a step's transaction must
/// hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchStep {
    /// `Deposited` into this channel, of the payment's amount. `nonce`: an
    /// ERC-3009 deposit's authorization nonce, whose `AuthorizationUsed`
    /// the token logs just before: the `Deposited` credited is the first
    /// after it, so a deposit in a shared transaction never takes another
    /// call's. A Permit2 deposit leaves no such event (`None`): it is sent
    /// alone.
    Deposit { channel: [u8; 32], nonce: Option<[u8; 32]> },
    /// `Claimed` of one of the claim's rows: that channel, brought to that
    /// row's total.
    Claim { rows: Vec<([u8; 32], u128)> },
    /// `Settled` to the payment's payTo (the receiver), of the token.
    Settle,
    /// `Refunded` from this channel (to the payment's payTo, the payer).
    Refund { channel: [u8; 32] },
}

/// A Permit2 authorization's fields, addresses in the family's form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permit2Authorization {
    pub owner: String,
    pub spender: String,
    pub token: String,
    pub amount: String,
    pub nonce: String,
    pub deadline: String,
    pub to: String,
    pub valid_after: String,
}
