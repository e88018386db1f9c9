//! Handing freed heap back to the system.
//!
//! A burst of payments allocates in several of glibc's malloc arenas, one
//! per thread that touched them; once freed, most of those pages stay in
//! the arenas, so the resident size grows with each burst that reaches a
//! new high in some arena, though nothing is kept (a heap profile over
//! 5,000 intents shows the live heap flat from the second thousand on).
//! `malloc_trim` walks every arena and releases its free pages.

use std::time::Duration;

/// Trim the heap every `every`, on a blocking thread (a trim walks the
/// arenas under their locks: about a millisecond for this service's heap).
pub async fn trim_every(every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let _ = tokio::task::spawn_blocking(trim).await;
    }
}

/// Release the free pages of every arena; answers whether any were.
pub fn trim() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only reads and updates glibc's own arenas,
        // under their locks; any thread may call it at any time.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}
