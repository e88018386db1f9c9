//! Sealed wallet keys (`wallet_keys`). The sealing is `crate::family::keys`'s; this
//! only stores and finds rows.

use sqlx::Row;

use super::StoreError;
use crate::db::Db;

pub async fn sealed(db: &Db, name: &str) -> Result<Option<String>, StoreError> {
    sqlx::query("SELECT sealed FROM wallet_keys WHERE name = $1")
        .bind(name)
        .fetch_optional(&db.pool)
        .await?
        .map(|r| r.try_get("sealed").map_err(StoreError::from))
        .transpose()
}

/// Fails with a unique violation when `name` exists.
pub async fn insert(db: &Db, name: &str, address: &str, sealed: &str, now_ms: i64) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO wallet_keys (name, address, sealed, created_at) VALUES ($1, $2, $3, $4)")
        .bind(name)
        .bind(address)
        .bind(sealed)
        .bind(now_ms)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Replace a key's sealing, if it is still `old` (compare-and-set).
pub async fn reseal(db: &Db, name: &str, old: &str, new: &str) -> Result<bool, StoreError> {
    let n = sqlx::query("UPDATE wallet_keys SET sealed = $1 WHERE name = $2 AND sealed = $3")
        .bind(new)
        .bind(name)
        .bind(old)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

pub async fn all_sealed(db: &Db) -> Result<Vec<(String, String)>, StoreError> {
    let rows = sqlx::query("SELECT name, sealed FROM wallet_keys ORDER BY name").fetch_all(&db.pool).await?;
    rows.iter().map(|r| Ok((r.try_get("name")?, r.try_get("sealed")?))).collect()
}

/// Every key's name and address, by name.
pub async fn list(db: &Db) -> Result<Vec<(String, String)>, StoreError> {
    let rows = sqlx::query("SELECT name, address FROM wallet_keys ORDER BY name").fetch_all(&db.pool).await?;
    rows.iter().map(|r| Ok((r.try_get("name")?, r.try_get("address")?))).collect()
}

pub async fn name_of(db: &Db, address: &str) -> Result<Option<String>, StoreError> {
    sqlx::query("SELECT name FROM wallet_keys WHERE address = $1")
        .bind(address)
        .fetch_optional(&db.pool)
        .await?
        .map(|r| r.try_get("name").map_err(StoreError::from))
        .transpose()
}

/// The address stored with the key `name`.
pub async fn address_of(db: &Db, name: &str) -> Result<Option<String>, StoreError> {
    sqlx::query("SELECT address FROM wallet_keys WHERE name = $1")
        .bind(name)
        .fetch_optional(&db.pool)
        .await?
        .map(|r| r.try_get("address").map_err(StoreError::from))
        .transpose()
}
