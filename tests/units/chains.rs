/// `crates/chain/src/chain.rs`
mod chain {
    use stablerail::family::chain::redact_url;

    #[test]
    fn urls_lose_keys_and_credentials() {
        assert_eq!(redact_url("https://base-mainnet.g.example.com/v2/SECRET_KEY"), "https://base-mainnet.g.example.com/…");
        assert_eq!(redact_url("https://user:pw@rpc.example.org:8545/?apikey=SECRET"), "https://rpc.example.org:8545/…");
        assert_eq!(redact_url("http://127.0.0.1:8545"), "http://127.0.0.1:8545");
        assert_eq!(redact_url("not a url SECRET"), "<unparseable url>");
    }
}

/// `crates/evm/src/tx.rs`
mod tx {
    use stablerail::family::evm::tx::{node_says, NodeSays};

    #[test]
    fn node_answers_are_classified_once() {
        // anvil, geth, reth, erigon and nethermind wordings
        assert_eq!(node_says(-32003, "transaction already imported"), NodeSays::Known);
        assert_eq!(node_says(-32000, "already known"), NodeSays::Known);
        assert_eq!(node_says(-32010, "AlreadyKnown"), NodeSays::Known);
        assert_eq!(node_says(-32000, "nonce too low: next nonce 5, tx nonce 4"), NodeSays::NonceTaken);
        assert_eq!(node_says(-32000, "OldNonce"), NodeSays::NonceTaken);
        assert_eq!(node_says(-32000, "replacement transaction underpriced"), NodeSays::Occupied);
        assert_eq!(node_says(-32000, "insufficient funds for gas * price + value"), NodeSays::Unfunded);
        assert_eq!(node_says(3, "execution reverted: FiatToken: insufficient"), NodeSays::Reverts);
        assert_eq!(node_says(-32000, "max fee per gas less than block base fee"), NodeSays::Other);
    }
}

/// `crates/solana/src/wire.rs`
mod wire {
    use stablerail::family::solana::wire::*;

    /// One signature slot; a v0 message with two keys.
    fn sample() -> Vec<u8> {
        let mut raw = vec![1u8];
        raw.extend([0u8; 64]);
        raw.push(0x80); // v0
        raw.extend([1, 0, 1]); // header
        raw.push(2);
        raw.extend([7u8; 32]);
        raw.extend([8u8; 32]);
        raw.extend([9u8; 32]); // blockhash
        raw.extend([0, 0]); // no instructions, no lookups
        raw
    }

    #[test]
    fn finds_signatures_keys_and_blockhash() {
        let raw = sample();
        let w = Wire::parse(&raw).unwrap();
        assert_eq!(w.slots, 1);
        assert_eq!(w.signature_range(0), 1..65);
        assert_eq!(w.account_keys().unwrap(), vec![[7u8; 32], [8u8; 32]]);
        assert_eq!(w.blockhash(), Some([9u8; 32]));
        assert_eq!(w.message()[0], 0x80);
        assert!(Wire::parse(&raw[..100]).is_none(), "cut short");
        assert!(Wire::parse(&[0u8]).is_none(), "no signature slot");
        assert_eq!(shortvec(&[0x80, 0x01], 0), Some((128, 2)));
    }
}

/// `crates/engine/src/wallets.rs`
mod wallets {
    use alloy_primitives::U256;
    use stablerail::wallets::*;

    #[test]
    fn display_is_exact() {
        assert_eq!(display(U256::from(0u8), 6), "0");
        assert_eq!(display(U256::from(1_500_000u64), 6), "1.5");
        assert_eq!(display(U256::from(1u8), 18), "0.000000000000000001");
        assert_eq!(display(U256::from(10u64).pow(U256::from(24u8)), 18), "1000000");
    }
}
