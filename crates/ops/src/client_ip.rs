//! Who a request is from, for rate limits: the socket's peer, or, when that
//! peer is a proxy the operator trusts (`[service] trusted_proxies`), the
//! address the proxies recorded in the one header the operator names
//! (`[service] client_ip_header`: `x-forwarded-for` by default, the header
//! every common proxy appends; `forwarded`; or `x-real-ip`), read from the
//! right: the first hop that is not a trusted proxy is the client. Every
//! other forwarding header is ignored: a proxy passes a client's own
//! `Forwarded` through untouched, so reading it would let the client pick
//! its own key. With no trusted proxies all of them are ignored.
//!
//! Limits key a client by its address, and an IPv6 client by its /64: one
//! subscriber line gets a /64 or more, so single addresses cost nothing to
//! rotate.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

pub use crate::config::ClientIpHeader;

/// The operator's proxies, parsed once at start, and the header they write.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    nets: Vec<IpNet>,
    header: ClientIpHeader,
}

impl TrustedProxies {
    pub fn new(nets: Vec<IpNet>, header: ClientIpHeader) -> TrustedProxies {
        TrustedProxies { nets, header }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.nets.iter().any(|net| net.contains(&ip))
    }

    /// The client's address: `peer` unless it is trusted, then the right-most
    /// forwarded address that is not (the left-most when all are).
    pub fn client(&self, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer.ip());
        if !self.trusts(peer) {
            return peer;
        }
        let hops = forwarded(headers, self.header);
        let mut last = peer;
        for hop in hops.iter().rev() {
            let Some(ip) = *hop else { return last };
            if !self.trusts(ip) {
                return ip;
            }
            last = ip;
        }
        last
    }
}

/// The limit key of the client a request is from (`unknown` when the
/// server was built without peer addresses, as in-process tests are).
pub fn of(proxies: &TrustedProxies, req: &axum::extract::Request) -> String {
    from(proxies, req).map_or_else(|| "unknown".into(), limit_key)
}

/// The IPv6 site (/48) a request is from, if it is from IPv6: one customer
/// of a host gets a /48 and with it 65,536 /64s, so a site has a limit of
/// its own above its clients'.
pub fn site_of(proxies: &TrustedProxies, req: &axum::extract::Request) -> Option<String> {
    match canonical(from(proxies, req)?) {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            Some(format!("{}/48", Ipv6Addr::new(s[0], s[1], s[2], 0, 0, 0, 0, 0)))
        }
        IpAddr::V4(_) => None,
    }
}

fn from(proxies: &TrustedProxies, req: &axum::extract::Request) -> Option<IpAddr> {
    req.extensions().get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| proxies.client(c.0, req.headers()))
}

/// The key a limit counts a client under: its IPv4 address, or its IPv6 /64.
pub fn limit_key(ip: IpAddr) -> String {
    match canonical(ip) {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{}/64", Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
    }
}

/// An IPv4 address carried as IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The forwarded chain in `header`, client first. A hop that is not an
/// address (`unknown`, an obfuscated name, garbage) is `None`: the chain
/// cannot be followed past it.
fn forwarded(headers: &HeaderMap, header: ClientIpHeader) -> Vec<Option<IpAddr>> {
    let values = |name: &str| headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(",");
    let chain = |text: String| -> Vec<Option<IpAddr>> {
        if text.trim().is_empty() {
            return vec![];
        }
        text.split(',').map(|hop| node(hop.trim())).collect()
    };
    match header {
        ClientIpHeader::XForwardedFor => return chain(values("x-forwarded-for")),
        // Set, not appended: more than one is not the proxy's doing.
        ClientIpHeader::XRealIp => {
            let all: Vec<&str> = headers.get_all("x-real-ip").iter().filter_map(|v| v.to_str().ok()).collect();
            return match all.as_slice() {
                [one] if !one.contains(',') => vec![node(one.trim())],
                [] => vec![],
                _ => vec![None],
            };
        }
        ClientIpHeader::Forwarded => {}
    }
    let standard = values("forwarded");
    if !standard.trim().is_empty() {
        return standard
            .split(',')
            .map(|element| {
                element.split(';').find_map(|pair| {
                    let (k, v) = pair.split_once('=')?;
                    k.trim().eq_ignore_ascii_case("for").then(|| node(v.trim().trim_matches('"')))?
                })
            })
            .collect();
    }
    vec![]
}

/// `192.0.2.1`, `192.0.2.1:8080`, `[2001:db8::1]`, `[2001:db8::1]:8080` or
/// a bare `2001:db8::1`.
fn node(text: &str) -> Option<IpAddr> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = text.strip_prefix('[') {
        return rest.split_once(']').and_then(|(ip, _)| ip.parse().ok());
    }
    // `ip:port`: only IPv4 has a port without brackets.
    let (ip, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    ip.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}
