//! x402 `upto` through the facilitator, as a dropped-in adapter enabled by
//! config alone: an `@x402/express` route that charges by usage
//! (`setSettlementOverrides`), paid by `@x402/fetch` with `@x402/evm`'s upto
//! client, settled by the relayer itself through the upto proxy (our
//! contract to the published interface), balances read on chain.

use crate::common;

use alloy_primitives::U256;
use common::devnet::{rpc, Devnet};
use common::process::{free_port, serve};
use serde_json::json;

use crate::facilitator::{buy, facilitator_key, start_shop_with};

const MERCHANT: &str = "0x00000000000000000000000000000000000e5678";
const UPTO_PROXY: &str = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002";
const PERMIT2: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";

/// What an operator adds to enable `upto` for base's USDC: the adapter, and
/// the token a second time under the x402 scheme it serves.
const ENABLE_UPTO: &str = r#"
[adapters]
upto = "upto.wasm"

[chains.base.assets.usdc-upto]
alias_of = "usdc"
scheme = "upto"
x402_scheme = "upto"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_metered_route_is_paid_what_it_used_up_to_the_signed_maximum() {
    let dn = Devnet::start(27045, "base", ENABLE_UPTO).await;
    let key = facilitator_key(&dn, "metered");
    let port = free_port();
    let _service = serve(&dn, port);

    // /supported: upto on base, with the relayer as the facilitator address.
    let relayer = dn.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    let (s, supported) = common::process::http(port, "GET", "/x402/supported", None);
    assert_eq!(s, 200, "{supported}");
    let upto = json!({ "x402Version": 2, "scheme": "upto", "network": "eip155:8453", "extra": { "facilitatorAddress": relayer } });
    assert!(supported["kinds"].as_array().unwrap().contains(&upto), "{supported}");

    // The payer has approved Permit2 once, as upto requires.
    let token = dn.token("base", "usdc");
    let (payer, payer_key) = dn.payer(2);
    dn.approve("base", "usdc", &payer, PERMIT2, U256::MAX).await;

    // Each request may cost up to 0.05 USDC; it charges 0.001 per unit used.
    let sale = json!({
        "network": "eip155:8453", "asset": token, "amount": "50000", "payTo": MERCHANT,
        "name": "USD Coin", "version": "2", "scheme": "upto", "unitPrice": "1000",
    });
    let (shop_port, _shop) = start_shop_with(port, &key, sale);
    let paid = |use_: u64| buy(&format!("http://127.0.0.1:{shop_port}/paid?use={use_}"), &payer_key, &token, None);

    let (merchant0, payer0) = (dn.balance_of("base", "usdc", MERCHANT).await, dn.balance_of("base", "usdc", &payer).await);
    let got = paid(7);
    assert_eq!((got["status"].as_u64(), &got["payment"]["success"]), (Some(200), &json!(true)), "{got}");
    assert_eq!(got["payment"]["amount"], "7000", "{got}");
    let tx = got["payment"]["transaction"].as_str().unwrap().to_string();
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, merchant0 + U256::from(7000u64), "charged what was used");
    assert_eq!(dn.balance_of("base", "usdc", &payer).await, payer0 - U256::from(7000u64), "not the maximum");
    // Sent by the facilitator the witness names, to the proxy: not batched.
    let sent = rpc(&dn.rpc_url("base"), "eth_getTransactionByHash", json!([tx])).await;
    assert!(sent["from"].as_str().unwrap().eq_ignore_ascii_case(&relayer), "{sent}");
    assert!(sent["to"].as_str().unwrap().eq_ignore_ascii_case(UPTO_PROXY), "{sent}");
    let (s, found) = common::http(port, "GET", &format!("/x402/settlements?transaction={tx}"), Some(&format!("Bearer {key}")), None);
    assert_eq!(s, 200, "{found}");
    assert_eq!((found[0]["scheme"].as_str(), found[0]["amount"].as_str()), (Some("upto"), Some("7000")), "{found}");

    // Nothing used: success, no transaction, nothing moved.
    let nonce0 = rpc(&dn.rpc_url("base"), "eth_getTransactionCount", json!([relayer, "latest"])).await;
    let got = paid(0);
    assert_eq!((got["status"].as_u64(), &got["payment"]["success"]), (Some(200), &json!(true)), "{got}");
    assert_eq!((got["payment"]["amount"].as_str(), got["payment"]["transaction"].as_str()), (Some("0"), Some("")), "{got}");
    assert_eq!(rpc(&dn.rpc_url("base"), "eth_getTransactionCount", json!([relayer, "latest"])).await, nonce0, "nothing sent");
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, merchant0 + U256::from(7000u64));

    // More than the payer signed for: refused, and nothing moves.
    let got = paid(51);
    assert_ne!(got["status"].as_u64(), Some(200), "{got}");
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, merchant0 + U256::from(7000u64), "{got}");
    assert_eq!(dn.balance_of("base", "usdc", &payer).await, payer0 - U256::from(7000u64), "{got}");

    // The whole maximum is a charge like any other.
    let got = paid(50);
    assert_eq!((got["payment"]["success"].as_bool(), got["payment"]["amount"].as_str()), (Some(true), Some("50000")), "{got}");
    assert_eq!(dn.balance_of("base", "usdc", MERCHANT).await, merchant0 + U256::from(57000u64));
}

/// Payers with no Permit2 allowance pay `upto` with the gas-sponsoring
/// extensions `@x402/evm`'s upto client attaches when the route declares
/// them: an EIP-2612 permit for base USDC (applied by the proxy's
/// `settleWithPermit`; the payer sends nothing), and a signed approve for
/// base USDT, which has no permit (broadcast, then settled). Each charged
/// what it used, read on chain.
#[tokio::test(flavor = "multi_thread")]
async fn upto_payers_without_an_allowance_pay_with_either_sponsoring_extension() {
    let enable = format!("{ENABLE_UPTO}\n[chains.base.assets.usdt-upto]\nalias_of = \"usdt\"\nscheme = \"upto\"\nx402_scheme = \"upto\"\n");
    let dn = Devnet::start(30545, "base", &enable).await;
    let key = facilitator_key(&dn, "sponsored");
    let port = free_port();
    let _service = serve(&dn, port);
    let relayer = dn.state.keys.address(stablerail::family::keys::RELAYER).await.unwrap();
    let rpc_url = dn.rpc_url("base");
    for (asset, extension, payer_n) in [("usdc", "eip2612GasSponsoring", 4), ("usdt", "erc20ApprovalGasSponsoring", 5)] {
        let token = dn.token("base", asset);
        let (payer, payer_key) = dn.payer(payer_n);
        assert_eq!(dn.allowance("base", asset, &payer, PERMIT2).await, U256::ZERO, "{asset}: no allowance yet");
        let mut sale = json!({
            "network": "eip155:8453", "asset": token, "amount": "50000", "payTo": MERCHANT,
            "scheme": "upto", "unitPrice": "1000", "extensions": [extension],
        });
        if asset == "usdc" {
            sale["name"] = json!("USD Coin");
            sale["version"] = json!("2");
        }
        let (shop_port, _shop) = start_shop_with(port, &key, sale);
        let (merchant0, payer0) = (dn.balance_of("base", asset, MERCHANT).await, dn.balance_of("base", asset, &payer).await);
        let nonce0 = rpc(&rpc_url, "eth_getTransactionCount", json!([payer, "latest"])).await;
        let got = buy(&format!("http://127.0.0.1:{shop_port}/paid?use=9"), &payer_key, &token, Some(&rpc_url));
        assert_eq!((got["status"].as_u64(), &got["payment"]["success"]), (Some(200), &json!(true)), "{asset}: {got}");
        assert_eq!(got["payment"]["amount"], "9000", "{got}");
        assert_eq!(dn.balance_of("base", asset, MERCHANT).await, merchant0 + U256::from(9000u64), "{asset}: charged what was used");
        assert_eq!(dn.balance_of("base", asset, &payer).await, payer0 - U256::from(9000u64), "{asset}: not the maximum");
        let tx = got["payment"]["transaction"].as_str().unwrap().to_string();
        let sent = rpc(&rpc_url, "eth_getTransactionByHash", json!([tx])).await;
        assert!(
            sent["from"].as_str().unwrap().eq_ignore_ascii_case(&relayer) && sent["to"].as_str().unwrap().eq_ignore_ascii_case(UPTO_PROXY)
        );
        let nonce1 = rpc(&rpc_url, "eth_getTransactionCount", json!([payer, "latest"])).await;
        let allowance = dn.allowance("base", asset, &payer, PERMIT2).await;
        if asset == "usdc" {
            // The permit allowed the maximum; Permit2 took the charge.
            assert_eq!(nonce1, nonce0, "the payer sent nothing");
            assert_eq!(allowance, U256::from(50_000u64 - 9_000));
            let selector = &sent["input"].as_str().unwrap()[..10];
            assert_ne!(selector, "0x", "{sent}");
        } else {
            // Its own approve, broadcast by the facilitator before settling.
            assert_ne!(nonce1, nonce0, "the payer's signed approve landed");
            assert!(allowance > U256::from(50_000u64), "{allowance}");
        }
    }
}
