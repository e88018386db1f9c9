/// `crates/engine/src/x402/reason.rs`
mod reason {
    use stablerail::x402::reason::*;

    #[test]
    fn every_code_reads_back_to_a_reason_with_the_same_code_and_sentence() {
        for r in Reason::all() {
            let back = parse(r.code()).unwrap();
            assert_eq!(back.code(), r.code());
            assert!(!r.message().is_empty());
        }
        assert_eq!(parse("no_such_code"), None);
    }
}

/// `crates/engine/src/x402/finished.rs`
mod finished {
    use stablerail::x402::finished::*;

    #[tokio::test]
    async fn a_finish_between_the_read_and_the_wait_is_not_missed_and_nothing_is_kept() {
        let f = Finished::default();
        let signal = f.signal("xs_1");
        {
            let notified = signal.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // The worker finishes after the waiter read "queued", before it waits.
            f.finish("xs_1");
            tokio::time::timeout(std::time::Duration::from_secs(1), notified).await.expect("woken");
        }
        f.leave("xs_1", signal);
        assert!(f.is_empty());
        // A waiter that times out leaves nothing behind either.
        let s = f.signal("xs_2");
        f.leave("xs_2", s);
        assert!(f.is_empty());
    }
}

/// `crates/engine/src/x402/v1.rs`
mod v1 {
    use serde_json::json;
    use stablerail::x402::reason::Reason;
    use stablerail::x402::v1::*;

    #[test]
    fn a_v1_body_becomes_its_v2_form() {
        let req = json!({ "scheme": "exact", "network": "base", "maxAmountRequired": "10000", "resource": "http://shop/r",
            "description": "", "payTo": "0xabc", "maxTimeoutSeconds": 300, "asset": "0xdef", "extra": { "name": "USD Coin" } });
        let payload = json!({ "x402Version": 1, "scheme": "exact", "network": "base", "payload": { "signature": "0x1" } });
        let (p, r) = upgrade(&payload, &req).unwrap();
        assert_eq!(r["network"], "eip155:8453");
        assert_eq!(r["amount"], "10000");
        assert_eq!(p["accepted"], r);
        assert_eq!(p["payload"]["signature"], "0x1");
        let other = json!({ "x402Version": 1, "scheme": "exact", "network": "polygon", "payload": {} });
        assert_eq!(upgrade(&other, &req), Err(Reason::InvalidPayload));
        let mut unknown = req.clone();
        unknown["network"] = json!("atlantis");
        assert_eq!(upgrade(&payload, &unknown), Err(Reason::InvalidNetwork));
        assert_eq!(name("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"), Some("solana"));
    }

    #[test]
    fn malformed_v1_bodies_are_refused_with_their_reason() {
        let req = json!({ "scheme": "exact", "network": "base", "maxAmountRequired": "1", "payTo": "0xabc",
            "maxTimeoutSeconds": 60, "asset": "0xdef" });
        let payload = json!({ "x402Version": 1, "scheme": "exact", "network": "base", "payload": {} });
        assert!(upgrade(&payload, &req).is_ok());
        for missing in ["scheme", "network", "maxAmountRequired", "payTo", "maxTimeoutSeconds", "asset"] {
            let mut r = req.clone();
            r.as_object_mut().unwrap().remove(missing);
            assert_eq!(upgrade(&payload, &r), Err(Reason::InvalidPaymentRequirements), "{missing}");
        }
        let mut text_timeout = req.clone();
        text_timeout["maxTimeoutSeconds"] = json!("60");
        assert_eq!(upgrade(&payload, &text_timeout), Err(Reason::InvalidPaymentRequirements));
        for bad in [
            json!({ "x402Version": 1, "scheme": "exact", "network": "base" }),
            json!({ "scheme": "exact", "network": "base", "payload": "x" }),
            json!("text"),
        ] {
            assert_eq!(upgrade(&bad, &req), Err(Reason::InvalidPayload), "{bad}");
        }
    }
}
