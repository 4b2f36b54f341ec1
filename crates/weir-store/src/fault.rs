//! Fault injection for tests: make the Nth write or fsync of a store fail with a chosen OS
//! error, so that the handling of `ENOSPC`, `EDQUOT` or `EIO` can be tested without filling a
//! disk (which needs privileges to mount a small filesystem); and hold hash jobs, directory
//! scans or resumable checkpoints at a gate ([`HashGate`]), so that a test can have one in
//! flight at the moment it chooses.
//!
//! Compiled only for this crate's tests and with the `fault-injection` feature; without them
//! [`Faults`] is an empty struct whose check compiles to nothing. The hook sits just before the
//! syscall it replaces, so everything after it (classification, cleanup, accounting) is the
//! production code path.

use std::io;

#[cfg(any(test, feature = "fault-injection"))]
pub use enabled::{Fault, FaultOp, HashGate};

#[cfg(any(test, feature = "fault-injection"))]
mod enabled {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    /// Which operation a [`Fault`] makes fail.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum FaultOp {
        /// A `write` of body bytes through `Upload::write`.
        Write,
        /// The `fsync` of an upload's file at commit.
        SyncFile,
    }

    /// Makes the `nth` (1-based, counted over the whole store) `op` fail with the OS error
    /// `raw_os_error` (e.g. `ENOSPC`), once.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Fault {
        /// The operation to fail.
        pub op: FaultOp,
        /// Which occurrence fails, 1 for the first.
        pub nth: u64,
        /// The `errno` to fail with.
        pub raw_os_error: i32,
    }

    #[derive(Debug, Default)]
    pub(crate) struct Counters {
        pub(crate) fault: Option<Fault>,
        pub(crate) gate: Option<HashGate>,
        pub(crate) list_gate: Option<HashGate>,
        pub(crate) checkpoint_gate: Option<HashGate>,
        pub(crate) writes: AtomicU64,
        pub(crate) syncs: AtomicU64,
    }

    /// Holds every hash job of a store at the start of
    /// [`HashJob::run`](crate::HashJob::run) until the test lets it through, one permit per
    /// job (or all of them, once [`HashGate::open`]). Clones share the gate.
    ///
    /// A test sees which jobs wait (by the upload offset each will have hashed up to), and so
    /// can act — disconnect a client, drop an upload — while a hash is known to be in flight.
    #[derive(Clone, Debug, Default)]
    pub struct HashGate {
        inner: Arc<Gate>,
    }

    #[derive(Debug, Default)]
    struct Gate {
        state: Mutex<GateState>,
        changed: Condvar,
    }

    #[derive(Debug, Default)]
    struct GateState {
        open: bool,
        permits: u64,
        /// The `end` offsets of the jobs waiting, in arrival order.
        waiting: Vec<u64>,
    }

    impl HashGate {
        /// A closed gate: every job waits for a permit.
        pub fn closed() -> Self {
            Self::default()
        }

        /// Lets `n` more jobs through.
        pub fn release(&self, n: u64) {
            self.lock().permits += n;
            self.inner.changed.notify_all();
        }

        /// Lets every job through, now and from now on.
        pub fn open(&self) {
            self.lock().open = true;
            self.inner.changed.notify_all();
        }

        /// The jobs waiting now: for each, the offset in its upload up to which it will have
        /// hashed (its buffer's end).
        pub fn waiting(&self) -> Vec<u64> {
            self.lock().waiting.clone()
        }

        /// Waits until at least one job waits at the gate and returns [`HashGate::waiting`];
        /// `None` after `timeout` (a test's guard against hanging, not a measurement).
        pub fn wait_for_job(&self, timeout: Duration) -> Option<Vec<u64>> {
            let deadline = Instant::now() + timeout;
            let mut state = self.lock();
            while state.waiting.is_empty() {
                let left = deadline.checked_duration_since(Instant::now())?;
                state = self
                    .inner
                    .changed
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            Some(state.waiting.clone())
        }

        /// Called by a job before it hashes: blocks until a permit or an open gate.
        pub(crate) fn pass(&self, end: u64) {
            let mut state = self.lock();
            state.waiting.push(end);
            self.inner.changed.notify_all();
            while !state.open && state.permits == 0 {
                state = self
                    .inner
                    .changed
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
            }
            if !state.open {
                state.permits -= 1;
            }
            if let Some(i) = state.waiting.iter().position(|&e| e == end) {
                state.waiting.remove(i);
            }
            self.inner.changed.notify_all();
        }

        fn lock(&self) -> MutexGuard<'_, GateState> {
            self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    impl Counters {
        pub(crate) fn hit(&self, op: FaultOp) -> Option<i32> {
            let counter = match op {
                FaultOp::Write => &self.writes,
                FaultOp::SyncFile => &self.syncs,
            };
            let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
            let fault = self.fault?;
            (fault.op == op && fault.nth == n).then_some(fault.raw_os_error)
        }
    }
}

/// The operations a fault can target, as seen by the rest of the crate (always compiled).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    Write,
    SyncFile,
}

/// The per-store fault state.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    #[cfg(any(test, feature = "fault-injection"))]
    counters: enabled::Counters,
}

impl Faults {
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) fn new(fault: Option<Fault>, gate: Option<HashGate>) -> Self {
        Faults {
            counters: enabled::Counters {
                fault,
                gate,
                ..Default::default()
            },
        }
    }

    /// Also holds this store's directory scans at `gate` (see `LocalOptions::list_gate`).
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) fn with_list_gate(mut self, gate: Option<HashGate>) -> Self {
        self.counters.list_gate = gate;
        self
    }

    /// Also holds this store's resumable checkpoints at `gate` (see
    /// `LocalOptions::checkpoint_gate`).
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) fn with_checkpoint_gate(mut self, gate: Option<HashGate>) -> Self {
        self.counters.checkpoint_gate = gate;
        self
    }

    /// The gate resumable checkpoints of this store pass, if a test set one.
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) fn checkpoint_gate(&self) -> Option<HashGate> {
        self.counters.checkpoint_gate.clone()
    }

    /// The gate directory scans of this store pass, if a test set one.
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) fn list_gate(&self) -> Option<&HashGate> {
        self.counters.list_gate.as_ref()
    }

    /// The gate hash jobs of this store pass, if a test set one.
    #[cfg(any(test, feature = "fault-injection"))]
    pub(crate) fn gate(&self) -> Option<HashGate> {
        self.counters.gate.clone()
    }

    /// Fails if a fault is due for this occurrence of `op`.
    #[inline]
    pub(crate) fn check(&self, op: Op) -> io::Result<()> {
        #[cfg(any(test, feature = "fault-injection"))]
        {
            let op = match op {
                Op::Write => FaultOp::Write,
                Op::SyncFile => FaultOp::SyncFile,
            };
            if let Some(errno) = self.counters.hit(op) {
                return Err(io::Error::from_raw_os_error(errno));
            }
        }
        #[cfg(not(any(test, feature = "fault-injection")))]
        let _ = op;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fails_exactly_the_nth_occurrence_of_its_op() {
        let f = Faults::new(
            Some(Fault {
                op: FaultOp::Write,
                nth: 3,
                raw_os_error: 28,
            }),
            None,
        );
        assert!(f.check(Op::Write).is_ok());
        assert!(f.check(Op::SyncFile).is_ok());
        assert!(f.check(Op::Write).is_ok());
        let err = f.check(Op::Write).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(28));
        assert!(f.check(Op::Write).is_ok(), "once only");
        assert!(Faults::default().check(Op::SyncFile).is_ok());
    }

    #[test]
    fn the_gate_holds_jobs_until_released() {
        use std::time::Duration;
        let gate = HashGate::closed();
        assert!(gate.waiting().is_empty());
        let g = gate.clone();
        let job = std::thread::spawn(move || {
            g.pass(10);
            g.pass(20);
        });
        assert_eq!(gate.wait_for_job(Duration::from_secs(60)), Some(vec![10]));
        gate.release(1);
        // The first job passed; the second waits.
        let mut waiting = gate.wait_for_job(Duration::from_secs(60));
        while waiting == Some(vec![10]) {
            waiting = gate.wait_for_job(Duration::from_secs(60));
        }
        assert_eq!(waiting, Some(vec![20]));
        gate.open();
        job.join().unwrap();
        assert!(gate.waiting().is_empty());
    }
}
