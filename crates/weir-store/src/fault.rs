//! Fault injection for tests: make the Nth write or fsync of a store fail with a chosen OS
//! error, so that the handling of `ENOSPC`, `EDQUOT` or `EIO` can be tested without filling a
//! disk (which needs privileges to mount a small filesystem).
//!
//! Compiled only for this crate's tests and with the `fault-injection` feature; without them
//! [`Faults`] is an empty struct whose check compiles to nothing. The hook sits just before the
//! syscall it replaces, so everything after it (classification, cleanup, accounting) is the
//! production code path.

use std::io;

#[cfg(any(test, feature = "fault-injection"))]
pub use enabled::{Fault, FaultOp};

#[cfg(any(test, feature = "fault-injection"))]
mod enabled {
    use std::sync::atomic::{AtomicU64, Ordering};

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
        pub(crate) writes: AtomicU64,
        pub(crate) syncs: AtomicU64,
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
    pub(crate) fn new(fault: Option<Fault>) -> Self {
        Faults {
            counters: enabled::Counters {
                fault,
                ..Default::default()
            },
        }
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
        let f = Faults::new(Some(Fault {
            op: FaultOp::Write,
            nth: 3,
            raw_os_error: 28,
        }));
        assert!(f.check(Op::Write).is_ok());
        assert!(f.check(Op::SyncFile).is_ok());
        assert!(f.check(Op::Write).is_ok());
        let err = f.check(Op::Write).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(28));
        assert!(f.check(Op::Write).is_ok(), "once only");
        assert!(Faults::default().check(Op::SyncFile).is_ok());
    }
}
