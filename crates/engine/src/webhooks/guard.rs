//! Where a webhook may go. An endpoint is `https` (plain `http` only to a
//! loopback host, when `allow_plain_http_loopback`), without credentials;
//! every address its host resolves to is checked at each delivery, and
//! the connection goes to the address checked (no second lookup to rebind).
//! Private, loopback, link-local (cloud metadata), shared, multicast and
//! unspecified addresses are refused unless `allow_private_networks`.

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;

use crate::config::Webhooks;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("url must be an absolute https URL")]
    NotHttps,
    #[error("url must not carry credentials")]
    Credentials,
    #[error("url must not point to a private, loopback, link-local or metadata address")]
    Address,
    #[error("url's host does not resolve")]
    Unresolved,
}

fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8
                || first == 0x0064 && v6.segments()[1] == 0xff9b)
        }
    }
}

/// May a delivery go to `ip`?
pub fn allowed(cfg: &Webhooks, ip: IpAddr) -> bool {
    cfg.allow_private_networks || public(ip)
}

fn loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Check an endpoint's URL as written (its addresses are checked at each
/// delivery).
pub fn check_url(cfg: &Webhooks, raw: &str) -> Result<Url, Refusal> {
    let url = Url::parse(raw.trim()).map_err(|_| Refusal::NotHttps)?;
    match url.scheme() {
        "https" => {}
        "http" if cfg.allow_plain_http_loopback && loopback_host(&url) => {}
        _ => return Err(Refusal::NotHttps),
    }
    if url.host().is_none() || raw.len() > 2048 {
        return Err(Refusal::NotHttps);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Credentials);
    }
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    if literal.is_some_and(|ip| !allowed(cfg, ip)) || (literal.is_none() && loopback_host(&url) && !cfg.allow_private_networks) {
        return Err(Refusal::Address);
    }
    Ok(url)
}

/// Resolve the URL's host now and check every address: the one to connect to.
pub async fn resolve(cfg: &Webhooks, url: &Url) -> Result<SocketAddr, Refusal> {
    let port = url.port_or_known_default().ok_or(Refusal::NotHttps)?;
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(url::Host::Domain(d)) => tokio::net::lookup_host((d, port)).await.map_err(|_| Refusal::Unresolved)?.collect(),
        None => return Err(Refusal::NotHttps),
    };
    if addrs.is_empty() {
        return Err(Refusal::Unresolved);
    }
    // One address the operator would refuse is enough to refuse the host:
    // a name that answers both a public and a private address is a trick.
    if addrs.iter().any(|a| !allowed(cfg, a.ip())) {
        return Err(Refusal::Address);
    }
    Ok(addrs[0])
}
