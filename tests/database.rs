//! Both engines migrate from the same files and answer the same queries.
//! Postgres: `STABLERAIL_TEST_POSTGRES` (default the machine's local server,
//! database `test`); each run works in a schema of its own.

use sqlx::Row;
use stablerail::db::{Backend, Db};

const TABLES: [&str; 7] =
    ["accounts", "agents", "api_keys", "recipients", "intents", "settlement_queue", "idempotency_keys"];

async fn check_schema(db: &Db) {
    db.ping().await.unwrap();
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
    again.ping().await.unwrap();
}

#[tokio::test]
async fn postgres_migrates_into_a_fresh_schema() {
    let base = std::env::var("STABLERAIL_TEST_POSTGRES").unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".into());
    let schema = format!("sr_test_{}", std::process::id());
    let admin = Db::connect_unmigrated(&base).await.expect("Postgres reachable (set STABLERAIL_TEST_POSTGRES)");
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).execute(&admin.pool).await.unwrap();
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin.pool).await.unwrap();

    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    let db = Db::connect(&url).await.unwrap();
    assert_eq!(db.backend, Backend::Postgres);
    check_schema(&db).await;
    db.pool.close().await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin.pool).await.unwrap();
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
