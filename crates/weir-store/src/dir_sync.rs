//! Group commit of directory fsyncs: the commits that land in one directory at the same moment
//! share one `fsync` of it, instead of one each.
//!
//! A commit (`upload.rs`, step 6) renames its file into a directory and must not answer before
//! the rename is durable: an `fsync` of that directory that *began after the rename* returns.
//! One such fsync covers every rename made before it began, so when several commits into one
//! directory are waiting, one fsync serves them all.
//!
//! Invariant (the promise a `201` keeps): [`DirSyncs::sync`] returns `Ok` to a caller only
//! after an fsync of its directory that started after the caller entered `sync` (so after its
//! rename) has returned `Ok`. It is kept with generations, per directory, under one mutex:
//! - `started` counts the fsyncs begun, `done` the last one finished; at most one runs.
//! - A caller takes `target = started + 1`: whatever runs now may have begun before its
//!   rename, so only the next one counts.
//! - If none runs, the caller leads generation `target` at once (a lone commit waits for
//!   nothing: no timer, no waiting for company); else it waits until `done >= target`, or
//!   until the running one ends and no one has begun `target` yet, and then leads it itself.
//! - Every caller that arrived while generation `k` ran has `target = k + 1`, and the first
//!   of them to wake leads it: one fsync for all of them.
//! - A failed fsync fails its own generation's callers, and (conservatively) every caller
//!   whose target is not after it: a later success does not prove an earlier rename durable.
//!
//! Directories are told apart by (device, inode) (`DirHandle::identity`), never by path: a
//! directory renamed or replaced meanwhile is another directory, and an fsync of another one
//! covers nothing. Without an identity (no inode numbers: not Unix) each caller fsyncs alone.
//! The table holds only directories with a commit in `sync` (an entry leaves with its last
//! user): its size is bounded by the commits in flight.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A directory's identity: (device, inode).
pub(crate) type DirKey = (u64, u64);

/// The directories with commits waiting for their fsync (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct DirSyncs {
    dirs: Mutex<HashMap<DirKey, Arc<Group>>>,
    /// Test counter: the fsyncs run through [`DirSyncs::sync`].
    #[cfg(test)]
    pub(crate) fsyncs: std::sync::atomic::AtomicU64,
    /// Test hook: runs in the leader just before its fsync.
    #[cfg(test)]
    pub(crate) before_fsync: crate::testutil::Hook,
}

/// One directory's generations.
#[derive(Debug, Default)]
struct Group {
    state: Mutex<Generations>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Generations {
    /// Fsyncs begun (the number of the latest).
    started: u64,
    /// The latest fsync finished.
    done: u64,
    running: bool,
    /// The latest generation whose fsync failed, and how.
    failed: Option<(u64, io::ErrorKind, Option<i32>)>,
    /// Callers in `sync` (the entry leaves the table with the last).
    users: usize,
    /// Callers waiting for another's fsync (for tests to see a batch form).
    waiting: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The state is updated whole under the lock, before anything can panic.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl DirSyncs {
    /// Returns once an fsync of the directory `key` that began after this call did (see the
    /// module doc); `fsync` is this caller's way to run one, used if it leads. `key` `None`:
    /// `fsync` alone.
    pub(crate) fn sync(
        &self,
        key: Option<DirKey>,
        fsync: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(key) = key else {
            return self.run(fsync);
        };
        // COPY: a reference count, so that the table's lock is not held while waiting.
        let group = {
            let mut dirs = lock(&self.dirs);
            let group = Arc::clone(dirs.entry(key).or_default());
            lock(&group.state).users += 1;
            group
        };
        let result = self.in_group(&group, fsync);
        let mut dirs = lock(&self.dirs);
        let mut state = lock(&group.state);
        state.users -= 1;
        if state.users == 0 {
            dirs.remove(&key);
        }
        result
    }

    fn in_group(&self, group: &Group, fsync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let mut state = lock(&group.state);
        let target = state.started + 1;
        loop {
            if state.done >= target {
                return match state.failed {
                    Some((generation, kind, raw)) if generation >= target => Err(match raw {
                        Some(raw) => io::Error::from_raw_os_error(raw),
                        None => kind.into(),
                    }),
                    _ => Ok(()),
                };
            }
            if !state.running {
                // Nothing runs and `target` was not begun: `started` is `target - 1` (it was
                // at least that when this caller came, and `target` would have finished).
                debug_assert_eq!(state.started + 1, target);
                state.started = target;
                state.running = true;
                drop(state);
                let result = self.run(fsync);
                let mut state = lock(&group.state);
                state.running = false;
                state.done = target;
                if let Err(e) = &result {
                    state.failed = Some((target, e.kind(), e.raw_os_error()));
                }
                group.changed.notify_all();
                return result;
            }
            state.waiting += 1;
            state = group
                .changed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            state.waiting -= 1;
        }
    }

    fn run(&self, fsync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        #[cfg(test)]
        {
            self.before_fsync.run();
            self.fsyncs
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        fsync()
    }

    /// Test view: the callers waiting for another's fsync of `key`.
    #[cfg(test)]
    pub(crate) fn waiting(&self, key: DirKey) -> usize {
        let dirs = lock(&self.dirs);
        dirs.get(&key).map_or(0, |g| lock(&g.state).waiting)
    }
}

#[cfg(test)]
mod tests;
