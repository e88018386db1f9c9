//! Solana helpers: keys in base58 (one spelling each), the token programs,
//! associated token accounts, and the Solana SDK's v0 message codec
//! (`solana_message`, re-exported) that exact-SVM payments are built from.
//!
//! ```
//! use stablerail_adapter_kit::solana::{ata, Key, Parse, TOKEN};
//! let owner = Key::parse("9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin").unwrap();
//! let mint = Key::parse("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v").unwrap();
//! let account = ata(&owner, &mint, &TOKEN);
//! assert_ne!(account, owner);
//! ```

pub use solana_message as message;
use solana_pubkey::{pubkey, Pubkey};

/// A Solana address (an ed25519 public key or a program-derived address).
pub type Key = Pubkey;

/// The SPL Token program.
pub const TOKEN: Pubkey = spl_token_interface::ID;
/// The Token-2022 program.
pub const TOKEN_2022: Pubkey = pubkey!("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb");
/// The associated token account program.
pub const ASSOCIATED_TOKEN: Pubkey = spl_associated_token_account_interface::program::ID;
pub const COMPUTE_BUDGET: Pubkey = pubkey!("ComputeBudget111111111111111111111111111111");
pub const MEMO: Pubkey = pubkey!("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
/// Lighthouse assertions, which wallets (e.g. Phantom) add to transactions.
pub const LIGHTHOUSE: Pubkey = pubkey!("L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95");

/// Parsing that accepts base58 of exactly 32 bytes and nothing else.
pub trait Parse: Sized {
    fn parse(text: &str) -> Option<Self>;
}

impl Parse for Pubkey {
    fn parse(text: &str) -> Option<Pubkey> {
        let bytes = bs58::decode(text).into_vec().ok()?;
        let key = Pubkey::try_from(bytes.as_slice()).ok()?;
        // One spelling per key: no leading-zero variants.
        (key.to_string() == text).then_some(key)
    }
}

/// Token or Token-2022.
pub fn is_token_program(program: &Pubkey) -> bool {
    *program == TOKEN || *program == TOKEN_2022
}

/// The associated token account of `owner` for `mint` under `program`.
pub fn ata(owner: &Pubkey, mint: &Pubkey, program: &Pubkey) -> Pubkey {
    spl_associated_token_account_interface::address::get_associated_token_address_with_program_id(owner, mint, program)
}
