//! Transactions a host-held wallet sends: the relayer pays the fee, the
//! sender signs the transfer (and pays the recipient's account rent when it
//! has no token account yet).

use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_message::{v0, AccountMeta, Hash, Instruction, VersionedMessage};
use spl_token_interface::instruction::TokenInstruction;

use crate::accounts::{self, Key, Parse};
use crate::chain;
use crate::stablerail::adapter0_1_0::types::{AdapterError, Transfer};
use crate::stablerail::adapter0_3_0::types::AssetContext;
use crate::units;

/// chains.toml key: priority fee in micro-lamports per compute unit.
pub const PRICE_KEY: &str = "compute-unit-price";
const DEFAULT_PRICE: u64 = 1_000;
/// Units for the budget, the transfer and its memo; more when the
/// recipient's account is created too.
const UNITS: u32 = 30_000;
const UNITS_WITH_CREATE: u32 = 70_000;

/// A transfer from a host-held wallet, resolved against the chain.
pub struct Plan {
    fee_payer: Key,
    sender: Key,
    recipient: Key,
    mint: Key,
    program: Key,
    amount: u64,
    decimals: u8,
    create: bool,
    price: u64,
    /// Makes two equal payouts in one slot two transactions.
    memo: String,
}

fn address(text: &str) -> Result<Key, AdapterError> {
    Key::parse(text).ok_or_else(|| AdapterError::InvalidAddress(text.to_string()))
}

impl Plan {
    pub fn new(ctx: &AssetContext, t: &Transfer, fee_payer: Key, mint: Key) -> Result<Plan, AdapterError> {
        let (sender, recipient) = (address(&t.sender)?, address(&t.recipient)?);
        if sender == fee_payer {
            return Err(AdapterError::Unsupported("the relayer does not send transfers itself".into()));
        }
        let amount = units::parse(&t.amount).map_err(AdapterError::InvalidAmount)?;
        let price = match ctx.params.iter().find(|(k, _)| k == PRICE_KEY) {
            Some((_, v)) => v.parse().map_err(|_| AdapterError::Config(format!("{PRICE_KEY} `{v}` is not an integer")))?,
            None => DEFAULT_PRICE,
        };
        let program = chain::token_program(&mint)?;
        let create = !chain::exists(&accounts::ata(&recipient, &mint, &program))?;
        let memo = t.nonce.iter().take(16).map(|b| format!("{b:02x}")).collect();
        Ok(Plan { fee_payer, sender, recipient, mint, program, amount, decimals: ctx.decimals, create, price, memo })
    }

    fn instructions(&self) -> Vec<Instruction> {
        let source = accounts::ata(&self.sender, &self.mint, &self.program);
        let destination = accounts::ata(&self.recipient, &self.mint, &self.program);
        let mut ixs = vec![
            ComputeBudgetInstruction::set_compute_unit_limit(if self.create { UNITS_WITH_CREATE } else { UNITS }),
            ComputeBudgetInstruction::set_compute_unit_price(self.price),
        ];
        if self.create {
            ixs.push(spl_associated_token_account_interface::instruction::create_associated_token_account_idempotent(
                &self.sender,
                &self.recipient,
                &self.mint,
                &self.program,
            ));
        }
        ixs.push(Instruction {
            program_id: self.program,
            accounts: vec![
                AccountMeta::new(source, false),
                AccountMeta::new_readonly(self.mint, false),
                AccountMeta::new(destination, false),
                AccountMeta::new_readonly(self.sender, true),
            ],
            data: TokenInstruction::TransferChecked { amount: self.amount, decimals: self.decimals }.pack(),
        });
        ixs.push(Instruction { program_id: accounts::MEMO, accounts: vec![], data: self.memo.clone().into_bytes() });
        ixs
    }

    /// The v0 message, on the chain's latest blockhash, that the sender signs.
    pub fn message(&self) -> Result<Vec<u8>, AdapterError> {
        let blockhash = Hash::new_from_array(chain::latest_blockhash()?);
        let m = v0::Message::try_compile(&self.fee_payer, &self.instructions(), &[], blockhash)
            .map_err(|e| AdapterError::Malformed(format!("message does not compile: {e}")))?;
        Ok(VersionedMessage::V0(m).serialize())
    }
}

/// Wire bytes of `message` with the sender's signature in its slot and the
/// fee payer's slot (and any other) empty.
pub fn signed(message: &[u8], sender: &Key, signature: &[u8]) -> Result<Vec<u8>, AdapterError> {
    let bad = |m: &str| AdapterError::Malformed(m.to_string());
    let m: VersionedMessage = bincode::deserialize(message).map_err(|_| bad("the signed message does not decode"))?;
    if signature.len() != 64 {
        return Err(bad("an ed25519 signature is 64 bytes"));
    }
    let signers = usize::from(m.header().num_required_signatures);
    let slot = m.static_account_keys()[..signers]
        .iter()
        .position(|k| k == sender)
        .ok_or_else(|| bad("the sender is not a signer of the message"))?;
    let mut raw = bincode::serialize(&solana_short_vec::ShortU16(signers as u16)).map_err(|_| bad("signature count"))?;
    for n in 0..signers {
        raw.extend_from_slice(if n == slot { signature } else { &[0u8; 64] });
    }
    raw.extend_from_slice(message);
    Ok(raw)
}
