//! The service's small shared pieces: the rate limiter's bounded table,
//! the once-per-interval cache and the client address behind proxies.

/// `crates/engine/src/ratelimit.rs`
mod ratelimit {
    use stablerail::ratelimit::*;

    #[test]
    fn a_million_addresses_stay_under_the_bound() {
        let limiter = Limiter::bounded(60, 10_000);
        let mut most = 0;
        for n in 0u32..1_000_000 {
            assert!(limiter.check(format!("ip:{}", std::net::Ipv4Addr::from(n))).is_ok(), "a new key has its whole budget");
            if n % 997 == 0 {
                most = most.max(limiter.len());
            }
        }
        most = most.max(limiter.len());
        assert!(most <= 10_000 + SIZE_CHECK_EVERY, "the table held {most} keys");
    }

    #[test]
    fn a_limited_key_stays_limited_and_idle_keys_are_forgotten() {
        let limiter = Limiter::bounded(2, 100);
        assert!(limiter.check("a".into()).is_ok());
        assert!(limiter.check("a".into()).is_ok());
        assert!(limiter.check("a".into()).is_err(), "over its rate");
        limiter.forget_idle();
        assert_eq!(limiter.len(), 1, "a key mid-window is remembered");
        assert!(limiter.check("a".into()).is_err(), "and still limited");
    }
}

/// `crates/types/src/cached.rs`
mod cached {
    use stablerail::cached::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn reads_once_per_interval() {
        let cache = Cached::<usize>::default();
        let reads = AtomicUsize::new(0);
        let read = || async { reads.fetch_add(1, Ordering::SeqCst) };
        for _ in 0..100 {
            assert_eq!(cache.get(Duration::from_secs(60), read).await, 0);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert_eq!(cache.get(Duration::ZERO, read).await, 1, "stale: read again");
    }
}

/// `crates/ops/src/client_ip.rs`
mod client_ip {
    use axum::http::HeaderMap;
    use stablerail::client_ip::*;
    use std::net::SocketAddr;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    fn trusted(nets: &[&str]) -> TrustedProxies {
        trusted_by(nets, ClientIpHeader::XForwardedFor)
    }

    fn trusted_by(nets: &[&str], header: ClientIpHeader) -> TrustedProxies {
        TrustedProxies::new(nets.iter().map(|n| n.parse().unwrap()).collect(), header)
    }

    fn peer(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().unwrap(), 40000)
    }

    #[test]
    fn headers_are_ignored_from_untrusted_peers() {
        let t = trusted(&["10.0.0.0/8"]);
        let h = headers(&[("x-forwarded-for", "1.2.3.4"), ("forwarded", "for=5.6.7.8")]);
        assert_eq!(t.client(peer("203.0.113.9"), &h).to_string(), "203.0.113.9");
        assert_eq!(TrustedProxies::default().client(peer("10.0.0.1"), &h).to_string(), "10.0.0.1", "no proxies trusted");
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let t = trusted(&["10.0.0.0/8", "127.0.0.1/32"]);
        // A client that forged a first hop does not choose its key.
        let h = headers(&[("x-forwarded-for", "9.9.9.9, 198.51.100.7, 10.1.1.1")]);
        assert_eq!(t.client(peer("127.0.0.1"), &h).to_string(), "198.51.100.7");
        let h = headers(&[("forwarded", r#"for=9.9.9.9, for="[2001:db8:1:2::5]:443";proto=https, for=10.2.2.2"#)]);
        let by_forwarded = trusted_by(&["10.0.0.0/8", "127.0.0.1/32"], ClientIpHeader::Forwarded);
        assert_eq!(by_forwarded.client(peer("10.0.0.1"), &h).to_string(), "2001:db8:1:2::5");
        let h = headers(&[("x-forwarded-for", "198.51.100.7:5555")]);
        assert_eq!(t.client(peer("10.0.0.1"), &h).to_string(), "198.51.100.7");
        // Only proxies: the left-most; nothing forwarded: the proxy itself.
        let h = headers(&[("x-forwarded-for", "10.3.3.3, 10.4.4.4")]);
        assert_eq!(t.client(peer("10.0.0.1"), &h).to_string(), "10.3.3.3");
        assert_eq!(t.client(peer("10.0.0.1"), &HeaderMap::new()).to_string(), "10.0.0.1");
        // A hop that is no address stops the walk at the last proxy.
        let h = headers(&[("x-forwarded-for", "198.51.100.7, unknown")]);
        assert_eq!(t.client(peer("10.0.0.1"), &h).to_string(), "10.0.0.1");
    }

    /// A proxy that appends only `X-Forwarded-For` passes the client's own
    /// `Forwarded` through: the header the operator names is the only one read.
    #[test]
    fn only_the_named_header_is_read() {
        let xff = trusted(&["10.0.0.0/8"]);
        let h = headers(&[("forwarded", "for=9.9.9.9"), ("x-forwarded-for", "198.51.100.7"), ("x-real-ip", "203.0.113.5")]);
        assert_eq!(xff.client(peer("10.0.0.1"), &h).to_string(), "198.51.100.7", "a client's own Forwarded is ignored");
        let forwarded = trusted_by(&["10.0.0.0/8"], ClientIpHeader::Forwarded);
        assert_eq!(forwarded.client(peer("10.0.0.1"), &h).to_string(), "9.9.9.9");
        let real = trusted_by(&["10.0.0.0/8"], ClientIpHeader::XRealIp);
        assert_eq!(real.client(peer("10.0.0.1"), &h).to_string(), "203.0.113.5");
        // X-Real-IP is set once by the proxy: a list, or two of them, is not its doing.
        let two = headers(&[("x-real-ip", "203.0.113.5"), ("x-real-ip", "9.9.9.9")]);
        assert_eq!(real.client(peer("10.0.0.1"), &two).to_string(), "10.0.0.1");
        // Named X-Forwarded-For with only a Forwarded: the proxy itself.
        let only = headers(&[("forwarded", "for=9.9.9.9")]);
        assert_eq!(xff.client(peer("10.0.0.1"), &only).to_string(), "10.0.0.1");
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        assert_eq!(limit_key("2001:db8:1:2:aaaa::1".parse().unwrap()), "2001:db8:1:2::/64");
        assert_eq!(limit_key("2001:db8:1:2:bbbb::9".parse().unwrap()), "2001:db8:1:2::/64");
        assert_eq!(limit_key("::ffff:192.0.2.1".parse().unwrap()), "192.0.2.1");
        assert_eq!(limit_key("192.0.2.1".parse().unwrap()), "192.0.2.1");
    }
}
