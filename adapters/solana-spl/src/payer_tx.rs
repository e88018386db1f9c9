//! A payer's transaction: decoded from the x402 payload and checked against
//! every rule of the exact-SVM scheme, offline. The signature check runs on
//! the host (`crypto.ed25519-verify`).

use base64::Engine as _;
use serde::Deserialize;
use solana_message::{v0, VersionedMessage};
use spl_token_interface::instruction::TokenInstruction;

use crate::accounts::{self, is_token_program, Key};
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
    /// The most the fee payer may spend on priority (price × limit), in
    /// micro-lamports: the operator's cap for this chain.
    pub max_priority_fee: u128,
    /// `extra.memo`: when the requirements carry one, the transaction has
    /// exactly one Memo instruction after the transfer, and it says this.
    pub memo: Option<String>,
}

/// Without an operator's cap: x402's price cap at the largest unit limit.
pub const DEFAULT_MAX_PRIORITY_FEE: u128 = MAX_COMPUTE_UNITS as u128 * MAX_PRICE_MICRO_LAMPORTS as u128;

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
struct Inner {
    transaction: String,
}

fn malformed(m: impl Into<String>) -> ProofError {
    ProofError::Malformed(m.into())
}

/// The x402 payload's transaction, once its `accepted` matches `req`.
pub fn decode_proof(proof: &str, req: &PaymentRequirements) -> Result<Tx, ProofError> {
    let inner: Inner = x402_wire::decode(proof, &crate::issued(req)).map_err(crate::refused)?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(inner.transaction.trim())
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

/// Check `tx` against every rule; `ed25519_verify(key, message, signature)`
/// is the host's (`crypto.ed25519-verify`) in the component.
pub fn check(tx: &Tx, want: &Expected, ed25519_verify: impl Fn(&[u8], &[u8], &[u8]) -> bool) -> Result<Checked, ProofError> {
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
    compute_budget(limit, price, want.max_priority_fee)?;
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
        return Err(ProofError::Unsupported(format!(
            "an instruction of program {}; after the transfer only Memo and Lighthouse are allowed",
            other.program
        )));
    }
    if let Some(text) = &want.memo {
        let memos: Vec<&Ix> = trailing.iter().filter(|ix| ix.program == accounts::MEMO).collect();
        let [memo] = memos.as_slice() else {
            return Err(ProofError::RequirementsMismatch(format!(
                "extra.memo asks for exactly one Memo instruction; the transaction has {}",
                memos.len()
            )));
        };
        if memo.data != text.as_bytes() {
            return Err(ProofError::RequirementsMismatch("the Memo instruction does not say extra.memo".into()));
        }
    }
    // Every signer but the fee payer has signed this very message.
    for (n, key) in keys.iter().enumerate().take(signers).skip(1) {
        if !ed25519_verify(key.as_ref(), &tx.message_bytes, &tx.signatures[n]) {
            let whose = if *key == payer { "the payer's" } else { "a signer's" };
            return Err(ProofError::InvalidSignature(format!("{whose} signature ({key}) does not verify over the message")));
        }
    }
    let slot = keys.iter().position(|k| *k == payer).expect("payer is a signer");
    Ok(Checked { payer, amount, replay_key: bs58::encode(tx.signatures[slot]).into_string(), blockhash: m.recent_blockhash.to_bytes() })
}

fn compute_budget(limit: &Ix, price: &Ix, max_priority_fee: u128) -> Result<(), ProofError> {
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
    // The fee payer pays price × limit whatever the transfer uses.
    let fee = u128::from(units) * u128::from(micro_lamports);
    if fee > max_priority_fee {
        return Err(malformed(format!("a priority fee of {fee} micro-lamports is above this chain's cap of {max_priority_fee}")));
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
    let expected = spl_associated_token_account_interface::instruction::create_associated_token_account_idempotent(
        payer,
        &want.pay_to,
        &want.mint,
        program,
    );
    let accounts: Vec<Key> = expected.accounts.iter().map(|a| a.pubkey).collect();
    if ix.accounts != accounts || ix.data != expected.data.as_slice() {
        return Err(malformed(
            "the associated-token-account instruction is not the idempotent creation of the recipient's account, funded by the payer",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::{Signer, SigningKey, Verifier};
    use solana_compute_budget_interface::ComputeBudgetInstruction;
    use solana_message::{legacy, AccountMeta, Hash, Instruction};

    use super::*;
    use crate::accounts::{ata, MEMO};
    use stablerail_adapter_kit::solana::{TOKEN, TOKEN_2022};

    struct Fixture {
        fee_payer: Key,
        payer: SigningKey,
        mint: Key,
        pay_to: Key,
    }

    fn key(k: &SigningKey) -> Key {
        Key::new_from_array(k.verifying_key().to_bytes())
    }

    fn fixture() -> Fixture {
        Fixture {
            fee_payer: key(&SigningKey::from_bytes(&[1; 32])),
            payer: SigningKey::from_bytes(&[2; 32]),
            mint: key(&SigningKey::from_bytes(&[3; 32])),
            pay_to: key(&SigningKey::from_bytes(&[4; 32])),
        }
    }

    fn expected(f: &Fixture) -> Expected {
        Expected {
            fee_payer: f.fee_payer,
            mint: f.mint,
            pay_to: f.pay_to,
            amount: 2_500_000,
            decimals: 6,
            max_priority_fee: DEFAULT_MAX_PRIORITY_FEE,
            memo: None,
        }
    }

    fn transfer(f: &Fixture, program: Key, authority: Key, amount: u64, to: Key) -> Instruction {
        Instruction {
            program_id: program,
            accounts: vec![
                AccountMeta::new(ata(&authority, &f.mint, &program), false),
                AccountMeta::new_readonly(f.mint, false),
                AccountMeta::new(to, false),
                AccountMeta::new_readonly(authority, true),
            ],
            data: TokenInstruction::TransferChecked { amount, decimals: 6 }.pack(),
        }
    }

    fn budget(units: u32, price: u64) -> Vec<Instruction> {
        vec![ComputeBudgetInstruction::set_compute_unit_limit(units), ComputeBudgetInstruction::set_compute_unit_price(price)]
    }

    fn memo(text: &str) -> Instruction {
        Instruction { program_id: MEMO, accounts: vec![], data: text.as_bytes().to_vec() }
    }

    /// What an x402 client sends: limit, price, TransferChecked, memo.
    fn payment(f: &Fixture, program: Key) -> Vec<Instruction> {
        let mut ixs = budget(20_000, 1);
        ixs.push(transfer(f, program, key(&f.payer), 2_500_000, ata(&f.pay_to, &f.mint, &program)));
        ixs.push(memo("0123456789abcdef"));
        ixs
    }

    fn wire(message: &VersionedMessage, signatures: &[[u8; 64]]) -> Vec<u8> {
        let mut raw = bincode::serialize(&solana_short_vec::ShortU16(signatures.len() as u16)).unwrap();
        signatures.iter().for_each(|s| raw.extend_from_slice(s));
        raw.extend_from_slice(&message.serialize());
        raw
    }

    /// The payer signs; the fee payer's slot stays empty.
    fn signed(f: &Fixture, ixs: &[Instruction]) -> Vec<u8> {
        let m = VersionedMessage::V0(v0::Message::try_compile(&f.fee_payer, ixs, &[], Hash::new_from_array([9; 32])).unwrap());
        let bytes = m.serialize();
        let signers = usize::from(m.header().num_required_signatures);
        let sigs: Vec<[u8; 64]> = (0..signers)
            .map(|n| if m.static_account_keys()[n] == key(&f.payer) { f.payer.sign(&bytes).to_bytes() } else { [0; 64] })
            .collect();
        wire(&m, &sigs)
    }

    fn verify(k: &[u8], m: &[u8], s: &[u8]) -> bool {
        let key = ed25519_dalek::VerifyingKey::from_bytes(k.try_into().unwrap()).unwrap();
        key.verify(m, &ed25519_dalek::Signature::from_slice(s).unwrap()).is_ok()
    }

    fn run(f: &Fixture, raw: Vec<u8>) -> Result<Checked, ProofError> {
        check(&parse(raw)?, &expected(f), verify)
    }

    #[test]
    fn accepts_what_an_x402_client_sends_on_token_and_token_2022() {
        let f = fixture();
        for program in [TOKEN, TOKEN_2022] {
            let raw = signed(&f, &payment(&f, program));
            let ok = run(&f, raw.clone()).unwrap();
            assert_eq!((ok.payer, ok.amount), (key(&f.payer), 2_500_000));
            let tx = parse(raw).unwrap();
            assert_eq!(ok.replay_key, bs58::encode(tx.signatures[1]).into_string(), "the payer's signature");
        }
    }

    #[test]
    fn refuses_the_wrong_amount_recipient_or_program_account() {
        let f = fixture();
        let mut ixs = payment(&f, TOKEN);
        ixs[2] = transfer(&f, TOKEN, key(&f.payer), 2_499_999, ata(&f.pay_to, &f.mint, &TOKEN));
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::WrongAmount(_))));
        // ATA of the Token program, but the instruction is Token-2022's.
        ixs[2] = transfer(&f, TOKEN_2022, key(&f.payer), 2_500_000, ata(&f.pay_to, &f.mint, &TOKEN));
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::WrongRecipient(_))));
        ixs[2] = transfer(&f, TOKEN, key(&f.payer), 2_500_000, f.pay_to);
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::WrongRecipient(_))), "the owner, not its token account");
    }

    #[test]
    fn caps_the_compute_budget() {
        let f = fixture();
        let mut ixs = payment(&f, TOKEN);
        ixs.splice(0..2, budget(MAX_COMPUTE_UNITS + 1, 1));
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::Malformed(m)) if m.contains("limit")));
        ixs.splice(0..2, budget(MAX_COMPUTE_UNITS, MAX_PRICE_MICRO_LAMPORTS + 1));
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::Malformed(m)) if m.contains("price")));
        ixs.splice(0..2, budget(MAX_COMPUTE_UNITS, MAX_PRICE_MICRO_LAMPORTS));
        assert!(run(&f, signed(&f, &ixs)).is_ok());
        ixs.remove(1);
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::Malformed(_))), "the price instruction is required");
    }

    #[test]
    fn caps_the_priority_fee_at_the_operators_limit() {
        let f = fixture();
        let mut ixs = payment(&f, TOKEN);
        let capped = Expected { max_priority_fee: 20_000 * 500, ..expected(&f) };
        let check = |ixs: &[Instruction]| super::check(&parse(signed(&f, ixs)).unwrap(), &capped, verify);
        ixs.splice(0..2, budget(20_000, 500));
        assert!(check(&ixs).is_ok(), "price × limit at the cap");
        ixs.splice(0..2, budget(20_000, 501));
        assert!(matches!(check(&ixs), Err(ProofError::Malformed(m)) if m.contains("priority fee")));
        ixs.splice(0..2, budget(20_001, 500));
        assert!(matches!(check(&ixs), Err(ProofError::Malformed(m)) if m.contains("priority fee")), "a higher limit counts too");
    }

    #[test]
    fn allows_only_memo_or_lighthouse_after_the_transfer() {
        let f = fixture();
        let mut ixs = payment(&f, TOKEN);
        ixs.extend([memo("a"), memo("b")]);
        assert!(run(&f, signed(&f, &ixs)).is_ok(), "three memos");
        ixs.push(memo("c"));
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::Malformed(_))), "four are too many");
        let mut ixs = payment(&f, TOKEN);
        ixs.push(Instruction { program_id: TOKEN, accounts: vec![AccountMeta::new(f.mint, false)], data: vec![9] });
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::Unsupported(_))));
    }

    /// As the reference facilitator: with `extra.memo`, exactly one Memo
    /// after the transfer, saying exactly that (byte for byte).
    #[test]
    fn holds_the_memo_to_extra_memo() {
        let f = fixture();
        let want = Expected { memo: Some("order-42".into()), ..expected(&f) };
        let with = |memos: &[&str]| {
            let mut ixs = payment(&f, TOKEN);
            ixs.truncate(3);
            ixs.extend(memos.iter().map(|m| memo(m)));
            let raw = signed(&f, &ixs);
            check(&parse(raw).unwrap(), &want, verify)
        };
        assert!(with(&["order-42"]).is_ok());
        let refused = |r: Result<Checked, ProofError>, why: &str| matches!(r, Err(ProofError::RequirementsMismatch(m)) if m.contains(why));
        assert!(refused(with(&[]), "exactly one"), "no memo");
        assert!(refused(with(&["order-42", "order-42"]), "exactly one"), "two memos");
        assert!(refused(with(&["order-43"]), "does not say"), "another memo");
        assert!(refused(with(&["Order-42"]), "does not say"), "case counts");
        // Without extra.memo any memo (the client's nonce) is fine.
        let mut ixs = payment(&f, TOKEN);
        ixs.truncate(3);
        ixs.push(memo("anything"));
        assert!(check(&parse(signed(&f, &ixs)).unwrap(), &expected(&f), verify).is_ok());
    }

    #[test]
    fn keeps_the_fee_payer_out_of_every_instruction() {
        let f = fixture();
        let mut ixs = payment(&f, TOKEN);
        ixs[2] = transfer(&f, TOKEN, f.fee_payer, 2_500_000, ata(&f.pay_to, &f.mint, &TOKEN));
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::RequirementsMismatch(_))), "the fee payer as authority");
        let mut ixs = payment(&f, TOKEN);
        ixs[3] = Instruction { program_id: MEMO, accounts: vec![AccountMeta::new_readonly(f.fee_payer, true)], data: b"x".to_vec() };
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::RequirementsMismatch(_))), "the fee payer in a memo");
    }

    #[test]
    fn takes_the_recipient_account_creation_funded_by_the_payer_only() {
        let f = fixture();
        let create = |funder: &Key| {
            spl_associated_token_account_interface::instruction::create_associated_token_account_idempotent(
                funder, &f.pay_to, &f.mint, &TOKEN,
            )
        };
        let mut ixs = payment(&f, TOKEN);
        ixs.insert(2, create(&key(&f.payer)));
        assert!(run(&f, signed(&f, &ixs)).is_ok());
        ixs[2] = create(&f.fee_payer);
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::RequirementsMismatch(_))), "never the fee payer's rent");
        let other = key(&SigningKey::from_bytes(&[5; 32]));
        ixs[2] = spl_associated_token_account_interface::instruction::create_associated_token_account_idempotent(
            &key(&f.payer),
            &other,
            &f.mint,
            &TOKEN,
        );
        assert!(matches!(run(&f, signed(&f, &ixs)), Err(ProofError::Malformed(_))), "another owner's account");
    }

    #[test]
    fn checks_the_signature_slots() {
        let f = fixture();
        let raw = signed(&f, &payment(&f, TOKEN));
        let mut tampered = raw.clone();
        let at = tampered.windows(16).position(|w| w == b"0123456789abcdef").unwrap();
        tampered[at] ^= 1; // a byte of the memo
        assert!(matches!(run(&f, tampered), Err(ProofError::InvalidSignature(_))));
        let mut filled = raw.clone();
        filled[1..65].copy_from_slice(&[7; 64]);
        assert!(matches!(run(&f, filled), Err(ProofError::Malformed(m)) if m.contains("fee payer")));
        let mut unsigned = raw.clone();
        unsigned[65..129].copy_from_slice(&[0; 64]);
        assert!(matches!(run(&f, unsigned), Err(ProofError::InvalidSignature(_))));
        let mut longer = raw;
        longer.push(0);
        assert!(matches!(run(&f, longer), Err(ProofError::Malformed(_))), "trailing bytes");
    }

    #[test]
    fn takes_version_0_only_and_the_right_fee_payer() {
        let f = fixture();
        let legacy = VersionedMessage::Legacy(legacy::Message::new(&payment(&f, TOKEN), Some(&f.fee_payer)));
        assert!(matches!(parse(wire(&legacy, &[[0; 64], [0; 64]])), Err(ProofError::Unsupported(_))));
        let other = Fixture { fee_payer: key(&SigningKey::from_bytes(&[6; 32])), ..fixture() };
        let raw = signed(&other, &payment(&other, TOKEN));
        assert!(matches!(run(&f, raw), Err(ProofError::RequirementsMismatch(m)) if m.contains("fee payer")));
    }
}
