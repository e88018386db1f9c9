//! Settlements' completion signals in this replica: the worker that ends a
//! settlement wakes the requests waiting on it, so an answer follows the
//! ledger's final state at once instead of at the next poll. Waiters still
//! read the ledger (the truth, and the only signal from other replicas).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Default)]
pub struct Finished {
    waiting: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Finished {
    /// The signal for settlement `id`. Arm its `notified()` before reading
    /// the ledger, so a finish between the read and the wait is not missed.
    pub fn signal(&self, id: &str) -> Arc<Notify> {
        self.waiting.lock().expect("signal map").entry(id.to_string()).or_default().clone()
    }

    /// Wake every request waiting on `id`.
    pub fn finish(&self, id: &str) {
        if let Some(n) = self.waiting.lock().expect("signal map").remove(id) {
            n.notify_waiters();
        }
    }

    /// A waiter leaves: drop the signal if nobody else holds it.
    pub fn leave(&self, id: &str, signal: Arc<Notify>) {
        let mut map = self.waiting.lock().expect("signal map");
        // The map's reference and `signal` itself: no other waiter.
        if Arc::strong_count(&signal) <= 2 {
            map.remove(id);
        }
    }

    pub fn len(&self) -> usize {
        self.waiting.lock().expect("signal map").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
