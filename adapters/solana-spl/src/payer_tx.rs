//! A payer's transaction: decoded from the x402 payload and checked against
//! every rule of the exact-SVM scheme, offline. The signature check runs on
//! the host (`crypto.ed25519-verify`).

use base64::Engine as _;
use serde::Deserialize;
use solana_message::{v0, VersionedMessage};
use spl_token_interface::instruction::TokenInstruction;

use crate::accounts::{self, is_token_program, Key};
use crate::stablerail::adapter0_1_0::crypto;
use crate::stablerail::adapter0_1_0::types::{PaymentRequirements, ProofError};

/// How long a blockhash lives: 150 blocks of about 400 ms, with margin.
pub const BLOCKHASH_LIFETIME_SECS: u64 = 90;
/// Caps on what the payer's compute-budget instructions may make the fee
/// payer spend: x402's price cap (5 lamports per unit) and a unit limit far
/// above what one transfer (and an account creation) needs.
pub const MAX_COMPUTE_UNITS: u32 = 400_000;
pub const MAX_PRICE_MICRO_LAMPORTS: u64 = 5_000_000;
/// Memo or Lighthouse instructions allowed after the transfer.
const MAX_TRAILING: usize = 3;
/// A transaction must fit one network packet.
const MAX_WIRE_BYTES: usize = 1232;

/// A decoded transaction: its exact bytes, signatures and v0 message.
pub struct Tx {
    pub raw: Vec<u8>,
    pub signatures: Vec<[u8; 64]>,
    pub message: v0::Message,
    /// The bytes the signatures sign.
    pub message_bytes: Vec<u8>,
}

/// What the requirements say the transaction must do.
pub struct Expected {
    pub fee_payer: Key,
    pub mint: Key,
    pub pay_to: Key,
    pub amount: u64,
    pub decimals: u8,
}

/// A transaction that passed every check.
pub struct Checked {
    /// The transfer's authority, who signed it.
    pub payer: Key,
    pub amount: u64,
    /// The payer's signature (base58): the same transaction has the same
    /// one, whichever intent it is offered to.
    pub replay_key: String,
    pub blockhash: [u8; 32],
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Payload {
    x402_version: u64,
    accepted: Accepted,
    payload: Inner,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Accepted {
    scheme: String,
    network: String,
    amount: String,
    asset: String,
    pay_to: String,
}

#[derive(Deserialize)]
struct Inner {
    transaction: String,
}

fn malformed(m: impl Into<String>) -> ProofError {
    ProofError::Malformed(m.into())
}

/// The x402 payload's transaction, once its `accepted` matches `req`.
pub fn decode_proof(proof: &str, req: &PaymentRequirements) -> Result<Tx, ProofError> {
    let p: Payload = serde_json::from_str(proof).map_err(|e| malformed(format!("payment payload: {e}")))?;
    if p.x402_version != crate::X402_VERSION {
        return Err(ProofError::Unsupported(format!("x402Version {} (expected 2)", p.x402_version)));
    }
    let a = &p.accepted;
    if a.scheme != req.scheme {
        return Err(ProofError::Unsupported(format!("scheme `{}`", a.scheme)));
    }
    for (what, got, want) in [
        ("network", &a.network, &req.network),
        ("amount", &a.amount, &req.amount),
        ("asset", &a.asset, &req.asset),
        ("payTo", &a.pay_to, &req.pay_to),
    ] {
        if got != want {
            return Err(ProofError::RequirementsMismatch(format!("accepted {what} is {got}, required {want}")));
        }
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(p.payload.transaction.trim())
        .map_err(|_| malformed("payload.transaction is not base64"))?;
    parse(raw)
}

/// Split wire bytes into signatures and a sanitized v0 message.
pub fn parse(raw: Vec<u8>) -> Result<Tx, ProofError> {
    if raw.len() > MAX_WIRE_BYTES {
        return Err(malformed(format!("transaction is {} bytes; at most {MAX_WIRE_BYTES} fit a packet", raw.len())));
    }
    let (count, prefix) = solana_short_vec::decode_shortu16_len(&raw).map_err(|_| malformed("transaction has no signature count"))?;
    let start = prefix + 64 * count;
    let sigs = raw.get(prefix..start).ok_or_else(|| malformed("transaction is shorter than its signatures"))?;
    let signatures = sigs.chunks_exact(64).map(|c| c.try_into().expect("64 bytes")).collect();
    let message_bytes = raw[start..].to_vec();
    let message: VersionedMessage = bincode::deserialize(&message_bytes).map_err(|_| malformed("transaction message does not decode"))?;
    message.sanitize().map_err(|e| malformed(format!("transaction message is not well formed: {e}")))?;
    // Canonical bytes only: what is checked is exactly what was signed.
    if message.serialize() != message_bytes {
        return Err(malformed("transaction message has trailing or non-canonical bytes"));
    }
    let VersionedMessage::V0(message) = message else {
        return Err(ProofError::Unsupported("legacy transaction; the exact scheme takes version 0".into()));
    };
    Ok(Tx { raw, signatures, message, message_bytes })
}

/// One instruction with its program and accounts resolved.
struct Ix<'a> {
    program: Key,
    accounts: Vec<Key>,
    data: &'a [u8],
}

pub fn check(tx: &Tx, want: &Expected) -> Result<Checked, ProofError> {
    let m = &tx.message;
    let keys = &m.account_keys;
    let signers = usize::from(m.header.num_required_signatures);
    if tx.signatures.len() != signers {
        return Err(malformed(format!("{} signatures for {signers} signers", tx.signatures.len())));
    }
    if !m.address_table_lookups.is_empty() {
        return Err(ProofError::Unsupported("address lookup tables: every account must be in the message".into()));
    }
    if keys[0] != want.fee_payer {
        return Err(ProofError::RequirementsMismatch(format!("fee payer is {}, required extra.feePayer {}", keys[0], want.fee_payer)));
    }
    if tx.signatures[0] != [0u8; 64] {
        return Err(malformed("the fee payer's signature slot is not empty"));
    }
    let mut ixs = Vec::with_capacity(m.instructions.len());
    for (n, ix) in m.instructions.iter().enumerate() {
        // The fee payer signs for fees only: it must not be an account any
        // instruction touches (no transfer from it, no rent paid by it).
        if ix.accounts.contains(&0) {
            return Err(ProofError::RequirementsMismatch(format!("instruction {n} uses the fee payer's account")));
        }
        ixs.push(Ix {
            program: keys[usize::from(ix.program_id_index)],
            accounts: ix.accounts.iter().map(|a| keys[usize::from(*a)]).collect(),
            data: &ix.data,
        });
    }
    let [limit, price, rest @ ..] = ixs.as_slice() else {
        return Err(malformed("expected compute-unit limit, compute-unit price and a transfer"));
    };
    compute_budget(limit, price)?;
    let (create, transfer, trailing) = match rest {
        [c, t, tail @ ..] if c.program == spl_associated_token_account_interface::program::ID => (Some(c), t, tail),
        [t, tail @ ..] => (None, t, tail),
        [] => return Err(malformed("the transaction has no transfer")),
    };
    let (payer, program, amount) = transfer_checked(transfer, want)?;
    if !keys[..signers].contains(&payer) {
        return Err(ProofError::InvalidSignature("the transfer's authority is not a signer".into()));
    }
    if let Some(c) = create {
        create_account(c, &payer, want, &program)?;
    }
    if trailing.len() > MAX_TRAILING {
        return Err(malformed(format!("{} instructions after the transfer; at most {MAX_TRAILING} are allowed", trailing.len())));
    }
    if let Some(other) = trailing.iter().find(|ix| ix.program != accounts::MEMO && ix.program != accounts::LIGHTHOUSE) {
        return Err(ProofError::Unsupported(format!("an instruction of program {}; after the transfer only Memo and Lighthouse are allowed", other.program)));
    }
    // Every signer but the fee payer has signed this very message.
    for (n, key) in keys.iter().enumerate().take(signers).skip(1) {
        if !crypto::ed25519_verify(key.as_ref(), &tx.message_bytes, &tx.signatures[n]) {
            let whose = if *key == payer { "the payer's" } else { "a signer's" };
            return Err(ProofError::InvalidSignature(format!("{whose} signature ({key}) does not verify over the message")));
        }
    }
    let slot = keys.iter().position(|k| *k == payer).expect("payer is a signer");
    Ok(Checked {
        payer,
        amount,
        replay_key: bs58::encode(tx.signatures[slot]).into_string(),
        blockhash: m.recent_blockhash.to_bytes(),
    })
}

fn compute_budget(limit: &Ix, price: &Ix) -> Result<(), ProofError> {
    let bad = |m: &str| malformed(m.to_string());
    if limit.program != accounts::COMPUTE_BUDGET || limit.data.len() != 5 || limit.data[0] != 2 {
        return Err(bad("instruction 0 must set the compute-unit limit"));
    }
    if price.program != accounts::COMPUTE_BUDGET || price.data.len() != 9 || price.data[0] != 3 {
        return Err(bad("instruction 1 must set the compute-unit price"));
    }
    let units = u32::from_le_bytes(limit.data[1..5].try_into().expect("4 bytes"));
    let micro_lamports = u64::from_le_bytes(price.data[1..9].try_into().expect("8 bytes"));
    if units > MAX_COMPUTE_UNITS {
        return Err(malformed(format!("compute-unit limit {units} is above {MAX_COMPUTE_UNITS}")));
    }
    if micro_lamports > MAX_PRICE_MICRO_LAMPORTS {
        return Err(malformed(format!("compute-unit price {micro_lamports} micro-lamports is above {MAX_PRICE_MICRO_LAMPORTS}")));
    }
    Ok(())
}

/// TransferChecked of exactly the amount of the mint to ATA(payTo): returns
/// the authority, the token program and the amount.
fn transfer_checked(ix: &Ix, want: &Expected) -> Result<(Key, Key, u64), ProofError> {
    if !is_token_program(&ix.program) {
        return Err(malformed(format!("the transfer instruction calls {}, not a token program", ix.program)));
    }
    let Ok(TokenInstruction::TransferChecked { amount, decimals }) = TokenInstruction::unpack(ix.data) else {
        return Err(malformed("the token instruction is not TransferChecked"));
    };
    // source, mint, destination, authority; a multisig authority is refused.
    let [source, mint, destination, authority] = ix.accounts.as_slice() else {
        return Err(malformed("TransferChecked must name exactly source, mint, destination and a single authority"));
    };
    if *mint != want.mint {
        return Err(ProofError::RequirementsMismatch(format!("transfers mint {mint}, required {}", want.mint)));
    }
    if decimals != want.decimals {
        return Err(ProofError::RequirementsMismatch(format!("transfer says {decimals} decimals, the mint has {}", want.decimals)));
    }
    let expected = accounts::ata(&want.pay_to, &want.mint, &ix.program);
    if *destination != expected {
        return Err(ProofError::WrongRecipient(format!("pays {destination}, not {}'s token account {expected}", want.pay_to)));
    }
    if amount != want.amount {
        return Err(ProofError::WrongAmount(format!("transfers {amount}, required {}", want.amount)));
    }
    // The balance check (`preflight`) reads this account.
    if *source != accounts::ata(authority, mint, &ix.program) {
        return Err(malformed("the source is not the payer's associated token account"));
    }
    Ok((*authority, ix.program, amount))
}

/// The only account creation allowed: the recipient's associated token
/// account, idempotently, paid for by the payer (never the fee payer).
fn create_account(ix: &Ix, payer: &Key, want: &Expected, program: &Key) -> Result<(), ProofError> {
    let expected = spl_associated_token_account_interface::instruction::create_associated_token_account_idempotent(payer, &want.pay_to, &want.mint, program);
    let accounts: Vec<Key> = expected.accounts.iter().map(|a| a.pubkey).collect();
    if ix.accounts != accounts || ix.data != expected.data.as_slice() {
        return Err(malformed("the associated-token-account instruction is not the idempotent creation of the recipient's account, funded by the payer"));
    }
    Ok(())
}
