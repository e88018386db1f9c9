//! What a config must be before the service starts on it: every rule
//! `Config::parse` checks, with the entry it names.

use super::*;

impl Config {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        self.dashboard.validate().map_err(ConfigError::Invalid)?;
        self.telemetry.validate().map_err(ConfigError::Invalid)?;
        self.hsm.validate().map_err(ConfigError::Invalid)?;
        for f in &self.floors {
            let Some(chain) = self.chains.get(&f.chain) else {
                return bad(format!("floors: `{}` is not a configured chain", f.chain));
            };
            if f.asset != "native" && !chain.assets.contains_key(&f.asset) {
                return bad(format!("floors: chain `{}` has no asset `{}`", f.chain, f.asset));
            }
            if crate::decimal::parse(&f.amount).map_or(true, |d| d.is_sign_negative()) {
                return bad(format!("floors: `{}` is not a non-negative decimal amount", f.amount));
            }
        }
        let known_flag = |f: &str| FLAGS.contains(&f) || self.flags.contains_key(f);
        for (id, chain) in &self.chains {
            if let Some(g) = &chain.gate {
                if !known_flag(g) {
                    return bad(format!("chains.{id}.gate names unknown flag `{g}`"));
                }
            }
            let exposed = self.chain_exposed(chain);
            if let (Some(said), Some(known)) = (chain.kind, chain.network().and_then(|n| Kind::known(&n))) {
                if said != known {
                    return bad(format!("chains.{id}.kind says {}, but its chain id is a known {}", said.as_str(), known.as_str()));
                }
            }
            if exposed && chain.network().is_none() {
                return bad(format!("chains.{id} is enabled but has neither caip2 nor chain_id"));
            }
            if exposed && chain.family == Family::Evm && chain.chain_id.is_none() {
                return bad(format!("chains.{id} is an enabled EVM chain without chain_id"));
            }
            for (key, asset) in &chain.assets {
                let at = format!("chains.{id}.assets.{key}");
                match (asset.state, &asset.flag) {
                    (AssetState::Gated, None) => return bad(format!("{at} is gated but names no flag")),
                    (AssetState::Gated, Some(f)) if !known_flag(f) => return bad(format!("{at}.flag names unknown flag `{f}`")),
                    _ => {}
                }
                if asset.x402_scheme == X402Scheme::Upto && chain.family != Family::Evm {
                    return bad(format!("{at}.x402_scheme `upto` is served on EVM chains only"));
                }
                // Only what is served now must be complete; a gated-off pair
                // may wait for the operator to fill it in.
                if exposed && self.availability(asset) == Availability::Available {
                    if asset.token.is_empty() {
                        return bad(format!("{at} is served but has no token address"));
                    }
                    if !self.adapters.contains_key(&asset.scheme) {
                        return bad(format!("{at}.scheme `{}` has no entry in [adapters]", asset.scheme));
                    }
                }
            }
        }
        for (key, url) in [("swap.lifi_url", &self.swap.lifi_url), ("swap.jupiter_url", &self.swap.jupiter_url)] {
            if !provider_url_allowed(url) {
                return bad(format!("{key} must be an https URL (http only to a loopback address)"));
            }
        }
        for (name, provider) in &self.swap.providers {
            match (self.chains.get(name), provider) {
                (None, _) => return bad(format!("swap.providers: `{name}` is not a configured chain")),
                (Some(c), SwapProvider::Jupiter) if c.family != Family::Solana => {
                    return bad(format!("swap.providers: jupiter serves Solana chains only, not `{name}`"))
                }
                _ => {}
            }
        }
        crate::decimal::parse(&self.facilitator.public_min_amount)
            .map_err(|e| ConfigError::Invalid(format!("facilitator.public_min_amount: {e}")))?;
        if self.facilitator.public && self.facilitator.public_requests_per_minute == 0 {
            return bad("facilitator.public_requests_per_minute must be at least 1".into());
        }
        if self.limits.requests_per_minute == 0 {
            return bad("limits.requests_per_minute must be at least 1".into());
        }
        self.service.trusted_proxies().map_err(ConfigError::Invalid)?;
        let longest_wait = self.service.execute_wait_seconds.max(self.facilitator.settle_retry_wait_seconds);
        if self.service.request_timeout_seconds <= longest_wait {
            return bad(format!(
                "service.request_timeout_seconds must be above the longest wait ({longest_wait} s: execute_wait_seconds, facilitator.settle_retry_wait_seconds)"
            ));
        }
        if self.service.header_read_timeout_seconds == 0 || self.service.max_connections == 0 {
            return bad("service.header_read_timeout_seconds and service.max_connections must be at least 1".into());
        }
        if !self.chains.contains_key(&self.service.default_target_chain) {
            return bad(format!("service.default_target_chain `{}` is not a configured chain", self.service.default_target_chain));
        }
        crate::decimal::parse(&self.fees.platform_fee_percentage)
            .map_err(|e| ConfigError::Invalid(format!("fees.platform_fee_percentage: {e}")))?;
        for (id, chain) in &self.chains {
            crate::decimal::parse(&chain.fee).map_err(|e| ConfigError::Invalid(format!("chains.{id}.fee: {e}")))?;
            if !chain.erc6492_factories.is_empty() && chain.family != Family::Evm {
                return bad(format!("chains.{id}.erc6492_factories: ERC-6492 wallets are EVM's"));
            }
            if let Some(f) = chain.erc6492_factories.iter().find(|f| !chain.family.facts().is_address(f)) {
                return bad(format!("chains.{id}.erc6492_factories: `{f}` is not an address"));
            }
        }
        Ok(())
    }
}
