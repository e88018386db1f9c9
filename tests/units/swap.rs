/// `crates/engine/src/swap/mod.rs`: a request's inputs.
mod inputs {
    use stablerail::config::Family;
    use stablerail::swap::*;

    #[test]
    fn amounts_and_slippage() {
        assert_eq!(amount("15").unwrap(), 15);
        for bad in ["0", "-1", "1.5", "", "+3", "99999999999999999999"] {
            assert!(matches!(amount(bad), Err(SwapError::InvalidAmount)), "{bad}");
        }
        assert_eq!(slippage(None).unwrap(), 50);
        assert_eq!(slippage(Some("500")).unwrap(), 500);
        assert!(matches!(slippage(Some("501")), Err(SwapError::Slippage)));
        assert!(matches!(slippage(Some("70000")), Err(SwapError::Slippage)));
        assert!(matches!(slippage(Some("x")), Err(SwapError::Invalid(_))));
    }

    /// Through the family registry (`crates/types/src/facts/*.rs`), which the swap code asks.
    #[test]
    fn addresses_and_hashes_by_family() {
        let valid_address = |f: Family, t: &str| f.facts().is_address(t);
        let valid_tx_hash = |f: Family, t: &str| f.facts().is_tx_id(t);
        assert!(valid_address(Family::Evm, "0x1111111111111111111111111111111111111111"));
        assert!(!valid_address(Family::Evm, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"));
        assert!(valid_address(Family::Tron, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"));
        assert!(valid_address(Family::Solana, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"));
        assert!(valid_tx_hash(Family::Evm, &format!("0x{}", "ab".repeat(32))));
        assert!(!valid_tx_hash(Family::Evm, &"ab".repeat(32)));
        assert!(valid_tx_hash(Family::Tron, &"ab".repeat(32)));
    }
}

/// `crates/engine/src/swap/lifi.rs`
mod lifi {
    use serde_json::json;
    use stablerail::swap::lifi::*;

    #[test]
    fn liquidity_is_read_from_the_tool_errors() {
        let flat = json!([{ "errorType": "NO_QUOTE", "code": "INSUFFICIENT_LIQUIDITY", "tool": "x" }]);
        let nested = json!({ "failed": [{ "subpaths": { "a": [{ "errorType": "NO_QUOTE", "code": "INSUFFICIENT_LIQUIDITY" }] } }] });
        assert!(names_insufficient_liquidity(Some(&flat)) && names_insufficient_liquidity(Some(&nested)));
        assert!(!names_insufficient_liquidity(Some(&json!([{ "code": "TOOL_TIMEOUT" }]))));
        assert!(!names_insufficient_liquidity(None));
    }
}

/// `crates/engine/src/swap/tracker.rs`
mod tracker {
    use serde_json::json;
    use stablerail::family::solana::credited as solana_received;

    #[test]
    fn solana_credit_is_post_minus_pre_for_the_owner_and_mint() {
        let balance = |i: u64, mint: &str, owner: &str, amount: &str| json!({ "accountIndex": i, "mint": mint, "owner": owner, "uiTokenAmount": { "amount": amount } });
        let tx = json!({ "meta": {
            "preTokenBalances": [balance(1, "USDT", "me", "5"), balance(2, "USDC", "me", "100"), balance(3, "USDT", "pool", "900")],
            // Account 4 was created by the transaction: no pre balance.
            "postTokenBalances": [balance(1, "USDT", "me", "12"), balance(2, "USDC", "me", "90"), balance(3, "USDT", "pool", "893"), balance(4, "USDT", "me", "3")],
        }});
        assert_eq!(solana_received(&tx, "USDT", "me"), Some(10));
        assert_eq!(solana_received(&tx, "USDC", "me"), Some(0));
        assert_eq!(solana_received(&tx, "USDT", "someone"), Some(0));
    }
}

/// `crates/engine/src/swap/execute.rs`
mod execute {
    use stablerail::swap::execute::*;
    use tron_wire::raw::{trigger, Reference};

    #[test]
    fn a_tron_call_is_signed_only_for_its_owner_contract_and_time() {
        let (me, bridge, other) =
            ("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8", "TXLAQ63Xg1NAzckPwKHvzw7CSEmLMEqcdj");
        let raw = |owner: &str, contract: &str| {
            let a = |t: &str| tron_wire::address::raw(&tron_wire::address::parse(t).unwrap());
            trigger(
                a(owner),
                a(contract),
                vec![1, 2, 3, 4],
                &Reference { number: 7, block_id: [9; 32], timestamp_ms: 0 },
                1_000,
                61_000,
                50_000_000,
            )
        };
        assert_eq!(tron_call(&raw(me, bridge), me, bridge, 0, 2_000), Ok(()));
        assert_eq!(tron_call(&raw(other, bridge), me, bridge, 0, 2_000), Err("its owner is not the wallet"));
        assert_eq!(tron_call(&raw(me, other), me, bridge, 0, 2_000), Err("it calls another contract than the route's"));
        assert_eq!(tron_call(&raw(me, bridge), me, bridge, 5, 2_000), Err("it sends another amount of TRX along"));
        assert_eq!(tron_call(&raw(me, bridge), me, bridge, 0, 61_000), Err("it has expired"));
        assert!(tron_call(&[0xff, 0x00], me, bridge, 0, 2_000).is_err(), "not a transaction");
    }
}

/// `crates/engine/src/swap/cache.rs`
mod cache {
    use stablerail::swap::cache::*;
    use stablerail::swap::SwapError;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn one_fetch_for_many_concurrent_misses_and_stale_on_failure() {
        let cache = Arc::new(Cache::new(Duration::from_millis(200)));
        let calls = Arc::new(AtomicUsize::new(0));
        let fetch = |calls: Arc<AtomicUsize>| async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<Body, SwapError>(Arc::from(&b"[1]"[..]))
        };
        let all: Vec<_> = (0..20)
            .map(|_| {
                let (cache, calls) = (cache.clone(), calls.clone());
                tokio::spawn(async move { cache.get("k", || fetch(calls)).await.unwrap() })
            })
            .collect();
        for h in all {
            assert_eq!(&*h.await.unwrap(), b"[1]");
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "twenty concurrent misses, one upstream call");
        tokio::time::sleep(Duration::from_millis(250)).await;
        let stale = cache.get("k", || async { Err(SwapError::Unavailable("down".into())) }).await.unwrap();
        assert_eq!(&*stale, b"[1]", "expired but the provider is down: the last answer");
        assert!(cache.get("other", || async { Err(SwapError::Unavailable("down".into())) }).await.is_err());
    }
}
