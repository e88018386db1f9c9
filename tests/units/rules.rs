/// `crates/types/src/failure.rs`
mod failure {
    use stablerail::failure::*;
    use stablerail::payment::ProofError;

    #[test]
    fn codes_round_trip_and_are_distinct() {
        for f in Failure::ALL {
            assert_eq!(Failure::parse(f.code()), Some(f));
        }
        let mut codes: Vec<_> = Failure::ALL.iter().map(|f| f.code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), Failure::ALL.len());
    }

    #[test]
    fn chain_errors_never_reach_the_message() {
        let r = Reason::proof(&ProofError::ChainUnavailable("http://u:pw@node/?key=SECRET: refused".into()));
        assert_eq!(r.code, Failure::ChainUnavailable);
        assert!(!r.message.contains("SECRET"));
    }
}

/// `crates/types/src/sanctions.rs`
mod sanctions {
    use stablerail::sanctions::*;

    #[test]
    fn evm_case_insensitive_others_exact() {
        let dir = tempfile::tempdir().unwrap();
        let txt = dir.path().join("a.txt");
        std::fs::write(&txt, "# OFAC\n0xAbCdEf0000000000000000000000000000000001\nTR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t # usdt\n\n").unwrap();
        let json = dir.path().join("b.json");
        std::fs::write(&json, r#"["EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"]"#).unwrap();
        let l = SanctionsList::load(&[txt, json]).unwrap();
        assert_eq!(l.len(), 3);
        assert!(l.is_listed("0xabcdef0000000000000000000000000000000001"));
        assert!(l.is_listed("0xABCDEF0000000000000000000000000000000001"));
        assert!(l.is_listed("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"));
        assert!(!l.is_listed("tr7nhqjekqxgtci8q8zy4pl8otszgjlj6t"));
        assert!(l.is_listed("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"));
        assert!(!l.is_listed("0x0000000000000000000000000000000000000001"));
    }
}

/// `crates/types/src/intent/fees.rs`
mod fees {
    use rust_decimal::Decimal;
    use stablerail::intent::fees::*;
    use stablerail::intent::AmountMode;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn grammar_and_bounds() {
        assert_eq!(parse_amount("0.02"), Ok(d("0.02")));
        assert_eq!(parse_amount("1000000"), Ok(d("1000000")));
        assert_eq!(parse_amount("1.123456"), Ok(d("1.123456")));
        assert_eq!(parse_amount("0.019999"), Err(AmountError::Range));
        assert_eq!(parse_amount("1000000.000001"), Err(AmountError::Range));
        for bad in ["", ".5", "1.", "1.1234567", "-1", "1e3", "1,5", " 1", "0x10", "+1"] {
            assert_eq!(parse_amount(bad), Err(AmountError::Format), "{bad:?}");
        }
    }

    #[test]
    fn exact_out_and_exact_in_agree() {
        let out = quote(AmountMode::ExactOut, d("100"), d("0.01"), d("0.02"), d("0.3")).unwrap();
        assert_eq!(out.receiving, d("100"));
        assert_eq!(out.platform_fee, d("0.3"));
        assert_eq!(out.total_fee, d("0.33"));
        assert_eq!(out.sending, d("100.33"));
        let back = quote(AmountMode::ExactIn, out.sending, d("0.01"), d("0.02"), d("0.3")).unwrap();
        assert_eq!(back, out);
    }

    #[test]
    fn rounding_never_loses_a_unit() {
        let q = quote(AmountMode::ExactIn, d("1"), d("0.01"), d("0.01"), d("0.3")).unwrap();
        assert_eq!(q.sending, d("1"));
        assert_eq!(q.receiving + q.total_fee, q.sending);
        assert!(q.receiving.scale() <= 6);
        let q = quote(AmountMode::ExactOut, d("0.02"), d("0"), d("0"), d("0.3")).unwrap();
        assert_eq!(q.platform_fee, d("0.00006"));
        assert_eq!(quote(AmountMode::ExactIn, d("0.02"), d("0.01"), d("0.01"), d("0")), Err(AmountError::BelowFees));
    }
}

/// `host/src/output.rs`
mod output {
    use serde_json::json;

    #[test]
    fn rows_become_aligned_columns() {
        let t = stablerail::output::table(&json!([{"id": "a", "n": 1}, {"id": "bbb", "extra": null}]));
        assert_eq!(t, "ID   N  EXTRA\na    1  -\nbbb  -  -\n");
    }

    #[test]
    fn an_object_becomes_key_value_lines() {
        assert_eq!(stablerail::output::table(&json!({"agent_id": "x", "n": 2})), "agent_id  x\nn         2\n");
    }
}
