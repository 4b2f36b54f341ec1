//! The hashing threads: an upload's SHA-256 runs on one of them while the connection's task
//! receives and writes the body (weir-store's [`HashJob`] protocol; `body.rs` drives it).
//!
//! Each pipelined upload has a [`Lane`] between its task and one hashing thread:
//!
//! ```text
//! connection task                      Lane                         hashing thread
//! read → write_owned ── Written ──►  queued (in file order)  ──► chain → run (SHA-256)
//! read into it again ◄── buffer ───  free                    ◄── the buffer just hashed
//! close, then attach ◄── Hashed ───  outcome                 ◄── after the last buffer
//! ```
//!
//! - The thread keeps the hash state for the whole upload ([`Hashed::chain`]): when the task
//!   is faster than SHA-256 (it is: two memory copies against one hash pass per byte) the
//!   next buffer is already queued, and the thread does not wait for the task. When the state
//!   went back to the task after every buffer, the hashing thread sat idle for part of the
//!   body's time (docs/archive/BENCHMARKS-history.md, "Figures once quoted in source comments").
//! - A lane holds at most [`LANE_BUFFERS`] buffers (queued, being hashed, or being filled): the
//!   task waits for a free one when the thread is behind, so memory stays bounded. While the
//!   task waits for its client ([`LaneHandle::release_idle`]) hashed buffers go back to the
//!   pool instead: a stalled upload holds none once its last bytes are hashed.
//! - A lane starts only on an idle thread (a rendezvous channel). With every thread busy with
//!   other uploads, [`HashPool::start`] hands the job back, the task hashes that buffer inline
//!   and tries again with the next: the cores are busy anyway.
//! - Nothing is allocated per buffer: the lane's queue and free list are sized once per upload,
//!   the thread blocks on a condition variable, the task stores its waker (cloning a tokio
//!   waker bumps a reference count).
//! - A resumable checkpoint needs the hash state of exactly the bytes it makes durable, while
//!   the thread holds the state and the task goes on: [`LaneHandle::mark`] asks the thread for
//!   a copy ([`weir_store::HashMark`]) as it passes the checkpoint's offset, and the checkpoint
//!   waits for it on its own thread ([`MarkWait`]); the lane goes on as before.
//! - A task that goes away (client disconnected, body too large) drops its [`LaneHandle`]: the
//!   thread stops at the next buffer, drops what is queued, and every buffer goes back to the
//!   pool. A thread that dies (a panic) leaves the lane lost: the task fails the upload rather
//!   than wait forever.
//!
//! Dedicated threads rather than tokio's blocking pool: `spawn_blocking` per buffer allocates a
//! task per call and measured no better; a blocking task per upload could run a lane, but the
//! blocking pool grows a thread per concurrent upload (up to 512), where this pool stays at one
//! thread per core and the task hashes inline when all are busy.

use super::buffers::{BufferPool, PooledBuffer};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use weir_store::{HashJob, HashMark, Hashed, Written};

/// A hash job over a pooled upload buffer.
pub(crate) type Job = HashJob<PooledBuffer>;
/// What a lane gives back at the end.
pub(crate) type Done = Hashed<PooledBuffer>;

/// Buffers one pipelined upload may hold: one being filled by the task, one being hashed, one
/// queued so that the thread has the next at hand. 3 × 512 KiB per upload.
pub(crate) const LANE_BUFFERS: usize = 3;

/// The hashing threads. Dropping the pool stops them once their lanes end.
pub(crate) struct HashPool {
    lanes: SyncSender<Start>,
}

/// A lane for a thread to take on, with its first job.
struct Start {
    lane: Arc<Lane>,
    job: Job,
}

impl HashPool {
    /// Starts `threads` hashing threads (at least one).
    pub(crate) fn new(threads: usize) -> Self {
        // Capacity 0: a send succeeds only when a thread is waiting for a lane.
        let (lanes, starts) = mpsc::sync_channel(0);
        let starts = Arc::new(Mutex::new(starts));
        for i in 0..threads.max(1) {
            let starts = Arc::clone(&starts);
            let spawned = std::thread::Builder::new()
                .name(format!("weir-hash-{i}"))
                .spawn(move || work(&starts));
            if let Err(e) = spawned {
                // Fewer threads only means more uploads hashed inline.
                tracing::warn!(error = %e, "cannot start a hashing thread");
            }
        }
        Self { lanes }
    }

    /// Gives `lane` to an idle thread, which runs `job` and then everything pushed to the lane.
    /// Hands the job back when no thread is idle, for the caller to run inline.
    pub(crate) fn start(&self, job: Job, lane: &LaneHandle) -> Result<(), Job> {
        let start = Start {
            lane: Arc::clone(&lane.0),
            job,
        };
        match self.lanes.try_send(start) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(s) | TrySendError::Disconnected(s)) => Err(s.job),
        }
    }
}

/// A hashing thread: takes lanes one after the other until the pool is dropped.
fn work(starts: &Mutex<Receiver<Start>>) {
    loop {
        // One thread at a time waits in `recv` (and makes the rendezvous possible); the
        // others wait for the lock.
        let next = lock(starts).recv();
        let Ok(Start { lane, job }) = next else {
            return;
        };
        let guard = LostGuard(&lane);
        let outcome = run_lane(&lane, job);
        std::mem::forget(guard);
        lane.end(outcome);
    }
}

/// Hashes `job`, then every buffer the task queues, until the task closes the lane (the
/// result) or abandons it (`None`).
fn run_lane(lane: &Lane, job: Job) -> Option<Done> {
    let mut done = job.run();
    loop {
        let next = {
            let mut state = lane.lock();
            loop {
                if state.mark == Some(done.end()) {
                    // A checkpoint waits for the state of exactly these bytes.
                    state.mark = None;
                    state.marked = Some(done.mark());
                    lane.marked.notify_all();
                }
                if state.abandoned {
                    return None;
                }
                if let Some(w) = state.queued.pop_front() {
                    break Some(w);
                }
                if state.closed {
                    break None;
                }
                if state.release_idle && !done.buffer_mut().is_released() {
                    // The task waits for its client: keep the hash state, not the memory.
                    done.buffer_mut().release();
                    state.owned -= 1;
                }
                state = lane.more.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        };
        let Some(written) = next else {
            return Some(done);
        };
        // The task queues buffers in the order written, so this cannot fail; if it did, the
        // hash state is gone with the error and the upload cannot commit.
        let (job, buf) = done.chain(written).ok()?;
        lane.give_back(buf);
        done = job.run();
    }
}

/// Marks a lane lost if its thread unwinds out of `run_lane`.
struct LostGuard<'a>(&'a Lane);

impl Drop for LostGuard<'_> {
    fn drop(&mut self) {
        self.0.end(None);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One upload's traffic with its hashing thread.
pub(crate) struct Lane {
    state: Mutex<LaneState>,
    /// The thread waits here for the next buffer (or the close).
    more: Condvar,
    /// A checkpoint waits here for the hash state at its offset ([`LaneHandle::mark`]).
    marked: Condvar,
}

struct LaneState {
    /// Written buffers, in file order, for the thread to hash.
    queued: VecDeque<Written<PooledBuffer>>,
    /// Hashed buffers, for the task to fill again.
    free: Vec<PooledBuffer>,
    /// Buffers of this lane: in the task's hands, queued, being hashed or free. At most
    /// [`LANE_BUFFERS`].
    owned: usize,
    /// The task waits for its client: a hashed buffer goes back to the pool rather than wait
    /// in `free` (see [`LaneHandle::release_idle`]).
    release_idle: bool,
    /// The task wrote its last buffer.
    closed: bool,
    /// The task went away: stop at once.
    abandoned: bool,
    outcome: Outcome,
    /// The task, when it waits for a buffer or the outcome.
    waker: Option<Waker>,
    /// A checkpoint's offset: the thread hands over its hash state as it gets there.
    mark: Option<u64>,
    /// The hash state at `mark`, handed over (`None` inside: the upload keeps no SHA-256).
    marked: Option<Option<HashMark>>,
}

enum Outcome {
    Running,
    Done(Done),
    /// The thread died, or the lane ended without its result.
    Lost,
    /// The result was taken.
    Taken,
}

impl Lane {
    fn lock(&self) -> MutexGuard<'_, LaneState> {
        lock(&self.state)
    }

    fn give_back(&self, buf: PooledBuffer) {
        let mut released = None;
        let waker = {
            let mut state = self.lock();
            if buf.is_released() {
                // Released while the task waited (and counted then): nothing to fill.
                released = Some(buf);
            } else if state.release_idle {
                state.owned -= 1;
                released = Some(buf);
            } else {
                state.free.push(buf);
            }
            state.waker.take()
        };
        // Back to the pool outside the lane's lock (the pool has its own).
        drop(released);
        // Woken outside the lock.
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn end(&self, result: Option<Done>) {
        let waker = {
            let mut state = self.lock();
            if matches!(state.outcome, Outcome::Running) {
                state.outcome = result.map_or(Outcome::Lost, Outcome::Done);
            }
            state.waker.take()
        };
        // A checkpoint waiting for a mark the thread will never reach gives up.
        self.marked.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The task's end of a lane. Dropping it abandons the lane (the thread stops at its next
/// buffer); what the lane holds goes back to the pool as the lane is dropped.
pub(crate) struct LaneHandle(Arc<Lane>);

impl LaneHandle {
    /// A lane for one upload.
    pub(crate) fn new() -> Self {
        // ALLOCATION: once per pipelined upload (the lane, its queue and free list).
        Self(Arc::new(Lane {
            state: Mutex::new(LaneState {
                queued: VecDeque::with_capacity(LANE_BUFFERS),
                free: Vec::with_capacity(LANE_BUFFERS),
                owned: 0,
                release_idle: false,
                closed: false,
                abandoned: false,
                outcome: Outcome::Running,
                waker: None,
                mark: None,
                marked: None,
            }),
            more: Condvar::new(),
            marked: Condvar::new(),
        }))
    }

    /// Asks the thread for its hash state once it has hashed exactly the upload's first `at`
    /// bytes, which must all be queued already (or hashed) and nothing past them: a
    /// checkpoint of `at` bytes, made as the last of them was queued. One mark at a time (a
    /// new one replaces the last). The thread hands it over and goes on hashing.
    pub(crate) fn mark(&self, at: u64) -> MarkWait {
        {
            let mut state = self.0.lock();
            state.mark = Some(at);
            state.marked = None;
        }
        // The thread may be waiting for the next buffer with exactly these bytes hashed.
        self.0.more.notify_one();
        MarkWait(Arc::clone(&self.0))
    }

    /// Queues written bytes for the thread (in the order written).
    pub(crate) fn push(&self, written: Written<PooledBuffer>) {
        self.0.lock().queued.push_back(written);
        self.0.more.notify_one();
    }

    /// A buffer to fill: a hashed one, or a new one from `pool` while the lane holds fewer than
    /// [`LANE_BUFFERS`]; `None` when all are in use (then wait with [`LaneHandle::free`]).
    pub(crate) fn try_buffer(&self, pool: &BufferPool) -> Option<PooledBuffer> {
        let mut state = self.0.lock();
        if let Some(buf) = state.free.pop() {
            return Some(buf);
        }
        if state.owned < LANE_BUFFERS {
            state.owned += 1;
            drop(state);
            return Some(pool.take());
        }
        None
    }

    /// A buffer of this lane that the task did not fill after all: back to the pool.
    pub(crate) fn discard(&self, buf: PooledBuffer) {
        self.0.lock().owned -= 1;
        drop(buf);
    }

    /// The task is about to wait for its client, for as long as the client likes: the lane's
    /// hashed buffers go back to the pool now, and those still being hashed as soon as they
    /// are, until [`LaneHandle::keep_idle`]. So a stalled upload holds no upload buffer once its
    /// last bytes are hashed.
    pub(crate) fn release_idle(&self) {
        {
            let mut state = self.0.lock();
            state.release_idle = true;
            state.owned -= state.free.len();
            // Back to the pool in place: the free list keeps its capacity (no allocation when
            // it fills again).
            state.free.clear();
        }
        // The thread, if it waits for the next buffer, releases the one it last hashed.
        self.0.more.notify_one();
    }

    /// The task has bytes to move again: hashed buffers wait in the lane to be filled again.
    pub(crate) fn keep_idle(&self) {
        self.0.lock().release_idle = false;
    }

    /// Buffers of this lane (in the task's hands, queued, being hashed or free).
    #[cfg(test)]
    pub(crate) fn owned(&self) -> usize {
        self.0.lock().owned
    }

    /// Waits for a hashed buffer; `None` if the lane was lost.
    pub(crate) fn free(&self) -> FreeBuffer<'_> {
        FreeBuffer { lane: &self.0 }
    }

    /// Says the last buffer was queued, then waits for the hash state: `None` if the lane was
    /// lost.
    pub(crate) fn finish(&self) -> Finish<'_> {
        self.0.lock().closed = true;
        self.0.more.notify_one();
        Finish { lane: &self.0 }
    }
}

impl Drop for LaneHandle {
    fn drop(&mut self) {
        let queued = {
            let mut state = self.0.lock();
            state.abandoned = true;
            // Dropped here rather than by the thread: their buffers go back to the pool now.
            std::mem::take(&mut state.queued)
        };
        self.0.more.notify_one();
        drop(queued);
    }
}

/// The hash state a checkpoint waits for ([`LaneHandle::mark`]); `Send + 'static`, for the
/// thread that runs the checkpoint.
pub(crate) struct MarkWait(Arc<Lane>);

impl MarkWait {
    /// Blocks until the thread hands over the state at the mark (a few buffers' hashing at
    /// most: everything up to it is queued); `None` if the lane ended without getting there
    /// (abandoned or lost) or the upload keeps no SHA-256.
    pub(crate) fn wait(self) -> Option<HashMark> {
        let mut state = self.0.lock();
        loop {
            if let Some(marked) = state.marked.take() {
                return marked;
            }
            if state.mark.is_none() || !matches!(state.outcome, Outcome::Running) {
                return None;
            }
            state = self.0.marked.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The future of [`LaneHandle::free`].
pub(crate) struct FreeBuffer<'a> {
    lane: &'a Lane,
}

impl Future for FreeBuffer<'_> {
    type Output = Option<PooledBuffer>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<PooledBuffer>> {
        let mut state = self.lane.lock();
        if let Some(buf) = state.free.pop() {
            return Poll::Ready(Some(buf));
        }
        if !matches!(state.outcome, Outcome::Running) {
            return Poll::Ready(None);
        }
        register(&mut state.waker, cx);
        Poll::Pending
    }
}

/// The future of [`LaneHandle::finish`].
pub(crate) struct Finish<'a> {
    lane: &'a Lane,
}

impl Future for Finish<'_> {
    type Output = Option<Done>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Done>> {
        let mut state = self.lane.lock();
        match std::mem::replace(&mut state.outcome, Outcome::Taken) {
            Outcome::Done(done) => Poll::Ready(Some(done)),
            Outcome::Lost | Outcome::Taken => Poll::Ready(None),
            Outcome::Running => {
                state.outcome = Outcome::Running;
                register(&mut state.waker, cx);
                Poll::Pending
            }
        }
    }
}

fn register(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::buffers::BufferPool;
    use sha2::Digest;
    use weir_store::{LocalOptions, LocalStore, StorePath, UploadOptions};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_lane_hashes_every_buffer_in_order_and_returns_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
        let buffers = BufferPool::default();
        let pool = HashPool::new(1);
        let path = StorePath::parse("f").unwrap();
        let mut up = store.begin(&path, UploadOptions::default()).unwrap();
        let lane = LaneHandle::new();
        let mut want = Vec::new();
        let mut started = false;
        rt().block_on(async {
            for i in 0..20u8 {
                let mut buf = match lane.try_buffer(&buffers) {
                    Some(b) => b,
                    None => lane.free().await.expect("not lost"),
                };
                buf[..5].copy_from_slice(&[i; 5]);
                want.extend_from_slice(&[i; 5]);
                let written = up.write_owned(buf, 5).unwrap();
                if started {
                    lane.push(written);
                } else {
                    // The pool's one thread may not be waiting yet: retry until it takes it.
                    let mut job = up.hash_job(written).unwrap();
                    while let Err(j) = pool.start(job, &lane) {
                        job = j;
                        std::thread::yield_now();
                    }
                    started = true;
                }
                assert!(buffers.lent() <= LANE_BUFFERS);
            }
            let done = lane.finish().await.expect("not lost");
            drop(up.attach(done).unwrap());
        });
        let sha: [u8; 32] = sha2::Sha256::digest(&want).into();
        assert_eq!(up.commit().unwrap().sha256, Some(sha));
        drop(lane);
        assert_eq!(buffers.lent(), 0);
    }

    #[test]
    fn an_idle_lane_gives_its_buffers_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
        let buffers = BufferPool::default();
        let pool = HashPool::new(1);
        let path = StorePath::parse("f").unwrap();
        let mut up = store.begin(&path, UploadOptions::default()).unwrap();
        let lane = LaneHandle::new();
        rt().block_on(async {
            let mut job = {
                let buf = lane.try_buffer(&buffers).unwrap();
                let written = up.write_owned(buf, 7).unwrap();
                up.hash_job(written).unwrap()
            };
            while let Err(j) = pool.start(job, &lane) {
                job = j;
                std::thread::yield_now();
            }
            let second = lane.try_buffer(&buffers).unwrap();
            lane.push(up.write_owned(second, 7).unwrap());
            // The task waits for its client: what the thread hashes goes back to the pool.
            lane.release_idle();
            wait_until(|| lane.owned() == 0);
            assert_eq!(buffers.lent(), 0);
            lane.keep_idle();
            let third = lane.try_buffer(&buffers).unwrap();
            assert_eq!((lane.owned(), buffers.lent()), (1, 1));
            lane.discard(third);
            assert_eq!((lane.owned(), buffers.lent()), (0, 0));
            let done = lane.finish().await.expect("not lost");
            drop(up.attach(done).unwrap());
        });
        assert!(up.commit().is_ok());
    }

    fn wait_until(mut cond: impl FnMut() -> bool) {
        for _ in 0..10_000 {
            if cond() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("condition not reached in 10 s");
    }

    #[test]
    fn a_mark_hands_over_the_state_of_exactly_the_bytes_up_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
        let buffers = BufferPool::default();
        let pool = HashPool::new(1);
        let path = StorePath::parse("f").unwrap();
        let resumables =
            weir_store::Resumables::open(&store, std::time::Duration::from_secs(60)).unwrap();
        let (id, _) = resumables.create(&path, None, None, true).unwrap();
        let (mut appending, mut up) = resumables.append(id, 0, None).unwrap();
        let lane = LaneHandle::new();
        let mut want = Vec::new();
        rt().block_on(async {
            let mut started = false;
            for i in 0..6u8 {
                let mut buf = match lane.try_buffer(&buffers) {
                    Some(b) => b,
                    None => lane.free().await.expect("not lost"),
                };
                buf[..1000].fill(i);
                want.extend_from_slice(&[i; 1000]);
                let written = up.write_owned(buf, 1000).unwrap();
                if started {
                    lane.push(written);
                } else {
                    let mut job = up.hash_job(written).unwrap();
                    while let Err(j) = pool.start(job, &lane) {
                        job = j;
                        std::thread::yield_now();
                    }
                    started = true;
                }
                if i == 3 {
                    // A checkpoint of the first 4000 bytes, its state from the lane's thread.
                    let job = appending.begin_checkpoint(&up).unwrap();
                    assert!(job.wants_mark());
                    let mark = lane.mark(job.offset());
                    std::thread::spawn(move || job.run_with(|| mark.wait()))
                        .join()
                        .unwrap();
                }
            }
            let done = lane.finish().await.expect("not lost");
            drop(up.attach(done).unwrap());
        });
        assert_eq!(appending.checkpoint_settled().unwrap().unwrap(), 4000);
        let state = resumables.state(id).unwrap().unwrap();
        let kept = weir_store::ResumableSha256::from_bytes(&state.sha256_state.unwrap()).unwrap();
        let sha: [u8; 32] = sha2::Sha256::digest(&want[..4000]).into();
        assert_eq!(kept.finalize(), sha);
        let weir_store::AppendEnd::Completed(c) = appending.finish(up, true).unwrap() else {
            panic!("not completed")
        };
        let sha: [u8; 32] = sha2::Sha256::digest(&want).into();
        assert_eq!(c.sha256, Some(sha));
    }

    #[test]
    fn a_mark_the_thread_never_reaches_gives_nothing() {
        let lane = LaneHandle::new();
        let mark = lane.mark(10);
        lane.0.end(None);
        assert!(mark.wait().is_none());
    }

    #[test]
    fn a_lane_whose_thread_died_is_lost() {
        let lane = LaneHandle::new();
        lane.0.end(None);
        assert!(rt().block_on(lane.free()).is_none());
        assert!(rt().block_on(lane.finish()).is_none());
    }
}
