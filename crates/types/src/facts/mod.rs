//! What the host knows of a chain family apart from its driver: names,
//! address and transaction-id forms, the key kind, the node's read-only
//! methods, how a node says which chain it is on. Each family's file
//! here holds its own `FACTS`; the rest of the host asks `Family::facts`
//! instead of matching on the family.

use alloy_primitives::Address;

use crate::config::{Chain, Family};
use crate::payment::SigningRequest;

pub mod evm;
pub mod solana;
pub mod tron;

/// Every family this build has.
pub const ALL: [Family; 3] = [Family::Evm, Family::Solana, Family::Tron];

impl Family {
    /// The family's facts: the one place the host asks what differs.
    pub fn facts(self) -> &'static Facts {
        match self {
            Family::Evm => &evm::FACTS,
            Family::Solana => &solana::FACTS,
            Family::Tron => &tron::FACTS,
        }
    }

    /// The family named `name` (`evm`, `solana`, `tron`).
    pub fn named(name: &str) -> Option<Family> {
        ALL.into_iter().find(|f| f.facts().name == name)
    }
}

/// What a wallet's secret is, by family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// EVM and TRON.
    Secp256k1,
    /// Solana.
    Ed25519,
}

impl KeyKind {
    pub fn of(family: Family) -> KeyKind {
        family.facts().key_kind
    }
}

pub struct Facts {
    pub family: Family,
    /// Its name in key names, adapter manifests and the CLI.
    pub name: &'static str,
    /// The CAIP-2 namespace of its networks (`eip155`, `solana`, `tron`).
    pub caip2_namespace: &'static str,
    /// `chain_type` in the balances view (the spec's `ethereum`, …).
    pub chain_type: &'static str,
    pub key_kind: KeyKind,
    /// Nobody's address, in its canonical form first: it cannot receive a
    /// payout, and token lists name the native coin by it.
    pub zero_addresses: &'static [&'static str],
    /// The read-only node methods an adapter of this family may call.
    pub reads: &'static [&'static str],
    /// Do `0x` hex addresses compare without regard to case?
    pub hex_addresses: bool,
    /// Are addresses and transaction ids stored lowercase (EVM hex)?
    pub lowercase_ids: bool,
    /// Does a payee need an account opened for a token (Solana's ATA)?
    pub opens_accounts: bool,
    /// Is an x402 payload checkable offline until it expires, so that only
    /// the ledger can answer its success once (a Solana transaction)?
    pub payload_answers_once: bool,
    /// Is the facilitator's fee payer named in the x402 requirements' `extra`?
    pub x402_fee_payer: bool,
    /// Does x402 sponsor its Permit2 approvals (the `eip2612GasSponsoring`
    /// and `erc20ApprovalGasSponsoring` extensions)?
    pub x402_gas_sponsoring: bool,
    /// Does a hosted wallet approve a spender before it can pay (TRON's
    /// Permit2 proxy), through `/v2/agents/tron-approve`?
    pub wallet_approves: bool,
    /// How routers and token lists name the native coin (never approved).
    pub native_tokens: &'static [&'static str],
    /// A strict check of an account or token address's text.
    pub(crate) is_address: fn(&str) -> bool,
    /// A 20-byte account address, for families that have them.
    pub(crate) address20: fn(&str) -> Option<Address>,
    /// An address's text from its bytes (a 20-byte hash or a 32-byte key).
    pub(crate) show_address: fn(&[u8]) -> String,
    /// Is `request` what a wallet of this family signs (in the current
    /// adapter interface)?
    pub(crate) signs: fn(&SigningRequest) -> bool,
    /// A strict check of a transaction id's text.
    pub(crate) is_tx_id: fn(&str) -> bool,
    /// What the node's identity probe must answer for `chain`, if it has one.
    pub(crate) identity: fn(&Chain) -> Option<String>,
}

impl Facts {
    /// Two addresses (or token ids) of this family are the same.
    pub fn same_address(&self, a: &str, b: &str) -> bool {
        if self.hex_addresses && (a.starts_with("0x") || b.starts_with("0x")) {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    }

    /// The form an address or transaction id is stored and compared in.
    pub fn canonical(&self, text: &str) -> String {
        if self.lowercase_ids {
            text.to_ascii_lowercase()
        } else {
            text.to_string()
        }
    }

    /// Is `address` nobody's (in any of its forms)?
    pub fn is_zero(&self, address: &str) -> bool {
        self.zero_addresses.iter().any(|z| self.same_address(z, address))
    }

    /// A strict check of an account or token address's text.
    pub fn is_address(&self, text: &str) -> bool {
        (self.is_address)(text)
    }

    /// A 20-byte account address (EVM hex, TRON base58check); `None` for
    /// families without them.
    pub fn address20(&self, text: &str) -> Option<Address> {
        (self.address20)(text)
    }

    /// An address's text from its bytes (a 20-byte hash or a 32-byte key).
    pub fn show_address(&self, bytes: &[u8]) -> String {
        (self.show_address)(bytes)
    }

    /// Is `request` what a wallet of this family signs?
    pub fn signs(&self, request: &SigningRequest) -> bool {
        (self.signs)(request)
    }

    /// A strict check of a transaction id's text.
    pub fn is_tx_id(&self, text: &str) -> bool {
        (self.is_tx_id)(text)
    }

    /// What the node's identity probe must answer for `chain`, if it has one.
    pub fn identity(&self, chain: &Chain) -> Option<String> {
        (self.identity)(chain)
    }

    /// Is `token` the native coin, as a router names it?
    pub fn is_native(&self, token: &Address) -> bool {
        self.native_tokens.iter().any(|t| self.address20(t).as_ref() == Some(token))
    }

    /// Do two spellings name the same account (20-byte addresses compare
    /// as bytes; others as text)?
    pub fn same_account(&self, a: &str, b: &str) -> bool {
        match (self.address20(a), self.address20(b)) {
            (Some(x), Some(y)) => x == y,
            (None, None) => a == b,
            _ => false,
        }
    }

    /// The canonical zero address.
    pub fn zero_address(&self) -> &'static str {
        self.zero_addresses[0]
    }
}

/// `0x` followed by `digits` hex digits.
pub(crate) fn is_hex(text: &str, digits: usize) -> bool {
    text.strip_prefix("0x").is_some_and(|h| h.len() == digits && h.bytes().all(|b| b.is_ascii_hexdigit()))
}
