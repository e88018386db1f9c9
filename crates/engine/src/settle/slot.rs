//! A worker's slot, held by the task running a pass: passes bound the work
//! done at once (verifying, signing, reading), not the payments in flight.
//! A pass gives its slot back as soon as it only waits (its call queued
//! for the next batch, its transaction for a block), so what waits costs a
//! row and a small task, and another payment takes the slot.

use std::cell::RefCell;
use std::future::Future;

use tokio::sync::OwnedSemaphorePermit;

tokio::task_local! {
    static SLOT: RefCell<Option<OwnedSemaphorePermit>>;
}

/// Run `pass` holding `permit` until it ends or `release`s it.
pub async fn holding<F: Future>(permit: OwnedSemaphorePermit, pass: F) -> F::Output {
    SLOT.scope(RefCell::new(Some(permit)), pass).await
}

/// The running pass gives its slot back (nothing outside a slot).
pub fn release() {
    let _ = SLOT.try_with(|s| s.borrow_mut().take());
}
