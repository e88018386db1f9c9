//! Wall-clock time as the service stores it (milliseconds since the Unix
//! epoch) and shows it (RFC 3339, UTC, milliseconds).

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
