/// `crates/chain/src/chain.rs`
mod chain {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde_json::{json, Value};
    use stablerail::config::Family;
    use stablerail::family::chain::{redact_url, ChainClient};

    #[test]
    fn urls_lose_keys_and_credentials() {
        assert_eq!(redact_url("https://base-mainnet.g.example.com/v2/SECRET_KEY"), "https://base-mainnet.g.example.com/…");
        assert_eq!(redact_url("https://user:pw@rpc.example.org:8545/?apikey=SECRET"), "https://rpc.example.org:8545/…");
        assert_eq!(redact_url("http://127.0.0.1:8545"), "http://127.0.0.1:8545");
        assert_eq!(redact_url("not a url SECRET"), "<unparseable url>");
    }

    /// A JSON-RPC node that counts what it is asked: `eth_blockNumber`
    /// answers `head`; `eth_getCode` answers a byte that names the head, or
    /// a contract's 100 bytes for an address ending in `ff`.
    async fn counting_node(head: Arc<AtomicU64>, asked: Arc<Mutex<Vec<String>>>) -> String {
        use axum::{routing::post, Json, Router};
        let app = Router::new().route(
            "/",
            post(move |Json(req): Json<Value>| {
                let (head, asked) = (head.clone(), asked.clone());
                async move {
                    let method = req["method"].as_str().unwrap_or("").to_string();
                    asked.lock().unwrap().push(method.clone());
                    let n = head.load(Ordering::SeqCst);
                    let contract = req["params"][0].as_str().is_some_and(|a| a.to_lowercase().ends_with("ff"));
                    let result = match method.as_str() {
                        "eth_blockNumber" => json!(format!("{n:#x}")),
                        _ if contract => json!(format!("0x{}", "60".repeat(100))),
                        _ => json!(format!("0x{n:02x}")),
                    };
                    Json(json!({ "jsonrpc": "2.0", "id": req["id"], "result": result }))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }

    /// A payer's code is read once per block, whoever asks and in whatever
    /// case its address comes, while a head read within the memo says
    /// which block that is; without one, or for another head, another tag,
    /// another address or a contract's long code, the node is asked again.
    /// Askers of the head at once share one read.
    #[tokio::test]
    async fn code_at_latest_is_read_once_per_head() {
        let (head, asked) = (Arc::new(AtomicU64::new(7)), Arc::new(Mutex::new(vec![])));
        let url = counting_node(head.clone(), asked.clone()).await;
        let client = ChainClient::new("base", Family::Evm, vec![url]);
        let payer = "0x00000000000000000000000000000000000000Aa";
        let count = |m: &str| asked.lock().unwrap().iter().filter(|a| *a == m).count();
        let code = |address: &str, tag: &str| {
            let (params, client) = (json!([address, tag]).to_string(), &client);
            async move { client.query("eth_getCode", &params).await }
        };

        // No head read yet: the code is read and not kept.
        code(payer, "latest").await.unwrap();
        code(payer, "latest").await.unwrap();
        assert_eq!((count("eth_getCode"), count("eth_blockNumber")), (2, 0));

        // Ten askers at once, one head read.
        let memo = stablerail::family::chain::HEAD_MEMO;
        let heads = futures::future::join_all((0..10).map(|_| client.head(memo))).await;
        assert!(heads.iter().all(|h| *h.as_ref().unwrap() == 7));
        assert_eq!(count("eth_blockNumber"), 1, "{:?}", asked.lock().unwrap());

        let first = code(payer, "latest").await.unwrap();
        let again = client.rpc("eth_getCode", json!([payer.to_lowercase(), "latest"])).await.unwrap();
        assert_eq!((first.as_str(), again.as_str()), ("\"0x07\"", Some("0x07")));
        assert_eq!(count("eth_getCode"), 3, "one read for both");

        // Not kept: another tag, a contract's code.
        code(payer, "pending").await.unwrap();
        let contract = "0x00000000000000000000000000000000000000fF";
        code(contract, "latest").await.unwrap();
        code(contract, "latest").await.unwrap();
        assert_eq!(count("eth_getCode"), 6);

        // A new head: read again, and its answer is the new block's.
        head.store(8, Ordering::SeqCst);
        assert_eq!(client.head(Duration::ZERO).await.unwrap(), 8);
        assert_eq!(code(payer, "latest").await.unwrap(), "\"0x08\"");
        code(payer, "latest").await.unwrap();
        assert_eq!(count("eth_getCode"), 7);
        // The head read is too old now: the code is read, nothing kept.
        tokio::time::sleep(stablerail::family::chain::HEAD_MEMO + Duration::from_millis(20)).await;
        code(payer, "latest").await.unwrap();
        assert_eq!((count("eth_getCode"), count("eth_blockNumber")), (8, 2));
    }
}

/// `crates/evm/src/tx.rs`
mod tx {
    use stablerail::family::evm::tx::{node_says, NodeSays};

    #[test]
    fn node_answers_are_classified_once() {
        // anvil, geth, reth, erigon and nethermind wordings
        assert_eq!(node_says(-32003, "transaction already imported"), NodeSays::Known);
        assert_eq!(node_says(-32000, "already known"), NodeSays::Known);
        assert_eq!(node_says(-32010, "AlreadyKnown"), NodeSays::Known);
        assert_eq!(node_says(-32000, "nonce too low: next nonce 5, tx nonce 4"), NodeSays::NonceTaken);
        assert_eq!(node_says(-32000, "OldNonce"), NodeSays::NonceTaken);
        assert_eq!(node_says(-32000, "replacement transaction underpriced"), NodeSays::Occupied);
        assert_eq!(node_says(-32000, "insufficient funds for gas * price + value"), NodeSays::Unfunded);
        assert_eq!(node_says(3, "execution reverted: FiatToken: insufficient"), NodeSays::Reverts);
        assert_eq!(node_says(-32000, "max fee per gas less than block base fee"), NodeSays::Other);
    }
}

/// `crates/evm/src/landed.rs`
mod landed {
    use alloy_primitives::{address, Address, B256, U256};
    use alloy_sol_types::SolEvent;
    use serde_json::{json, Value};
    use stablerail::family::evm::landed::{movements, Parties};
    use stablerail::payment::{Authorization, BatchStep};

    const TOKEN: Address = address!("833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    const PAYER: Address = address!("00000000000000000000000000000000000000a1");

    fn log(index: u64, emitter: Address, topics: Vec<B256>, words: &[U256]) -> Value {
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes::<32>()).collect();
        json!({ "address": emitter, "topics": topics, "data": alloy_primitives::hex::encode_prefixed(data), "logIndex": format!("{index:#x}") })
    }

    fn used(index: u64, nonce: B256) -> Value {
        let sig = alloy_primitives::keccak256("AuthorizationUsed(address,bytes32)");
        log(index, TOKEN, vec![sig, PAYER.into_word(), nonce], &[])
    }

    fn deposited(index: u64, channel: B256, amount: u64) -> Value {
        let topics = vec![batch_wire::Deposited::SIGNATURE_HASH, channel, stablerail::family::evm::batch::MULTICALL3.into_word()];
        log(index, batch_wire::SETTLEMENT, topics, &[U256::from(amount), U256::from(amount)])
    }

    fn credited(logs: Vec<Value>, channel: B256, nonce: Option<B256>) -> Vec<i64> {
        let receipt = json!({ "transactionHash": format!("{:#x}", B256::repeat_byte(9)), "blockNumber": "0x10", "logs": logs });
        let p = Parties { token: TOKEN, from: PAYER, to: batch_wire::SETTLEMENT, amount: U256::from(5000u64) };
        let auth = Authorization::BatchSettlement(BatchStep::Deposit { channel: channel.0, nonce: nonce.map(|n| n.0) });
        movements(&receipt, &p, &auth).into_iter().map(|m| m.index).collect()
    }

    /// An ERC-3009 deposit in a shared transaction is credited only the
    /// `Deposited` its own authorization's use made: never one of the same
    /// channel and amount made by another call (a failed deposit beside
    /// another's, a stranger's direct deposit in the same transaction).
    #[test]
    fn an_erc3009_deposit_is_credited_only_the_deposit_its_own_authorization_made() {
        let (x, y) = (B256::repeat_byte(0x11), B256::repeat_byte(0x22));
        let (ours, theirs) = (B256::repeat_byte(0xa0), B256::repeat_byte(0xb0));
        // Someone's deposit into X, then ours into X.
        let logs = vec![deposited(0, x, 5000), used(1, ours), deposited(4, x, 5000)];
        assert_eq!(credited(logs.clone(), x, Some(ours)), vec![4]);
        // Our authorization was not used here (our call failed in the
        // batch; another's of the same channel and amount landed).
        let logs = vec![used(1, theirs), deposited(4, x, 5000)];
        assert_eq!(credited(logs.clone(), x, Some(ours)), Vec::<i64>::new());
        // Read by the channel alone, as a deposit left alone is (Permit2),
        // that same transaction would be taken for ours.
        assert_eq!(credited(logs, x, None), vec![4]);
        // The first deposit after our authorization's use is another
        // channel's: nothing, not a later one of ours.
        let logs = vec![used(1, ours), deposited(2, y, 5000), deposited(3, x, 5000)];
        assert_eq!(credited(logs, x, Some(ours)), Vec::<i64>::new());
        // Of another amount: nothing.
        assert_eq!(credited(vec![used(1, ours), deposited(2, x, 4999)], x, Some(ours)), Vec::<i64>::new());
    }
}

/// `crates/evm/src/batch.rs`
mod batch {
    use stablerail::family::evm::batch::{together, Call};
    use stablerail::store::settlement::TxRow;

    fn call(n: i32, group: &'static str, keys: &[u8]) -> Call {
        let row = TxRow { intent_id: format!("s{n}"), leg: "x402".into(), step: 0, label: "settle".into() };
        let (reply, _) = tokio::sync::oneshot::channel();
        let keys = keys.iter().map(|k| [*k; 32]).collect();
        Call { row, to: Default::default(), data: vec![], limit: None, group, keys, reply, span: tracing::Span::none() }
    }

    fn ids(calls: &[Call]) -> Vec<String> {
        calls.iter().map(|c| c.row.intent_id.clone()).collect()
    }

    /// One batch per group each round, none holding a key twice (a
    /// channel): the rest wait for the next round, in order. A flood of one
    /// channel's calls holds up no other channel's, nor transfers.
    #[test]
    fn each_group_has_its_batch_and_no_batch_holds_a_key_twice() {
        let calls = vec![
            call(1, "batch-settlement", &[1, 2]),
            call(2, "batch-settlement", &[1]),
            call(3, "batch-settlement", &[1]),
            call(4, "transfers", &[]),
            call(5, "batch-settlement", &[4, 2]),
            call(6, "batch-settlement", &[5]),
            call(7, "transfers", &[]),
        ];
        let (batches, later) = together(calls, 64);
        let batches: Vec<Vec<String>> = batches.iter().map(|b| ids(b)).collect();
        assert_eq!(batches, vec![vec!["s1".to_string(), "s6".into()], vec!["s4".into(), "s7".into()]]);
        assert_eq!(ids(&later), vec!["s2".to_string(), "s3".into(), "s5".into()]);
        let (batches, later) = together(later, 64);
        assert_eq!(
            (batches.iter().map(|b| ids(b)).collect::<Vec<_>>(), ids(&later)),
            (vec![vec!["s2".to_string(), "s5".into()]], vec!["s3".to_string()])
        );
        let (batches, later) = together(later, 64);
        assert_eq!((batches.len(), batches[0].len(), later.len()), (1, 1, 0));
        // Transfers hold no keys: any number up to the most a batch takes.
        let (batches, later) = together((0..5).map(|n| call(n, "transfers", &[])).collect(), 64);
        assert_eq!((batches.len(), batches[0].len(), later.len()), (1, 5, 0));
        // A hundred calls of one channel ahead of a transfer and another
        // channel's call: each round sends one of the hundred, the transfer
        // and the other channel at once.
        let mut calls: Vec<Call> = (0..100).map(|n| call(n, "batch-settlement", &[7])).collect();
        calls.push(call(100, "transfers", &[]));
        calls.push(call(101, "batch-settlement", &[8]));
        let (batches, later) = together(calls, 3);
        let batches: Vec<Vec<String>> = batches.iter().map(|b| ids(b)).collect();
        assert_eq!(batches, vec![vec!["s0".to_string(), "s101".into()], vec!["s100".into()]]);
        assert_eq!((later.len(), later[0].row.intent_id.as_str()), (99, "s1"));
        // No batch is larger than the most it may take.
        let (batches, later) = together((0..5).map(|n| call(n, "transfers", &[])).collect(), 3);
        assert_eq!((batches[0].len(), ids(&later)), (3, vec!["s3".to_string(), "s4".into()]));
    }
}

/// `crates/evm/src/rhythm.rs`
mod rhythm {
    use std::time::{Duration, Instant};

    use stablerail::family::evm::rhythm::Rhythm;

    /// Heads (number, block timestamp in seconds, ms after t0 seen here).
    fn seen(heads: &[(u64, u64, u64)]) -> (Rhythm, Instant) {
        let t0 = Instant::now();
        let mut r = Rhythm::default();
        for (number, ts, ms) in heads {
            r.observe(*number, *ts, t0 + Duration::from_millis(*ms));
        }
        (r, t0)
    }

    /// Blocks every 2 s by their timestamps, seen here with jitter and one
    /// head missed: a batch goes out halfway between two blocks.
    #[test]
    fn a_steady_two_second_chain_sends_in_the_middle_of_the_block() {
        let (r, t0) = seen(&[(10, 100, 0), (11, 102, 2300), (13, 106, 6100), (14, 108, 8000), (15, 110, 10000)]);
        assert_eq!(r.interval(), Some(Duration::from_secs(2)));
        let at = r.send_at(t0 + Duration::from_millis(10300)).unwrap();
        assert_eq!(at.duration_since(t0).as_millis(), 11000, "the middle of 10-12 s");
        // Past the middle: the next block's.
        let at = r.send_at(t0 + Duration::from_millis(11200)).unwrap();
        assert_eq!(at.duration_since(t0).as_millis(), 13000);
        // Heads not seen for long (the poll was idle): no rhythm claimed.
        assert!(r.send_at(t0 + Duration::from_secs(20)).is_none());
    }

    /// The blocks before the head give the interval at once; the phase
    /// waits for the next head to be seen.
    #[test]
    fn history_gives_the_interval_and_a_new_head_the_phase() {
        let mut r = Rhythm::default();
        r.history(&[(6, 90), (7, 92), (8, 94), (9, 96), (10, 98)]);
        assert_eq!(r.interval(), Some(Duration::from_secs(2)));
        let t0 = Instant::now();
        assert!(r.send_at(t0).is_none(), "no phase before a head is seen to change");
        r.observe(10, 98, t0);
        assert!(r.send_at(t0).is_none(), "the head it already had says nothing of when it came");
        r.observe(11, 100, t0 + Duration::from_millis(500));
        assert_eq!(r.send_at(t0 + Duration::from_millis(600)).unwrap().duration_since(t0).as_millis(), 1500);
    }

    /// Blocks that follow our own sends (an instant devnet), fast blocks,
    /// too few: no rhythm, so batches go out at once.
    #[test]
    fn irregular_fast_or_few_blocks_claim_no_rhythm() {
        let (irregular, _) = seen(&[(1, 100, 0), (2, 101, 1000), (3, 104, 4000), (4, 105, 4900), (5, 109, 9000)]);
        assert!(irregular.interval().is_none());
        let (fast, _) = seen(&[(1, 100, 0), (2, 100, 250), (3, 100, 500), (4, 101, 750), (5, 101, 1000)]);
        assert!(fast.interval().is_none());
        let (few, _) = seen(&[(1, 100, 0), (2, 102, 2000), (3, 104, 4000)]);
        assert!(few.interval().is_none());
        // Timestamps a node got wrong (40 s apart): calls are not held that long.
        let (slow, _) = seen(&[(1, 100, 0), (2, 140, 2000), (3, 180, 4000), (4, 220, 6000), (5, 260, 8000)]);
        assert!(slow.interval().is_none());
    }

    /// Whether natural batching may send at once (a chain that mines many
    /// blocks a second) is judged on heads seen live, not on history (a
    /// devnet's setup blocks came fast, then it mined every 2 s).
    #[test]
    fn fast_is_judged_on_live_heads_only() {
        let mut r = Rhythm::default();
        r.history(&[(6, 90), (7, 90), (8, 90), (9, 90), (10, 90)]);
        assert_eq!(r.fast(), None, "history alone says nothing");
        let t0 = Instant::now();
        r.observe(11, 92, t0);
        assert_eq!(r.fast(), None, "one live head is not a pair");
        r.observe(12, 94, t0 + Duration::from_millis(2000));
        assert_eq!(r.fast(), Some(false), "every 2 s");
        let (instant, _) = seen(&[(1, 100, 0), (9, 100, 100), (20, 101, 200)]);
        assert_eq!(instant.fast(), Some(true), "eleven blocks in a second");
        let (idle, _) = seen(&[(1, 100, 0), (2, 107, 7000)]);
        assert_eq!(idle.fast(), Some(false), "an idle instant devnet holds for the next head, which its sends mine");
    }
}

/// `crates/engine/src/settle/hold.rs`
mod hold {
    use std::time::{Duration, Instant};

    use stablerail::settle::hold::Holds;

    /// A park ends before its lease with the claim it was made under; a
    /// later claim of the same row makes the earlier park's wake-up stale.
    #[test]
    fn a_park_ends_before_its_lease_and_a_new_claim_makes_it_stale() {
        let holds = Holds::default();
        let id = "in_1".to_string();
        holds.taken(std::slice::from_ref(&id), Instant::now() + Duration::from_secs(60), "r.1");
        let (until, first) = holds.park(&id, Duration::from_secs(600)).unwrap();
        let left = until.duration_since(Instant::now());
        assert!(left <= Duration::from_secs(50) && left > Duration::from_secs(45), "{left:?}");
        let (short, _) = holds.park(&id, Duration::from_secs(5)).unwrap();
        assert!(short.duration_since(Instant::now()) <= Duration::from_secs(5));
        assert_eq!(holds.current(&id, first).as_deref(), Some("r.1"), "the claim's own holder name");
        // The lease ran out and the row was claimed again here.
        holds.taken(std::slice::from_ref(&id), Instant::now() + Duration::from_secs(60), "r.2");
        assert!(holds.current(&id, first).is_none(), "the first claim's wake-up does nothing");
        holds.end(&id, first);
        assert!(holds.park(&id, Duration::from_secs(5)).is_some(), "ending a stale claim leaves the new one");
        // A lease about to run out: no park at all.
        holds.taken(std::slice::from_ref(&id), Instant::now() + Duration::from_secs(8), "r.3");
        assert!(holds.park(&id, Duration::from_secs(30)).is_none());
        holds.done(&id);
        assert!(holds.park(&id, Duration::from_secs(30)).is_none());
    }
}

/// `crates/solana/src/wire.rs`
mod wire {
    use stablerail::family::solana::wire::*;

    /// One signature slot; a v0 message with two keys.
    fn sample() -> Vec<u8> {
        let mut raw = vec![1u8];
        raw.extend([0u8; 64]);
        raw.push(0x80); // v0
        raw.extend([1, 0, 1]); // header
        raw.push(2);
        raw.extend([7u8; 32]);
        raw.extend([8u8; 32]);
        raw.extend([9u8; 32]); // blockhash
        raw.extend([0, 0]); // no instructions, no lookups
        raw
    }

    #[test]
    fn finds_signatures_keys_and_blockhash() {
        let raw = sample();
        let w = Wire::parse(&raw).unwrap();
        assert_eq!(w.slots, 1);
        assert_eq!(w.signature_range(0), 1..65);
        assert_eq!(w.account_keys().unwrap(), vec![[7u8; 32], [8u8; 32]]);
        assert_eq!(w.blockhash(), Some([9u8; 32]));
        assert_eq!(w.message()[0], 0x80);
        assert!(Wire::parse(&raw[..100]).is_none(), "cut short");
        assert!(Wire::parse(&[0u8]).is_none(), "no signature slot");
        assert_eq!(shortvec(&[0x80, 0x01], 0), Some((128, 2)));
    }
}

/// `crates/engine/src/wallets.rs`
mod wallets {
    use alloy_primitives::U256;
    use stablerail::wallets::*;

    #[test]
    fn display_is_exact() {
        assert_eq!(display(U256::from(0u8), 6), "0");
        assert_eq!(display(U256::from(1_500_000u64), 6), "1.5");
        assert_eq!(display(U256::from(1u8), 18), "0.000000000000000001");
        assert_eq!(display(U256::from(10u64).pow(U256::from(24u8)), 18), "1000000");
    }
}
