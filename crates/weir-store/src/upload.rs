//! One upload in progress: a temporary file that becomes the target at commit, or disappears.
//!
//! Life cycle (each step consumes or checks the state, see [`State`]):
//!
//! ```text
//! begin ──► Open ──write / write_owned, hash_job, attach / record_external_write──► Open
//!             │ \── any error ──► Discarded (temp removed, reservation released)
//!             ├── commit ──► Done (file at target)   [errors before the rename: Discarded]
//!             ├── abort  ──► Done (temp removed)
//!             └── drop   ──► temp removed
//! ```
//!
//! Commit, in order, and why:
//! 1. check the length against `expected_len` and against the file itself (catches a body
//!    that ended early, or external writes that were not recorded);
//! 2. finish the digests and compare with the expected ones: a mismatch discards the upload
//!    before anything is visible;
//! 3. record the SHA-256 in an xattr (so that the fsync below covers it too);
//! 4. `fsync` the file: its data is on disk before its name is;
//! 5. resolve the target's directory (`openat2`, no lock); under the store's commit lock,
//!    create the directories still missing (each charged [`ENTRY_COST`] first, so that a quota
//!    that cannot hold them fails before any is made), `fstatat` the target (for `replaced`
//!    and what it frees), run the caller's check of the version there (`commit_if`,
//!    `precondition.rs`: the file opened relative to the same directory descriptor), give the
//!    new file its final modification time (`version_date.rs`: a second shared with the
//!    version it replaces is marked) and `renameat` the temp from the staging area over it:
//!    readers see the old file or the new one;
//! 6. `fsync` the directory: the rename itself is on disk when commit returns. Commits that
//!    land in one directory at the same moment share that fsync (group commit,
//!    `dir_sync.rs`): each returns only after an fsync of the directory that began after its
//!    own rename, and a lone commit runs its own at once.
//!
//! The temporary lives in the staging area, never next to its target, so that an upload that
//! fails leaves nothing in the tree. [`Upload::park`] closes its descriptor until it is needed
//! again (reopened by name relative to the staging area's descriptor). Discarding unlinks it,
//! closes it, and only then gives its reservation back.
//!
//! Copies and allocations on the write path: [`Upload::write`] hands the caller's slice to the
//! hasher (which reads it in place) and to `write(2)` (the kernel copies it into the page
//! cache, the one copy a buffered write needs). [`Upload::write_owned`] does the same
//! `write(2)` and keeps the buffer, which a [`HashJob`] later reads in place on another thread
//! (`hash_job.rs`): no copy either. Nothing is allocated per write; the only
//! allocations are per upload (paths and the boxed hash state, in `begin`) and, only when bytes
//! bypassed `write` and a digest is needed, one read buffer at commit. Every 16 MiB written
//! (by default), a `dup` of the file goes to the store's writeback thread (`writeback.rs`).

use crate::digest::{ContentDigest, Digests, Hashers};
use crate::error::StoreError;
use crate::fault::Op;
use crate::hash_job::{HashJob, HashTrack, Hashed, Written};
use crate::media_type::MediaType;
use crate::meta::FileMeta;
use crate::multipart::PartPace;
use crate::object_meta::ObjectMeta;
use crate::path::StorePath;
use crate::precondition::{self, Check};
use crate::quota::{ENTRY_COST, reserved_end};
use crate::read_back::{READ_BACK_BUF, read_from_start};
use crate::readers::FileId;
use crate::sha256_state::ResumableSha256;
use crate::sys::{self, DirHandle, EntryKind, EntryStat};
use crate::tree::{Missing, Resolved, Shared, create_temp, parent_of, stat};
use crate::version_date;
use crate::writeback;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::sync::Arc;

/// The least length still to come that [`Upload::preallocate`] reserves: below it, the system
/// call costs more than the filesystem work it saves.
const PREALLOCATE_MIN: u64 = 1 << 20;

/// How to run one upload.
#[derive(Clone, Debug)]
pub struct UploadOptions {
    /// Compute the SHA-256 of the body while it is written, report it from
    /// [`Upload::commit`] and store it with the file. Default `true`. Turn it off for the
    /// zero-copy path ([`Upload::file_mut`]), where the bytes never pass through user space.
    pub hash: bool,
    /// Digests the body must match (from `Content-Digest`). Verified whatever `hash` says:
    /// computed while writing, or by reading the file back at commit if bytes bypassed
    /// [`Upload::write`].
    pub expected_digest: Option<ContentDigest>,
    /// The body length, when known (`Content-Length`). Checked against the quota at `begin`
    /// (a length that cannot fit is refused there), then reserved a window ahead of the bytes
    /// received (`quota::reserved_end`); writing more, or committing fewer, is
    /// [`StoreError::LengthMismatch`].
    pub expected_len: Option<u64>,
    /// The object's S3 metadata (`object_meta.rs`), stored with the commit: locally an xattr
    /// set on the temporary file at `begin` (so the commit's fsync and rename make it visible
    /// with the bytes, or not at all), refused ([`StoreError::NoSpace`]) by a filesystem
    /// without user xattrs; in a bucket, the object's own metadata. Default `None`.
    pub object_meta: Option<ObjectMeta>,
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions {
            hash: true,
            expected_digest: None,
            expected_len: None,
            object_meta: None,
        }
    }
}

/// What a successful commit stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    /// Bytes stored.
    pub size: u64,
    /// The SHA-256 of the bytes, when computed (`hash` on, or a `sha-256` digest expected).
    pub sha256: Option<[u8; 32]>,
    /// A file existed at the target and was replaced (answer 200 rather than 201).
    pub replaced: bool,
    /// The stored file's metadata, exactly as [`LocalStore::open_file`](crate::LocalStore)
    /// reports it while the file is unchanged: validators computed from either agree.
    pub stored: FileMeta,
}

/// Where an upload is in its life cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The temporary file exists and takes writes.
    Open,
    /// An error removed the temporary file and released the reservation; every further call
    /// fails with [`StoreError::Discarded`].
    Discarded,
    /// Committed or aborted: nothing left to clean up.
    Done,
}

/// An upload in progress. Dropping it without [`Upload::commit`] removes the temporary file:
/// a handler that returns early (client gone, body too large, panic) leaves nothing behind.
#[derive(Debug)]
pub struct Upload {
    pub(crate) shared: Arc<Shared>,
    pub(crate) path: StorePath,
    /// The temporary file's name in the staging area.
    pub(crate) temp: String,
    /// Where the bytes go in the file: 0, or a multipart part's place in its upload's file
    /// ([`Upload::in_place`]).
    base: u64,
    /// The file is shared (a multipart upload's, [`Upload::in_place`]): this upload owns only
    /// `base..base + size`, which it gives back by punching a hole instead of unlinking.
    in_place: bool,
    /// The temporary file, open; `None` while parked ([`Upload::park`]).
    file: Option<File>,
    state: State,
    /// Bytes written (and, for external writes, recorded).
    size: u64,
    /// Bytes reserved against the quota; always `>= size` while open. With a declared length,
    /// a window ahead of `size` (`quota::reserved_end`), extended as the bytes reach it.
    reserved: u64,
    /// [`Upload::preallocate`] ran: each extension of the reservation also reserves its blocks
    /// on disk (`fallocate`, keeping the size), up to `reserved`.
    preallocating: bool,
    expected_len: Option<u64>,
    expected_digest: ContentDigest,
    /// Which digests commit must produce.
    want_sha256: bool,
    want_sha512: bool,
    /// Digests of everything written so far, while all bytes came through `write` or
    /// `write_owned`; off once an external write was recorded (commit then reads the file
    /// back). See `hash_job.rs`.
    hash: HashTrack,
    /// Digests of an externally written file, and the size they cover
    /// ([`Upload::supply_digests`]): commit uses them when they cover the whole file.
    supplied: Option<(u64, Digests)>,
    /// Writeback of `0..flushed` was requested (see `writeback.rs`).
    flushed: u64,
    /// Dropped while open, the temporary stays (a resumable upload's data, see
    /// [`Upload::adopt`]), and what was charged beyond this size goes back: whoever keeps the
    /// file charges what it keeps (`resumable.rs`, `Appending`'s drop).
    keep_on_drop: Option<u64>,
    /// The client's modification time ([`Upload::set_modified`]), given to the file at
    /// commit instead of the commit's.
    pub(crate) client_modified: Option<std::time::SystemTime>,
    /// Whether the temporary file has a media type, for the digest record's flag
    /// (`sys::DigestRecord`): known for a file this upload created (`false` until
    /// [`Upload::set_media_type`] keeps one), `None` for an adopted one (a resumable upload's,
    /// which an earlier request may have given one): then asked of the file at commit.
    media_type: Option<bool>,
    /// A multipart part in place, paced with the other parts of its upload in flight
    /// (`multipart/pace.rs`, [`Upload::before_piece`]).
    pace: Option<PartPace>,
}

impl Upload {
    /// The SHA-256 state of exactly the bytes written so far, when it is at hand (see
    /// `HashTrack::sha256_at`): what a resumable upload keeps with its offset.
    pub(crate) fn sha256_state(&self) -> Option<ResumableSha256> {
        self.hash.sha256_at(self.size)
    }

    /// The id of this upload's hashing, which its hash tokens and marks carry.
    pub(crate) fn hash_id(&self) -> u64 {
        self.hash.id()
    }

    /// Whether the bytes are hashed as they are written (else commit reads the file back when
    /// it needs a digest, or needs none).
    pub fn is_hashing(&self) -> bool {
        self.hash.is_on()
    }

    /// The path this upload will be committed to.
    pub fn path(&self) -> &StorePath {
        &self.path
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Reserves the file's blocks ahead of the bytes received, keeping the file's size (on
    /// Linux `fallocate` with `FALLOC_FL_KEEP_SIZE`, elsewhere nothing), for an upload with a
    /// declared length (`expected_len`, when at least 1 MiB of it is still to come): the
    /// window the quota holds now (`quota::reserved_end`), and each window after it as the
    /// bytes reach it, never the whole length at once (a client that declares much and sends
    /// little holds no disk others need). Call before receiving the body: a filesystem whose
    /// free space cannot hold the rest of the declared length fails now
    /// ([`StoreError::NoSpace`], the upload discarded) rather than after the client has sent
    /// most of it, and the writes that follow cost the filesystem less. Blocks a discarded
    /// upload reserved go with its temporary file.
    pub fn preallocate(&mut self) -> Result<(), StoreError> {
        self.ensure_open()?;
        let (Some(expected), Some(file)) = (self.expected_len, self.file.as_ref()) else {
            return Ok(());
        };
        let left = expected.saturating_sub(self.size);
        if left < PREALLOCATE_MIN {
            return Ok(());
        }
        if sys::available_space(file).is_some_and(|free| free < left) {
            return Err(self.discard(StoreError::NoSpace));
        }
        self.preallocating = true;
        let (from, to) = (self.size, self.reserved);
        self.allocate(from, to)
    }

    /// Reserves the blocks of `from..to` (see [`Upload::preallocate`]); an error discards.
    fn allocate(&mut self, from: u64, to: u64) -> Result<(), StoreError> {
        let Some(file) = self.file.as_ref() else {
            return Ok(());
        };
        if to <= from {
            return Ok(());
        }
        match sys::preallocate(file, self.base + from, to - from) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.discard(StoreError::from_io("preallocate", e))),
        }
    }

    /// Appends all of `buf` to the file (hashing it first, when hashing is on).
    ///
    /// Any error discards the upload: the temporary file is removed, existing files are
    /// untouched, and later calls fail with [`StoreError::Discarded`].
    pub fn write(&mut self, buf: &[u8]) -> Result<(), StoreError> {
        self.ensure_open()?;
        if buf.is_empty() {
            return Ok(());
        }
        let n = buf.len() as u64;
        self.account(n)?;
        if let Err(e) = self.hash.inline(self.size, buf) {
            return Err(self.discard(e));
        }
        self.write_file(buf)?;
        self.size += n;
        self.write_back_early();
        Ok(())
    }

    /// Appends `buf[..len]` to the file, like [`Upload::write`], but leaves the hashing to a
    /// [`HashJob`] that may run on another thread while the caller receives the next bytes:
    /// the returned [`Written`] keeps the buffer, so the bytes hashed are the bytes written
    /// (see [`HashJob`] for the protocol). Pass it to [`Upload::hash_job`] in the order
    /// written; commit fails while written bytes wait for their job.
    ///
    /// No copy: `write(2)` and the hasher both read `buf` in place. Errors discard the upload
    /// as [`Upload::write`]'s do (and drop `buf`).
    ///
    /// # Panics
    /// If `len > buf.as_ref().len()`.
    pub fn write_owned<B: AsRef<[u8]>>(
        &mut self,
        buf: B,
        len: usize,
    ) -> Result<Written<B>, StoreError> {
        self.ensure_open()?;
        let bytes = &buf.as_ref()[..len];
        let start = self.size;
        let n = len as u64;
        self.account(n)?;
        self.write_file(bytes)?;
        self.size += n;
        self.write_back_early();
        Ok(self.hash.written(buf, start, self.size))
    }

    /// Hands the upload's hash state out with the next written bytes (in the order
    /// [`Upload::write_owned`] wrote them), as a job to run anywhere. One job at a time: attach
    /// it back with [`Upload::attach`] before the next. When the upload computes no digest the
    /// job does nothing.
    ///
    /// Out of order, another upload's bytes, or a job already out: the upload is discarded
    /// ([`StoreError::HashOutOfOrder`]).
    pub fn hash_job<B>(&mut self, written: Written<B>) -> Result<HashJob<B>, StoreError> {
        self.ensure_open()?;
        self.hash.job(written).map_err(|e| self.discard(e))
    }

    /// Takes the hash state back from a job that ran, and returns its buffer. A job of another
    /// upload, or one not expected now, discards the upload ([`StoreError::HashOutOfOrder`]).
    pub fn attach<B>(&mut self, hashed: Hashed<B>) -> Result<B, StoreError> {
        self.ensure_open()?;
        self.hash.attach(hashed).map_err(|e| self.discard(e))
    }

    /// Adds digests to verify at commit that became known after [`begin`](crate::LocalStore::begin):
    /// a `Content-Digest` sent as a trailer, after the body. A member given here replaces the
    /// same algorithm's member given at begin. An algorithm the upload was not computing while
    /// the bytes were written (`sha-512` when only `sha-256` was, or any after an external
    /// write) is computed at commit by reading the file back: the check is never skipped.
    pub fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError> {
        self.ensure_open()?;
        let new_sha256 = digest.sha256.is_some() && !self.want_sha256;
        let new_sha512 = digest.sha512.is_some() && !self.want_sha512;
        if digest.sha256.is_some() {
            self.expected_digest.sha256 = digest.sha256;
        }
        if digest.sha512.is_some() {
            self.expected_digest.sha512 = digest.sha512;
        }
        if new_sha256 || new_sha512 {
            self.want_sha256 |= new_sha256;
            self.want_sha512 |= new_sha512;
            // The hashers that saw the bytes lack an algorithm: commit reads the file back.
            self.hash.external();
        }
        Ok(())
    }

    /// Asks the store's writeback thread to start on what was written since the last request,
    /// every `early_writeback` bytes (`writeback.rs`). No system call here but a `dup` per
    /// request (one per 16 MiB by default).
    fn write_back_early(&mut self) {
        let Some(every) = self.shared.early_writeback else {
            return;
        };
        let Some(file) = &self.file else { return };
        if let Some((offset, len)) = writeback::next_range(self.flushed, self.size, every) {
            if self.shared.flusher.request(file, self.base + offset, len) {
                self.flushed = offset + len;
            }
        }
    }

    /// `write_all` to the temporary file (behind the write fault hook); an error discards.
    fn write_file(&mut self, buf: &[u8]) -> Result<(), StoreError> {
        let written = self.shared.faults.check(Op::Write).and_then(|()| {
            let file = self.open_file()?;
            file.write_all(buf)
        });
        written.map_err(|e| self.discard(StoreError::from_io("write", e)))
    }

    /// The temporary file, reopened (by name, relative to the staging area's descriptor) if
    /// the upload was parked, at the end of what was written.
    fn open_file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            let mut file = self.shared.staging.open_rw(&self.temp)?;
            file.seek(SeekFrom::Start(self.base + self.size))?;
            self.file = Some(file);
        }
        // Set just above when it was not.
        self.file
            .as_mut()
            .ok_or_else(|| io::ErrorKind::NotFound.into())
    }

    /// Closes the temporary file's descriptor until the upload is written to or committed
    /// again, which reopen it by name: an upload that waits for others (a finished part of a
    /// form) then holds no file descriptor, so that a form of many files does not hold one per
    /// file.
    pub fn park(&mut self) -> Result<(), StoreError> {
        self.ensure_open()?;
        self.file = None;
        Ok(())
    }

    /// The temporary file, for writes that bypass [`Upload::write`]: `splice(2)` from a socket,
    /// `copy_file_range(2)`, a `write_vectored`. Write sequentially at the file's current
    /// position, then report every byte with [`Upload::record_external_write`].
    ///
    /// Meant for uploads begun with `hash: false`. With hashing on it still works, but commit
    /// then reads the whole file back to hash it.
    ///
    /// # Panics
    /// If the upload was parked ([`Upload::park`]) and its file cannot be reopened; an upload
    /// that is never parked always has its file open.
    pub fn file_mut(&mut self) -> &mut File {
        match self.open_file() {
            Ok(file) => file,
            Err(e) => panic!("reopening a parked upload's temporary file: {e}"),
        }
    }

    /// Records the media type the client gave the file, on the temporary file, so that the
    /// commit's fsync and rename make it visible with the bytes (`media_type.rs`). Best
    /// effort: `false` when the filesystem does not keep it (readers then go by the name).
    pub fn set_media_type(&mut self, media_type: &MediaType) -> bool {
        let kept = match self.open_file() {
            Ok(file) => sys::write_media_type(file, media_type.as_str().as_bytes()),
            Err(_) => false,
        };
        if kept {
            self.media_type = Some(true);
        }
        kept
    }

    /// Reserves room for the next `n` bytes of a declared length (no further than it) before
    /// they are written through [`Upload::file_mut`], which [`Upload::record_external_write`]
    /// accounts only after the fact: against the quota, and on disk when preallocating, with
    /// the window of [`Upload::write`]'s reservations. Fails (and discards the upload) when the
    /// quota cannot hold them. Nothing to do without a declared length (the bytes are then
    /// accounted as they are recorded), or when they are already reserved: one comparison.
    pub fn reserve_next(&mut self, n: u64) -> Result<(), StoreError> {
        self.ensure_open()?;
        let Some(declared) = self.expected_len else {
            return Ok(());
        };
        let end = self.size.saturating_add(n).min(declared);
        if end > self.reserved {
            return self.extend(end);
        }
        Ok(())
    }

    /// Reports `n` bytes written through [`Upload::file_mut`], for the length check and the
    /// quota. Fails (and discards the upload) if they exceed `expected_len` or the quota.
    pub fn record_external_write(&mut self, n: u64) -> Result<(), StoreError> {
        self.ensure_open()?;
        self.account(n)?;
        // The hashers did not see these bytes: commit re-reads the file if it needs a digest.
        self.hash.external();
        self.size += n;
        // Spliced bytes are in the page cache like written ones: start their writeback too.
        self.write_back_early();
        Ok(())
    }

    /// Discards the upload because an external write failed, and classifies the error the way
    /// [`Upload::write`] would: `ENOSPC`/`EDQUOT` become [`StoreError::NoSpace`].
    pub fn abort_with(mut self, err: io::Error) -> StoreError {
        let err = StoreError::from_io("write", err);
        if self.state == State::Open {
            self.discard(err)
        } else {
            err
        }
    }

    /// Makes the upload the file at its path, durably and atomically (see the module doc).
    ///
    /// On error before the rename, the upload is discarded and the target untouched. If the
    /// final directory fsync fails, the new file is already visible but may not survive a
    /// crash; the error is reported so that the client retries (a PUT is idempotent).
    pub fn commit(self) -> Result<Committed, StoreError> {
        self.commit_checked(None)
    }

    /// Commits like [`Upload::commit`], only if `check` accepts the version now at the target
    /// (`None`: no file there), checked under the commit lock right before the rename (see
    /// `precondition.rs`). Refused: [`StoreError::PreconditionFailed`], the upload is discarded
    /// and the target untouched.
    pub fn commit_if(
        self,
        mut check: impl FnMut(Option<&FileMeta>) -> bool,
    ) -> Result<Committed, StoreError> {
        self.commit_checked(Some(&mut check))
    }

    fn commit_checked(mut self, check: Option<Check<'_>>) -> Result<Committed, StoreError> {
        self.ensure_open()?;
        if self.in_place {
            // A range of a shared file is never a file of its own: it ends by `seal_into`.
            return Err(self.discard(StoreError::Discarded));
        }
        let digests = match self.prepare() {
            Ok(d) => d,
            Err(e) => return Err(self.discard_file(e)),
        };
        let placed = self.rename_into_place(digests.sha256.as_ref(), check);
        let (dir, replaced, freed, stored) = match placed {
            Ok(r) => r,
            Err(e) => return Err(self.discard_file(e)),
        };
        self.state = State::Done;
        self.file = None;
        // The reservation becomes the file's share of the usage; what it replaced is freed.
        self.shared
            .usage
            .release(self.reserved.saturating_sub(self.size));
        self.shared.usage.release(freed);
        // Shared with the commits that land in this directory at the same moment: answered
        // after an fsync of it begun after this rename (`dir_sync.rs`).
        let dir = dir.get(&self.shared);
        self.shared
            .dir_syncs
            .sync(dir.identity(), || dir.sync())
            .map_err(|e| StoreError::from_io("sync directory", e))?;
        Ok(Committed {
            size: self.size,
            sha256: digests.sha256,
            replaced,
            stored,
        })
    }

    /// Ends the upload by moving its temporary to `dir/name`, durably, instead of to its path:
    /// a multipart upload's part (`multipart/local.rs`), which becomes part of a file only at
    /// the upload's completion. The length is checked as a commit checks it and the data
    /// fsynced before the rename (which replaces a file of that name); the caller fsyncs
    /// `dir`. `gate` runs after the fsync and before the rename, and what it returns (a lock
    /// guard) is handed back with the size, so that the owner's bookkeeping of `dir` and the
    /// rename happen under one lock; its error discards the upload. The file keeps its charge
    /// against the quota (its size and [`ENTRY_COST`]): its new owner gives it back when it
    /// removes the file. On error the upload is discarded.
    pub(crate) fn seal_into<G>(
        mut self,
        dir: &DirHandle,
        name: &str,
        gate: impl FnOnce() -> Result<G, StoreError>,
    ) -> Result<(u64, G), StoreError> {
        self.ensure_open()?;
        let sealed = (|| {
            if let Some(expected) = self.expected_len {
                if self.size != expected {
                    return Err(StoreError::LengthMismatch {
                        expected,
                        actual: self.size,
                    });
                }
            }
            let (size, base, in_place) = (self.size, self.base, self.in_place);
            let file = self
                .open_file()
                .map_err(|e| StoreError::from_io("reopen temporary file", e))?;
            let on_disk = file
                .metadata()
                .map_err(|e| StoreError::from_io("stat", e))?
                .len();
            // In place, others' bytes may follow this range (the file holds the upload's parts).
            let short = if in_place {
                on_disk < base + size
            } else {
                on_disk != size
            };
            if short {
                return Err(StoreError::LengthMismatch {
                    expected: base + size,
                    actual: on_disk,
                });
            }
            file.sync_data()
                .map_err(|e| StoreError::from_io("fsync part", e))?;
            let guard = gate()?;
            if !in_place {
                self.shared
                    .staging
                    .rename(&self.temp, dir, name)
                    .map_err(|e| StoreError::from_io("rename part", e))?;
            }
            Ok(guard)
        })();
        let guard = match sealed {
            Ok(guard) => guard,
            Err(e) => return Err(self.discard_file(e)),
        };
        self.state = State::Done;
        self.file = None;
        self.shared
            .usage
            .release(self.reserved.saturating_sub(self.size));
        Ok((self.size, guard))
    }

    /// Removes the temporary file. Dropping the upload does the same, ignoring errors.
    pub fn abort(mut self) -> Result<(), StoreError> {
        if self.state != State::Open {
            return Ok(());
        }
        if self.in_place {
            self.remove_temp();
            self.state = State::Done;
            return Ok(());
        }
        self.state = State::Done;
        let removed = self.shared.staging.unlink(&self.temp);
        // Closed before the space is given back: the temporary's blocks are free only once it
        // is both unlinked and closed.
        self.file = None;
        self.shared
            .usage
            .release(self.reserved.saturating_add(ENTRY_COST));
        removed.map_err(|e| StoreError::Io {
            op: "remove temporary file",
            source: e,
        })
    }

    pub(crate) fn ensure_open(&self) -> Result<(), StoreError> {
        match self.state {
            State::Open => Ok(()),
            State::Discarded | State::Done => Err(StoreError::Discarded),
        }
    }

    /// Checks `n` more bytes against `expected_len` and the quota, reserving what is needed:
    /// with a declared length, the next window (`quota::reserved_end`, and its blocks when
    /// preallocating) once the bytes pass the reserved end, or just the bytes when the window
    /// does not fit; without one, exactly the bytes. On the write path: one comparison per
    /// write, a reservation per window.
    fn account(&mut self, n: u64) -> Result<(), StoreError> {
        let new_size = self.size.saturating_add(n);
        if let Some(expected) = self.expected_len {
            if new_size > expected {
                let err = StoreError::LengthMismatch {
                    expected,
                    actual: new_size,
                };
                return Err(self.discard(err));
            }
        }
        if new_size > self.reserved {
            return self.extend(new_size);
        }
        Ok(())
    }

    /// Extends the reservation to cover `new_size` bytes (see [`Upload::account`]).
    #[cold]
    fn extend(&mut self, new_size: u64) -> Result<(), StoreError> {
        let wanted = match self.expected_len {
            Some(declared) => reserved_end(new_size, declared).max(new_size),
            None => new_size,
        };
        let usage = &self.shared.usage;
        let end = match usage.reserve(wanted - self.reserved) {
            Ok(()) => wanted,
            // The quota is nearly full: the bytes themselves may still fit.
            Err(_) if wanted > new_size => match usage.reserve(new_size - self.reserved) {
                Ok(()) => new_size,
                Err(e) => return Err(self.discard(e)),
            },
            Err(e) => return Err(self.discard(e)),
        };
        let from = self.reserved.max(self.size);
        self.reserved = end;
        if self.preallocating && end - from >= PREALLOCATE_MIN {
            return self.allocate(from, end);
        }
        Ok(())
    }

    /// Steps 1 to 4 of commit: everything that can fail before the file becomes visible.
    pub(crate) fn prepare(&mut self) -> Result<Digests, StoreError> {
        if let Some(expected) = self.expected_len {
            if self.size != expected {
                return Err(StoreError::LengthMismatch {
                    expected,
                    actual: self.size,
                });
            }
        }
        let on_disk = self
            .open_file()
            .and_then(|file| file.metadata())
            .map_err(|e| StoreError::from_io("stat", e))?
            .len();
        if on_disk != self.size {
            // Bytes written through `file_mut` but not recorded (or recorded but not written):
            // a bug in the caller, and the file is not what it thinks it is.
            return Err(StoreError::LengthMismatch {
                expected: self.size,
                actual: on_disk,
            });
        }
        let supplied = self.supplied.take().filter(|(size, _)| *size == self.size);
        let digests = match (self.hash.finish(self.size)?, supplied) {
            (Some(d), _) | (None, Some((_, d))) => d,
            (None, None) if self.want_sha256 || self.want_sha512 => self
                .read_back(Hashers::new(self.want_sha256, self.want_sha512))
                .map_err(|e| StoreError::from_io("read back for digest", e))?,
            (None, None) => Digests::default(),
        };
        if let Some(algorithm) = digests.mismatch(&self.expected_digest) {
            return Err(StoreError::DigestMismatch { algorithm });
        }
        let sync_fault = self.shared.faults.check(Op::SyncFile);
        let media_type = self.media_type;
        let file = self
            .open_file()
            .map_err(|e| StoreError::from_io("reopen temporary file", e))?;
        if let Some(sha256) = &digests.sha256 {
            sys::write_digest(file, sha256, media_type);
        }
        sync_fault
            .and_then(|()| file.sync_all())
            .map_err(|e| StoreError::from_io("fsync file", e))?;
        Ok(digests)
    }

    /// Hashes the file's bytes by reading them back (after external writes).
    fn read_back(&mut self, mut hashers: Hashers) -> io::Result<Digests> {
        let size = self.size;
        let file = self.open_file()?;
        // ALLOCATION: the one of the commit path, made only here ([`READ_BACK_BUF`]).
        let mut buf = vec![0u8; READ_BACK_BUF];
        read_from_start(file, size, &mut buf, |bytes| hashers.update(bytes))?;
        Ok(hashers.finish())
    }

    /// Hashers for the digests this upload's commit must produce (none: nothing to hash), for
    /// a caller that writes through [`Upload::file_mut`] bytes it can hash from where they came
    /// from, in order, and hands the digests to [`Upload::supply_digests`]: the multipart
    /// assembly hashes each part on a second thread while the first copies it.
    pub(crate) fn commit_hashers(&self) -> Hashers {
        Hashers::new(self.want_sha256, self.want_sha512)
    }

    /// The digests of the whole file's bytes, computed by the store's own code from the bytes
    /// it wrote externally ([`Upload::commit_hashers`]): commit uses them instead of reading
    /// the file back, if the file is still the size it was when they were supplied.
    pub(crate) fn supply_digests(&mut self, digests: Digests) {
        self.supplied = Some((self.size, digests));
    }

    /// The temporary file's metadata, as [`LocalStore::open_file`](crate::LocalStore) will
    /// report it once committed (unless [`Upload::mark_date`] changes its time).
    pub(crate) fn stored_meta(&mut self) -> Result<FileMeta, StoreError> {
        let file = self
            .open_file()
            .map_err(|e| StoreError::from_io("reopen temporary file", e))?;
        precondition::file_meta(file)
    }

    /// Gives the file the modification time a client names (WebDAV's `X-OC-Mtime`: rclone,
    /// ownCloud's and Nextcloud's clients) instead of the commit's: set on the temporary file
    /// under the commit lock, before the rename (visible with the bytes or not at all), as
    /// its whole second marked as a shared second (`version_date::client_time`: a weak date
    /// validator, since a client's time may go back).
    pub fn set_modified(&mut self, client: std::time::SystemTime) {
        self.client_modified = Some(client);
    }

    /// Gives the temporary file the modification time `marked` (see `version_date.rs`),
    /// re-recording its SHA-256 for it. Call with the commit lock held.
    pub(crate) fn mark_date(
        &mut self,
        marked: std::time::SystemTime,
        sha256: Option<&[u8; 32]>,
    ) -> Result<(), StoreError> {
        let media_type = self.media_type;
        let file = self
            .open_file()
            .map_err(|e| StoreError::from_io("reopen temporary file", e))?;
        version_date::apply(file, marked, sha256, media_type)
    }

    /// Ends the upload after a failed write (or reservation, or hash step), once; returns
    /// `err` for the caller to pass on. Its temporary file is removed and the reservation
    /// released, except an adopted file's (a resumable upload's data, [`Upload::adopt`]):
    /// that one stays, closed, with the charge it came with, for its owner to cut back to the
    /// offset it recorded (`Appending::discard`), so that a failed append never loses the
    /// bytes an upload had acknowledged.
    pub(crate) fn discard(&mut self, err: StoreError) -> StoreError {
        if self.state == State::Open {
            self.state = State::Discarded;
            match self.keep_on_drop {
                Some(adopted) => self.close_kept(adopted),
                None => self.remove_temp(),
            }
        }
        err
    }

    /// Ends the upload after a failed commit, once, removing its temporary file whatever it
    /// is: a commit that failed (a digest mismatch, the target refused) ends an adopted
    /// upload too.
    pub(crate) fn discard_file(&mut self, err: StoreError) -> StoreError {
        if self.state == State::Open {
            self.state = State::Discarded;
            self.remove_temp();
        }
        err
    }

    /// Whether a failed write ended the upload ([`Upload::discard`]).
    pub(crate) fn is_discarded(&self) -> bool {
        self.state == State::Discarded
    }

    /// Closes an adopted file that stays, giving back what was charged past the `adopted`
    /// bytes it came with (its owner charges what it keeps).
    fn close_kept(&mut self, adopted: u64) {
        self.file = None;
        self.shared
            .usage
            .release(self.reserved.saturating_sub(adopted));
    }

    /// Unlinks and closes the temporary, then gives its reservation back: in that order, so
    /// that the quota never counts as free the blocks of a file still on disk. If the unlink
    /// fails, the temporary is left for the next start-up cleanup: the error that matters to
    /// the caller is the one that got here.
    fn remove_temp(&mut self) {
        if self.in_place {
            // The range only: the file holds the other parts.
            let (base, len) = (self.base, self.size.max(self.reserved));
            if let Ok(file) = self.open_file() {
                sys::punch_hole(file, base, len);
            }
        } else {
            let _ = self.shared.staging.unlink(&self.temp);
        }
        self.file = None;
        self.shared
            .usage
            .release(self.reserved.saturating_add(ENTRY_COST));
    }

    /// Marks a committed upload done, and gives back what its file did not use of the
    /// reservation and what it replaced (`freed`).
    pub(crate) fn committed(&mut self, freed: u64) {
        self.state = State::Done;
        self.file = None;
        self.shared
            .usage
            .release(self.reserved.saturating_sub(self.size));
        self.shared.usage.release(freed);
    }

    /// Leaves the temporary where it is, for the next start to finish or remove (a multi-file
    /// commit that could not complete after recording its intent).
    pub(crate) fn leave_for_recovery(&mut self) {
        self.state = State::Done;
        self.file = None;
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.state == State::Open {
            if let Some(adopted) = self.keep_on_drop {
                self.close_kept(adopted);
                self.state = State::Done;
                return;
            }
            self.state = State::Done;
            self.remove_temp();
        }
    }
}

mod adopt;
mod begin;
mod in_place;
mod object_meta;
mod target;

pub(crate) use target::{check_target, file_modified, rename_over, target_of, target_stat};

#[cfg(test)]
mod new_dirs_tests;
#[cfg(test)]
mod tests;
