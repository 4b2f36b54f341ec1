//! Assembling a local multipart upload ahead of its completion: while parts arrive, the parts
//! recorded in order from part 1 (1, 2, 3, … up to the first one missing) are copied into the
//! object's temporary and hashed, on a thread of their own, so that the completion has only
//! the parts after them left to copy and hash.
//!
//! The object's SHA-256 must see its bytes in order, and S3 clients number parts from 1 and
//! complete with all of them; so the work that can be done before the completion is that
//! prefix. Parts sent in parallel are recorded out of order: the prefix grows when the lowest
//! missing part is recorded, and the thread then takes every recorded part after it. With
//! many parts (aws-cli's default is 8 MiB), almost all the object is assembled when the
//! completion arrives; with as many parts as connections, little is.
//!
//! # Invariants
//! - An assembly is a list of (part number, data file name). A data file's name is new for
//!   every upload of a part (`record::data_name`'s nonce) and its bytes never change, so the
//!   list names exactly the bytes copied and hashed. The completion uses an assembly only if
//!   that list is the start of the parts it lists, data files included; otherwise it drops
//!   it and assembles from scratch. A part sent again, a part left out, a restart: a wrong
//!   assembly is never used, at worst its work is wasted.
//! - At most one thread works on an upload's assembly, and at most one per CPU on all of
//!   them ([`THREADS`]): past that a part recorded starts none, and the next one recorded, or
//!   the completion, takes the work. `running` and `again`, under one mutex, mean that a part
//!   recorded while the thread is busy is looked at before it stops.
//! - The completion ([`Ahead::take`]) stops the thread at the next part boundary and waits
//!   for it: the rest is done by the completion's copy and hash in parallel.
//! - An assembly lives in memory, its bytes in an [`Upload`]'s temporary: dropped (the upload
//!   aborted or swept, part 1 sent again, a completion that does not use it, a restart), the
//!   temporary is removed and its quota given back like any upload's.
//! - Parts written in place (`local/in_place.rs`) are only hashed ([`Ahead::hashing`]): their
//!   bytes are already where the object's will be. Such an assembly goes on only while each
//!   part is in place right after the one before, and only a completion that takes the
//!   upload's file whole uses it.
//! - A part in place may be hashed from the moment its bytes are all written
//!   ([`Ahead::written`]), before its record: the record waits for an fsync of the upload's
//!   file, which flushes the parts still arriving too, and the hash would wait for the disk.
//!   A part told written that then fails to be recorded is forgotten ([`Ahead::unwritten`]),
//!   and an assembly that took it is dropped: its range no longer holds the part.
//! - The hash is held to the parts' pace ([`Lead`], [`Ahead::caught_up`]): a part in place
//!   recorded more than [`Lead::within`] past the bytes hashed, while the thread hashes towards
//!   it, is answered once the hash comes within that lead. The part's client sends its next
//!   part only then, so on a machine whose CPUs the receiving fills, the hash gets its share
//!   instead of being left for the completion. The wait is only on the hash's progress: it ends
//!   as soon as the thread stops (a missing part, the completion, a failure), and a part more
//!   than [`Lead::at_most`] ahead does not wait at all (its answer could otherwise wait past a
//!   client's read timeout for gigabytes to be hashed).

use super::local::{copy_part, open_data, read_part};
use super::record::{data_at, offset_of};
use crate::Upload;
use crate::digest::Hashers;
use crate::read_back::{READ_BACK_BUF, read_range};
use crate::sys::DirHandle;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use tokio::sync::Notify;

/// How far past the object's hash a part written in place may be answered without waiting for
/// the hash (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Lead {
    /// A part starting at most this far past the bytes hashed is answered at once: a few parts
    /// of what clients send in parallel (8 × 8 MiB for aws-cli), and what the completion is
    /// left to hash at most when the parts come in order.
    pub(super) within: u64,
    /// A part starting further than this past the bytes hashed is answered at once too: its
    /// wait would be the hash of all that (a quarter of a second with SHA instructions, a few
    /// seconds without), which the completion does, with its keep-alive, instead.
    pub(super) at_most: u64,
}

impl Lead {
    pub(super) const DEFAULT: Lead = Lead {
        within: 64 << 20,
        at_most: 256 << 20,
    };

    /// Whether a part starting `ahead_by` bytes past those hashed waits for the hash.
    fn waits(self, ahead_by: u64) -> bool {
        ahead_by > self.within && ahead_by <= self.at_most
    }
}

/// How often the thread tells the bytes hashed within a part ([`Ahead::caught_up`]'s waiters).
const TELL_EVERY: u64 = 4 << 20;

/// Assembly threads running, in every store: the work is CPU-bound (a copy and SHA-256), so
/// more threads than CPUs would only slow the parts being received.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Claims one of [`THREADS`] if fewer than the CPUs run.
fn claim_thread() -> bool {
    static CPUS: OnceLock<usize> = OnceLock::new();
    let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    THREADS
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < cpus).then_some(n + 1)
        })
        .is_ok()
}

/// One upload's assembly ahead, shared by the part requests that advance it, its thread and
/// the completion that takes it.
#[derive(Debug)]
pub(super) struct Ahead {
    /// The upload's directory (its part records and data files).
    dir: DirHandle,
    state: Mutex<State>,
    /// Signalled when the thread stops.
    stopped: Condvar,
    /// Set by [`Ahead::take`] and [`Ahead::discard`]: the thread stops at the next part.
    stop: AtomicBool,
    /// The bytes hashed so far (`Assembly::end`), for [`Ahead::caught_up`].
    hashed: AtomicU64,
    /// Signalled when a part is hashed and when the thread stops.
    progress: Notify,
    /// Held by a test to hold the thread before its next part.
    #[cfg(test)]
    pub(super) hold: Mutex<()>,
}

#[derive(Debug)]
struct State {
    /// A thread is working on the assembly (it holds `work`).
    running: bool,
    /// A part was recorded while the thread was running: it looks again before stopping.
    again: bool,
    /// `None` while the thread holds it, or once it failed or was discarded.
    work: Option<Assembly>,
    /// Parts in place whose bytes are all written and not yet recorded (their fsync runs):
    /// the hash need not wait for their durability, only for their bytes ([`Ahead::written`]).
    written: Vec<Written>,
}

/// A part in place written and not yet recorded.
#[derive(Debug)]
struct Written {
    number: u32,
    offset: u64,
    size: u64,
    /// The thread took it: if it is not recorded after all, the assembly is wrong.
    taken: bool,
}

/// The object assembled so far: its temporary (none for parts written in place, which are
/// only hashed: the upload's file is the object's), the hash of its bytes, and which parts
/// they are.
#[derive(Debug)]
pub(super) struct Assembly {
    pub(super) object: Option<Upload>,
    pub(super) hashers: Hashers,
    /// The parts copied and hashed, in order: (number, data file name).
    pub(super) parts: Vec<(u32, String)>,
    /// The bytes hashed: where the next part in place must start.
    pub(super) end: u64,
}

impl Assembly {
    /// Whether the assembly is the start of `listed` ((number, data file name), in order).
    pub(super) fn starts(&self, listed: &[(u32, String)]) -> bool {
        listed.starts_with(&self.parts)
    }

    fn next_number(&self) -> u32 {
        self.parts.last().map_or(1, |(n, _)| n + 1)
    }
}

impl Ahead {
    /// An assembly into `object` (an empty upload of the key, hashing) of the parts recorded in
    /// `dir`; nothing runs until [`Ahead::advance`].
    pub(super) fn new(dir: DirHandle, object: Upload) -> Arc<Ahead> {
        let hashers = object.commit_hashers();
        Self::with(dir, Some(object), hashers)
    }

    /// The SHA-256 of the parts written in place in `dir`'s upload file, in order from part 1
    /// (`local/in_place.rs`): nothing to copy, the file is the object's.
    pub(super) fn hashing(dir: DirHandle) -> Arc<Ahead> {
        Self::with(dir, None, Hashers::new(true, false))
    }

    fn with(dir: DirHandle, object: Option<Upload>, hashers: Hashers) -> Arc<Ahead> {
        Arc::new(Ahead {
            dir,
            state: Mutex::new(State {
                running: false,
                again: false,
                written: Vec::new(),
                work: Some(Assembly {
                    object,
                    hashers,
                    parts: Vec::new(),
                    end: 0,
                }),
            }),
            stopped: Condvar::new(),
            stop: AtomicBool::new(false),
            hashed: AtomicU64::new(0),
            progress: Notify::new(),
            #[cfg(test)]
            hold: Mutex::new(()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A part was recorded: the thread takes it if it is next (and those after it), starting
    /// if none runs.
    pub(super) fn advance(self: &Arc<Self>) {
        let mut state = self.lock();
        if state.running {
            state.again = true;
            return;
        }
        if state.work.is_none() || self.stop.load(Ordering::Relaxed) || !claim_thread() {
            return;
        }
        state.running = true;
        drop(state);
        let ahead = Arc::clone(self);
        // ALLOCATION: a thread (its stack) per run, not per part: a run takes every part
        // recorded in order.
        let spawned = std::thread::Builder::new()
            .name("weir-assemble-ahead".into())
            .spawn(move || {
                ahead.run();
                THREADS.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            THREADS.fetch_sub(1, Ordering::AcqRel);
            // No thread: the assembly stays as it is, for the next part or the completion.
            self.lock().running = false;
            self.notify_stopped();
        }
    }

    fn run(&self) {
        let Some(mut work) = self.lock().work.take() else {
            self.finish_run(None);
            return;
        };
        // ALLOCATION: one read buffer per run, for the hash.
        let mut buf = vec![0u8; READ_BACK_BUF];
        loop {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            #[cfg(test)]
            let held = self.hold.lock().unwrap_or_else(|e| e.into_inner());
            let next = self.assemble_next(&mut work, &mut buf);
            #[cfg(test)]
            drop(held);
            match next {
                Ok(true) => {
                    self.hashed.store(work.end, Ordering::Release);
                    self.progress.notify_waiters();
                    continue;
                }
                Ok(false) => {}
                // The temporary cannot grow (no space, an I/O error): the completion, which
                // starts from scratch, will answer it.
                Err(_) => return self.finish_run(None),
            }
            let mut state = self.lock();
            if !std::mem::take(&mut state.again) {
                state.work = Some(work);
                state.running = false;
                drop(state);
                self.notify_stopped();
                return;
            }
        }
        self.finish_run(Some(work));
    }

    fn finish_run(&self, work: Option<Assembly>) {
        let mut state = self.lock();
        state.running = false;
        state.again = false;
        state.work = work;
        drop(state);
        self.notify_stopped();
    }

    fn notify_stopped(&self) {
        self.stopped.notify_all();
        self.progress.notify_waiters();
    }

    /// Returns once the part starting at `offset` in the upload's file need not wait for the
    /// hash any more: the hash came within `lead` of it, or the thread stopped (see the module
    /// doc).
    pub(super) async fn caught_up(&self, offset: u64, lead: Lead) {
        loop {
            // Registered before the check: a part hashed in between wakes it.
            let mut progress = std::pin::pin!(self.progress.notified());
            progress.as_mut().enable();
            let ahead_by = offset.saturating_sub(self.hashed.load(Ordering::Acquire));
            let hashing = self.lock().running && !self.stop.load(Ordering::Relaxed);
            if !(hashing && lead.waits(ahead_by)) {
                return;
            }
            progress.await;
        }
    }

    /// Copies and hashes the next part if it is recorded: `Ok(false)` if it is not (or was
    /// replaced while it was being opened: its new record advances the assembly again).
    fn assemble_next(&self, work: &mut Assembly, buf: &mut [u8]) -> io::Result<bool> {
        let number = work.next_number();
        let Some((size, data)) = self.part(number)? else {
            return Ok(false);
        };
        let (source, from) = match open_data(&self.dir, &data) {
            Ok(source) => source,
            Err(e) if crate::tree::is_absent(&e) => return Ok(false),
            Err(e) => return Err(e),
        };
        match &mut work.object {
            Some(object) => copy_part((&source, from), size, object).map_err(io::Error::other)?,
            // Hashing in place: the part must be where it will be in the object, right after
            // the parts hashed (else this assembly ends here, and the completion copies).
            None if offset_of(&data) != Some(work.end) => return Ok(false),
            None => {}
        }
        // The bytes hashed are told as the hash goes, not only per part: a piece waiting within
        // reach of the hash (`pace.rs`) goes on as soon as the hash comes near, instead of
        // once a whole part is hashed, while the receiving has stopped.
        let (base, mut told, mut done) = (work.end, 0u64, 0u64);
        read_range(&source, from, size, buf, |bytes| {
            work.hashers.update(bytes);
            done += bytes.len() as u64;
            if done - told >= TELL_EVERY {
                told = done;
                self.hashed.store(base + done, Ordering::Release);
                self.progress.notify_waiters();
            }
        })?;
        work.end += size;
        work.parts.push((number, data));
        Ok(true)
    }

    /// The assembly, for the completion: stops the thread at its next part boundary and waits
    /// for it. `None` if it failed.
    pub(super) fn take(&self) -> Option<Assembly> {
        self.stop.store(true, Ordering::Relaxed);
        self.idle().work.take()
    }

    /// Drops the assembly (its temporary is removed, its quota given back) once the thread,
    /// if one runs, stops at its next part boundary.
    pub(super) fn discard(&self) {
        drop(self.take());
    }

    /// Part `number`'s `size` bytes are written in place at `offset` and it is being recorded:
    /// the thread may hash them before the record (whose fsync can take as long as the whole
    /// file's dirty pages take to reach the disk). Followed by [`Ahead::recorded`] or
    /// [`Ahead::unwritten`].
    pub(super) fn written(self: &Arc<Self>, number: u32, offset: u64, size: u64) {
        let mut state = self.lock();
        // Told again (a test), it stays taken if it was: forgetting it must drop the assembly.
        let taken = match state.written.iter().position(|w| w.number == number) {
            Some(i) => state.written.swap_remove(i).taken,
            None => false,
        };
        state.written.push(Written {
            number,
            offset,
            size,
            taken,
        });
        drop(state);
        self.advance();
    }

    /// Part `number` is recorded: its record is what the thread reads from now on.
    pub(super) fn recorded(&self, number: u32) {
        self.lock().written.retain(|w| w.number != number);
    }

    /// Part `number`, told [`Ahead::written`], failed to be recorded: its bytes may be written
    /// again, so an assembly that hashed them is dropped (the completion assembles from
    /// scratch).
    pub(super) fn unwritten(&self, number: u32) {
        let mut state = self.lock();
        let Some(i) = state.written.iter().position(|w| w.number == number) else {
            return;
        };
        let taken = state.written.swap_remove(i).taken;
        drop(state);
        if taken {
            self.discard();
        }
    }

    /// Part `number` as the thread sees it: its record, else the part written in place and
    /// being recorded (then taken: see [`Ahead::unwritten`]).
    fn part(&self, number: u32) -> io::Result<Option<(u64, String)>> {
        if let Some((part, data)) = read_part(&self.dir, number).map_err(io::Error::other)? {
            return Ok(Some((part.size, data)));
        }
        let mut state = self.lock();
        let Some(w) = state.written.iter_mut().find(|w| w.number == number) else {
            return Ok(None);
        };
        w.taken = true;
        Ok(Some((w.size, data_at(w.offset))))
    }

    /// The parts told written and not yet recorded (tests).
    #[cfg(test)]
    pub(super) fn unrecorded(&self) -> Vec<u32> {
        let mut numbers: Vec<_> = self.lock().written.iter().map(|w| w.number).collect();
        numbers.sort_unstable();
        numbers
    }

    /// The state once no thread runs.
    fn idle(&self) -> MutexGuard<'_, State> {
        let mut state = self.lock();
        while state.running {
            state = self.stopped.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state
    }

    /// Starts the thread, however long the threads of other stores keep it from starting
    /// (tests that hold it with `hold`).
    #[cfg(test)]
    pub(super) fn start(self: &Arc<Self>) {
        while !self.lock().running {
            self.advance();
            std::thread::yield_now();
        }
    }

    /// The bytes hashed so far (tests).
    #[cfg(test)]
    pub(super) fn hashed(&self) -> u64 {
        self.hashed.load(Ordering::Acquire)
    }

    /// Takes every part it can, on the caller's thread once no other runs (tests: what a
    /// thread would have done, whether or not [`THREADS`] let one start).
    #[cfg(test)]
    pub(super) fn settle(&self) {
        let mut state = self.idle();
        if state.work.is_none() || self.stop.load(Ordering::Relaxed) {
            return;
        }
        state.running = true;
        drop(state);
        self.run();
    }
}
