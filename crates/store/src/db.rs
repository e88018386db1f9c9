//! Database access: SQLite (embedded default, WAL) or Postgres (several
//! replicas on one database), through one pool type and one set of queries.
//! Queries bind `$N` parameters, which both engines accept.

use std::str::FromStr;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A write transaction and its span. Queries run on it as on sqlx's
/// (`&mut *tx`); it ends with `commit`, or rolls back when dropped.
pub struct Tx {
    inner: sqlx::Transaction<'static, sqlx::Any>,
    _span: tracing::Span,
}

impl Tx {
    // Entered again for the end, so the span lasts from the wait for
    // the lock to the commit (a span ends when it is last left).
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        tracing::Instrument::instrument(self.inner.commit(), self._span).await
    }

    pub async fn rollback(self) -> Result<(), sqlx::Error> {
        tracing::Instrument::instrument(self.inner.rollback(), self._span).await
    }
}

impl std::ops::Deref for Tx {
    type Target = sqlx::AnyConnection;
    fn deref(&self) -> &sqlx::AnyConnection {
        &self.inner
    }
}

impl std::ops::DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut sqlx::AnyConnection {
        &mut self.inner
    }
}

impl Backend {
    /// OpenTelemetry's `db.system` name.
    pub fn system(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgresql",
        }
    }
}

#[derive(Clone)]
pub struct Db {
    /// Every write, and reads that must see a write of the same transaction.
    pub pool: AnyPool,
    /// Plain reads. On SQLite a few connections of their own (WAL readers
    /// never wait for the one writer), so a read does not queue behind the
    /// writes; on Postgres (and an in-memory SQLite) the same pool.
    pub read: AnyPool,
    pub backend: Backend,
}

/// SQLite connections that only read.
const SQLITE_READERS: u32 = 4;

/// One migration set for both engines: the SQL is kept portable. Listed
/// here rather than embedded by `sqlx::migrate!`, whose macros would build
/// a second copy of sqlx and SQLite for the compiler; a test holds this list
/// to the folder. Versions, descriptions and checksums are sqlx's own.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_init.sql", include_str!("../../../migrations/0001_init.sql")),
    ("0002_keys_and_transactions.sql", include_str!("../../../migrations/0002_keys_and_transactions.sql")),
    ("0003_queue_priority.sql", include_str!("../../../migrations/0003_queue_priority.sql")),
    ("0004_batch_transactions.sql", include_str!("../../../migrations/0004_batch_transactions.sql")),
    ("0005_failure_codes_and_nonces.sql", include_str!("../../../migrations/0005_failure_codes_and_nonces.sql")),
    ("0006_operator_controls.sql", include_str!("../../../migrations/0006_operator_controls.sql")),
    ("0007_swap_intents.sql", include_str!("../../../migrations/0007_swap_intents.sql")),
    ("0008_transactions_of_any_owner.sql", include_str!("../../../migrations/0008_transactions_of_any_owner.sql")),
    ("0009_payer_listed.sql", include_str!("../../../migrations/0009_payer_listed.sql")),
    ("0010_facilitator.sql", include_str!("../../../migrations/0010_facilitator.sql")),
    ("0011_facilitator_answered.sql", include_str!("../../../migrations/0011_facilitator_answered.sql")),
    ("0012_receiving_micros.sql", include_str!("../../../migrations/0012_receiving_micros.sql")),
    ("0013_promised_sum_index.sql", include_str!("../../../migrations/0013_promised_sum_index.sql")),
    ("0014_events.sql", include_str!("../../../migrations/0014_events.sql")),
    ("0015_dashboard.sql", include_str!("../../../migrations/0015_dashboard.sql")),
    ("0016_webhooks.sql", include_str!("../../../migrations/0016_webhooks.sql")),
    ("0017_sponsored_swaps.sql", include_str!("../../../migrations/0017_sponsored_swaps.sql")),
    ("0018_books.sql", include_str!("../../../migrations/0018_books.sql")),
    ("0019_swap_registrations.sql", include_str!("../../../migrations/0019_swap_registrations.sql")),
    ("0020_sign_in_tries.sql", include_str!("../../../migrations/0020_sign_in_tries.sql")),
    ("0021_book_notes.sql", include_str!("../../../migrations/0021_book_notes.sql")),
    ("0022_webhook_lanes.sql", include_str!("../../../migrations/0022_webhook_lanes.sql")),
    ("0023_book_checks.sql", include_str!("../../../migrations/0023_book_checks.sql")),
    ("0024_traces.sql", include_str!("../../../migrations/0024_traces.sql")),
    ("0025_facilitator_key_receivers.sql", include_str!("../../../migrations/0025_facilitator_key_receivers.sql")),
];

/// The embedded migrations as sqlx reads a folder: `VERSION_DESCRIPTION.sql`.
#[derive(Debug)]
struct Embedded;

impl<'s> sqlx::migrate::MigrationSource<'s> for Embedded {
    fn resolve(self) -> futures::future::BoxFuture<'s, Result<Vec<sqlx::migrate::Migration>, sqlx::error::BoxDynError>> {
        Box::pin(async move { MIGRATIONS.iter().map(|(file, sql)| migration(file, sql)).collect() })
    }
}

pub fn migration(file: &str, sql: &'static str) -> Result<sqlx::migrate::Migration, sqlx::error::BoxDynError> {
    use sqlx::migrate::{Migration, MigrationType};
    let (version, rest) = file.split_once('_').ok_or("migration file without a version")?;
    let description = rest.strip_suffix(".sql").ok_or("migration file without .sql")?.replace('_', " ");
    let no_tx = sql.starts_with("-- no-transaction");
    Ok(Migration::new(version.parse()?, description.into(), MigrationType::Simple, sql.into(), no_tx))
}

impl Db {
    /// A write transaction. On SQLite it takes the write lock as it begins
    /// (`BEGIN IMMEDIATE`): a deferred one that reads first and writes later
    /// fails at once with "database is locked" when another process (the
    /// CLI beside the service) wrote in between, and SQLite's busy handler
    /// cannot help it; an immediate one waits its turn instead.
    pub async fn begin(&self) -> Result<Tx, sqlx::Error> {
        // The span covers the wait for the write lock, then the transaction
        // until it is committed or dropped.
        let span = tracing::info_span!("db transaction", db.system = self.backend.system());
        let inner = tracing::Instrument::instrument(
            async {
                match self.backend {
                    Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
                    Backend::Postgres => self.pool.begin().await,
                }
            },
            span.clone(),
        )
        .await?;
        Ok(Tx { inner, _span: span })
    }

    /// Connect and bring the schema up to date.
    pub async fn connect(url: &str) -> anyhow::Result<Db> {
        let db = Db::connect_unmigrated(url).await?;
        sqlx::migrate::Migrator::new(Embedded).await?.run(&db.pool).await?;
        Ok(db)
    }

    /// Connect without touching the schema (administration, tests).
    pub async fn connect_unmigrated(url: &str) -> anyhow::Result<Db> {
        sqlx::any::install_default_drivers();
        let (backend, url) = if url.starts_with("sqlite:") {
            let url = if url.contains("mode=") || url.contains(":memory:") {
                url.to_string()
            } else if url.contains('?') {
                format!("{url}&mode=rwc")
            } else {
                format!("{url}?mode=rwc")
            };
            (Backend::Sqlite, url)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            (Backend::Postgres, url.to_string())
        } else {
            anyhow::bail!("unsupported database URL `{url}`: use sqlite://FILE or postgres://…");
        };
        let opts = AnyConnectOptions::from_str(&url)?;
        // SQLite: one connection. It takes one writer at a time anyway, and
        // writers waiting in its busy handler lose the lock to busier ones
        // for up to seconds under load; one queue in the pool is fair.
        // (Each connection to `sqlite::memory:` is also a database of its
        // own.)
        let in_memory = backend == Backend::Sqlite && url.contains(":memory:");
        let pool = Self::pool(backend, in_memory, 1, opts.clone()).await?;
        let read = match backend {
            Backend::Sqlite if !in_memory => Self::pool(backend, false, SQLITE_READERS, opts).await?,
            _ => pool.clone(),
        };
        Ok(Db { pool, read, backend })
    }

    async fn pool(backend: Backend, in_memory: bool, sqlite_connections: u32, opts: AnyConnectOptions) -> anyhow::Result<AnyPool> {
        let pool = AnyPoolOptions::new()
            .max_connections(match backend {
                Backend::Sqlite => sqlite_connections,
                Backend::Postgres => 16,
            })
            .min_connections(u32::from(in_memory))
            // An embedded database cannot go stale under us: no ping per use.
            .test_before_acquire(backend == Backend::Postgres)
            .idle_timeout((!in_memory).then_some(std::time::Duration::from_secs(600)))
            .max_lifetime((!in_memory).then_some(std::time::Duration::from_secs(1800)))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // synchronous=FULL: a commit is on disk when it returns, so
                        // what the outside learns next (a broadcast, a 200) survives
                        // a power cut, not only a killed process (NORMAL in WAL mode).
                        conn.execute("PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON; PRAGMA synchronous=FULL;")
                            .await?;
                    }
                    Ok(())
                })
            })
            .connect_with(opts)
            .await?;
        Ok(pool)
    }
}
