/// `host/src/adapter/check.rs`
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

/// `host/src/adapter/new.rs`
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
