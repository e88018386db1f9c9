//! A chain's block rhythm, as seen from here: when its head moves and how
//! far apart. The batcher sends one batch per block on a chain whose blocks
//! come at a steady pace of a second or more (Ethereum 12 s, Base 2 s, an
//! anvil with interval mining): halfway between two blocks, so what is
//! sent lands in the next one whatever the jitter, and everything that
//! queued in the meantime goes together. A chain with fast or irregular
//! blocks (an instant devnet mines when it is sent to) keeps the natural
//! batching: no rhythm is claimed from blocks that follow our own sends.
//!
//! The head (number and timestamp) is read every `POLL` while the lane
//! was used in the last `IDLE`, and not at all otherwise. The interval
//! comes from the blocks' own timestamps; the phase from when a new head
//! was first seen here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::family::chain::ChainClient;

const POLL: Duration = Duration::from_millis(100);
const IDLE: Duration = Duration::from_secs(60);
/// Blocks closer than this go out with natural batching.
const SLOWEST_NATURAL: Duration = Duration::from_millis(900);
/// Nor are calls held for blocks further apart than this (a node whose
/// timestamps are wrong must not hold calls until authorizations expire).
const SLOWEST_HELD: Duration = Duration::from_secs(30);
/// Intervals a rhythm is judged on; they must agree within `SPREAD`.
const SAMPLES: usize = 4;
const SPREAD: f64 = 1.5;

/// Heads as they were seen: their numbers and timestamps (the chain's own
/// clock, so a slow read here does not bend the interval) and when the
/// last one was first seen here (the phase).
#[derive(Default)]
pub struct Rhythm {
    heads: std::collections::VecDeque<(u64, u64)>,
    at: Option<Instant>,
    /// New heads seen live (not read as history).
    live: u32,
}

impl Rhythm {
    /// Head `number` with block `timestamp` (seconds), seen at `at`.
    pub fn observe(&mut self, number: u64, timestamp: u64, at: Instant) {
        if self.heads.back().is_some_and(|(n, _)| *n >= number) {
            return;
        }
        self.heads.push_back((number, timestamp));
        if self.heads.len() > SAMPLES + 1 {
            self.heads.pop_front();
        }
        self.at = Some(at);
        self.live = self.live.saturating_add(1);
    }

    /// Earlier blocks (number, timestamp), oldest first, read at the start:
    /// the interval is known at once; the phase waits for a new head.
    pub fn history(&mut self, blocks: &[(u64, u64)]) {
        for &(number, timestamp) in blocks {
            if self.heads.back().is_none_or(|(n, _)| *n < number) {
                self.heads.push_back((number, timestamp));
            }
        }
        while self.heads.len() > SAMPLES + 1 {
            self.heads.pop_front();
        }
    }

    /// The block interval, when the last `SAMPLES` agree and are slow enough.
    pub fn interval(&self) -> Option<Duration> {
        if self.heads.len() <= SAMPLES {
            return None;
        }
        let per_block = |(n0, t0): (u64, u64), (n1, t1): (u64, u64)| t1.saturating_sub(t0) as f64 / (n1 - n0) as f64;
        let pairs: Vec<f64> = self.heads.iter().zip(self.heads.iter().skip(1)).map(|(a, b)| per_block(*a, *b)).collect();
        let min = pairs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = pairs.iter().copied().fold(0.0, f64::max);
        if min < SLOWEST_NATURAL.as_secs_f64() || max > min * SPREAD || max > SLOWEST_HELD.as_secs_f64() {
            return None;
        }
        let (first, last) = (*self.heads.front()?, *self.heads.back()?);
        Some(Duration::from_secs_f64(per_block(first, last)))
    }

    /// Whether the chain mines faster than `SLOWEST_NATURAL` a block, by
    /// the last two heads seen live (`None` before two are seen): an
    /// instant devnet under load mines many blocks between two polls.
    pub fn fast(&self) -> Option<bool> {
        let n = self.heads.len();
        if n < 2 || self.live < 2 {
            return None;
        }
        let ((n0, t0), (n1, t1)) = (self.heads[n - 2], self.heads[n - 1]);
        Some((t1.saturating_sub(t0) as f64 / (n1 - n0).max(1) as f64) < SLOWEST_NATURAL.as_secs_f64())
    }

    /// When a batch that starts at `now` should go: the middle of the
    /// current block interval, or the next one's when that is past.
    pub fn send_at(&self, now: Instant) -> Option<Instant> {
        let interval = self.interval()?;
        let at = self.at?;
        // A head seen long ago (the poll was idle): no current rhythm.
        if now.saturating_duration_since(at) > interval * 3 {
            return None;
        }
        let mut send = at + interval / 2;
        while send < now {
            send += interval;
        }
        Some(send)
    }
}

pub struct BlockClock {
    chain: Arc<ChainClient>,
    rhythm: Mutex<Rhythm>,
    used: Mutex<Option<Instant>>,
    polling: AtomicBool,
}

impl BlockClock {
    pub fn new(chain: Arc<ChainClient>) -> Arc<BlockClock> {
        Arc::new(BlockClock { chain, rhythm: Default::default(), used: Default::default(), polling: AtomicBool::new(false) })
    }

    /// When the batch that starts now should go (`Rhythm::send_at`), or
    /// `None` where blocks have no steady rhythm of a second or more.
    pub fn send_at(self: &Arc<Self>) -> Option<Instant> {
        *self.used.lock().expect("block clock") = Some(Instant::now());
        if !self.polling.swap(true, Ordering::SeqCst) {
            let me = self.clone();
            tokio::spawn(async move { me.poll().await });
        }
        self.rhythm.lock().expect("block clock").send_at(Instant::now())
    }

    /// `Rhythm::fast`, from what the poll has seen (no read of its own).
    pub fn fast(&self) -> Option<bool> {
        self.rhythm.lock().expect("block clock").fast()
    }

    async fn poll(self: Arc<Self>) {
        self.read_history().await;
        loop {
            let idle = self.used.lock().expect("block clock").is_none_or(|u| u.elapsed() > IDLE);
            if idle {
                self.polling.store(false, Ordering::SeqCst);
                return;
            }
            if let Some((number, timestamp)) = self.block(json!("latest")).await {
                let mut rhythm = self.rhythm.lock().expect("block clock");
                rhythm.observe(number, timestamp, Instant::now());
                tracing::trace!(chain = %self.chain.chain, number, timestamp, interval = ?rhythm.interval(), "head");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// A block's number and timestamp.
    async fn block(&self, which: serde_json::Value) -> Option<(u64, u64)> {
        let block = self.chain.rpc("eth_getBlockByNumber", json!([which, false])).await.ok()?;
        let quantity = |k: &str| block[k].as_str().and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok());
        Some((quantity("number")?, quantity("timestamp")?))
    }

    /// The blocks before the head, so the interval is known at once.
    async fn read_history(&self) {
        let Some((head, timestamp)) = self.block(json!("latest")).await else { return };
        let mut blocks = vec![(head, timestamp)];
        for n in (head.saturating_sub(SAMPLES as u64)..head).rev() {
            match self.block(json!(format!("{n:#x}"))).await {
                Some(b) => blocks.push(b),
                None => break,
            }
        }
        blocks.reverse();
        self.rhythm.lock().expect("block clock").history(&blocks);
    }
}
