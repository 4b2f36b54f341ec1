//! The hashing threads: SHA-256 of one upload buffer runs here while the connection's task
//! receives and writes the next one (weir-store's [`HashJob`] protocol; `upload.rs` drives it).
//!
//! - One thread per core, taking jobs from one bounded queue (`sync_channel`: a ring allocated
//!   once, so queueing a job allocates nothing). Jobs carry their own hash state, so any thread
//!   can run any upload's next job; an upload has at most one job out at a time.
//! - A job's result goes to its upload's [`Reply`], a slot the connection's task awaits: a
//!   waker is stored, nothing is allocated per job. The task never blocks a runtime thread.
//! - When the queue is full (every thread busy with other uploads' jobs) [`HashPool::submit`]
//!   hands the job back and the task hashes inline: the cores are busy anyway, and a queue
//!   would only add latency.
//! - A job whose upload has gone (the client disconnected while it ran) still finishes; its
//!   result is dropped with the last reference to the slot, and the buffer goes back to the
//!   pool. A job that never finishes (a hashing thread that died) is reported as lost, so the
//!   task fails the upload instead of waiting forever.
//!
//! Dedicated threads rather than tokio's blocking pool: `spawn_blocking` allocates a task per
//! call (one per 512 KiB buffer), and in the measurements of `docs/BENCHMARKS.md` it was no
//! faster (see `docs/ARCHITECTURE.md`, "Hashing uploads beside the connection's task").

use super::buffers::PooledBuffer;
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use weir_store::{HashJob, Hashed};

/// A hash job over a pooled upload buffer.
pub(crate) type Job = HashJob<PooledBuffer>;
/// What a job gives back.
pub(crate) type Done = Hashed<PooledBuffer>;

/// The hashing threads and their queue. Dropping it stops the threads once the queue drains.
pub(crate) struct HashPool {
    queue: SyncSender<Task>,
}

impl HashPool {
    /// Starts `threads` hashing threads (at least one).
    pub(crate) fn new(threads: usize) -> Self {
        let threads = threads.max(1);
        let (queue, jobs) = mpsc::sync_channel(threads);
        let jobs = Arc::new(Mutex::new(jobs));
        for i in 0..threads {
            let jobs = Arc::clone(&jobs);
            let spawned = std::thread::Builder::new()
                .name(format!("weir-hash-{i}"))
                .spawn(move || work(&jobs));
            if let Err(e) = spawned {
                // Fewer threads only means more jobs hashed inline.
                tracing::warn!(error = %e, "cannot start a hashing thread");
            }
        }
        Self { queue }
    }

    /// Queues `job`; its result will arrive in `reply`. Hands the job back when every thread
    /// is busy (or none runs), for the caller to run inline.
    pub(crate) fn submit(&self, job: Job, reply: &Arc<Reply>) -> Result<(), Job> {
        let task = Task {
            job: Some(job),
            reply: Arc::clone(reply),
        };
        match self.queue.try_send(task) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(mut t) | TrySendError::Disconnected(mut t)) => {
                // Taken out here, the job is not reported lost when `t` drops.
                Err(t.job.take().expect("a task is built with its job"))
            }
        }
    }
}

/// A hashing thread: runs jobs until the pool is dropped.
fn work(jobs: &Mutex<Receiver<Task>>) {
    loop {
        // One thread at a time waits in `recv`; the others wait for the lock.
        let next = lock(jobs).recv();
        let Ok(mut task) = next else { return };
        if let Some(job) = task.job.take() {
            let done = job.run();
            task.reply.put(Slot::Done(done));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A job on its way to a thread, and where its result goes.
struct Task {
    /// `None` once a thread took it (or `submit` handed it back).
    job: Option<Job>,
    reply: Arc<Reply>,
}

impl Drop for Task {
    /// A task dropped with its job still in it never ran (its thread panicked, or the pool
    /// went away with it queued): tell the waiting upload.
    fn drop(&mut self) {
        if self.job.is_some() {
            self.reply.put(Slot::Lost);
        }
    }
}

/// Where one upload's job results arrive; one per upload, reused for every job.
#[derive(Default)]
pub(crate) struct Reply {
    slot: Mutex<Slot>,
}

#[derive(Default)]
enum Slot {
    /// No result, nobody waiting.
    #[default]
    Empty,
    /// The connection's task waits for the result.
    Waiting(Waker),
    Done(Done),
    /// The job was dropped without running.
    Lost,
}

impl Reply {
    /// A slot for one upload's jobs.
    pub(crate) fn new() -> Arc<Self> {
        // ALLOCATION: one per pipelined upload (not per job).
        Arc::new(Self::default())
    }

    /// Waits for the result of the job submitted last: `None` if it was lost.
    pub(crate) fn wait(&self) -> Wait<'_> {
        Wait { reply: self }
    }

    fn put(&self, result: Slot) {
        let previous = std::mem::replace(&mut *lock(&self.slot), result);
        // Wake outside the lock.
        if let Slot::Waiting(waker) = previous {
            waker.wake();
        }
    }
}

/// The future of [`Reply::wait`].
pub(crate) struct Wait<'a> {
    reply: &'a Reply,
}

impl Future for Wait<'_> {
    type Output = Option<Done>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Done>> {
        let mut slot = lock(&self.reply.slot);
        match std::mem::take(&mut *slot) {
            Slot::Done(done) => Poll::Ready(Some(done)),
            Slot::Lost => Poll::Ready(None),
            Slot::Waiting(waker) if waker.will_wake(cx.waker()) => {
                *slot = Slot::Waiting(waker);
                Poll::Pending
            }
            Slot::Empty | Slot::Waiting(_) => {
                // Cloning a tokio waker bumps a reference count; it allocates nothing.
                *slot = Slot::Waiting(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::buffers::BufferPool;
    use weir_store::{LocalOptions, LocalStore, StorePath, UploadOptions};

    #[test]
    fn jobs_run_on_the_threads_and_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
        let buffers = BufferPool::default();
        let pool = HashPool::new(2);
        let reply = Reply::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let path = StorePath::parse("f").unwrap();
        let mut up = store.begin(&path, UploadOptions::default()).unwrap();
        let mut want = Vec::new();
        for i in 0..5u8 {
            let mut buf = buffers.take();
            buf[..3].copy_from_slice(&[i; 3]);
            want.extend_from_slice(&[i; 3]);
            let written = up.write_owned(buf, 3).unwrap();
            let job = up.hash_job(written).unwrap();
            assert!(pool.submit(job, &reply).is_ok());
            let done = rt.block_on(reply.wait()).expect("not lost");
            drop(up.attach(done).unwrap());
        }
        use sha2::Digest;
        let sha: [u8; 32] = sha2::Sha256::digest(&want).into();
        assert_eq!(up.commit().unwrap().sha256, Some(sha));
        assert_eq!(buffers.lent(), 0);
    }

    #[test]
    fn a_job_dropped_unrun_is_reported_lost() {
        let reply = Reply::new();
        reply.put(Slot::Lost);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(rt.block_on(reply.wait()).is_none());
    }
}
