//! Group commit: writes of one kind that arrive together are made together.
//! A caller queues its item and waits; one task per kind takes everything
//! queued at that moment and writes it in one go (a multi-row statement, or
//! one transaction), then answers each caller. On one SQLite writer each
//! statement is a hop to its thread, so a batch of settlements landing
//! together costs a statement instead of one per intent.
//!
//! If the grouped write fails, each item is written again on its own, so
//! a caller's error is its own (a duplicate key fails one item, not its
//! neighbours).

use std::future::Future;
use std::sync::OnceLock;

use tokio::sync::{mpsc, oneshot};

use crate::db::Db;
use crate::store::StoreError;

/// Most items in one grouped write.
const GROUP_MAX: usize = 256;

/// One kind of grouped write.
pub trait Write: Send + Sync + 'static {
    type Item: Send + 'static;
    type Out: Send + 'static;
    /// Write every item; one answer per item, in the items' order.
    fn write(db: &Db, items: &[Self::Item]) -> impl Future<Output = Result<Vec<Self::Out>, StoreError>> + Send;
}

/// An item, who waits for it, and the span it was queued in.
type Queued<W> = (<W as Write>::Item, oneshot::Sender<Result<<W as Write>::Out, StoreError>>, tracing::Span);

/// The lane of one kind of write; its task starts with the first item.
pub struct Group<W: Write> {
    lane: OnceLock<mpsc::UnboundedSender<Queued<W>>>,
}

impl<W: Write> Default for Group<W> {
    fn default() -> Self {
        Group { lane: OnceLock::new() }
    }
}

impl<W: Write> Group<W> {
    /// Write `item`, joined with the items queued at the same moment.
    pub async fn write(&self, db: &Db, item: W::Item) -> Result<W::Out, StoreError> {
        let lane = self.lane.get_or_init(|| {
            let (lane, queued) = mpsc::unbounded_channel();
            tokio::spawn(run::<W>(db.clone(), queued));
            lane
        });
        let (reply, answer) = oneshot::channel();
        match lane.send((item, reply, tracing::Span::current())) {
            Ok(()) => answer.await.unwrap_or_else(|_| Err(StoreError::Decode("the group writer ended".into()))),
            // The writer is gone (its runtime ended): on our own.
            Err(mpsc::error::SendError((item, ..))) => one::<W>(db, item).await,
        }
    }
}

async fn one<W: Write>(db: &Db, item: W::Item) -> Result<W::Out, StoreError> {
    let mut out = W::write(db, std::slice::from_ref(&item)).await?;
    out.pop().ok_or_else(|| StoreError::Decode("a grouped write gave no answer".into()))
}

async fn run<W: Write>(db: Db, mut queued: mpsc::UnboundedReceiver<Queued<W>>) {
    while let Some(first) = queued.recv().await {
        let mut all = vec![first];
        while all.len() < GROUP_MAX {
            match queued.try_recv() {
                Ok(q) => all.push(q),
                Err(_) => break,
            }
        }
        // A write of one caller's item is in its trace. A write of several
        // is in nobody's: a span of one caller's would put the others'
        // changes (and their webhooks) in a stranger's trace.
        let span = if all.len() == 1 { all[0].2.clone() } else { tracing::Span::none() };
        let (items, replies, spans): (Vec<W::Item>, Vec<_>, Vec<tracing::Span>) =
            all.into_iter().fold((vec![], vec![], vec![]), |(mut i, mut r, mut s), (item, reply, span)| {
                i.push(item);
                r.push(reply);
                s.push(span);
                (i, r, s)
            });
        match tracing::Instrument::instrument(W::write(&db, &items), span).await {
            Ok(outs) if outs.len() == items.len() => {
                for (reply, out) in replies.into_iter().zip(outs) {
                    let _ = reply.send(Ok(out));
                }
            }
            // Each on its own, for its own answer.
            _ => {
                for ((item, reply), span) in items.into_iter().zip(replies).zip(spans) {
                    let _ = reply.send(tracing::Instrument::instrument(one::<W>(&db, item), span).await);
                }
            }
        }
    }
}
