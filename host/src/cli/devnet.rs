//! `stablerail devnet`: local chains for trying the service.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use crate::output::{emit, Output};

#[derive(Subcommand)]
pub enum DevnetCommand {
    /// Give ADDRESS devnet money on one chain: AMOUNT of `--asset` (minted),
    /// or of the native coin without `--asset`.
    Fund {
        address: String,
        amount: String,
        #[arg(long)]
        chain: String,
        #[arg(long)]
        asset: Option<String>,
        #[arg(long, default_value = ".stablerail/devnet")]
        dir: PathBuf,
    },
    /// Start the devnet and write DIR/chains.toml for `serve`.
    Up {
        #[arg(long, default_value = ".stablerail/devnet")]
        dir: PathBuf,
        #[arg(long, default_value_t = 18545)]
        port: u16,
        #[arg(long, default_value = "base,arbitrum,polygon,bsc")]
        chains: String,
        /// Where the devnet scripts (and their node_modules) are.
        #[arg(long, default_value = "devnet")]
        scripts: PathBuf,
        /// The SMTP port the dashboard sends sign-in codes to
        /// (devnet/mail/sink.mjs); 0: no dashboard.
        #[arg(long, default_value_t = 2525)]
        mail_port: u16,
    },
    /// Stop the devnet's chains.
    Down {
        #[arg(long, default_value = ".stablerail/devnet")]
        dir: PathBuf,
        #[arg(long, default_value = "devnet")]
        scripts: PathBuf,
    },
}

pub async fn devnet(output: Output, cmd: DevnetCommand) -> anyhow::Result<()> {
    let node = |script: PathBuf, args: Vec<String>| -> anyhow::Result<String> {
        let out = std::process::Command::new("node").arg(&script).args(&args).output()?;
        anyhow::ensure!(out.status.success(), "{}: {}", script.display(), String::from_utf8_lossy(&out.stderr));
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    match cmd {
        DevnetCommand::Fund { address, amount, chain, asset, dir } => {
            emit(output, &devnet_fund(&dir, &chain, asset.as_deref(), &address, &amount).await?)
        }
        DevnetCommand::Down { dir, scripts } => {
            node(scripts.join("setup/down.mjs"), vec!["--dir".into(), dir.display().to_string()])?;
            emit(output, &json!({ "dir": dir.display().to_string(), "result": "stopped" }));
        }
        DevnetCommand::Up { dir, port, chains, scripts, mail_port } => {
            // Start from clean chains each time.
            node(scripts.join("setup/down.mjs"), vec!["--dir".into(), dir.display().to_string()])?;
            std::fs::create_dir_all(&dir)?;
            let dir = std::fs::canonicalize(&dir)?;
            let database = format!("sqlite://{}", dir.join("stablerail.db").display());
            let db = crate::server::connect(&database).await?;
            // The devnet's config names these files; its wallets exist before
            // the chains start so that they can be funded.
            let families = crate::config::devnet_families(&chains);
            let made = crate::family::keys::init(&dir.join("master.key"), &dir.join("pepper"), db, &families, None).await?;
            let adapters = std::fs::canonicalize("adapters/target/wasm32-wasip2/release").unwrap_or_else(|_| "adapters".into());
            let mut args = vec![
                "--dir".into(),
                dir.display().to_string(),
                "--port".into(),
                port.to_string(),
                "--chains".into(),
                chains,
                "--adapters-dir".into(),
                adapters.display().to_string(),
                // x402 batch-settlement served on the devnet's USDC and USDT.
                "--batch-settlement".into(),
            ];
            args.extend(made.devnet_funding_args());
            if mail_port != 0 {
                args.extend(["--mail-port".into(), mail_port.to_string()]);
            }
            let out = node(scripts.join("setup/up.mjs"), args)?;
            let info: serde_json::Value = serde_json::from_str(out.trim())?;
            let chains: Vec<serde_json::Value> = info["chains"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, c)| {
                    let assets: Vec<&str> = c["assets"].as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
                    json!({ "chain": name, "chain_id": c["chain_id"], "rpc": c["rpc"], "assets": assets.join(",") })
                })
                .collect();
            emit(
                output,
                &json!({
                    "dir": dir.display().to_string(),
                    "chains": chains,
                    "relayer": made.wallet(crate::family::keys::RELAYER),
                    "proxy": made.wallet(crate::family::keys::PROXY),
                    "payer": info["payers"][0]["address"],
                    "payer_private_key": info["payers"][0]["private_key"],
                    "solana": info.get("solana").map(|s| json!({ "rpc": s["rpc"], "caip2": s["caip2"], "usdc_mint": s["assets"]["usdc"]["address"] })),
                    "tron": info.get("tron").map(|t| json!({ "http": t["http"], "usdt": t["assets"]["usdt"]["address"], "permit2": t["permit2"], "proxy_wallet": made.wallet("proxy:tron") })),
                    "serve": format!("stablerail serve --config {}/chains.toml --database {database}", dir.display()),
                    "demo": format!("node {}/clients/demo.mjs --dir {}", scripts.display(), dir.display()),
                }),
            );
        }
    }
    Ok(())
}

/// Devnet money for ADDRESS: the deployer mints the token, or anvil sets
/// the native balance (current + AMOUNT).
pub async fn devnet_fund(
    dir: &std::path::Path,
    chain: &str,
    asset: Option<&str>,
    address: &str,
    amount: &str,
) -> anyhow::Result<serde_json::Value> {
    use alloy_primitives::{Address, U256};
    let info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("devnet.json"))?)?;
    let c = info["chains"].get(chain).ok_or_else(|| anyhow::anyhow!("the devnet has no chain `{chain}`"))?;
    let rpc = c["rpc"].as_str().unwrap_or_default().to_string();
    let to: Address = address.parse().map_err(|_| anyhow::anyhow!("`{address}` is not an EVM address"))?;
    let call = |method: &'static str, params: serde_json::Value| {
        let rpc = rpc.clone();
        async move {
            let v: serde_json::Value = reqwest::Client::new()
                .post(&rpc)
                .json(&serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
                .send()
                .await?
                .json()
                .await?;
            anyhow::ensure!(v.get("error").is_none(), "{method}: {}", v["error"]);
            Ok::<_, anyhow::Error>(v["result"].clone())
        }
    };
    let units = |decimals: u32| -> anyhow::Result<U256> {
        let d = crate::decimal::parse(amount).map_err(|_| anyhow::anyhow!("`{amount}` is not a decimal amount"))?;
        anyhow::ensure!(
            d.scale() <= decimals && d > rust_decimal::Decimal::ZERO,
            "`{amount}` has more than {decimals} decimals or is not positive"
        );
        let text = d.to_string();
        let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
        Ok(U256::from_str_radix(&format!("{int}{frac:0<width$}", width = decimals as usize), 10)?)
    };
    match asset {
        None => {
            let have = call("eth_getBalance", serde_json::json!([to, "latest"])).await?;
            let have = U256::from_str_radix(have.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16)?;
            call("anvil_setBalance", serde_json::json!([to, format!("{:#x}", have + units(18)?)])).await?;
        }
        Some(a) => {
            let t = c["assets"].get(a).ok_or_else(|| anyhow::anyhow!("the devnet has no `{a}` on {chain}"))?;
            let token = t["address"].as_str().unwrap_or_default();
            let decimals = t["decimals"].as_u64().unwrap_or(6) as u32;
            let mut data = alloy_primitives::hex::decode("40c10f19")?; // mint(address,uint256)
            data.extend_from_slice(&[0u8; 12]);
            data.extend_from_slice(to.as_slice());
            data.extend_from_slice(&units(decimals)?.to_be_bytes::<32>());
            let tx = serde_json::json!([{ "from": info["deployer"], "to": token, "data": alloy_primitives::hex::encode_prefixed(data) }]);
            let hash = call("eth_sendTransaction", tx).await?;
            for _ in 0..100 {
                let r = call("eth_getTransactionReceipt", serde_json::json!([hash])).await?;
                if !r.is_null() {
                    anyhow::ensure!(r["status"] == "0x1", "mint reverted");
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
    Ok(json!({ "address": to.to_checksum(None), "chain": chain, "asset": asset.unwrap_or("native"), "amount": amount }))
}
