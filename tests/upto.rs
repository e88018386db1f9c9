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
