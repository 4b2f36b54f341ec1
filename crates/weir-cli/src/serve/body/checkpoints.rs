//! [`AppendCheckpoints`]: an append's checkpoints, the `Checkpoints` hook that
//! `body.rs`'s paths poll after each piece (the IETF draft's appends, which announce each
//! recorded offset in a `104`, and tus's). Every [`weir_store::CHECKPOINT_BYTES`] the data is
//! made durable and its length recorded as the offset, with the hash state of exactly those
//! bytes (the hashing thread hands it over as it passes the offset, `hasher.rs`), on the
//! blocking pool while the connection goes on receiving. At most one is out at a time; the end
//! of the request waits for it before it records its own offset: one record writer at a time,
//! and the last record is the end's.

use super::Checkpoints;
use crate::serve::hasher::{LaneHandle, MarkWait};
use weir_store::{Appending, StoreError, Upload};

/// An append's checkpoints: every [`weir_store::CHECKPOINT_BYTES`], the data made durable and
/// its length recorded as the offset, on the blocking pool while the connection goes on
/// receiving (at most one out: one that comes due meanwhile waits for the next poll after it
/// ended); `announce`: the offset is sent in a `104` once recorded. The end of the request
/// ([`AppendCheckpoints::settle`]) waits for the one out before it records its own offset.
pub(in crate::serve) struct AppendCheckpoints<'a> {
    appending: &'a mut Appending,
    announce: bool,
    /// The checkpoint out, on the blocking pool (its outcome goes to `appending`).
    running: Option<tokio::task::JoinHandle<()>>,
}

impl<'a> AppendCheckpoints<'a> {
    pub(in crate::serve) fn new(appending: &'a mut Appending, announce: bool) -> Self {
        Self {
            appending,
            announce,
            running: None,
        }
    }

    /// Waits (without blocking the runtime) for the checkpoint out, if any, and takes in its
    /// outcome: `Some(offset)` to announce, an error if it failed. Before the request records
    /// its end: one record writer at a time, and the last record is the end's.
    pub(in crate::serve) async fn settle(&mut self) -> Result<Option<u64>, StoreError> {
        if let Some(running) = self.running.take() {
            // A panic in the job dropped it: its outcome says so.
            let _ = running.await;
        }
        match self.appending.checkpoint_settled() {
            Some(outcome) => outcome.map(|offset| self.announce.then_some(offset)),
            None => Ok(None),
        }
    }
}

impl Checkpoints for AppendCheckpoints<'_> {
    fn poll(
        &mut self,
        upload: &Upload,
        hashing: Option<&LaneHandle>,
    ) -> Result<Option<u64>, StoreError> {
        let mut acknowledged = None;
        if let Some(running) = &self.running {
            if !running.is_finished() {
                return Ok(None);
            }
            self.running = None;
            if let Some(outcome) = self.appending.checkpoint_settled() {
                acknowledged = self.announce.then_some(outcome?);
            }
        }
        if self.appending.checkpoint_due(upload) {
            if let Some(job) = self.appending.begin_checkpoint(upload) {
                // The hash state at the offset, from the hashing thread when the bytes went
                // there: asked now, handed over as the thread passes them.
                let mark = hashing
                    .filter(|_| job.wants_mark())
                    .map(|lane| lane.mark(job.offset()));
                // ALLOCATION: a blocking task per checkpoint (every CHECKPOINT_BYTES).
                self.running = Some(tokio::task::spawn_blocking(move || {
                    job.run_with(|| mark.and_then(MarkWait::wait));
                }));
            }
        }
        Ok(acknowledged)
    }

    fn keeps_cut_bytes(&self) -> bool {
        true
    }
}
