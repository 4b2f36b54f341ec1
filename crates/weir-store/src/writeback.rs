//! Early writeback: a large upload's bytes start going to disk while the rest is still being
//! received, so that commit's `fsync` waits for the last few MiB rather than the whole file.
//!
//! Why: a large upload left the disk idle until commit, whose `fsync` then took a large share of
//! the upload's time, nearly all of it waiting for the disk rather than using the CPU (figures in
//! docs/archive/BENCHMARKS-history.md, "Figures once quoted in source comments"). The kernel's own
//! writeback starts only past `dirty_background_ratio` (GiBs on a machine with memory to spare).
//!
//! How: every [`LocalOptions::early_writeback`](crate::LocalOptions::early_writeback) bytes
//! written (16 MiB by default), the upload asks the store's writeback thread to start writing
//! back the range written since its last request, up to a MiB boundary at least [`LAG`] behind
//! the write position (the writer never appends into pages under writeback). The thread calls
//! `posix_fadvise(POSIX_FADV_DONTNEED)` (`sys::start_writeback`). On a thread of its own because
//! submitting writeback waits whenever the device's queue is full, in effect at the disk's
//! pace: called on the connection's task it was measured to slow uploads down, not up.
//! `sync_file_range(SYNC_FILE_RANGE_WRITE)` would be the exact call (PostgreSQL's `flush_after`
//! uses it, with `posix_fadvise` as its fallback), but rustix has no wrapper for it and this
//! crate forbids unsafe code. A side effect of the advice: Linux moves the range's pages to the
//! inactive list, so one large upload does not push hot files out of the page cache.
//!
//! Advice only, never a promise: a request that finds the queue full is skipped (the next one
//! covers its range), errors are ignored, and durability still comes from commit's `fsync`,
//! which reports any I/O error. Each request holds a duplicate of the upload's file descriptor,
//! so one that outlives its upload (aborted, or committed and renamed) only writes back that
//! inode. One thread per store, started at the first request; it ends with the store.

use crate::sys;
use std::fs::File;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};

/// How far behind the write position writeback stays, and the alignment of its ranges.
pub(crate) const LAG: u64 = 1 << 20;

/// Requests queued at most; more are skipped (their ranges go with the next request).
const QUEUE: usize = 16;

/// The default of `LocalOptions::early_writeback`.
pub(crate) const DEFAULT_EVERY: u64 = 16 << 20;

/// A store's writeback thread, started at the first request.
#[derive(Debug, Default)]
pub(crate) struct Flusher {
    queue: OnceLock<Option<SyncSender<Request>>>,
    /// Requests queued so far (for tests).
    queued: AtomicU64,
}

#[derive(Debug)]
struct Request {
    file: File,
    offset: u64,
    len: u64,
}

impl Flusher {
    /// Asks for writeback of `file`'s `offset..offset + len`. `false` if it was not queued
    /// (queue full, no thread, no duplicate descriptor): the caller asks again later.
    pub(crate) fn request(&self, file: &File, offset: u64, len: u64) -> bool {
        let Some(queue) = self.queue.get_or_init(start).as_ref() else {
            return false;
        };
        let Ok(file) = file.try_clone() else {
            return false;
        };
        let queued = queue.try_send(Request { file, offset, len }).is_ok();
        if queued {
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
        queued
    }

    #[cfg(test)]
    pub(crate) fn queued(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }
}

fn start() -> Option<SyncSender<Request>> {
    if !sys::EARLY_WRITEBACK {
        return None;
    }
    let (queue, requests) = mpsc::sync_channel(QUEUE);
    std::thread::Builder::new()
        .name("weir-writeback".into())
        .spawn(move || work(&requests))
        .ok()?;
    Some(queue)
}

fn work(requests: &Receiver<Request>) {
    for r in requests {
        sys::start_writeback(&r.file, r.offset, r.len);
    }
}

/// The range to request after `written` bytes, when writeback was last requested up to
/// `flushed`: from `flushed` to the last MiB boundary at least [`LAG`] behind `written`, once
/// that is at least `every` bytes. `None`: not yet.
pub(crate) fn next_range(flushed: u64, written: u64, every: u64) -> Option<(u64, u64)> {
    let end = written.saturating_sub(LAG) & !(LAG - 1);
    (end >= flushed.saturating_add(every.max(1))).then(|| (flushed, end - flushed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_aligned_behind_the_writer_and_every_so_often() {
        const MIB: u64 = 1 << 20;
        let every = 16 * MIB;
        assert_eq!(
            next_range(0, 16 * MIB, every),
            None,
            "the lag is not passed"
        );
        assert_eq!(next_range(0, 17 * MIB, every), Some((0, 16 * MIB)));
        assert_eq!(next_range(0, 17 * MIB + 5, every), Some((0, 16 * MIB)));
        assert_eq!(next_range(16 * MIB, 20 * MIB, every), None);
        assert_eq!(
            next_range(16 * MIB, 40 * MIB + 3, every),
            Some((16 * MIB, 23 * MIB))
        );
        assert_eq!(next_range(0, 0, 0), None, "never an empty range");
    }
}
