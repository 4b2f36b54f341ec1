//! Hashing an upload's bytes on another thread than the one that writes them, without giving
//! up the store's promise that a recorded digest is the digest of the bytes in the file.
//!
//! On one core, an upload's work is serial: receive a buffer, hash it (SHA-256, slower per byte
//! than the copies even with SHA-NI), write it to the page cache. With a second core, the hash of
//! one buffer can run while the writer receives and writes the next. The protocol, for a caller
//! with two buffers A and B:
//!
//! ```text
//! writer thread                                         hashing thread (caller's choice)
//! write_owned(A) → Written(A); hash_job(Written(A)) ──► HashJob(A).run()
//! receive B; write_owned(B) → Written(B)                    … hashing A …
//! attach(Hashed(A)) → A  ◄──────────────────────────────── Hashed(A)
//! hash_job(Written(B)) ──────────────────────────────────► HashJob(B).run()
//! receive into A; …
//! ```
//!
//! - [`Upload::write_owned`] writes the buffer to the file *now* and keeps it, owned, in a
//!   [`Written`]: from the write to the hash nobody can change those bytes, so the hash is of
//!   exactly the bytes written. No copy: the hasher reads the same buffer `write(2)` read.
//! - [`Upload::hash_job`] packs the next [`Written`] (in file order) with the upload's hash
//!   state into a [`HashJob`]: `Send + 'static`, to be run anywhere — a thread pool,
//!   `tokio::task::spawn_blocking`, or in place. Only one job per upload is out at a time (the
//!   hash state is sequential).
//! - [`HashJob::run`] hashes and gives a [`Hashed`]; [`Upload::attach`] takes the hash state
//!   back and returns the buffer. Or [`Hashed::chain`] goes straight on with the next
//!   [`Written`] of the same upload: a hashing thread that already holds it need not wait for
//!   the writer to attach and hand the state out again (the writer would only notice the job
//!   is done at its next pause, and the hashing thread would idle until then).
//!
//! Why this shape rather than the alternatives:
//! - *a public hasher the caller feeds*: the store could not know that what was fed is what was
//!   written; here the store itself hands the written bytes to the hasher;
//! - *a thread owned by the store*: the store stays synchronous and runtime-free; where the
//!   hashing runs (a dedicated pool, tokio's blocking pool, inline when cores are busy) is the
//!   caller's decision, which depends on its runtime and its load.
//!
//! What a misuse costs is the upload, never a wrong digest: while a job is out or written bytes
//! wait for their job, the upload takes no inline write and cannot commit; a job lost (dropped,
//! run for another upload, a thread that died) means the upload can never commit
//! ([`StoreError::HashOutOfOrder`]) and its temporary is removed when it is dropped. A job that
//! outlives its upload (the client went away while it ran) just finishes and drops its buffer.
//!
//! Tokens carry the id of their upload and the byte range they cover. Nothing here allocates
//! but the boxed hash state, once per upload.

use crate::digest::{Digests, Hashers};
use crate::error::StoreError;
use crate::sha256_state::ResumableSha256;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Ids of uploads, so that a token cannot be used with another upload.
static NEXT_UPLOAD: AtomicU64 = AtomicU64::new(1);

/// Bytes written to an upload's file by [`Upload::write_owned`](crate::Upload::write_owned),
/// not hashed yet. Hand it to [`Upload::hash_job`](crate::Upload::hash_job), in the order
/// written. Dropping it instead makes the upload fail to commit (when it computes a digest).
pub struct Written<B> {
    upload: u64,
    start: u64,
    end: u64,
    buf: B,
}

/// A buffer's bytes and the upload's hash state, to be hashed on any thread with
/// [`HashJob::run`]. Made by [`Upload::hash_job`](crate::Upload::hash_job).
///
/// The protocol: [`Upload::write_owned`](crate::Upload::write_owned) writes a buffer and keeps
/// it in a [`Written`]; [`Upload::hash_job`](crate::Upload::hash_job) sends the hash state out
/// with it (in file order, one job out at a time); [`HashJob::run`] hashes, anywhere;
/// [`Hashed::chain`] goes on with the next [`Written`], or
/// [`Upload::attach`](crate::Upload::attach) takes the state back and returns the buffer.
/// Meanwhile the writer goes on writing. A job lost or misused makes the commit fail
/// ([`StoreError::HashOutOfOrder`]), never the digest wrong.
///
/// ```
/// use weir_store::{LocalOptions, LocalStore, StorePath, UploadOptions};
///
/// # fn main() -> Result<(), weir_store::StoreError> {
/// # let dir = tempfile::tempdir().unwrap();
/// let store = LocalStore::open(dir.path(), LocalOptions::default())?;
/// let mut upload = store.begin(&StorePath::parse("f")?, UploadOptions::default())?;
/// let (a, b) = (vec![1u8; 4096], vec![2u8; 4096]);
/// let written_a = upload.write_owned(a, 4096)?;
/// let job = upload.hash_job(written_a)?;
/// let hashing = std::thread::spawn(move || job.run()); // hashes `a` on another thread...
/// let written_b = upload.write_owned(b, 100)?; // ...while `b` is written
/// let a = upload.attach(hashing.join().unwrap())?; // `a` is free again
/// let job = upload.hash_job(written_b)?;
/// let b = upload.attach(job.run())?; // or inline
/// let done = upload.commit()?;
/// assert_eq!(done.size, 4196);
/// assert!(done.sha256.is_some());
/// # let _ = (a, b);
/// # Ok(()) }
/// ```
pub struct HashJob<B> {
    upload: u64,
    end: u64,
    buf: B,
    len: usize,
    /// `None` when the upload computes no digest: running the job does nothing.
    hashers: Option<Box<Hashers>>,
    #[cfg(any(test, feature = "fault-injection"))]
    gate: Option<crate::fault::HashGate>,
}

/// A finished [`HashJob`]: give it back with [`Upload::attach`](crate::Upload::attach), which
/// returns the buffer, or go on hashing the next written bytes with [`Hashed::chain`].
pub struct Hashed<B> {
    upload: u64,
    end: u64,
    buf: B,
    hashers: Option<Box<Hashers>>,
    #[cfg(any(test, feature = "fault-injection"))]
    gate: Option<crate::fault::HashGate>,
}

impl<B: AsRef<[u8]>> HashJob<B> {
    /// Hashes the buffer's bytes. Takes as long as SHA-256 (and SHA-512, when a `sha-512`
    /// digest is expected) of one buffer: run it where blocking is fine.
    pub fn run(mut self) -> Hashed<B> {
        #[cfg(any(test, feature = "fault-injection"))]
        if let Some(gate) = &self.gate {
            gate.pass(self.end);
        }
        if let Some(h) = &mut self.hashers {
            // Reads the buffer in place: the bytes `write(2)` took, unchanged since (the job
            // has owned the buffer from the write on).
            h.update(&self.buf.as_ref()[..self.len]);
        }
        Hashed {
            upload: self.upload,
            end: self.end,
            buf: self.buf,
            hashers: self.hashers,
            #[cfg(any(test, feature = "fault-injection"))]
            gate: self.gate,
        }
    }
}

impl<B> Hashed<B> {
    /// Goes on with the next written bytes of the same upload without taking the hash state
    /// back to it: returns the job for `next` and this job's buffer. A hashing thread that
    /// already holds `next` can start on it at once, instead of waiting for the writer to
    /// attach this result and hand the state out again.
    ///
    /// `next` must be the upload's bytes that directly follow this job's; anything else is
    /// [`StoreError::HashOutOfOrder`], and the hash state is dropped with both (the upload can
    /// then never commit).
    pub fn chain(self, next: Written<B>) -> Result<(HashJob<B>, B), StoreError> {
        if next.upload != self.upload || next.start != self.end {
            return Err(StoreError::HashOutOfOrder);
        }
        let len = usize::try_from(next.end - next.start).map_err(|_| StoreError::HashOutOfOrder)?;
        let job = HashJob {
            upload: self.upload,
            end: next.end,
            buf: next.buf,
            len,
            hashers: self.hashers,
            #[cfg(any(test, feature = "fault-injection"))]
            gate: self.gate,
        };
        Ok((job, self.buf))
    }

    /// The buffer just hashed. Its bytes are in the hash state already, so the holder of a
    /// result that waits for the next bytes may release the buffer's memory meanwhile (a
    /// stalled upload then holds only the hash state); `chain` and `attach` return the buffer
    /// as it is left here.
    pub fn buffer_mut(&mut self) -> &mut B {
        &mut self.buf
    }

    /// The upload offset this result has hashed up to.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The SHA-256 state of exactly the upload's first [`Hashed::end`] bytes, for a resumable
    /// checkpoint of exactly those bytes ([`CheckpointJob::run_with`](crate::CheckpointJob::run_with)):
    /// a hashing thread hands it over as it passes the checkpoint's offset, and goes on. `None`
    /// when the upload computes no SHA-256, or SHA-512 too (which cannot be kept).
    pub fn mark(&self) -> Option<HashMark> {
        let sha256 = self.hashers.as_ref()?.sha256_alone()?.clone();
        Some(HashMark {
            upload: self.upload,
            end: self.end,
            sha256,
        })
    }
}

/// The SHA-256 state of exactly an upload's first `end` bytes, taken from its hashing
/// ([`Hashed::mark`]). Carries the upload's id and the offset, so that a checkpoint records it
/// only with exactly that upload and offset: a mark of other bytes is dropped, never recorded.
pub struct HashMark {
    upload: u64,
    end: u64,
    sha256: ResumableSha256,
}

impl HashMark {
    /// The state, if it is that of exactly the first `end` bytes of upload `upload`.
    pub(crate) fn of(self, upload: u64, end: u64) -> Option<ResumableSha256> {
        (self.upload == upload && self.end == end && self.sha256.len() == end)
            .then_some(self.sha256)
    }
}

impl fmt::Debug for HashMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashMark")
            .field("upload", &self.upload)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl<B> HashJob<B> {
    /// Bytes this job hashes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the job hashes no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<B> Written<B> {
    /// Bytes written.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether no bytes were written.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

impl<B> fmt::Debug for Written<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Written")
            .field("upload", &self.upload)
            .field("range", &(self.start..self.end))
            .finish_non_exhaustive()
    }
}

impl<B> fmt::Debug for HashJob<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashJob")
            .field("upload", &self.upload)
            .field("end", &self.end)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl<B> fmt::Debug for Hashed<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hashed")
            .field("upload", &self.upload)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

/// Where an upload's hash state is. The hashers (a few hundred bytes with SHA-512's state) are
/// boxed once per upload, so that jobs and results move as a few words.
#[derive(Debug)]
enum State {
    /// Here, having seen the first `hashed` bytes of the file.
    Here(Box<Hashers>),
    /// In a [`HashJob`] (and the jobs chained to it), which will have hashed at least up to
    /// `end`.
    Away { end: u64 },
    /// No digest is computed as bytes go by: none is wanted, or bytes bypassed the store
    /// (external writes) and commit reads the file back.
    Off,
}

/// An upload's hashing: the state, and how far it got. Every transition checks the upload id
/// and the byte offsets, so that the digest at commit covers exactly bytes `0..size`, in order.
#[derive(Debug)]
pub(crate) struct HashTrack {
    upload: u64,
    state: State,
    /// Bytes hashed, or handed to the job that is out: the file's `0..hashed` (jobs chained
    /// to it may take more; `attach` learns how far they got).
    hashed: u64,
    #[cfg(any(test, feature = "fault-injection"))]
    gate: Option<crate::fault::HashGate>,
}

impl HashTrack {
    /// Tracking for a new upload; `hashers` may compute nothing (then the track is off).
    pub(crate) fn new(
        hashers: Hashers,
        #[cfg(any(test, feature = "fault-injection"))] gate: Option<crate::fault::HashGate>,
    ) -> Self {
        HashTrack {
            upload: NEXT_UPLOAD.fetch_add(1, Ordering::Relaxed),
            state: if hashers.is_empty() {
                State::Off
            } else {
                // ALLOCATION: once per upload that computes a digest.
                State::Here(Box::new(hashers))
            },
            hashed: 0,
            #[cfg(any(test, feature = "fault-injection"))]
            gate,
        }
    }

    /// Tracking that starts after the file's first `hashed` bytes, which `hashers` has seen
    /// already (a resumable upload going on from its saved hash state).
    pub(crate) fn from(mut self, hashed: u64) -> Self {
        self.hashed = hashed;
        self
    }

    /// A copy of the SHA-256 state if it is here and has seen exactly the file's `0..size`
    /// (and SHA-256 is all the upload computes); `None` otherwise (a job is out, bytes wait
    /// for their job, or the track is off).
    pub(crate) fn sha256_at(&self, size: u64) -> Option<ResumableSha256> {
        match &self.state {
            State::Here(h) if self.hashed == size => h.sha256_alone().cloned(),
            _ => None,
        }
    }

    /// The upload's id, which its tokens and marks carry.
    pub(crate) fn id(&self) -> u64 {
        self.upload
    }

    /// Whether a digest is computed as bytes go by.
    pub(crate) fn is_on(&self) -> bool {
        !matches!(self.state, State::Off)
    }

    /// Hashes bytes about to be written inline at offset `size`. Fails if earlier bytes are
    /// still waiting for their job, or the state is away.
    pub(crate) fn inline(&mut self, size: u64, buf: &[u8]) -> Result<(), StoreError> {
        match &mut self.state {
            State::Off => Ok(()),
            State::Here(h) if self.hashed == size => {
                h.update(buf);
                self.hashed += buf.len() as u64;
                Ok(())
            }
            _ => Err(StoreError::HashOutOfOrder),
        }
    }

    /// The token for bytes `start..end`, just written from `buf`.
    pub(crate) fn written<B>(&self, buf: B, start: u64, end: u64) -> Written<B> {
        Written {
            upload: self.upload,
            start,
            end,
            buf,
        }
    }

    /// Sends the state out with the next written bytes. The `Written` is dropped on error (and
    /// its buffer with it).
    pub(crate) fn job<B>(&mut self, w: Written<B>) -> Result<HashJob<B>, StoreError> {
        if w.upload != self.upload || w.start != self.hashed {
            return Err(StoreError::HashOutOfOrder);
        }
        let len = usize::try_from(w.end - w.start).map_err(|_| StoreError::HashOutOfOrder)?;
        let hashers = match std::mem::replace(&mut self.state, State::Away { end: w.end }) {
            State::Here(h) => Some(h),
            State::Off => {
                self.state = State::Off;
                None
            }
            State::Away { .. } => return Err(StoreError::HashOutOfOrder),
        };
        self.hashed = w.end;
        Ok(HashJob {
            upload: self.upload,
            end: w.end,
            len,
            buf: w.buf,
            hashers,
            #[cfg(any(test, feature = "fault-injection"))]
            gate: self.gate.clone(),
        })
    }

    /// Takes the state back from a finished job and returns its buffer.
    pub(crate) fn attach<B>(&mut self, h: Hashed<B>) -> Result<B, StoreError> {
        if h.upload != self.upload {
            return Err(StoreError::HashOutOfOrder);
        }
        match (&self.state, h.hashers) {
            // Hashing was turned off while the job ran (an external write): nothing to keep.
            (State::Off, _) => Ok(h.buf),
            // `chain` checked that every byte from `end` to `h.end` was hashed in order.
            (State::Away { end }, Some(hashers)) if *end <= h.end => {
                self.state = State::Here(hashers);
                self.hashed = h.end;
                Ok(h.buf)
            }
            _ => Err(StoreError::HashOutOfOrder),
        }
    }

    /// Bytes bypassed the store: from now on commit reads the file back for any digest.
    pub(crate) fn external(&mut self) {
        self.state = State::Off;
    }

    /// The digests of the file's `0..size` at commit, or `None` when the track is off (commit
    /// then reads the file back if it needs a digest).
    pub(crate) fn finish(&mut self, size: u64) -> Result<Option<Digests>, StoreError> {
        match std::mem::replace(&mut self.state, State::Off) {
            State::Off => Ok(None),
            State::Here(h) if self.hashed == size => Ok(Some(h.finish())),
            _ => Err(StoreError::HashOutOfOrder),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::tests::header_for;
    use crate::testutil::{data, p, read, sha256, store, store_with, temps};
    use crate::{ContentDigest, HashGate, LocalOptions, LocalStore, Upload, UploadOptions};
    use std::sync::mpsc;
    use std::time::Duration;

    /// Uploads `body` the way the service does: two buffers, each hashed on a hasher thread
    /// while the other is filled and written. Returns the upload, ready to commit.
    fn pipelined(store: &LocalStore, path: &str, body: &[u8], opts: UploadOptions) -> Upload {
        const BUF: usize = 64 * 1024 + 3;
        let mut up = store.begin(&p(path), opts).unwrap();
        let (to_hasher, jobs) = mpsc::channel::<HashJob<Vec<u8>>>();
        let (to_writer, done) = mpsc::channel();
        let hasher = std::thread::spawn(move || {
            for job in jobs {
                to_writer.send(job.run()).unwrap();
            }
        });
        let mut spare = Some(vec![0u8; BUF]);
        let mut free = vec![0u8; BUF];
        let mut out = false;
        for chunk in body.chunks(BUF) {
            free[..chunk.len()].copy_from_slice(chunk);
            let written = up.write_owned(free, chunk.len()).unwrap();
            free = if out {
                up.attach(done.recv().unwrap()).unwrap()
            } else {
                spare.take().unwrap()
            };
            to_hasher.send(up.hash_job(written).unwrap()).unwrap();
            out = true;
        }
        if out {
            up.attach(done.recv().unwrap()).unwrap();
        }
        drop(to_hasher);
        hasher.join().unwrap();
        up
    }

    #[test]
    fn pipelined_hashing_is_byte_exact_with_an_odd_final_size() {
        let (_dir, store) = store();
        let body = data(3 * (64 * 1024 + 3) * 5 + 12_345, 1);
        let done = pipelined(&store, "a/f", &body, UploadOptions::default())
            .commit()
            .unwrap();
        assert_eq!(done.size, body.len() as u64);
        assert_eq!(done.sha256, Some(sha256(&body)));
        assert_eq!(read(&store, "a/f"), body);
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn pipelined_hashing_verifies_content_digest_both_ways() {
        let (_dir, store) = store();
        let body = data(1_000_000, 2);
        let header = header_for(&body, true, true);
        let opts = UploadOptions {
            expected_digest: Some(ContentDigest::parse(&header).unwrap()),
            ..UploadOptions::default()
        };
        assert!(
            pipelined(&store, "ok", &body, opts.clone())
                .commit()
                .is_ok()
        );
        let mut other = body.clone();
        other[999_999] ^= 1;
        let err = pipelined(&store, "bad", &other, opts).commit().unwrap_err();
        assert!(matches!(err, StoreError::DigestMismatch { .. }), "{err}");
        assert!(matches!(
            store.open_file(&p("bad")),
            Err(StoreError::NotFound)
        ));
        assert!(temps(store.root()).is_empty());
    }

    #[test]
    fn chained_jobs_hash_the_whole_body_on_one_thread() {
        let (_dir, store) = store();
        let body = data(10 * 4096 + 17, 3);
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        let mut pieces = body.chunks(4096).map(|c| {
            let w = up.write_owned(c.to_vec(), c.len());
            w.unwrap()
        });
        let first = pieces.next().unwrap();
        let rest: Vec<_> = pieces.collect();
        let job = up.hash_job(first).unwrap();
        let hashed = std::thread::spawn(move || {
            let mut done = job.run();
            let mut returned = 0;
            for w in rest {
                let (job, buf) = done.chain(w).unwrap();
                returned += buf.len();
                done = job.run();
            }
            assert_eq!(returned, 10 * 4096);
            done
        })
        .join()
        .unwrap();
        assert_eq!(hashed.end(), body.len() as u64);
        assert_eq!(up.attach(hashed).unwrap().len(), 17);
        assert_eq!(up.commit().unwrap().sha256, Some(sha256(&body)));
        assert_eq!(read(&store, "f"), body);
    }

    #[test]
    fn inline_and_pipelined_writes_mix_in_order() {
        let (_dir, store) = store();
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        up.write(b"inline, ").unwrap();
        let w = up.write_owned(b"owned, ".to_vec(), 7).unwrap();
        // Bytes written before their job: an inline write would hash out of order.
        let job = up.hash_job(w).unwrap();
        let buf = up.attach(job.run()).unwrap();
        assert_eq!(buf, b"owned, ");
        up.write(b"inline").unwrap();
        let done = up.commit().unwrap();
        assert_eq!(done.sha256, Some(sha256(b"inline, owned, inline")));
    }

    #[test]
    fn hashing_off_makes_jobs_no_ops() {
        let (_dir, store) = store();
        let opts = UploadOptions {
            hash: false,
            ..UploadOptions::default()
        };
        let mut up = store.begin(&p("f"), opts).unwrap();
        let w = up.write_owned(vec![7u8; 10], 10).unwrap();
        let job = up.hash_job(w).unwrap();
        up.attach(job.run()).unwrap();
        assert_eq!(up.commit().unwrap().sha256, None);
        assert_eq!(read(&store, "f"), [7u8; 10]);
    }

    #[test]
    fn an_external_write_while_a_job_is_out_falls_back_to_reading_back() {
        use std::io::Write;
        let (_dir, store) = store();
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        let w = up.write_owned(b"abc".to_vec(), 3).unwrap();
        let job = up.hash_job(w).unwrap();
        up.file_mut().write_all(b"def").unwrap();
        up.record_external_write(3).unwrap();
        up.attach(job.run()).unwrap();
        assert_eq!(up.commit().unwrap().sha256, Some(sha256(b"abcdef")));
    }

    /// Every way of losing or misusing a job: the upload never commits, its temporary goes.
    #[test]
    fn a_lost_or_misused_job_never_commits() {
        let (_dir, store) = store();
        let begin = |path: &str| store.begin(&p(path), UploadOptions::default()).unwrap();
        fn refused<T>(r: Result<T, StoreError>) -> bool {
            matches!(r, Err(StoreError::HashOutOfOrder))
        }

        // A Written dropped before its job.
        let mut up = begin("a");
        drop(up.write_owned(vec![1u8; 8], 8).unwrap());
        assert!(refused(up.commit()));

        // A job never attached back.
        let mut up = begin("b");
        let w = up.write_owned(vec![1u8; 8], 8).unwrap();
        let _lost = up.hash_job(w).unwrap();
        assert!(refused(up.commit()));

        // An inline write while a job is out, or before waiting bytes get theirs.
        let mut up = begin("c");
        let w = up.write_owned(vec![1u8; 8], 8).unwrap();
        assert!(refused(up.write(b"x")), "inline before the job");
        assert!(matches!(up.hash_job(w), Err(StoreError::Discarded)));

        // Jobs out of order, and a second job while one is out.
        let mut up = begin("d");
        let w1 = up.write_owned(vec![1u8; 8], 8).unwrap();
        let w2 = up.write_owned(vec![2u8; 8], 8).unwrap();
        assert!(refused(up.hash_job(w2)), "second before first");
        let mut up = begin("e");
        let w1b = up.write_owned(vec![1u8; 8], 8).unwrap();
        let w2b = up.write_owned(vec![2u8; 8], 8).unwrap();
        let job = up.hash_job(w1b).unwrap();
        assert!(refused(up.hash_job(w2b)), "two jobs out");
        drop(job);

        // A chain that skips or repeats bytes, or mixes uploads.
        let mut up = begin("h");
        let h1 = up.write_owned(vec![1u8; 8], 8).unwrap();
        let w2 = up.write_owned(vec![2u8; 8], 8).unwrap();
        let w3 = up.write_owned(vec![3u8; 8], 8).unwrap();
        let done = up.hash_job(h1).unwrap().run();
        assert!(refused(done.chain(w3)), "w2 skipped");
        drop(w2);
        assert!(
            refused(up.commit()),
            "the state went with the refused chain"
        );
        let mut one = begin("i");
        let mut two = begin("j");
        let w = one.write_owned(vec![1u8; 8], 8).unwrap();
        let foreign = two.write_owned(vec![1u8; 8], 8).unwrap();
        let done = one.hash_job(w).unwrap().run();
        assert!(refused(done.chain(foreign)), "another upload's bytes");
        drop((one, two));

        // Another upload's job or token.
        let mut one = begin("f");
        let mut two = begin("g");
        let w = one.write_owned(vec![1u8; 8], 8).unwrap();
        let foreign = two.write_owned(vec![1u8; 8], 8).unwrap();
        let job = one.hash_job(w).unwrap();
        assert!(refused(two.attach(job.run())), "attached to another upload");
        assert!(refused(one.hash_job(foreign)), "another upload's bytes");
        drop((w1, one, two));

        assert!(temps(store.root()).is_empty(), "every refusal discards");
        for path in ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"] {
            assert!(matches!(
                store.open_file(&p(path)),
                Err(StoreError::NotFound)
            ));
        }
        assert_eq!(store.usage(), 0);
    }

    #[test]
    fn a_job_outliving_its_upload_finishes_harmlessly() {
        let gate = HashGate::closed();
        let (_dir, store) = store_with(LocalOptions {
            hash_gate: Some(gate.clone()),
            ..LocalOptions::default()
        });
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        let w = up.write_owned(vec![9u8; 1000], 1000).unwrap();
        let job = up.hash_job(w).unwrap();
        let running = std::thread::spawn(move || job.run());
        assert_eq!(gate.wait_for_job(Duration::from_secs(60)), Some(vec![1000]));
        // The upload goes (a client disconnect) while its job is held at the gate.
        drop(up);
        assert!(temps(store.root()).is_empty());
        gate.open();
        let hashed = running.join().unwrap();
        assert_eq!(hashed.end, 1000);
        assert_eq!(store.usage(), 0);
    }

    #[test]
    fn quota_and_length_apply_to_owned_writes() {
        let (_dir, store) = store_with(LocalOptions {
            max_storage: Some(10 + crate::ENTRY_COST),
            ..LocalOptions::default()
        });
        let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
        let w = up.write_owned(vec![0u8; 8], 8).unwrap();
        let err = up.write_owned(vec![0u8; 8], 8).unwrap_err();
        assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
        assert!(matches!(up.hash_job(w), Err(StoreError::Discarded)));
        assert!(temps(store.root()).is_empty());
        assert_eq!(store.usage(), 0);
    }
}
