//! Both engines migrate from the same files and answer the same queries.
//! Postgres: `STABLERAIL_TEST_POSTGRES` (default the machine's local server,
//! database `test`); each run works in a schema of its own.

use sqlx::Row;
use stablerail::db::{Backend, Db};
use stablerail::store::settlement::claim;

const TABLES: [&str; 7] = ["accounts", "agents", "api_keys", "recipients", "intents", "settlement_queue", "idempotency_keys"];

async fn check_schema(db: &Db) {
    stablerail::store::ping(db).await.unwrap();
    for t in TABLES {
        let n: i64 = sqlx::query(&format!("SELECT COUNT(*) AS n FROM {t}"))
            .fetch_one(&db.pool)
            .await
            .unwrap_or_else(|e| panic!("{t}: {e}"))
            .get("n");
        assert_eq!(n, 0, "{t} starts empty");
    }
    // `$N` placeholders work on both engines.
    sqlx::query("INSERT INTO recipients (email, chain, address) VALUES ($1, $2, $3)")
        .bind("a@example.com")
        .bind("base")
        .bind("0x0000000000000000000000000000000000000001")
        .execute(&db.pool)
        .await
        .unwrap();
    let dup = sqlx::query("INSERT INTO recipients (email, chain, address) VALUES ($1, $2, $3)")
        .bind("a@example.com")
        .bind("base")
        .bind("0x0000000000000000000000000000000000000002")
        .execute(&db.pool)
        .await;
    assert!(dup.is_err(), "the primary key holds");
}

#[tokio::test]
async fn sqlite_file_migrates_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("sr.db").display());
    let db = Db::connect(&url).await.unwrap();
    assert_eq!(db.backend, Backend::Sqlite);
    check_schema(&db).await;
    let mode: String = sqlx::query("PRAGMA journal_mode").fetch_one(&db.pool).await.unwrap().get(0);
    assert_eq!(mode.to_lowercase(), "wal");
    // Reconnecting finds the schema in place and migrates nothing twice.
    drop(db);
    let again = Db::connect(&url).await.unwrap();
    stablerail::store::ping(&again).await.unwrap();
}

/// A migrated Postgres database in a schema of its own; `drop` removes it.
struct PgSchema {
    admin: Db,
    schema: String,
    db: Db,
}

impl PgSchema {
    async fn new(tag: &str) -> PgSchema {
        let base = std::env::var("STABLERAIL_TEST_POSTGRES").unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".into());
        let schema = format!("sr_test_{tag}_{}", std::process::id());
        let admin = Db::connect_unmigrated(&base).await.expect("Postgres reachable (set STABLERAIL_TEST_POSTGRES)");
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).execute(&admin.pool).await.unwrap();
        sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin.pool).await.unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        let db = Db::connect(&format!("{base}{sep}options=-c%20search_path%3D{schema}")).await.unwrap();
        PgSchema { admin, schema, db }
    }

    async fn drop(self) {
        self.db.pool.close().await;
        sqlx::query(&format!("DROP SCHEMA {} CASCADE", self.schema)).execute(&self.admin.pool).await.unwrap();
    }
}

#[tokio::test]
async fn postgres_migrates_into_a_fresh_schema() {
    let pg = PgSchema::new("migrate").await;
    assert_eq!(pg.db.backend, Backend::Postgres);
    check_schema(&pg.db).await;
    pg.drop().await;
}

/// Queue `n` intents: the first `sources` as source legs (priority 0) due at
/// 50, the rest as payouts (priority 1) due at 0, and one more not due
/// for a long time.
async fn queue(db: &Db, n: usize, sources: usize) {
    for k in 0..=n {
        let id = format!("i{k:02}");
        sqlx::query(
            "INSERT INTO intents (id, status, payer_chain, target_chain, payer_asset, target_asset, merchant_recipient, \
             amount_mode, sending_amount, receiving_amount, estimated_fee, fee_breakdown, payment_requirements, \
             created_at, expires_at, updated_at) \
             VALUES ($1, 'PENDING', 'base', 'base', 'usdc', 'usdc', '0x', 'exact', '1', '1', '0', '{}', '{}', 0, 0, 0)",
        )
        .bind(&id)
        .execute(&db.pool)
        .await
        .unwrap();
        let (due, priority) = match k {
            k if k == n => (1_000_000_000i64, 0),
            k if k < sources => (50, 0),
            _ => (0, 1),
        };
        sqlx::query("INSERT INTO settlement_queue (intent_id, enqueued_at, available_at, attempts, priority) VALUES ($1, 0, $2, 0, $3)")
            .bind(&id)
            .bind(due)
            .bind(priority)
            .execute(&db.pool)
            .await
            .unwrap();
    }
}

/// Two claims at once share nothing; source legs come first; what is not
/// due stays; an expired lease is taken over.
async fn check_claims(db: &Db) {
    const LEASE: i64 = 60_000;
    queue(db, 10, 5).await;
    let (a, b) = tokio::join!(claim(db, "a", 100, LEASE, 4), claim(db, "b", 100, LEASE, 4));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.len() <= 4 && b.len() <= 4, "{a:?} {b:?}");
    let mut taken: Vec<String> = a.iter().chain(&b).cloned().collect();
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), a.len() + b.len(), "no entry claimed twice: {a:?} {b:?}");
    let rest = claim(db, "c", 100, LEASE, 64).await.unwrap();
    taken.extend(rest.iter().cloned());
    taken.sort();
    let due: Vec<String> = (0..10).map(|k| format!("i{k:02}")).collect();
    assert_eq!(taken, due, "every due entry once, the future one not at all");
    if a.len() + b.len() == 8 {
        // The two first claims took 8 of 10: all five source legs among them.
        assert!((0..5).all(|k| a.iter().chain(&b).any(|id| *id == format!("i{k:02}"))), "{a:?} {b:?}");
    }
    assert!(claim(db, "d", 100, LEASE, 64).await.unwrap().is_empty(), "all leased");
    let mut again = claim(db, "e", 100 + LEASE + 1, LEASE, 64).await.unwrap();
    again.sort();
    assert_eq!(again, due, "expired leases are taken over");
    let holders: i64 =
        sqlx::query("SELECT COUNT(*) AS n FROM settlement_queue WHERE locked_by = 'e'").fetch_one(&db.pool).await.unwrap().get("n");
    assert_eq!(holders, 10);
    // A parked pass of the old holder, woken late: it may neither renew nor
    // release the row its successor holds; the holder may.
    use stablerail::store::settlement::{release, renew};
    assert!(!renew(db, "i00", "a", 100 + 3 * LEASE,).await.unwrap(), "another's lease is not renewed");
    release(db, "i00", "a", 0).await.unwrap();
    let held: Option<String> =
        sqlx::query("SELECT locked_by FROM settlement_queue WHERE intent_id = 'i00'").fetch_one(&db.pool).await.unwrap().get("locked_by");
    assert_eq!(held.as_deref(), Some("e"), "another's lease is not released");
    assert!(renew(db, "i00", "e", 100 + 3 * LEASE).await.unwrap());
    release(db, "i00", "e", 0).await.unwrap();
    assert_eq!(claim(db, "f", 100 + LEASE + 2, LEASE, 64).await.unwrap(), ["i00"], "released by its holder: due again");
}

#[tokio::test]
async fn claims_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::connect(&format!("sqlite://{}", dir.path().join("q.db").display())).await.unwrap();
    check_claims(&sqlite).await;
    let pg = PgSchema::new("claims").await;
    check_claims(&pg.db).await;
    pg.drop().await;
}

/// Legs settled together are written together, each a compare-and-set on
/// its status: a source leg's payout is queued behind due source legs with
/// its budget restarted, a paid intent leaves the queue, and a leg that is
/// not in the expected status is not moved.
/// A leg's claim on one movement of its transaction (log `index`).
fn leg_claim(id: &str, leg: stablerail::store::transition::intents::Leg, tx: &str, index: i64) -> stablerail::store::books::Credit {
    use stablerail::store::books::{Credit, Purpose};
    let purpose = match leg {
        stablerail::store::transition::intents::Leg::Source => Purpose::Source,
        stablerail::store::transition::intents::Leg::Target => Purpose::Payout,
    };
    let movement = stablerail::payment::Movement {
        tx: tx.into(),
        index,
        token: "0xT".into(),
        from: "0xP".into(),
        to: "0xC".into(),
        amount: "1000000".into(),
        block: 7,
        fee: Some("21000".into()),
    };
    Credit { chain: "base".into(), purpose, owner: id.into(), candidates: vec![movement], relayer_paid: true }
}

async fn check_settled_legs(db: &Db) {
    use stablerail::store::group::Group;
    use stablerail::store::transition::intents::{Leg, LegSettled};
    queue(db, 6, 6).await;
    sqlx::query("UPDATE settlement_queue SET attempts = 3, locked_by = 'x', locked_until = 99").execute(&db.pool).await.unwrap();
    sqlx::query("UPDATE intents SET status = 'TARGET_SETTLING' WHERE id = 'i05'").execute(&db.pool).await.unwrap();
    let group = std::sync::Arc::new(Group::<LegSettled>::default());
    let legs = [("i00", Leg::Source, "0xa"), ("i01", Leg::Source, "0xa"), ("i02", Leg::Source, "0xb"), ("i05", Leg::Target, "0xc")];
    let all = legs.map(|(id, leg, tx)| {
        let (group, db) = (group.clone(), db.clone());
        let index = i64::from(id.as_bytes()[2]);
        tokio::spawn(async move {
            group.write(&db, LegSettled { id: id.into(), leg, tx_hash: tx.into(), credit: leg_claim(id, leg, tx, index) }).await.unwrap()
        })
    });
    for r in futures::future::join_all(all).await {
        assert!(r.unwrap(), "each leg holds a movement of its own");
    }
    // i03 was not settled; i04 is PENDING and gets a target write: no move.
    group
        .write(
            db,
            LegSettled { id: "i04".into(), leg: Leg::Target, tx_hash: "0xd".into(), credit: leg_claim("i04", Leg::Target, "0xd", 0) },
        )
        .await
        .unwrap();
    let row = |id: &'static str| async move {
        let r = sqlx::query("SELECT status, source_tx_hash, target_tx_hash FROM intents WHERE id = $1")
            .bind(id)
            .fetch_one(&db.pool)
            .await
            .unwrap();
        let q = sqlx::query("SELECT priority, attempts, locked_by FROM settlement_queue WHERE intent_id = $1")
            .bind(id)
            .fetch_optional(&db.pool)
            .await
            .unwrap();
        (
            r.get::<String, _>("status"),
            r.get::<Option<String>, _>("source_tx_hash").or(r.get::<Option<String>, _>("target_tx_hash")),
            q.map(|q| (q.get::<i32, _>("priority"), q.get::<i32, _>("attempts"), q.get::<Option<String>, _>("locked_by"))),
        )
    };
    assert_eq!(row("i00").await, ("SOURCE_SETTLED".into(), Some("0xa".into()), Some((1, 0, None))));
    assert_eq!(row("i01").await, ("SOURCE_SETTLED".into(), Some("0xa".into()), Some((1, 0, None))));
    assert_eq!(row("i02").await, ("SOURCE_SETTLED".into(), Some("0xb".into()), Some((1, 0, None))));
    assert_eq!(row("i03").await, ("PENDING".into(), None, Some((0, 3, Some("x".into())))));
    assert_eq!(row("i05").await, ("TARGET_SETTLED".into(), Some("0xc".into()), None));
    assert_eq!(row("i04").await.0, "PENDING", "a target write does not move a PENDING intent");
    // Settled again (a pass that lost its lease): nothing changes.
    group
        .write(
            db,
            LegSettled { id: "i00".into(), leg: Leg::Source, tx_hash: "0xe".into(), credit: leg_claim("i00", Leg::Source, "0xe", 0) },
        )
        .await
        .unwrap();
    assert_eq!(row("i00").await.1, Some("0xa".into()));
    let held = stablerail::store::books::of(db, stablerail::store::books::Purpose::Source, "i00").await.unwrap().unwrap();
    assert_eq!((held.tx_id.as_str(), held.log_index), ("0xa", 48), "a payment holds the one movement it was first credited");

    // One movement, one credit: i03 claims i01's movement (the same log of
    // the same transaction) and is refused, in the database, without moving;
    // claiming it again changes nothing.
    for _ in 0..2 {
        let taken = leg_claim("i03", Leg::Source, "0xa", 49);
        assert!(!group.write(db, LegSettled { id: "i03".into(), leg: Leg::Source, tx_hash: "0xa".into(), credit: taken }).await.unwrap());
        assert_eq!(row("i03").await.0, "PENDING", "an uncredited leg does not move");
    }
    // Payouts starting together: the first authorization stored is the one
    // used; an intent in neither state is not moved.
    use stablerail::store::transition::intents::StartPayout;
    let payouts = std::sync::Arc::new(Group::<StartPayout>::default());
    let start = |id: &'static str, proof: Option<&str>| {
        let (payouts, db, proof) = (payouts.clone(), db.clone(), proof.map(str::to_string));
        tokio::spawn(async move { payouts.write(&db, StartPayout { id: id.into(), proof }).await.unwrap() })
    };
    let started = futures::future::join_all([start("i00", Some("p0")), start("i01", Some("p1")), start("i03", Some("p3"))]).await;
    let started: Vec<Option<String>> = started.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(started, [Some("p0".into()), Some("p1".into()), None]);
    assert_eq!(start("i00", Some("other")).await.unwrap(), Some("p0".into()), "the stored authorization stays");
    assert_eq!(row("i00").await.0, "TARGET_SETTLING");
    assert_eq!(row("i03").await.0, "PENDING");

    // Each change is an event, written with it: versions rising, the
    // state it left named; a resumed payout and a lost lease's repeat are
    // no change and no event; an intent that did not move has none.
    use stablerail::store::transition::{events_of, Subject};
    let events = |id: &'static str| async move {
        events_of(db, Subject::Intent, id).await.unwrap().into_iter().map(|(v, f, t, _)| (v, f.unwrap_or_default(), t)).collect::<Vec<_>>()
    };
    let i00 = events("i00").await;
    assert_eq!(
        i00.iter().map(|(_, f, t)| (f.as_str(), t.as_str())).collect::<Vec<_>>(),
        [("PENDING", "SOURCE_SETTLED"), ("SOURCE_SETTLED", "TARGET_SETTLING")],
        "{i00:?}"
    );
    assert!(i00[0].0 < i00[1].0, "versions rise: {i00:?}");
    assert_eq!(
        events("i05").await.iter().map(|(_, f, t)| (f.clone(), t.clone())).collect::<Vec<_>>(),
        [("TARGET_SETTLING".into(), "TARGET_SETTLED".into())]
    );
    assert!(events("i03").await.is_empty() && events("i04").await.is_empty());

    // Two claims of one movement written at once: exactly one wins.
    sqlx::query("UPDATE intents SET status = 'PENDING' WHERE id IN ('i03', 'i04')").execute(&db.pool).await.unwrap();
    let race = ["i03", "i04"].map(|id| {
        let (group, db) = (group.clone(), db.clone());
        tokio::spawn(async move {
            group
                .write(
                    &db,
                    LegSettled { id: id.into(), leg: Leg::Source, tx_hash: "0xf".into(), credit: leg_claim(id, Leg::Source, "0xf", 3) },
                )
                .await
                .unwrap()
        })
    });
    let won: Vec<bool> = futures::future::join_all(race).await.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "one movement credits one payment: {won:?}");
    let owners: i64 =
        sqlx::query("SELECT COUNT(*) AS n FROM book_movements WHERE tx_id = '0xf'").fetch_one(&db.pool).await.unwrap().get("n");
    assert_eq!(owners, 1);
}

#[tokio::test]
async fn settled_legs_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::connect(&format!("sqlite://{}", dir.path().join("l.db").display())).await.unwrap();
    check_settled_legs(&sqlite).await;
    let pg = PgSchema::new("legs").await;
    check_settled_legs(&pg.db).await;
    pg.drop().await;
}

/// Proofs accepted together commit together and each is checked against
/// the float after the ones before it: of eight intents of 1 token on a
/// float of 5, five are taken and three are short; a reused replay key
/// fails that acceptance alone; an expired intent is not taken.
async fn check_grouped_acceptance(db: &Db) {
    use rust_decimal::Decimal;
    use stablerail::store::group::Group;
    use stablerail::store::transition::intents::{Accept, Accepted, Reserve};
    for k in 0..10 {
        sqlx::query(
            "INSERT INTO intents (id, status, payer_chain, target_chain, payer_asset, target_asset, merchant_recipient, \
             amount_mode, sending_amount, receiving_amount, estimated_fee, fee_breakdown, payment_requirements, \
             created_at, expires_at, updated_at, receiving_micros) \
             VALUES ($1, 'AWAITING_PAYMENT', 'base', 'arbitrum', 'usdc', 'usdc', '0x', 'exact', '1', '1', '0', '{}', $3, 0, $2, 0, 1000000)",
        )
        .bind(format!("a{k}"))
        .bind(if k == 9 { 1i64 } else { i64::MAX / 2 })
        .bind(r#"{"scheme":"exact","network":"eip155:8453","amount":"1000000","asset":"0x","payTo":"0x","maxTimeoutSeconds":60}"#)
        .execute(&db.pool)
        .await
        .unwrap();
    }
    let now = stablerail::clock::now_ms();
    let accept = |k: usize, key: String| Accept {
        id: format!("a{k}"),
        settle_proof: Some("{}".into()),
        replay_key: Some(key),
        payer: Some("0xpayer".into()),
        reserve: Some(Reserve {
            target_chain: "arbitrum".into(),
            target_asset: "usdc".into(),
            amount: Decimal::ONE,
            balance: Decimal::from(5),
        }),
        now_ms: now,
    };
    let group = std::sync::Arc::new(Group::<Accept>::default());
    let all = (0..8).map(|k| {
        let (group, db, a) = (group.clone(), db.clone(), accept(k, format!("key{k}")));
        tokio::spawn(async move { group.write(&db, a).await })
    });
    let answers: Vec<_> = futures::future::join_all(all).await.into_iter().map(|r| r.unwrap().unwrap()).collect();
    assert_eq!(answers.iter().filter(|a| **a == Accepted::Yes).count(), 5, "{answers:?}");
    assert_eq!(answers.iter().filter(|a| **a == Accepted::FloatShort).count(), 3, "{answers:?}");
    let queued: i64 = sqlx::query("SELECT COUNT(*) AS n FROM settlement_queue").fetch_one(&db.pool).await.unwrap().get("n");
    assert_eq!(queued, 5, "each taken proof is queued once, no other");

    // A reused key (key0 is taken) beside a good one, on a float with room.
    let roomy = |mut a: Accept| {
        a.reserve.as_mut().unwrap().balance = Decimal::from(100);
        a
    };
    let (dup, good) = (roomy(accept(8, "key0".into())), roomy(accept(7, "key7b".into())));
    let (g1, g2, d1, d2) = (group.clone(), group.clone(), db.clone(), db.clone());
    let (dup, good) =
        tokio::join!(tokio::spawn(async move { g1.write(&d1, dup).await }), tokio::spawn(async move { g2.write(&d2, good).await }));
    assert!(dup.unwrap().unwrap_err().is_duplicate());
    let good = good.unwrap().unwrap();
    let a7 = answers[7] == Accepted::Yes;
    assert_eq!(good, if a7 { Accepted::No } else { Accepted::Yes }, "a7 was taken before: {a7}");
    assert_eq!(group.write(db, roomy(accept(9, "key9".into()))).await.unwrap(), Accepted::No, "expired");
}

#[tokio::test]
async fn grouped_acceptance_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::connect(&format!("sqlite://{}", dir.path().join("a.db").display())).await.unwrap();
    check_grouped_acceptance(&sqlite).await;
    let pg = PgSchema::new("accepts").await;
    check_grouped_acceptance(&pg.db).await;
    pg.drop().await;
}

#[tokio::test]
async fn in_memory_sqlite_is_one_database() {
    // Every pooled connection must see the migrated schema and each other's rows.
    let db = Db::connect("sqlite::memory:").await.unwrap();
    let inserts = (0..10).map(|n| {
        let db = db.clone();
        tokio::spawn(async move {
            sqlx::query("INSERT INTO recipients (email, chain, address) VALUES ($1, 'base', '0x')")
                .bind(format!("{n}@example.com"))
                .execute(&db.pool)
                .await
        })
    });
    for r in futures::future::join_all(inserts).await {
        r.unwrap().unwrap();
    }
    let n: i64 = sqlx::query("SELECT COUNT(*) AS n FROM recipients").fetch_one(&db.pool).await.unwrap().get("n");
    assert_eq!(n, 10);
}

/// The operator's list/show/disable queries (optional filters) on one engine.
async fn check_operator_queries(db: &Db) {
    use stablerail::store::agents as repo;
    let acc = repo::create_account(db, "acme", 1).await.unwrap();
    let a = repo::create_agent(db, Some(&acc), "bot", 2).await.unwrap();
    repo::create_agent(db, None, "loner", 3).await.unwrap();
    assert_eq!(repo::accounts(db, None).await.unwrap().len(), 1);
    assert_eq!(repo::accounts(db, Some(&acc)).await.unwrap()[0].name, "acme");
    assert_eq!(repo::agents(db, None, None).await.unwrap().len(), 2);
    assert_eq!(repo::agents(db, Some(&acc), None).await.unwrap().len(), 1);
    assert_eq!(repo::agents(db, None, Some(&a.id)).await.unwrap()[0].name, "bot");
    repo::set_recipient(db, "Shop@Example.com", "base", "0x01").await.unwrap();
    repo::set_recipient(db, "shop@example.com", "arbitrum", "0x02").await.unwrap();
    assert_eq!(repo::disable_recipient(db, "shop@example.com", Some("base"), 5).await.unwrap(), 1);
    assert_eq!(repo::recipient(db, "shop@example.com", "base").await.unwrap(), None);
    assert_eq!(repo::disable_recipient(db, "shop@example.com", None, 6).await.unwrap(), 1);
    assert!(repo::recipients(db, Some("shop@example.com")).await.unwrap().iter().all(|r| r.status == "disabled"));
    assert!(repo::disable_account(db, &acc).await.unwrap());
    assert_eq!(repo::agents(db, Some(&acc), None).await.unwrap()[0].status, "disabled");
    assert!(matches!(repo::create_agent(db, Some(&acc), "late", 7).await, Err(repo::AgentError::AccountDisabled(_))));
}

#[tokio::test]
async fn operator_queries_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::connect(&format!("sqlite://{}", dir.path().join("o.db").display())).await.unwrap();
    check_operator_queries(&sqlite).await;
    let pg = PgSchema::new("operator").await;
    check_operator_queries(&pg.db).await;
    pg.drop().await;
}

fn swap(k: usize) -> stablerail::store::swaps::SwapIntent {
    stablerail::store::swaps::SwapIntent {
        id: format!("swp_{k}"),
        from_chain: "base".into(),
        to_chain: "base".into(),
        source_tx_hash: format!("0x{k:064x}"),
        from_token: "0x01".into(),
        to_token: "0x02".into(),
        payer_address: "0x03".into(),
        recipient_address: "0x03".into(),
        sending_token_amount: "1".into(),
        status: "PENDING".into(),
        substatus: None,
        dest_tx_hash: None,
        received_amount: None,
        error_code: None,
        created_at: 0,
        updated_at: 0,
    }
}

/// Registered swaps: one intent per (chain, hash, details); two trackers at once
/// never hold the same swap; only the lease's holder settles it, once; a
/// tracker that died (its lease run out) is taken over by the next.
async fn check_swap_leases(db: &Db) {
    use stablerail::store::swaps::{claim_due, later, Outcome};
    use stablerail::store::transition::swaps::{finish, register};
    const LEASE: i64 = 30_000;
    for k in 0..6 {
        register(db, &swap(k), "d").await.unwrap();
    }
    let mut again = swap(0);
    again.id = "swp_other".into();
    assert_eq!(register(db, &again, "d").await.unwrap().id, "swp_0", "the same transaction and details are the same intent");
    // Other details are another registration: the first blocks nobody's.
    let mut squatted = swap(0);
    squatted.id = "swp_squat".into();
    assert_eq!(register(db, &squatted, "other").await.unwrap().id, "swp_squat");
    sqlx::query("DELETE FROM swap_intents WHERE id = 'swp_squat'").execute(&db.pool).await.unwrap();
    let (a, b) = tokio::join!(claim_due(db, "a", 100, LEASE, 10), claim_due(db, "b", 100, LEASE, 10));
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut ids: Vec<String> = a.iter().chain(&b).map(|s| s.id.clone()).collect();
    ids.sort();
    assert_eq!(ids, (0..6).map(|k| format!("swp_{k}")).collect::<Vec<_>>(), "each swap held by one tracker: {a:?} {b:?}");
    assert!(claim_due(db, "c", 100, LEASE, 10).await.unwrap().is_empty(), "all leased");
    let holder = |id: &str| if a.iter().any(|s| s.id == id) { "a" } else { "b" };
    let done = Outcome { status: "DONE", substatus: Some("COMPLETED"), dest_tx_hash: None, received_amount: Some("1"), error_code: None };
    assert!(!finish(db, "swp_0", "c", &done, 200).await.unwrap(), "not the holder");
    assert!(finish(db, "swp_0", holder("swp_0"), &done, 200).await.unwrap());
    assert!(!finish(db, "swp_0", holder("swp_0"), &Outcome { status: "FAILED", ..done }, 300).await.unwrap(), "settled once");
    use stablerail::store::transition::{events_of, Subject};
    assert_eq!(
        events_of(db, Subject::Swap, "swp_0").await.unwrap(),
        [(1, None, "PENDING".into(), None), (2, Some("PENDING".into()), "DONE".into(), None)],
        "registered once (the second registration is the same intent), finished once"
    );
    later(db, "swp_1", holder("swp_1"), Some("WAIT_SOURCE_CONFIRMATIONS"), 5_000, 200).await.unwrap();
    let early = claim_due(db, "d", 1_000, LEASE, 10).await.unwrap();
    assert!(early.is_empty(), "swp_1 is not due yet, the rest still leased: {early:?}");
    let mut after = claim_due(db, "e", 100 + LEASE + 1, LEASE, 10).await.unwrap().into_iter().map(|s| s.id).collect::<Vec<_>>();
    after.sort();
    assert_eq!(after, (1..6).map(|k| format!("swp_{k}")).collect::<Vec<_>>(), "taken over after the lease; the settled one not");
}

#[tokio::test]
async fn swap_leases_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::connect(&format!("sqlite://{}", dir.path().join("s.db").display())).await.unwrap();
    check_swap_leases(&sqlite).await;
    let pg = PgSchema::new("swaps").await;
    check_swap_leases(&pg.db).await;
    pg.drop().await;
}

fn settlement(id: &str, replay_key: &str) -> stablerail::store::facilitator::Settlement {
    stablerail::store::facilitator::Settlement {
        id: id.into(),
        replay_key: replay_key.into(),
        payload_hash: format!("hash-of-{replay_key}"),
        payment_id: Some(format!("pay-{replay_key}-0123456789")),
        client: "shop".into(),
        chain: "base".into(),
        asset: "usdc".into(),
        network: "eip155:8453".into(),
        scheme: "exact".into(),
        payer: "0xpayer".into(),
        pay_to: "0xshop".into(),
        amount: "40000".into(),
        requirements: "{}".into(),
        payload: "{}".into(),
        status: stablerail::store::facilitator::SettlementStatus::Queued,
        error_reason: None,
        tx_hash: None,
        created_at: 1,
        updated_at: 1,
    }
}

/// A facilitator settlement refused with nothing sent ends failed and lets
/// go of its replay key and payment id (the same payment may be recorded
/// again); one that settled keeps them; finishing is a compare-and-set,
/// alone or grouped.
async fn check_facilitator_ledger(db: &Db) {
    use stablerail::store::facilitator::{self as ledger, Outcome, SettlementStatus};
    use stablerail::store::group::Group;
    use stablerail::store::transition::settlements::{insert, Finish};
    let refused = |why: &str| Outcome { status: SettlementStatus::Failed, tx_hash: None, error_reason: Some(why.into()), refused: true };
    let first = settlement("xs_1", "base:k1");
    insert(db, &first, None).await.unwrap();
    assert!(insert(db, &settlement("xs_other", "base:k1"), None).await.unwrap_err().is_duplicate());

    let finishes = Group::<Finish>::default();
    let finish = |id: &str, outcome: Outcome| Finish { id: id.into(), outcome, credit: None };
    assert_eq!(finishes.write(db, finish("xs_1", refused("insufficient_funds"))).await.unwrap(), Some(true));
    use stablerail::store::transition::{events_of, Subject};
    assert_eq!(
        events_of(db, Subject::Settlement, "xs_1").await.unwrap(),
        [(1, None, "queued".into(), None), (2, Some("queued".into()), "failed".into(), Some("insufficient_funds".into()))],
        "a refused duplicate recorded nothing"
    );
    let row = ledger::get(db, "xs_1").await.unwrap().unwrap();
    assert_eq!((row.status, row.error_reason.as_deref()), (SettlementStatus::Failed, Some("insufficient_funds")));
    assert_eq!((row.replay_key.as_str(), row.payment_id), ("xs_1", None), "the authorization is let go");
    assert!(ledger::by_replay_key(db, "base:k1").await.unwrap().is_none());
    assert!(ledger::by_payload_hash(db, &first.payload_hash).await.unwrap().is_none(), "a released row answers nothing");

    // The same payment again, and this time it settles: it keeps its keys.
    insert(db, &settlement("xs_2", "base:k1"), None).await.unwrap();
    let settled = Outcome { status: SettlementStatus::Settled, tx_hash: Some("0xabc".into()), error_reason: None, refused: false };
    assert_eq!(finishes.write(db, finish("xs_2", settled.clone())).await.unwrap(), Some(true));
    assert_eq!(finishes.write(db, finish("xs_2", settled)).await.unwrap(), None, "finished once");
    let row = ledger::get(db, "xs_2").await.unwrap().unwrap();
    assert_eq!((row.replay_key.as_str(), row.tx_hash.as_deref()), ("base:k1", Some("0xabc")));
    assert!(row.payment_id.is_some());
    assert_eq!(ledger::by_payload_hash(db, &first.payload_hash).await.unwrap().unwrap().id, "xs_2");
    assert!(insert(db, &settlement("xs_3", "base:k1"), None).await.unwrap_err().is_duplicate());

    // Finishes that come together are written together, each answered.
    for k in 0..6 {
        insert(db, &settlement(&format!("xs_g{k}"), &format!("base:g{k}")), None).await.unwrap();
    }
    let finishes = std::sync::Arc::new(finishes);
    let all = (0..6).map(|k| {
        let (finishes, db) = (finishes.clone(), db.clone());
        let f = Finish { id: format!("xs_g{k}"), outcome: refused("invalid_transaction_state"), credit: None };
        tokio::spawn(async move { finishes.write(&db, f).await.unwrap() })
    });
    assert!(futures::future::join_all(all).await.into_iter().all(|r| r.unwrap() == Some(true)));
    for k in 0..6 {
        let row = ledger::get(db, &format!("xs_g{k}")).await.unwrap().unwrap();
        assert_eq!((row.status, row.replay_key), (SettlementStatus::Failed, format!("xs_g{k}")));
    }
}

#[tokio::test]
async fn facilitator_ledger_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::connect(&format!("sqlite://{}", dir.path().join("f.db").display())).await.unwrap();
    check_facilitator_ledger(&sqlite).await;
    let pg = PgSchema::new("ledger").await;
    check_facilitator_ledger(&pg.db).await;
    pg.drop().await;
}
