/// `crates/store/src/db.rs`
mod db {
    /// Every file of `migrations/` is embedded, in order, and nothing else.
    #[test]
    fn the_embedded_migrations_are_the_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
        let mut files: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        files.sort();
        let embedded: Vec<&str> = stablerail::db::MIGRATIONS.iter().map(|(f, _)| *f).collect();
        assert_eq!(files, embedded);
        for (file, sql) in stablerail::db::MIGRATIONS {
            assert_eq!(std::fs::read_to_string(dir.join(file)).unwrap(), *sql, "{file}");
            let m = stablerail::db::migration(file, sql).unwrap();
            assert!(m.version > 0 && !m.description.contains('_'), "{file}");
        }
    }

    /// Two processes on one SQLite file (the service and the CLI): a write
    /// transaction that reads first and writes after the other wrote waits
    /// its turn instead of failing with "database is locked" (a deferred
    /// `BEGIN` fails at its first write: its snapshot is stale).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_transaction_waits_for_another_processs_writer() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let service = Db::connect_unmigrated(&url).await.unwrap();
        let cli = Db::connect_unmigrated(&url).await.unwrap();
        sqlx::query("CREATE TABLE t (k INTEGER PRIMARY KEY)").execute(&service.pool).await.unwrap();
        let mut tx = cli.begin().await.unwrap();
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t").fetch_one(&mut *tx).await.unwrap();
        // The other process writes meanwhile: it waits for this transaction.
        let other = tokio::spawn(async move { sqlx::query("INSERT INTO t (k) VALUES (1)").execute(&service.pool).await.map(|_| ()) });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        sqlx::query("INSERT INTO t (k) VALUES ($1)").bind(n + 2).execute(&mut *tx).await.expect("the reading transaction writes");
        tx.commit().await.unwrap();
        other.await.unwrap().expect("the other writer went after it");
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t").fetch_one(&cli.read).await.unwrap();
        assert_eq!(rows, 2);
    }

    use stablerail::db::Db;
}

/// `crates/store/src/store/group.rs`
mod group {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use stablerail::db::Db;
    use stablerail::store::group::{Group, Write};
    use stablerail::store::StoreError;

    static WRITES: AtomicUsize = AtomicUsize::new(0);

    /// Rows by key, all of a group in one transaction.
    struct Insert;

    impl Write for Insert {
        type Item = i64;
        type Out = i64;
        async fn write(db: &Db, items: &[i64]) -> Result<Vec<i64>, StoreError> {
            WRITES.fetch_add(1, Ordering::SeqCst);
            let mut tx = db.pool.begin().await?;
            for k in items {
                sqlx::query("INSERT INTO t (k) VALUES ($1)").bind(k).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(items.iter().map(|k| k * 10).collect())
        }
    }

    /// Writes queued together are one write, each caller gets its own
    /// answer, and an item that fails (a duplicate key) fails alone: its
    /// neighbours in the group are written once each.
    #[tokio::test(flavor = "current_thread")]
    async fn writes_queued_together_are_one_write_and_fail_alone() {
        let db = Db::connect_unmigrated("sqlite::memory:").await.unwrap();
        sqlx::query("CREATE TABLE t (k INTEGER PRIMARY KEY)").execute(&db.pool).await.unwrap();
        let group = Arc::new(Group::<Insert>::default());

        let callers: Vec<_> = (1..=50)
            .map(|k| {
                tokio::spawn({
                    let (group, db) = (group.clone(), db.clone());
                    async move { group.write(&db, k).await }
                })
            })
            .collect();
        for (k, caller) in (1..=50).zip(callers) {
            assert_eq!(caller.await.unwrap().unwrap(), k * 10);
        }
        let grouped = WRITES.swap(0, Ordering::SeqCst);
        assert!(grouped <= 2, "50 writes queued together took {grouped} writes");

        // 7 is taken: its group fails, then each is written on its own.
        let callers: Vec<_> = [51, 7, 52]
            .into_iter()
            .map(|k| {
                tokio::spawn({
                    let (group, db) = (group.clone(), db.clone());
                    async move { group.write(&db, k).await }
                })
            })
            .collect();
        let answers: Vec<_> = futures::future::join_all(callers).await.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(answers[0].as_ref().unwrap(), &510);
        assert!(answers[1].as_ref().unwrap_err().is_duplicate(), "{:?}", answers[1]);
        assert_eq!(answers[2].as_ref().unwrap(), &520);
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t").fetch_one(&db.pool).await.unwrap();
        assert_eq!(n, 52);
    }
}

/// `crates/family/src/family/keys.rs`
mod keys {
    use stablerail::config::Family;
    use stablerail::db::Db;
    use stablerail::family::keys::*;

    #[test]
    fn roles_name_their_keys_by_family() {
        assert_eq!(Role::Relayer.key_name(Family::Evm), RELAYER);
        assert_eq!(Role::Collection.key_name(Family::Evm), COLLECTION);
        assert_eq!(Role::Proxy.key_name(Family::Solana), "proxy:solana");
        assert_eq!(Role::Agent("ag1".into()).key_name(Family::Tron), "agent:ag1:tron");
        assert_eq!(KeyKind::of(Family::Solana), KeyKind::Ed25519);
        assert_eq!(KeyKind::of(Family::Tron), KeyKind::Secp256k1);
        assert_eq!(family_of(&agent_key("ag1")), Family::Evm);
        assert_eq!(family_of("proxy:solana"), Family::Solana);
        assert_eq!(family_of("treasury"), Family::Evm);
        assert_eq!(service_wallets(&[Family::Evm]), [RELAYER, COLLECTION, PROXY]);
        assert!(is_service_wallet("proxy:solana") && !is_service_wallet("agent:a:solana") && !is_service_wallet("treasury"));
    }

    /// Each family's wallets are keys of its kind, sealed alike, with
    /// addresses in the family's form.
    #[tokio::test]
    async fn keys_of_each_kind_are_sealed_and_opened() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect("sqlite::memory:").await.unwrap();
        let (keys, _) = Keystore::create(db.clone(), &dir.path().join("master.key")).unwrap();
        let agent = Role::Agent("ag1".into());
        let sol = keys.ed25519(&agent, Family::Solana).await.unwrap();
        let sol_address = keys.address(&agent.key_name(Family::Solana)).await.unwrap();
        assert_eq!(bs58::decode(&sol_address).into_vec().unwrap(), sol.public());
        assert!(keys.secp256k1(&agent, Family::Solana).await.is_err(), "a Solana wallet is not secp256k1");
        let evm = keys.secp256k1(&agent, Family::Evm).await.unwrap();
        let tron = keys.secp256k1(&agent, Family::Tron).await.unwrap();
        assert_ne!(evm.address(), tron.address(), "one wallet per family");
        let tron_address = keys.address(&agent.key_name(Family::Tron)).await.unwrap();
        assert!(tron_address.starts_with('T'), "{tron_address}");
        let raw = bs58::decode(&tron_address).with_check(None).into_vec().unwrap();
        assert_eq!(&raw[1..], tron.address().as_slice());
        // A second keystore over the same rows opens the same keys.
        let again = Keystore::open(db, &dir.path().join("master.key")).unwrap();
        assert_eq!(again.ed25519(&agent, Family::Solana).await.unwrap().public(), sol.public());
        // An ed25519 seed imports under a Solana name; a short one does not.
        let seed = "11".repeat(32);
        let imported = again.import("treasury:solana", &seed).await.unwrap();
        let expected = ed25519_dalek::SigningKey::from_bytes(&[0x11; 32]);
        assert_eq!(imported, bs58::encode(expected.verifying_key().as_bytes()).into_string());
        assert!(again.import("short:solana", "1111").await.is_err());
    }
}
