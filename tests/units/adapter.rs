/// `host/src/cli/adapter_check.rs`
mod check {
    use serde_json::json;

    #[test]
    fn a_flipped_signature_differs_in_one_character_and_stays_in_its_alphabet() {
        let p = json!({"payload": {"signature": "0x00ff"}});
        let f = stablerail::cli::adapter_check::flip_signature(&p, "/payload/signature", None).unwrap();
        assert_eq!(f["payload"]["signature"], "0xa0ff");
        assert!(stablerail::cli::adapter_check::flip_signature(&p, "/payload/nothing", None).is_none());
        // In base64 bytes: one bit of the range's middle byte.
        let p = json!({"payload": {"transaction": "AAAAAA=="}});
        let f = stablerail::cli::adapter_check::flip_signature(&p, "/payload/transaction", Some([1, 4])).unwrap();
        assert_eq!(f["payload"]["transaction"], "AAABAA==", "byte 2 of [1, 4)");
        assert!(stablerail::cli::adapter_check::flip_signature(&p, "/payload/transaction", Some([3, 9])).is_none(), "past the end");
    }

    #[test]
    fn refusals_read_as_the_wit_names_them() {
        assert_eq!(stablerail::cli::adapter_check::refusal(&stablerail::payment::ProofError::NotYetValid), "not-yet-valid");
        assert_eq!(
            stablerail::cli::adapter_check::refusal(&stablerail::payment::ProofError::WrongAmount("1 != 2".into())),
            "wrong-amount: 1 != 2"
        );
    }
}

/// `host/src/cli/adapter_new.rs`
mod new {
    use stablerail::cli::adapter_new::*;
    use stablerail::config::Family;

    #[test]
    fn the_skeletons_are_the_shipped_adapters_renamed() {
        for skeleton in [&EVM, &TRON, &SOLANA] {
            let src = source("my-scheme", skeleton, skeleton.sources[0].1, true);
            assert_eq!(src.matches("\"my-scheme\".into()").count(), 2, "name and scheme renamed");
            assert!(!src.contains(&format!("\"{}\"", skeleton.shipped)) && !src.contains("cfg(feature = \"export\")"));
            assert!(src.contains("stablerail_adapter_kit::export!("));
            let v = vectors("my-scheme", skeleton);
            assert_eq!(serde_json::from_str::<serde_json::Value>(&v).unwrap()["scheme"], "my-scheme");
        }
        // Every rewrite finds its text once in the shipped sources.
        for (from, _) in SOLANA.rewrites {
            let found: usize = SOLANA.sources.iter().map(|(_, text)| text.matches(from).count()).sum();
            assert_eq!(found, 1, "{from}");
        }
        // The TRON adapter's sibling crates come from beside the kit.
        let m = manifest("t", &TRON, &Source::Path("/k/adapters/kit".into()));
        assert!(m.contains("tron-wire = { path = \"/k/adapters/tron-wire\" }"), "{m}");
    }

    #[test]
    fn names_and_families_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(write("My_Scheme", Family::Evm, dir.path(), None), Err(NewError::Name(_))));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
/// `crates/adapter-host/src/adapter/wit/v0_6.rs`
mod v0_6 {
    use alloy_primitives::{Address, U256};
    use alloy_sol_types::Eip712Domain;
    use stablerail::adapter::wit::types;
    use stablerail::adapter::wit::v0_6::stablerail::adapter0_6_0::types as wit6;
    use stablerail::adapter::wit::v0_6::{decode, domain_separator};

    const FROM: &str = "0x857b06519E91e3A54538791bDbb0E22373e36b66";
    const TO: &str = "0x209693bc6afc0c5328ba36faf03c514ef312287c";

    fn proof(auth: serde_json::Value) -> String {
        serde_json::json!({
            "x402Version": 2,
            "accepted": { "scheme": "exact", "network": "eip155:8453", "amount": "10", "asset": TO, "payTo": TO, "maxTimeoutSeconds": 60 },
            "payload": { "signature": "0x0102", "authorization": auth },
        })
        .to_string()
    }

    fn auth(from: &str, value: &str, nonce: &str) -> serde_json::Value {
        serde_json::json!({ "from": from, "to": TO, "value": value, "validAfter": "0", "validBefore": "99", "nonce": nonce })
    }

    const NONCE: &str = "0x0000000000000000000000000000000000000000000000000000000000000007";

    #[test]
    fn a_well_formed_eip3009_proof_is_typed() {
        let d = decode(&proof(auth(FROM, "10", NONCE))).unwrap();
        assert_eq!((d.x402_version, d.accepted.pay_to.as_str(), d.accepted.extra.as_str()), (2, TO, "null"));
        let wit6::ProofPayload::Eip3009(a) = d.payload else { panic!("not typed") };
        assert_eq!(a.from, FROM.parse::<Address>().unwrap().to_vec());
        assert_eq!((a.value, a.valid_before, a.signature), ((0, 0, 0, 10), (0, 0, 0, 99), vec![1, 2]));
        assert_eq!(a.nonce[31], 7);
    }

    #[test]
    fn what_the_kit_would_refuse_is_left_to_the_adapter() {
        let bad_checksum = FROM.replace('E', "e").replacen('b', "B", 1);
        for auth in [auth(&bad_checksum, "10", NONCE), auth(FROM, "-1", NONCE), auth(FROM, "1e3", NONCE), auth(FROM, "10", "0x07")] {
            let d = decode(&proof(auth.clone())).unwrap();
            assert!(matches!(d.payload, wit6::ProofPayload::Other), "{auth}");
        }
        let too_big = "1".repeat(80);
        assert!(matches!(decode(&proof(auth(FROM, &too_big, NONCE))).unwrap().payload, wit6::ProofPayload::Other));
        // An envelope the kit cannot decode is not decoded at all.
        assert!(decode(r#"{"x402Version":"2","accepted":{},"payload":{}}"#).is_none());
        assert!(decode(r#"{"x402Version":2,"x402Version":2,"accepted":{},"payload":{}}"#).is_none());
        // Another scheme's payload: the envelope only.
        let other = r#"{"x402Version":2,"accepted":{"scheme":"exact","network":"n","amount":"1","asset":"a","payTo":"b","maxTimeoutSeconds":1},"payload":{"transaction":"AA=="}}"#;
        assert!(matches!(decode(other).unwrap().payload, wit6::ProofPayload::Other));
    }

    #[test]
    fn the_separator_is_alloys_for_both_shapes() {
        let ctx = |domain| types::AssetContext {
            chain: "base".into(),
            network: "eip155:8453".into(),
            family: types::Family::Evm,
            chain_id: Some(8453),
            asset: "usdc".into(),
            token: TO.into(),
            decimals: 6,
            eip712_name: Some("USD Coin".into()),
            eip712_version: Some("2".into()),
            domain,
            params: vec![],
        };
        let (token, id) = (TO.parse::<Address>().unwrap(), U256::from(8453));
        let standard = Eip712Domain::new(Some("USD Coin".into()), Some("2".into()), Some(id), Some(token), None);
        assert_eq!(domain_separator(&ctx(types::DomainKind::Standard)), Some(standard.separator().0));
        let salted = Eip712Domain::new(Some("USD Coin".into()), Some("2".into()), None, Some(token), Some(id.into()));
        assert_eq!(domain_separator(&ctx(types::DomainKind::Salted)), Some(salted.separator().0));
        assert_eq!(domain_separator(&ctx(types::DomainKind::None)), None);
    }
}
