//! Associated token accounts: the token account a wallet holds a mint in,
//! at the address the Associated Token Account program derives.
//! Written here rather than taken from `spl-associated-token-account-interface`:
//! it brought a second generation of the Solana crates into the build.

use solana_pubkey::Pubkey;

/// The Associated Token Account program.
pub const PROGRAM: &str = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";

/// `owner`'s associated token account for `mint` under `token_program`
/// (Token or Token-2022): the program address of (owner, token program, mint).
pub fn address(owner: &Pubkey, mint: &Pubkey, token_program: &Pubkey) -> Pubkey {
    const ID: Pubkey = Pubkey::from_str_const(PROGRAM);
    Pubkey::find_program_address(&[owner.as_ref(), token_program.as_ref(), mint.as_ref()], &ID).0
}
