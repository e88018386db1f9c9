//! Transactions that are out and not final yet, followed per chain: a pass
//! whose step waits on a block parks here and gives its worker back, so a
//! payment in flight costs its (leased) row and an entry here, not a
//! worker. One task per chain reads the head, and each time it moves reads
//! every followed transaction once (a Multicall3 batch is one transaction
//! for all its owners), records the final ones confirmed, keeps their
//! receipts for the owners' next passes and wakes the owners.
//!
//! Nothing here is durable, and nothing needs to be: a parked owner's row
//! stays leased to this replica, so a crash hands it to the claim loop when
//! the lease runs out, and its next pass follows the stored transaction
//! again. A park never outlasts the lease (`Park::until`): past it the
//! owner is woken `TimedOut` and releases its row the ordinary way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::clock::now_ms;
use crate::db::Db;
use crate::family::{Drivers, Finality, Receipt};
use crate::store::settlement as repo;

/// How often a chain with parked transactions is looked at: its head, or
/// (a family without a cheap head read) every parked transaction, every
/// `BLIND_TICKS` ticks.
const TICK: Duration = Duration::from_millis(100);
const BLIND_TICKS: u32 = 5;
/// How long a final receipt is kept for its owners' next passes.
const RECEIPT_KEPT: Duration = Duration::from_secs(60);

/// Final receipts by `chain:tx`, with when they were read.
type Receipts = Arc<Mutex<HashMap<String, (Arc<Receipt>, Instant)>>>;

/// Why a parked owner is woken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// Its transaction is final (confirmed or failed): its next pass reads which.
    Resolved,
    /// Not final by `Park::until`: the owner releases its row.
    TimedOut,
}

/// A parked owner: wake it when `tx` resolves, or at `until`.
pub struct Park {
    pub tx: String,
    pub until: Instant,
    pub wake: Box<dyn FnOnce(Woken) + Send>,
}

pub struct Follower {
    db: Db,
    drivers: Arc<Drivers>,
    confirmations: HashMap<String, u64>,
    chains: Mutex<HashMap<String, mpsc::UnboundedSender<Park>>>,
    receipts: Receipts,
}

impl Follower {
    pub fn new(db: Db, drivers: Arc<Drivers>, config: &crate::config::Config) -> Follower {
        let confirmations = config.chains.iter().map(|(name, c)| (name.clone(), c.confirmations.max(1))).collect();
        Follower { db, drivers, confirmations, chains: Default::default(), receipts: Default::default() }
    }

    /// Follow `park.tx` on `chain` (its task starts on first use).
    pub fn park(&self, chain: &str, park: Park) {
        let mut chains = self.chains.lock().expect("follower map");
        // A lane that stopped (its task panicked) is started again; its
        // parked owners' leases run out and the claim loop takes them.
        if chains.get(chain).is_some_and(|l| l.is_closed()) {
            tracing::error!(chain, "the follower of parked transactions stopped; starting it again");
            chains.remove(chain);
        }
        let lane = chains.entry(chain.to_string()).or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let lane = Lane {
                chain: chain.to_string(),
                confirmations: self.confirmations.get(chain).copied().unwrap_or(1),
                db: self.db.clone(),
                drivers: self.drivers.clone(),
                receipts: self.receipts.clone(),
            };
            tokio::spawn(lane.run(rx));
            tx
        });
        if let Err(mpsc::error::SendError(p)) = lane.send(park) {
            (p.wake)(Woken::TimedOut);
        }
    }

    /// The receipt of `tx` if this follower saw it final a moment ago.
    pub fn final_receipt(&self, chain: &str, tx: &str) -> Option<Arc<Receipt>> {
        self.receipts.lock().expect("receipts").get(&key(chain, tx)).map(|(r, _)| r.clone())
    }
}

fn key(chain: &str, tx: &str) -> String {
    format!("{chain}:{tx}")
}

struct Lane {
    chain: String,
    confirmations: u64,
    db: Db,
    drivers: Arc<Drivers>,
    receipts: Receipts,
}

impl Lane {
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Park>) {
        let mut parked: HashMap<String, Vec<Park>> = HashMap::new();
        // Transactions parked since the last read: read at the next tick
        // whatever the head, so one that went final between its owner's
        // check and its park is not left waiting for another block.
        let mut fresh = false;
        let mut head: Option<u64> = None;
        let mut blind = 0u32;
        loop {
            if parked.is_empty() {
                match rx.recv().await {
                    Some(p) => {
                        parked.entry(p.tx.clone()).or_default().push(p);
                        fresh = true;
                    }
                    None => return,
                }
            }
            tokio::time::sleep(TICK).await;
            while let Ok(p) = rx.try_recv() {
                parked.entry(p.tx.clone()).or_default().push(p);
                fresh = true;
            }
            // Owners whose park ran out, before any read (which may be slow).
            let now = Instant::now();
            for waiters in parked.values_mut() {
                let (gone, kept): (Vec<Park>, Vec<Park>) = waiters.drain(..).partition(|p| p.until <= now);
                *waiters = kept;
                wake_all(gone, Woken::TimedOut);
            }
            parked.retain(|_, w| !w.is_empty());
            let Some(driver) = self.drivers.for_chain(&self.chain) else {
                wake_all(parked.drain().flat_map(|(_, v)| v), Woken::TimedOut);
                continue;
            };
            // A family with a head read looks again only when it moved; one
            // without, every few ticks.
            let now_head = driver.head(&self.chain).await.ok().flatten();
            let moved = match now_head {
                Some(_) => now_head != head,
                None => {
                    blind += 1;
                    blind.is_multiple_of(BLIND_TICKS)
                }
            };
            if moved || fresh {
                head = now_head;
                fresh = false;
                // No read outlasts the earliest park: a slow chain must not
                // wake an owner after its lease (what was read is read again).
                let earliest = parked.values().flatten().map(|p| p.until).min();
                let bound = earliest.map_or(TICK, |e| e.saturating_duration_since(Instant::now())).max(TICK);
                let _ = tokio::time::timeout(bound, self.read(driver.as_ref(), &mut parked)).await;
            }
            self.receipts.lock().expect("receipts").retain(|_, (_, at)| at.elapsed() < RECEIPT_KEPT);
        }
    }

    /// Read every parked transaction once; wake the owners of final ones.
    async fn read(&self, driver: &dyn crate::family::Driver, parked: &mut HashMap<String, Vec<Park>>) {
        let txs: Vec<String> = parked.keys().cloned().collect();
        let finalities = driver.finality_many(&self.chain, &txs, self.confirmations).await;
        for (tx, finality) in txs.into_iter().zip(finalities.into_iter().map(Result::ok)) {
            match finality {
                Some(Finality::Confirmed(receipt)) => {
                    // Recorded once for every owner of the transaction.
                    if let Err(e) = repo::confirm_tx(&self.db, &self.chain, &tx, now_ms()).await {
                        tracing::warn!(chain = %self.chain, tx = %tx, error = %e, "recording a final transaction failed; its owners read it again");
                    } else {
                        self.receipts.lock().expect("receipts").insert(key(&self.chain, &tx), (receipt, Instant::now()));
                    }
                }
                Some(Finality::Failed) => {}
                Some(Finality::Pending) | None => continue,
            }
            if let Some(waiters) = parked.remove(&tx) {
                wake_all(waiters, Woken::Resolved);
            }
        }
    }
}

fn wake_all(parks: impl IntoIterator<Item = Park>, why: Woken) {
    for p in parks {
        (p.wake)(why);
    }
}
