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
//! 5. under the store's commit lock, `lstat` the target (for `replaced` and the size it
//!    frees) and `rename` the temp over it: readers see the old file or the new one;
//! 6. `fsync` the directory: the rename itself is on disk when commit returns.
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
use crate::local::{Missing, Shared, create_temp, lstat};
use crate::path::StorePath;
use crate::sys;
use crate::writeback;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Arc;

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
    /// The body length, when known (`Content-Length`). Reserved against the quota at `begin`;
    /// writing more, or committing fewer, is [`StoreError::LengthMismatch`].
    pub expected_len: Option<u64>,
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions {
            hash: true,
            expected_digest: None,
            expected_len: None,
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
    shared: Arc<Shared>,
    path: StorePath,
    dir: PathBuf,
    temp: PathBuf,
    target: PathBuf,
    file: File,
    state: State,
    /// Bytes written (and, for external writes, recorded).
    size: u64,
    /// Bytes reserved against the quota; always `>= size` while open.
    reserved: u64,
    expected_len: Option<u64>,
    expected_digest: ContentDigest,
    /// Which digests commit must produce.
    want_sha256: bool,
    want_sha512: bool,
    /// Digests of everything written so far, while all bytes came through `write` or
    /// `write_owned`; off once an external write was recorded (commit then reads the file
    /// back). See `hash_job.rs`.
    hash: HashTrack,
    /// Writeback of `0..flushed` was requested (see `writeback.rs`).
    flushed: u64,
}

impl Upload {
    pub(crate) fn begin(
        shared: Arc<Shared>,
        path: &StorePath,
        options: UploadOptions,
    ) -> Result<Upload, StoreError> {
        let reserved = options.expected_len.unwrap_or(0);
        shared.usage.reserve(reserved)?;
        let prepared = (|| {
            let dir = shared.walk(path.parent_segments(), Missing::Create)?;
            let target = dir.join(path.file_name());
            // Refuse now what the rename would refuse (or silently do) at commit, before the
            // client sends its body.
            match lstat(&target)? {
                Some(m) if m.file_type().is_symlink() => return Err(StoreError::SymlinkRefused),
                Some(m) if m.is_dir() => return Err(StoreError::IsDirectory),
                _ => {}
            }
            let (temp, file) = create_temp(&dir)?;
            Ok((dir, target, temp, file))
        })();
        let (dir, target, temp, file) = match prepared {
            Ok(p) => p,
            Err(e) => {
                shared.usage.release(reserved);
                return Err(e);
            }
        };
        let expected_digest = options.expected_digest.unwrap_or_default();
        let want_sha256 = options.hash || expected_digest.sha256.is_some();
        let want_sha512 = expected_digest.sha512.is_some();
        let hashers = Hashers::new(want_sha256, want_sha512);
        #[cfg(any(test, feature = "fault-injection"))]
        let hash = HashTrack::new(hashers, shared.faults.gate());
        #[cfg(not(any(test, feature = "fault-injection")))]
        let hash = HashTrack::new(hashers);
        Ok(Upload {
            shared,
            path: path.clone(),
            dir,
            temp,
            target,
            file,
            state: State::Open,
            size: 0,
            reserved,
            expected_len: options.expected_len,
            expected_digest,
            want_sha256,
            want_sha512,
            hash,
            flushed: 0,
        })
    }

    /// The path this upload will be committed to.
    pub fn path(&self) -> &StorePath {
        &self.path
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
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

    /// Asks the store's writeback thread to start on what was written since the last request,
    /// every `early_writeback` bytes (`writeback.rs`). No system call here but a `dup` per
    /// request (one per 16 MiB by default).
    fn write_back_early(&mut self) {
        let Some(every) = self.shared.early_writeback else {
            return;
        };
        if let Some((offset, len)) = writeback::next_range(self.flushed, self.size, every) {
            if self.shared.flusher.request(&self.file, offset, len) {
                self.flushed = offset + len;
            }
        }
    }

    /// `write_all` to the temporary file (behind the write fault hook); an error discards.
    fn write_file(&mut self, buf: &[u8]) -> Result<(), StoreError> {
        let written = self
            .shared
            .faults
            .check(Op::Write)
            .and_then(|()| self.file.write_all(buf));
        written.map_err(|e| self.discard(StoreError::from_io("write", e)))
    }

    /// The temporary file, for writes that bypass [`Upload::write`]: `splice(2)` from a socket,
    /// `copy_file_range(2)`, a `write_vectored`. Write sequentially at the file's current
    /// position, then report every byte with [`Upload::record_external_write`].
    ///
    /// Meant for uploads begun with `hash: false`. With hashing on it still works, but commit
    /// then reads the whole file back to hash it.
    pub fn file_mut(&mut self) -> &mut File {
        &mut self.file
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
    pub fn commit(mut self) -> Result<Committed, StoreError> {
        self.ensure_open()?;
        let digests = match self.prepare() {
            Ok(d) => d,
            Err(e) => return Err(self.discard(e)),
        };
        let (replaced, freed) = match self.rename_into_place() {
            Ok(r) => r,
            Err(e) => return Err(self.discard(e)),
        };
        self.state = State::Done;
        // The reservation becomes the file's share of the usage; what it replaced is freed.
        self.shared
            .usage
            .release(self.reserved.saturating_sub(self.size));
        self.shared.usage.release(freed);
        sys::sync_dir(&self.dir).map_err(|e| StoreError::from_io("sync directory", e))?;
        Ok(Committed {
            size: self.size,
            sha256: digests.sha256,
            replaced,
        })
    }

    /// Removes the temporary file. Dropping the upload does the same, ignoring errors.
    pub fn abort(mut self) -> Result<(), StoreError> {
        if self.state != State::Open {
            return Ok(());
        }
        self.state = State::Done;
        self.shared.usage.release(self.reserved);
        fs::remove_file(&self.temp).map_err(|e| StoreError::Io {
            op: "remove temporary file",
            source: e,
        })
    }

    fn ensure_open(&self) -> Result<(), StoreError> {
        match self.state {
            State::Open => Ok(()),
            State::Discarded | State::Done => Err(StoreError::Discarded),
        }
    }

    /// Checks `n` more bytes against `expected_len` and the quota, reserving what is needed.
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
            if let Err(e) = self.shared.usage.reserve(new_size - self.reserved) {
                return Err(self.discard(e));
            }
            self.reserved = new_size;
        }
        Ok(())
    }

    /// Steps 1 to 4 of commit: everything that can fail before the file becomes visible.
    fn prepare(&mut self) -> Result<Digests, StoreError> {
        if let Some(expected) = self.expected_len {
            if self.size != expected {
                return Err(StoreError::LengthMismatch {
                    expected,
                    actual: self.size,
                });
            }
        }
        let on_disk = self
            .file
            .metadata()
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
        let digests = match self.hash.finish(self.size)? {
            Some(d) => d,
            None if self.want_sha256 || self.want_sha512 => self
                .read_back(Hashers::new(self.want_sha256, self.want_sha512))
                .map_err(|e| StoreError::from_io("read back for digest", e))?,
            None => Digests::default(),
        };
        if let Some(algorithm) = digests.mismatch(&self.expected_digest) {
            return Err(StoreError::DigestMismatch { algorithm });
        }
        if let Some(sha256) = &digests.sha256 {
            sys::write_digest(&self.file, sha256);
        }
        self.shared
            .faults
            .check(Op::SyncFile)
            .and_then(|()| self.file.sync_all())
            .map_err(|e| StoreError::from_io("fsync file", e))?;
        Ok(digests)
    }

    /// Hashes the file's bytes by reading them back (after external writes).
    fn read_back(&mut self, mut hashers: Hashers) -> io::Result<Digests> {
        self.file.seek(SeekFrom::Start(0))?;
        // The one allocation of the commit path, made only here: 256 KiB, the write size that
        // measured best on this kind of machine, too big for a task's stack.
        let mut buf = vec![0u8; 256 * 1024];
        let mut left = self.size;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = self.file.read(&mut buf[..want])?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            hashers.update(&buf[..n]);
            left -= n as u64;
        }
        Ok(hashers.finish())
    }

    /// Step 5 of commit. Returns whether a file was replaced, and its size.
    fn rename_into_place(&self) -> Result<(bool, u64), StoreError> {
        let _guard = self.shared.lock_commits();
        let (replaced, freed) = match lstat(&self.target)? {
            None => (false, 0),
            // Placed after `begin` checked: never write through (or over) a link.
            Some(m) if m.file_type().is_symlink() => return Err(StoreError::SymlinkRefused),
            Some(m) if m.is_dir() => return Err(StoreError::IsDirectory),
            Some(m) => (true, if m.is_file() { m.len() } else { 0 }),
        };
        fs::rename(&self.temp, &self.target)
            .map_err(|e| StoreError::from_io("rename into place", e))?;
        Ok((replaced, freed))
    }

    /// Removes the temporary file and releases the reservation, once; returns `err` for the
    /// caller to pass on.
    fn discard(&mut self, err: StoreError) -> StoreError {
        if self.state == State::Open {
            self.state = State::Discarded;
            self.shared.usage.release(self.reserved);
            // If this fails too, the temp is left for the next start-up cleanup: the error
            // that matters to the caller is the first one.
            let _ = fs::remove_file(&self.temp);
        }
        err
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.state == State::Open {
            self.state = State::Done;
            self.shared.usage.release(self.reserved);
            let _ = fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::tests::header_for;
    use crate::testutil::{p, read, sha256, store, store_with, temps};
    use crate::{DigestAlgorithm, Fault, FaultOp, LocalOptions, LocalStore};

    /// Deterministic, non-repeating-looking test data.
    fn data(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
            .collect()
    }

    fn put(store: &LocalStore, path: &str, body: &[u8]) -> Committed {
        let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
        up.write(body).unwrap();
        up.commit().unwrap()
    }

    fn expecting(header: &str) -> UploadOptions {
        UploadOptions {
            expected_digest: Some(ContentDigest::parse(header).unwrap()),
            ..UploadOptions::default()
        }
    }

    #[test]
    fn commit_then_read_back_byte_exact() {
        let (_dir, store) = store();
        let body = data(1_000_003, 7);
        let mut up = store
            .begin(&p("a/b/c.bin"), UploadOptions::default())
            .unwrap();
        // Uneven chunks, including an empty one.
        for chunk in body.chunks(65_537).chain([&[][..]]) {
            up.write(chunk).unwrap();
        }
        assert_eq!(up.size(), body.len() as u64);
        assert_eq!(
            temps(store.root()).len(),
            1,
            "in progress: one temp, next to the target"
        );
        assert!(matches!(
            store.open_file(&p("a/b/c.bin")),
            Err(StoreError::NotFound)
        ));
        let done = up.commit().unwrap();
        assert_eq!(
            done,
            Committed {
                size: body.len() as u64,
                sha256: Some(sha256(&body)),
                replaced: false
            }
        );
        assert_eq!(read(&store, "a/b/c.bin"), body);
        assert!(temps(store.root()).is_empty());
        assert_eq!(store.usage(), body.len() as u64);
        let (_, meta) = store.open_file(&p("a/b/c.bin")).unwrap();
        if let Some(stored) = meta.sha256 {
            assert_eq!(stored, sha256(&body));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn digest_is_stored_with_the_file_and_dropped_when_it_changes() {
        let (_dir, store) = store();
        put(&store, "f", b"hello world");
        let (_, meta) = store.open_file(&p("f")).unwrap();
        let Some(stored) = meta.sha256 else {
            eprintln!("skipped: the test directory's filesystem keeps no user xattrs");
            return;
        };
        assert_eq!(stored, sha256(b"hello world"));
        // Changed behind the store's back: the digest is no longer reported.
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(store.root().join("f"))
            .unwrap();
        f.write_all(b"!").unwrap();
        drop(f);
        assert_eq!(store.open_file(&p("f")).unwrap().1.sha256, None);
    }

    #[test]
    fn large_uploads_are_written_back_early_and_stay_byte_exact() {
        let (_dir, store) = store_with(LocalOptions {
            early_writeback: Some(4 << 20),
            ..LocalOptions::default()
        });
        let body = data(13 << 20, 9);
        let mut up = store.begin(&p("big"), UploadOptions::default()).unwrap();
        for chunk in body.chunks(300_001) {
            up.write(chunk).unwrap();
        }
        // Ranges up to 1 MiB behind the writer, every 4 MiB: 0..4, 4..8, then 8..12 MiB.
        let queued = if crate::sys::EARLY_WRITEBACK { 3 } else { 0 };
        assert_eq!(store.shared().flusher.queued(), queued);
        assert_eq!(up.commit().unwrap().sha256, Some(sha256(&body)));
        assert_eq!(read(&store, "big"), body);
        // Off: nothing requested.
        let (_dir, store) = store_with(LocalOptions {
            early_writeback: None,
            ..LocalOptions::default()
        });
        put(&store, "big", &body);
        assert_eq!(store.shared().flusher.queued(), 0);
    }

    #[test]
    fn empty_upload_commits_an_empty_file() {
        let (_dir, store) = store();
        let up = store.begin(&p("empty"), UploadOptions::default()).unwrap();
        let done = up.commit().unwrap();
        assert_eq!(done.size, 0);
        assert_eq!(done.sha256, Some(sha256(b"")));
        assert_eq!(read(&store, "empty"), b"");
    }

    #[test]
    fn replace_reports_replaced_and_frees_the_old_size() {
        let (_dir, store) = store();
        assert!(!put(&store, "f", &data(1000, 1)).replaced);
        let done = put(&store, "f", &data(300, 2));
        assert!(done.replaced);
        assert_eq!(read(&store, "f"), data(300, 2));
        assert_eq!(store.usage(), 300);
    }

    #[test]
    fn an_open_reader_keeps_the_version_it_opened() {
        use std::io::Read;
        let (_dir, store) = store();
        put(&store, "f", b"old content");
        let (mut old, _) = store.open_file(&p("f")).unwrap();
        put(&store, "f", b"new");
        let mut buf = Vec::new();
        old.read_to_end(&mut buf).unwrap();
        assert_eq!(buf, b"old content");
        assert_eq!(read(&store, "f"), b"new");
    }

    #[test]
    fn abort_and_drop_leave_no_temp_and_no_target() {
        let (_dir, store) = store();
        let mut up = store
            .begin(&p("d/aborted"), UploadOptions::default())
            .unwrap();
        up.write(b"partial").unwrap();
        up.abort().unwrap();
        let mut up = store
            .begin(&p("d/dropped"), UploadOptions::default())
            .unwrap();
        up.write(b"partial").unwrap();
        drop(up);
        assert!(temps(store.root()).is_empty());
        for path in ["d/aborted", "d/dropped"] {
            assert!(matches!(
                store.open_file(&p(path)),
                Err(StoreError::NotFound)
            ));
        }
        assert_eq!(store.usage(), 0);
    }

    #[test]
    fn abort_and_drop_leave_an_existing_file_untouched() {
        let (_dir, store) = store();
        put(&store, "f", b"keep me");
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"replacement").unwrap();
        drop(up);
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"replacement").unwrap();
        up.abort().unwrap();
        assert_eq!(read(&store, "f"), b"keep me");
        assert_eq!(store.usage(), 7);
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn digest_match_with_sha256_and_sha512() {
        let (_dir, store) = store();
        let body = data(100_000, 3);
        for (s256, s512) in [(true, false), (false, true), (true, true)] {
            let opts = expecting(&header_for(&body, s256, s512));
            let mut up = store.begin(&p("f"), opts).unwrap();
            up.write(&body).unwrap();
            let done = up.commit().unwrap();
            assert_eq!(done.sha256, Some(sha256(&body)));
        }
        assert_eq!(read(&store, "f"), body);
    }

    #[test]
    fn digest_mismatch_stores_nothing_and_keeps_the_existing_file() {
        let (_dir, store) = store();
        put(&store, "f", b"original");
        let body = b"the body";
        let other = b"the bodY";
        for (s256, s512, algorithm) in [
            (true, false, DigestAlgorithm::Sha256),
            (false, true, DigestAlgorithm::Sha512),
            (true, true, DigestAlgorithm::Sha256),
        ] {
            for path in ["f", "new"] {
                let mut up = store.begin(&p(path), expecting(&header_for(other, s256, s512)));
                let up_ref = up.as_mut().unwrap();
                up_ref.write(body).unwrap();
                let err = up.unwrap().commit().unwrap_err();
                assert!(
                    matches!(err, StoreError::DigestMismatch { algorithm: a } if a == algorithm),
                    "{err}"
                );
            }
        }
        assert_eq!(read(&store, "f"), b"original");
        assert!(matches!(
            store.open_file(&p("new")),
            Err(StoreError::NotFound)
        ));
        assert!(temps(store.root()).is_empty());
        assert_eq!(store.usage(), 8);
    }

    #[test]
    fn sha512_only_mismatch_is_caught_even_when_sha256_matches() {
        let (_dir, store) = store();
        let body = b"payload";
        let mut d = ContentDigest::parse(&header_for(body, true, true)).unwrap();
        d.sha512.as_mut().unwrap()[0] ^= 1;
        let opts = UploadOptions {
            expected_digest: Some(d),
            ..UploadOptions::default()
        };
        let mut up = store.begin(&p("f"), opts).unwrap();
        up.write(body).unwrap();
        let err = up.commit().unwrap_err();
        assert!(matches!(
            err,
            StoreError::DigestMismatch {
                algorithm: DigestAlgorithm::Sha512
            }
        ));
    }

    /// The zero-copy path: bytes go into `file_mut()` (as `splice` would) and are reported.
    fn put_external(
        store: &LocalStore,
        path: &str,
        body: &[u8],
        opts: UploadOptions,
    ) -> Result<Committed, StoreError> {
        let mut up = store.begin(&p(path), opts)?;
        for chunk in body.chunks(40_000) {
            up.file_mut().write_all(chunk).unwrap();
            up.record_external_write(chunk.len() as u64)?;
        }
        up.commit()
    }

    #[test]
    fn hash_off_with_external_writes_gives_the_right_size() {
        let (_dir, store) = store();
        let body = data(300_001, 4);
        let opts = UploadOptions {
            hash: false,
            ..UploadOptions::default()
        };
        let done = put_external(&store, "x/f", &body, opts).unwrap();
        assert_eq!(
            done,
            Committed {
                size: 300_001,
                sha256: None,
                replaced: false
            }
        );
        assert_eq!(read(&store, "x/f"), body);
        assert_eq!(store.usage(), 300_001);
        assert_eq!(store.open_file(&p("x/f")).unwrap().1.sha256, None);
    }

    #[test]
    fn hash_off_with_plain_writes_reports_no_digest() {
        let (_dir, store) = store();
        let mut up = store
            .begin(
                &p("f"),
                UploadOptions {
                    hash: false,
                    ..Default::default()
                },
            )
            .unwrap();
        up.write(b"abc").unwrap();
        assert_eq!(up.commit().unwrap().sha256, None);
    }

    #[test]
    fn external_writes_are_verified_by_reading_back() {
        let (_dir, store) = store();
        let body = data(600_000, 5);
        // Hashing on: the digest is still right, computed at commit.
        let done = put_external(&store, "a", &body, UploadOptions::default()).unwrap();
        assert_eq!(done.sha256, Some(sha256(&body)));
        // Hashing off but a digest expected: verified, both ways.
        let opts = UploadOptions {
            hash: false,
            ..expecting(&header_for(&body, true, true))
        };
        assert!(put_external(&store, "b", &body, opts.clone()).is_ok());
        let err = put_external(&store, "c", &data(600_000, 6), opts).unwrap_err();
        assert!(matches!(err, StoreError::DigestMismatch { .. }));
        assert!(matches!(
            store.open_file(&p("c")),
            Err(StoreError::NotFound)
        ));
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn mixed_writes_are_hashed_whole() {
        let (_dir, store) = store();
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"inline ").unwrap();
        up.file_mut().write_all(b"external ").unwrap();
        up.record_external_write(9).unwrap();
        up.write(b"inline").unwrap();
        let done = up.commit().unwrap();
        assert_eq!(done.sha256, Some(sha256(b"inline external inline")));
        assert_eq!(read(&store, "f"), b"inline external inline");
    }

    #[test]
    fn unrecorded_external_writes_are_caught() {
        let (_dir, store) = store();
        let opts = UploadOptions {
            hash: false,
            ..UploadOptions::default()
        };
        let mut up = store.begin(&p("f"), opts.clone()).unwrap();
        up.file_mut().write_all(b"unreported").unwrap();
        let err = up.commit().unwrap_err();
        assert!(matches!(
            err,
            StoreError::LengthMismatch {
                expected: 0,
                actual: 10
            }
        ));
        let mut up = store.begin(&p("f"), opts).unwrap();
        up.record_external_write(5).unwrap();
        assert!(matches!(
            up.commit(),
            Err(StoreError::LengthMismatch { .. })
        ));
        assert!(matches!(
            store.open_file(&p("f")),
            Err(StoreError::NotFound)
        ));
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn expected_len_is_enforced() {
        let (_dir, store) = store();
        let opts = UploadOptions {
            expected_len: Some(10),
            ..UploadOptions::default()
        };
        // Short: the body ended early; never committed as complete.
        let mut up = store.begin(&p("f"), opts.clone()).unwrap();
        up.write(b"12345").unwrap();
        let err = up.commit().unwrap_err();
        assert!(matches!(
            err,
            StoreError::LengthMismatch {
                expected: 10,
                actual: 5
            }
        ));
        // Long: refused at the write that goes past it, and the upload is discarded.
        let mut up = store.begin(&p("f"), opts.clone()).unwrap();
        up.write(b"1234567").unwrap();
        let err = up.write(b"89AB").unwrap_err();
        assert!(matches!(
            err,
            StoreError::LengthMismatch {
                expected: 10,
                actual: 11
            }
        ));
        assert!(temps(store.root()).is_empty());
        assert!(matches!(up.write(b"x"), Err(StoreError::Discarded)));
        assert!(matches!(up.commit(), Err(StoreError::Discarded)));
        // Exact: fine.
        let mut up = store.begin(&p("f"), opts).unwrap();
        up.write(b"1234567890").unwrap();
        assert_eq!(up.commit().unwrap().size, 10);
        assert_eq!(store.usage(), 10);
    }

    #[test]
    fn quota_is_enforced_on_writes_and_restored_on_failure() {
        let (_dir, store) = store_with(LocalOptions {
            max_storage: Some(100),
            ..Default::default()
        });
        put(&store, "a", &[1; 60]);
        let mut up = store.begin(&p("b"), UploadOptions::default()).unwrap();
        up.write(&[2; 30]).unwrap();
        let err = up.write(&[2; 20]).unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::QuotaExceeded {
                    limit: 100,
                    used: 90,
                    requested: 20
                }
            ),
            "{err}"
        );
        assert!(temps(store.root()).is_empty(), "temp removed at once");
        drop(up);
        assert_eq!(store.usage(), 60);
        assert!(matches!(
            store.open_file(&p("b")),
            Err(StoreError::NotFound)
        ));
        assert_eq!(read(&store, "a"), [1; 60]);
        // What is left still fits, exactly.
        put(&store, "b", &[3; 40]);
        assert_eq!(store.usage(), 100);
    }

    #[test]
    fn quota_checks_expected_len_up_front() {
        let (_dir, store) = store_with(LocalOptions {
            max_storage: Some(100),
            ..Default::default()
        });
        put(&store, "a", &[1; 60]);
        let opts = |n| UploadOptions {
            expected_len: Some(n),
            ..UploadOptions::default()
        };
        let err = store.begin(&p("big"), opts(41)).unwrap_err();
        assert!(matches!(
            err,
            StoreError::QuotaExceeded { requested: 41, .. }
        ));
        assert!(temps(store.root()).is_empty());
        // A reservation counts while the upload runs, so a second upload cannot take it.
        let mut first = store.begin(&p("b"), opts(40)).unwrap();
        assert_eq!(store.usage(), 100);
        let mut second = store.begin(&p("c"), UploadOptions::default()).unwrap();
        assert!(matches!(
            second.write(b"x"),
            Err(StoreError::QuotaExceeded { .. })
        ));
        first.write(&[2; 40]).unwrap();
        first.commit().unwrap();
        assert_eq!(store.usage(), 100);
        // A dropped reservation is given back.
        store.delete(&p("b")).unwrap();
        drop(store.begin(&p("d"), opts(40)).unwrap());
        assert_eq!(store.usage(), 60);
    }

    #[test]
    fn quota_counts_replacements_and_deletes() {
        let (_dir, store) = store_with(LocalOptions {
            max_storage: Some(100),
            ..Default::default()
        });
        put(&store, "a", &[1; 70]);
        // Replacing needs room for both until the rename (the disk holds both too)...
        let mut up = store.begin(&p("a"), UploadOptions::default()).unwrap();
        assert!(matches!(
            up.write(&[2; 31]),
            Err(StoreError::QuotaExceeded { .. })
        ));
        // ...and frees the old size after it.
        put(&store, "a", &[2; 30]);
        assert_eq!(store.usage(), 30);
        store.delete(&p("a")).unwrap();
        assert_eq!(store.usage(), 0);
        put(&store, "b", &[3; 100]);
    }

    #[test]
    fn quota_covers_external_writes() {
        let (_dir, store) = store_with(LocalOptions {
            max_storage: Some(50),
            ..Default::default()
        });
        let opts = UploadOptions {
            hash: false,
            ..UploadOptions::default()
        };
        let err = put_external(&store, "f", &[0; 51], opts).unwrap_err();
        assert!(matches!(err, StoreError::QuotaExceeded { .. }));
        assert!(temps(store.root()).is_empty());
        assert_eq!(store.usage(), 0);
    }

    fn faulty(op: FaultOp, nth: u64, raw_os_error: i32) -> (tempfile::TempDir, LocalStore) {
        store_with(LocalOptions {
            fault: Some(Fault {
                op,
                nth,
                raw_os_error,
            }),
            ..Default::default()
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn injected_enospc_on_write_is_no_space_and_cleans_up() {
        use rustix::io::Errno;
        // Writes 1 and 2 make the existing file; the 5th write fails.
        let (_dir, store) = faulty(FaultOp::Write, 5, Errno::NOSPC.raw_os_error());
        put(&store, "f", b"existing ");
        put(&store, "g", b"other");
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"one").unwrap();
        up.write(b"two").unwrap();
        let err = up.write(b"three").unwrap_err();
        assert!(matches!(err, StoreError::NoSpace), "{err}");
        assert!(
            temps(store.root()).is_empty(),
            "temp removed at the error, not at drop"
        );
        assert!(matches!(up.write(b"more"), Err(StoreError::Discarded)));
        assert!(matches!(up.commit(), Err(StoreError::Discarded)));
        assert_eq!(read(&store, "f"), b"existing ");
        assert_eq!(store.usage(), 14);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn injected_edquot_on_fsync_is_no_space_and_cleans_up() {
        use rustix::io::Errno;
        let (_dir, store) = faulty(FaultOp::SyncFile, 2, Errno::DQUOT.raw_os_error());
        put(&store, "f", b"existing");
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"replacement").unwrap();
        assert!(matches!(up.commit(), Err(StoreError::NoSpace)));
        assert!(temps(store.root()).is_empty());
        assert_eq!(read(&store, "f"), b"existing");
        assert_eq!(store.usage(), 8);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn injected_eio_on_fsync_is_an_io_error() {
        use rustix::io::Errno;
        let (_dir, store) = faulty(FaultOp::SyncFile, 1, Errno::IO.raw_os_error());
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"data").unwrap();
        let err = up.commit().unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::Io {
                    op: "fsync file",
                    ..
                }
            ),
            "{err}"
        );
        assert!(matches!(
            store.open_file(&p("f")),
            Err(StoreError::NotFound)
        ));
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn abort_with_classifies_external_write_errors() {
        let (_dir, store) = store();
        let up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        let err = up.abort_with(io::ErrorKind::StorageFull.into());
        assert!(matches!(err, StoreError::NoSpace));
        let up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        let err = up.abort_with(io::ErrorKind::ConnectionReset.into());
        assert!(matches!(err, StoreError::Io { .. }));
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn concurrent_uploads_to_one_path_each_land_whole() {
        use std::io::Read;
        const WRITERS: u8 = 4;
        const ROUNDS: usize = 5;
        const LEN: usize = 96 * 1024;
        let (_dir, store) = store();
        let body =
            |writer: u8, round: usize| vec![writer * 16 + round as u8; LEN + writer as usize];
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            // A reader that must never see a mix of two uploads.
            let reader = s.spawn(|| {
                let mut seen = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok((mut f, meta)) = store.open_file(&p("shared/f")) else {
                        continue;
                    };
                    let mut buf = Vec::new();
                    f.read_to_end(&mut buf).unwrap();
                    assert_eq!(buf.len() as u64, meta.size);
                    assert!(buf.iter().all(|&b| b == buf[0]), "a mix of two uploads");
                    assert_eq!(buf.len(), LEN + (buf[0] / 16) as usize);
                    seen += 1;
                }
                seen
            });
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let store = store.clone();
                    s.spawn(move || {
                        for round in 0..ROUNDS {
                            let body = body(w, round);
                            let mut up = store
                                .begin(&p("shared/f"), UploadOptions::default())
                                .unwrap();
                            for chunk in body.chunks(8 * 1024) {
                                up.write(chunk).unwrap();
                            }
                            up.commit().unwrap();
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            reader.join().unwrap();
        });
        let last = read(&store, "shared/f");
        let candidates: Vec<_> = (0..WRITERS)
            .flat_map(|w| (0..ROUNDS).map(move |r| body(w, r)))
            .collect();
        assert_eq!(candidates.iter().filter(|c| **c == last).count(), 1);
        assert!(temps(store.root()).is_empty());
        assert_eq!(
            store.usage(),
            last.len() as u64,
            "usage exact despite the races"
        );
    }

    #[test]
    fn upload_and_store_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<LocalStore>();
        send::<Upload>();
    }
}
