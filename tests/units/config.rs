/// `crates/types/src/config.rs`
mod env_tests {
    use stablerail::config::expand_env;

    #[test]
    fn env_references_expand_and_missing_ones_are_named() {
        std::env::set_var("STABLERAIL_TEST_RPC_KEY", "k3y");
        assert_eq!(expand_env("https://rpc.example/v2/${STABLERAIL_TEST_RPC_KEY}?a=$b").unwrap(), "https://rpc.example/v2/k3y?a=$b");
        assert_eq!(expand_env("no references").unwrap(), "no references");
        assert_eq!(expand_env("https://x/${STABLERAIL_TEST_UNSET_VAR}").unwrap_err(), "STABLERAIL_TEST_UNSET_VAR");
    }
}

/// `crates/types/src/config/chains.rs`: a provider is a URL or a table.
mod rpc_url_tests {
    use stablerail::config::Config;

    const BASE: &str = "[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\"]\n";

    #[test]
    fn providers_are_urls_or_tables_with_a_budget() {
        let cfg =
            Config::parse(&format!("{BASE}rpc_urls = [\"http://a\", {{ url = \"http://b\", max_requests_per_second = 25 }}]\n")).unwrap();
        let urls = &cfg.chains["base"].rpc_urls;
        assert_eq!((urls[0].url.as_str(), urls[0].max_requests_per_second), ("http://a", None));
        assert_eq!((urls[1].url.as_str(), urls[1].max_requests_per_second.map(|n| n.get())), ("http://b", Some(25)));
        for (entry, says) in [
            ("{ url = \"http://b\", max_request_per_second = 25 }", "unknown field `max_request_per_second`"),
            ("{ url = \"http://b\", max_requests_per_second = 0 }", "nonzero"),
            ("{ max_requests_per_second = 5 }", "missing field `url`"),
            ("5", "a URL, or a table { url, max_requests_per_second }"),
        ] {
            let err = Config::parse(&format!("{BASE}rpc_urls = [{entry}]\n")).unwrap_err().to_string();
            assert!(err.contains(says), "{entry}: {err}");
        }
    }
}

/// `crates/types/src/config.rs`
mod floor_tests {
    use stablerail::config::Config;

    const BASE: &str = "[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\"]\n";

    #[test]
    fn floors_name_a_real_chain_asset_and_amount() {
        let with = |floor: &str| Config::parse(&format!("{BASE}\n[[floors]]\nwallet = \"relayer:evm\"\n{floor}"));
        assert!(with("chain = \"base\"\namount = \"0.05\"\n").is_ok());
        for (floor, says) in [
            ("chain = \"nowhere\"\namount = \"1\"\n", "`nowhere` is not a configured chain"),
            ("chain = \"base\"\nasset = \"dai\"\namount = \"1\"\n", "has no asset `dai`"),
            ("chain = \"base\"\namount = \"-1\"\n", "is not a non-negative decimal amount"),
            ("chain = \"base\"\namount = \"1e3\"\n", "is not a non-negative decimal amount"),
        ] {
            let err = with(floor).unwrap_err().to_string();
            assert!(err.contains(says), "{floor}: {err}");
        }
        assert!(with("chain = \"base\"\n").is_err(), "amount is required");
    }
}

/// `crates/types/src/config.rs`
mod swap_provider_tests {
    use stablerail::config::{Config, Family, SwapProvider};

    const CHAINS: &str = "[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\"]\n[chains.solana]\nfamily = \"solana\"\ncaip2 = \"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d\"\nroles = [\"payer\"]\n";

    #[test]
    fn jupiter_serves_solana_by_default_and_only_solana() {
        let with = |providers: &str| Config::parse(&format!("{CHAINS}[swap.providers]\n{providers}"));
        let c = with("").unwrap();
        assert_eq!(c.swap.provider("solana", Family::Solana), SwapProvider::Jupiter);
        assert_eq!(c.swap.provider("base", Family::Evm), SwapProvider::Lifi);
        assert_eq!(with("solana = \"lifi\"\n").unwrap().swap.provider("solana", Family::Solana), SwapProvider::Lifi);
        for (providers, says) in
            [("base = \"jupiter\"\n", "jupiter serves Solana chains only"), ("nowhere = \"lifi\"\n", "`nowhere` is not a configured chain")]
        {
            let err = with(providers).unwrap_err().to_string();
            assert!(err.contains(says), "{providers}: {err}");
        }
        assert!(with("base = \"uniswap\"\n").is_err(), "an unknown provider");
    }
}

/// `crates/types/src/config.rs`
mod transaction_type_tests {
    use stablerail::config::{Config, Family, TxType};

    #[test]
    fn chains_declare_their_transaction_type() {
        let with = |extra: &str| Config::parse(&format!("[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\"]\n{extra}"));
        assert_eq!(with("").unwrap().chains["base"].transaction_type, TxType::Eip1559);
        assert_eq!(with("transaction_type = \"legacy\"\n").unwrap().chains["base"].transaction_type, TxType::Legacy);
        let err = with("transaction_type = \"type2\"\n").unwrap_err().to_string();
        assert!(err.contains("transaction_type") && err.contains("eip1559") && err.contains("legacy"), "{err}");
        assert_eq!(with("").unwrap().families(), [Family::Evm]);
    }
}

/// `crates/types/src/config.rs`
mod erc6492_factory_tests {
    use stablerail::config::Config;

    #[test]
    fn erc6492_factories_are_evm_addresses() {
        let evm = |list: &str| {
            Config::parse(&format!("[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\"]\nerc6492_factories = {list}\n"))
        };
        assert!(evm("[]").unwrap().chains["base"].erc6492_factories.is_empty());
        let factory = "0x0ba5ed0c6aa8c49038f819e587e2633c4a9f428a";
        assert_eq!(evm(&format!("[\"{factory}\"]")).unwrap().chains["base"].erc6492_factories, vec![factory.to_string()]);
        let err = evm("[\"0x12\"]").unwrap_err().to_string();
        assert!(err.contains("chains.base.erc6492_factories") && err.contains("`0x12` is not an address"), "{err}");
        let tron = Config::parse(&format!(
            "[service]\ndefault_target_chain = \"tron\"\n[chains.tron]\nfamily = \"tron\"\nchain_id = 728126428\ncaip2 = \"tron:0x2b6653dc\"\nroles = [\"payer\"]\nerc6492_factories = [\"{factory}\"]\n"
        ));
        let err = tron.unwrap_err().to_string();
        assert!(err.contains("ERC-6492 wallets are EVM's"), "{err}");
    }
}

/// `crates/types/src/config/service.rs`: `[telemetry]` and `[hsm]` refuse
/// what cannot work, each with a sentence naming the field.
mod telemetry_and_hsm_tests {
    use stablerail::config::Config;

    /// A config with one chain (the default target) and `section`.
    fn parse(section: &str) -> Result<Config, String> {
        Config::parse(&format!(
            "[chains.base]\nfamily = \"evm\"\nchain_id = 8453\nroles = [\"payer\", \"target\"]\nrpc_urls = [\"http://a\"]\n\n{section}"
        ))
        .map_err(|e| e.to_string())
    }

    fn refused(section: &str) -> String {
        parse(section).map(|_| ()).unwrap_err()
    }

    #[test]
    fn telemetry_takes_a_ratio_between_0_and_1_and_an_http_endpoint() {
        let cfg = parse("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/v1/traces\"\nsample_ratio = 0.01\n").unwrap();
        assert_eq!((cfg.telemetry.otlp_endpoint.as_deref(), cfg.telemetry.sample_ratio), (Some("http://127.0.0.1:4318/v1/traces"), 0.01));
        assert!(parse("[telemetry]\nsample_ratio = 0\n").is_ok());
        assert_eq!(parse("[telemetry]\nsample_ratio = 1\n").unwrap().telemetry.sample_ratio, 1.0, "1 is a ratio");
        for (body, says) in [
            ("sample_ratio = 1.5", "telemetry.sample_ratio: 1.5 is not between 0 and 1"),
            ("sample_ratio = -0.1", "telemetry.sample_ratio: -0.1 is not between 0 and 1"),
            ("sample_ratio = nan", "is not between 0 and 1"),
            ("sample_ratio = \"0.5\"", "invalid type"),
            ("otlp_endpoint = \"grpc://collector:4317\"", "telemetry.otlp_endpoint: not an http(s) URL"),
            ("otlp_endpoint = \"collector:4318\"", "telemetry.otlp_endpoint: not an http(s) URL"),
            ("otlp_endpoint = \"\"", "telemetry.otlp_endpoint: not an http(s) URL"),
            ("service_name = \"  \"", "telemetry.service_name is empty"),
            ("sample_rate = 0.5", "unknown field `sample_rate`"),
        ] {
            let err = refused(&format!("[telemetry]\n{body}\n"));
            assert!(err.contains(says), "{body}: {err}");
        }
    }

    #[test]
    fn hsm_needs_a_module_and_a_token_and_names_only_known_roles() {
        let ok = "[hsm]\nmodule = \"/usr/lib/softhsm/libsofthsm2.so\"\ntoken = \"stablerail\"\nroles = [\"relayer\", \"agents\"]\n";
        assert_eq!(parse(ok).unwrap().hsm.roles, ["relayer", "agents"]);
        assert!(parse("[hsm]\n").is_ok(), "an empty [hsm] is no module");
        for (body, says) in [
            ("roles = [\"relayer\"]", "hsm.roles are named but hsm.module is not"),
            ("module = \"/m.so\"\nroles = [\"relayer\"]", "hsm.token (the token's label) is empty"),
            ("module = \"/m.so\"\ntoken = \" \"", "hsm.token (the token's label) is empty"),
            (
                "module = \"/m.so\"\ntoken = \"t\"\nroles = [\"relayer\", \"treasury\"]",
                "hsm.roles: `treasury` is not one of relayer, proxy, collection, agents",
            ),
            ("module = \"/m.so\"\ntoken = \"t\"\nroles = [\"Relayer\"]", "`Relayer` is not one of"),
            ("module = \"/m.so\"\ntoken = \"t\"\npin = \"1234\"", "unknown field `pin`"),
            ("module = \"/m.so\"\ntoken = \"t\"\nroles = \"relayer\"", "invalid type"),
        ] {
            let err = refused(&format!("[hsm]\n{body}\n"));
            assert!(err.contains(says), "{body}: {err}");
        }
    }
}
