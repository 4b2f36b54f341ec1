//! The durable state of resumable uploads (draft-ietf-httpbis-resumable-upload): partial data
//! that outlives its requests, its connection and the server process, and becomes a stored
//! file exactly like an [`Upload`] when the client says it is complete.
//!
//! Layout, in the staging area (`ROOT/.weir-staging/resumable/`, never listed, served or
//! addressable: no [`StorePath`] can name a `.weir-` entry):
//! - `<id>.data`: the bytes received so far, in order, without gaps;
//! - `<id>.meta`: a small text record (target path, declared length, acknowledged offset,
//!   creation time, digests to verify, completeness, the SHA-256 state of exactly the
//!   acknowledged offset when there is one), replaced atomically (write a temporary, `fsync`,
//!   `rename`, `fsync` the directory).
//!
//! `<id>` is 128 random bits (from `/dev/urandom`) in hex: unguessable.
//!
//! # The offset invariant
//! The offset reported to clients is the `offset` of the meta record, and the meta records an
//! offset only after `fdatasync` of the data up to it ([`CheckpointJob`]). So a
//! reported offset never covers bytes that are not durably in the data file: not after a
//! `SIGKILL`, not after a power loss. At open, every data file is cut back to its recorded
//! offset (bytes past it were never acknowledged) and the usage counted from what is left.
//! The recorded offset never decreases.
//!
//! # Checkpoints beside the writes
//! A checkpoint inside a request is a [`CheckpointJob`] ([`Appending::begin_checkpoint`]): it
//! takes the offset N = the upload's size when it is made (every byte up to N already went
//! through `write(2)`), and runs on another thread while the writer goes on: `fdatasync` of
//! the data file (which covers at least N bytes), then the record with N and the SHA-256
//! state of exactly N bytes. At most one is out per append; [`Appending::finish`], `discard`
//! and the drop wait for it before they write, so one record writer at a time, and the end's
//! record (past N) is the last.
//!
//! # One writer
//! At most one [`Appending`] per upload at a time (an in-memory set of busy ids); a second
//! gets [`ResumableError::Busy`]. Dropping an `Appending` frees the upload. Its [`Upload`]
//! keeps its data file when dropped; bytes past the last checkpoint are cut off by the next
//! append (the caller checkpoints what a cut request delivered with [`Appending::finish`]).
//!
//! # A failed append
//! A write that fails (no space, `--max-storage`, a hash step out of order) ends the append,
//! not the upload: the [`Upload`] keeps its adopted file, and [`Appending::finish`] cuts it
//! back to the last recorded offset ([`Appending::discard`], tus's checksum mismatch's path
//! too) and gives back what the append had reserved. The offset reported is then exactly the
//! bytes in the data file, and an append from it continues the upload once there is room.
//! Only a failed completion (a digest mismatch, the target refused) ends the upload.
//!
//! # The hash state
//! A checkpoint (and the record of a cut request, [`Appending::finish`]) writes the upload's
//! SHA-256 state ([`ResumableSha256`]) in the same record as the offset, when it has the state
//! of exactly those bytes: the upload's own when it hashed them itself, else a [`HashMark`]
//! that the hashing thread hands over as it passes the offset (it carries the upload and the
//! offset: one of other bytes is dropped, and the record keeps no state). The next append
//! hashes on from it. A record's state is read only if it is sound and of exactly the offset's
//! length; otherwise the append does not hash and completion reads the file back: the digest is
//! of every byte either way.
//!
//! # Completion
//! The data file becomes the upload's temporary ([`Upload::adopt`]) and is committed by the
//! same path as a `PUT` (length check, SHA-256 continued or by reading the file back, digest
//! verification, `fsync`, `rename` over the target, directory `fsync`), with the creating
//! request's preconditions (kept in the record, [`ResumableState::condition`]) checked again
//! by the caller's check under the commit lock ([`Appending::finish_checked`]). The meta then records the upload as
//! complete and stays until it expires, for clients that missed the final answer.
//!
//! # Expiry
//! An upload expires `expiry` after its creation or its last recorded append, whichever is
//! later; [`Resumables::sweep`] removes expired ones
//! (not while an append runs) and data files without a meta record. [`Resumables::open`]
//! sweeps once.

use crate::digest::ContentDigest;
use crate::error::StoreError;
use crate::hash_job::HashMark;
use crate::local::LocalStore;
use crate::path::StorePath;
use crate::quota::ENTRY_COST;
use crate::sha256_state::{ResumableSha256, SAVED_LEN};
use crate::store::VersionCheck;
use crate::sys::{DirHandle, EntryKind};
use crate::tree::{Missing, Resolved, STAGING_NAME, Shared, walk};
use crate::upload::{Committed, Upload, UploadOptions};
use std::collections::HashSet;
use std::fmt;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The resumable uploads' directory, inside the staging area.
const DIR_NAME: &str = "resumable";

/// An upload resource's identifier: 128 random bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UploadId([u8; 16]);

impl UploadId {
    /// A new random id.
    pub(crate) fn random() -> io::Result<UploadId> {
        let mut bytes = [0u8; 16];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(UploadId(bytes))
    }

    /// Parses 32 lower-case hex digits; anything else is `None`.
    pub fn parse(text: &str) -> Option<UploadId> {
        let text = text.as_bytes();
        if text.len() != 32 {
            return None;
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut bytes = [0u8; 16];
        for (i, pair) in text.chunks_exact(2).enumerate() {
            bytes[i] = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(UploadId(bytes))
    }

    /// The 32 hex digits, on the stack.
    fn hex(self) -> [u8; 32] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 32];
        for (i, b) in self.0.into_iter().enumerate() {
            out[2 * i] = DIGITS[usize::from(b >> 4)];
            out[2 * i + 1] = DIGITS[usize::from(b & 15)];
        }
        out
    }

    /// `{id}{suffix}`, a file name in the resumable area, on the stack: the record and data
    /// files are opened, renamed and unlinked by name several times per request.
    fn file_name(self, suffix: &str) -> FileName {
        let mut name = FileName {
            bytes: [0; FileName::CAPACITY],
            len: 32 + suffix.len(),
        };
        name.bytes[..32].copy_from_slice(&self.hex());
        name.bytes[32..name.len].copy_from_slice(suffix.as_bytes());
        name
    }

    // ALLOCATION: the data file's name, kept by the request's `Upload`: once per request.
    fn data_name(self) -> String {
        let name = self.file_name(".data");
        let mut out = String::with_capacity(DIR_NAME.len() + 1 + name.len);
        out.push_str(DIR_NAME);
        out.push('/');
        out.push_str(&name);
        out
    }
}

/// A file name of [`UploadId::file_name`]: an id and one of this module's short suffixes.
struct FileName {
    bytes: [u8; FileName::CAPACITY],
    len: usize,
}

impl FileName {
    /// The id and the longest suffix, `.meta.tmp`.
    const CAPACITY: usize = 32 + 16;
}

impl std::ops::Deref for FileName {
    type Target = str;

    fn deref(&self) -> &str {
        // Hex digits and an ASCII suffix (`file_name` panics on a longer one than fits).
        std::str::from_utf8(&self.bytes[..self.len]).expect("ASCII file name")
    }
}

impl fmt::Display for UploadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex();
        f.write_str(std::str::from_utf8(&hex).expect("hex digits"))
    }
}

/// What the server knows of one upload resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumableState {
    /// Where the file goes at completion.
    pub target: StorePath,
    /// Bytes received and durable: what `Upload-Offset` reports.
    pub offset: u64,
    /// The length the client declared (`Upload-Length`, or offset + `Content-Length` of a
    /// completing request), once known.
    pub length: Option<u64>,
    /// The upload was completed (and its file committed).
    pub complete: bool,
    /// Seconds since the Unix epoch at creation or at the last recorded append, whichever is
    /// later: the upload expires `expiry` after it (an upload in use does not).
    pub active: u64,
    /// Digests the whole representation must match at completion (`Repr-Digest`, or the
    /// `Content-Digest` of a creation request that carried the whole representation).
    pub expected_digest: Option<String>,
    /// Compute the SHA-256 at completion.
    pub hash: bool,
    /// The client's own description of the upload, kept verbatim to be given back (tus's
    /// `Upload-Metadata`: visible ASCII, no line break).
    pub metadata: Option<String>,
    /// The SHA-256 state of exactly the first `offset` bytes ([`ResumableSha256::to_bytes`]),
    /// when it was at hand as the offset was recorded: the next append goes on hashing from
    /// it, and completion reads nothing back. Recorded in the same record as the offset, so
    /// they change together; one that does not match the offset is never read.
    pub sha256_state: Option<[u8; SAVED_LEN]>,
    /// The creating request's preconditions, `(field name, value)` (`valid_condition`),
    /// for the completion to evaluate again ([`Appending::finish_checked`]); empty when it had
    /// none. A line `condition NAME VALUE` each, written only when there are some, so records
    /// from before them still read.
    pub condition: Vec<(String, String)>,
}

/// Whether `(name, value)` can be kept as a record's `condition` line (and is one): a
/// lower-case field name, a value of visible ASCII and spaces (no line break can hide in it).
/// The rule of both stores' records (`s3/resumable.rs`'s manifest too).
pub(crate) fn valid_condition(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
        && value
            .bytes()
            .all(|b| matches!(b, b' ' | b'\t' | b'!'..=b'~'))
}

impl ResumableState {
    // ALLOCATION: the record's text, at creation, at each checkpoint (every 64 MiB or request
    // end) and at completion: never per read.
    // ALLOCATION: the record's text, once per record written (the end of a request, a
    // checkpoint), sized up front so that it does not grow.
    fn encode(&self) -> String {
        use std::fmt::Write as _;
        // The fixed keys and numbers, the hex of a SHA-256 state, and the variable fields.
        let capacity = 160
            + 2 * self.sha256_state.map_or(0, |s| s.len())
            + self.target.as_str().len()
            + self.expected_digest.as_ref().map_or(0, String::len)
            + self.metadata.as_ref().map_or(0, String::len)
            + self
                .condition
                .iter()
                .map(|(n, v)| 12 + n.len() + v.len())
                .sum::<usize>();
        let mut s = String::with_capacity(capacity);
        // Writing to a `String` cannot fail.
        let _ = write!(
            s,
            "target {}\noffset {}\ncomplete {}\nactive {}\nhash {}\n",
            self.target.as_str(),
            self.offset,
            u8::from(self.complete),
            self.active,
            u8::from(self.hash)
        );
        if let Some(len) = self.length {
            let _ = writeln!(s, "length {len}");
        }
        if let Some(d) = &self.expected_digest {
            let _ = writeln!(s, "digest {d}");
        }
        if let Some(m) = &self.metadata {
            let _ = writeln!(s, "metadata {m}");
        }
        for (name, value) in &self.condition {
            let _ = writeln!(s, "condition {name} {value}");
        }
        if let Some(saved) = self.sha256_state.filter(|saved| self.state_matches(saved)) {
            s.push_str("sha256-state ");
            for b in saved {
                let _ = write!(s, "{b:02x}");
            }
            s.push('\n');
        }
        s
    }

    /// Whether `saved` is a well-formed SHA-256 state of exactly `offset` bytes.
    fn state_matches(&self, saved: &[u8]) -> bool {
        ResumableSha256::from_bytes(saved).is_some_and(|h| h.len() == self.offset)
    }

    /// The SHA-256 state of the first `offset` bytes, if one was kept (and is sound).
    fn sha256(&self) -> Option<ResumableSha256> {
        let h = ResumableSha256::from_bytes(self.sha256_state.as_ref()?)?;
        (h.len() == self.offset).then_some(h)
    }

    fn decode(text: &str) -> Option<ResumableState> {
        let (mut target, mut offset, mut complete, mut active, mut hash) =
            (None, None, None, None, None);
        let (mut length, mut expected_digest, mut metadata) = (None, None, None);
        let mut sha256_state = None;
        let mut condition = Vec::new();
        for line in text.lines() {
            let (key, value) = line.split_once(' ')?;
            match key {
                "target" => target = Some(StorePath::parse(value).ok()?),
                "offset" => offset = Some(value.parse().ok()?),
                "complete" => complete = Some(value == "1"),
                "active" => active = Some(value.parse().ok()?),
                "hash" => hash = Some(value == "1"),
                "length" => length = Some(value.parse().ok()?),
                "digest" => expected_digest = Some(value.to_owned()),
                "metadata" => metadata = Some(value.to_owned()),
                "condition" => {
                    let (name, v) = value.split_once(' ')?;
                    if !valid_condition(name, v) {
                        return None;
                    }
                    condition.push((name.to_owned(), v.to_owned()));
                }
                // A damaged state is dropped, not the record: completion then reads back.
                "sha256-state" => sha256_state = decode_hex(value),
                _ => return None,
            }
        }
        let mut state = ResumableState {
            target: target?,
            offset: offset?,
            length,
            complete: complete?,
            active: active?,
            expected_digest,
            hash: hash?,
            metadata,
            sha256_state: None,
            condition,
        };
        state.sha256_state = sha256_state.filter(|saved| state.state_matches(saved));
        Some(state)
    }
}

/// `SAVED_LEN` bytes from their hex digits; `None` for anything else.
fn decode_hex(text: &str) -> Option<[u8; SAVED_LEN]> {
    let text = text.as_bytes();
    if text.len() != 2 * SAVED_LEN {
        return None;
    }
    let digit = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = [0u8; SAVED_LEN];
    for (b, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *b = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// Why a resumable operation was refused.
#[derive(Debug)]
pub enum ResumableError {
    /// No such upload (never created, cancelled, or expired).
    Unknown,
    /// Another request is appending to it now.
    Busy,
    /// The request's offset is not the upload's.
    OffsetMismatch { expected: u64, provided: u64 },
    /// The upload is complete: nothing more can be appended.
    Completed,
    /// The store failed.
    Store(StoreError),
}

impl From<StoreError> for ResumableError {
    fn from(e: StoreError) -> Self {
        ResumableError::Store(e)
    }
}

/// The resumable uploads of one [`LocalStore`].
#[derive(Debug)]
pub struct Resumables {
    shared: Arc<Shared>,
    /// `ROOT/.weir-staging/resumable/`.
    dir: Arc<DirHandle>,
    expiry: Duration,
    /// Uploads with an [`Appending`] alive.
    busy: Arc<Mutex<HashSet<UploadId>>>,
}

/// What [`Resumables::sweep`] removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub uploads: u64,
    pub bytes: u64,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn io_err(op: &'static str) -> impl Fn(io::Error) -> StoreError {
    move |e| StoreError::from_io(op, e)
}

impl Resumables {
    /// Opens (creating it) the resumable area of `store`: cuts every data file back to its
    /// recorded offset, counts what remains against the quota, and removes what has expired
    /// or has no record.
    pub fn open(store: &LocalStore, expiry: Duration) -> Result<Resumables, StoreError> {
        let shared = store.shared_arc().clone();
        let dir = match walk(
            &shared.root,
            [STAGING_NAME, DIR_NAME].into_iter(),
            Missing::Create,
        )? {
            Some(Resolved::Below(dir)) => Arc::new(dir),
            _ => return Err(StoreError::NotFound),
        };
        let this = Resumables {
            shared,
            dir,
            expiry,
            busy: Arc::default(),
        };
        let mut sizes = 0u64;
        for name in this.dir.names().map_err(io_err("read resumable area"))? {
            let Some(name) = name.to_str() else { continue };
            let Some(id) = name.strip_suffix(".data").and_then(UploadId::parse) else {
                continue;
            };
            let Some(state) = this.read_state(id)? else {
                continue; // removed by the sweep below
            };
            let file = this
                .dir
                .open_rw(&id.file_name(".data"))
                .map_err(io_err("open resumable data"))?;
            let len = file.metadata().map_err(io_err("stat"))?.len();
            if len > state.offset {
                // Never acknowledged: the record is the truth.
                file.set_len(state.offset).map_err(io_err("truncate"))?;
                file.sync_data().map_err(io_err("fdatasync"))?;
            }
            sizes = sizes.saturating_add(len.min(state.offset) + ENTRY_COST);
        }
        this.shared.usage.charge(sizes);
        this.sweep_at(now_secs(), true)?;
        Ok(this)
    }

    /// Uploads not complete yet (those with a data file), counted by listing the area: for
    /// monitoring (`weir serve`'s `/metrics`), not for a request's path.
    pub fn incomplete(&self) -> Result<u64, StoreError> {
        let names = self.dir.names().map_err(io_err("read resumable area"))?;
        let data_files = names.into_iter().filter(|name| {
            name.to_str()
                .and_then(|n| n.strip_suffix(".data"))
                .and_then(UploadId::parse)
                .is_some()
        });
        Ok(data_files.count() as u64)
    }

    /// How long an upload lives after its creation or last recorded append.
    pub fn expiry(&self) -> Duration {
        self.expiry
    }

    /// Seconds left before `state` expires (for `Upload-Limit: max-age`).
    pub fn max_age(&self, state: &ResumableState) -> u64 {
        (state.active + self.expiry.as_secs()).saturating_sub(now_secs())
    }

    /// Creates an upload resource for `target`: checks the target could take a file, creates
    /// the empty data file and its record (durably), and charges its entry to the quota.
    pub fn create(
        &self,
        target: &StorePath,
        length: Option<u64>,
        expected_digest: Option<String>,
        hash: bool,
    ) -> Result<(UploadId, ResumableState), StoreError> {
        self.create_with_metadata(target, length, expected_digest, hash, None)
    }

    /// [`Resumables::create`], keeping `metadata` in the record (a line break in it is
    /// refused: the record is one field per line).
    pub fn create_with_metadata(
        &self,
        target: &StorePath,
        length: Option<u64>,
        expected_digest: Option<String>,
        hash: bool,
        metadata: Option<String>,
    ) -> Result<(UploadId, ResumableState), StoreError> {
        let no_condition = Vec::new();
        self.create_with_condition(
            target,
            length,
            expected_digest,
            hash,
            metadata,
            no_condition,
        )
    }

    /// [`Resumables::create_with_metadata`], keeping the creating request's preconditions
    /// (`condition`, see [`ResumableState::condition`]) for the completion to evaluate again;
    /// one that cannot be a record line (`valid_condition`) is refused as a line break in
    /// `metadata` is ([`StoreError::Discarded`]).
    pub fn create_with_condition(
        &self,
        target: &StorePath,
        length: Option<u64>,
        expected_digest: Option<String>,
        hash: bool,
        metadata: Option<String>,
        condition: Vec<(String, String)>,
    ) -> Result<(UploadId, ResumableState), StoreError> {
        if metadata
            .as_deref()
            .is_some_and(|m| m.contains(['\n', '\r']))
            || !condition.iter().all(|(n, v)| valid_condition(n, v))
        {
            return Err(StoreError::Discarded);
        }
        crate::upload::check_target(&self.shared, target)?;
        // A declared length that cannot fit fails now; the bytes are charged as they come.
        let length_now = length.unwrap_or(0);
        self.shared
            .usage
            .reserve(length_now.saturating_add(ENTRY_COST))?;
        self.shared.usage.release(length_now);
        let made = (|| {
            let id = UploadId::random().map_err(io_err("random id"))?;
            let state = ResumableState {
                target: target.clone(),
                offset: 0,
                length,
                complete: false,
                active: now_secs(),
                expected_digest,
                hash,
                metadata,
                sha256_state: None,
                condition,
            };
            // The record first: data without one is an orphan that a sweep may remove.
            self.write_state(id, &state)?;
            let file = self
                .dir
                .create_new(&id.file_name(".data"))
                .map_err(io_err("create resumable data"))?;
            file.sync_all().map_err(io_err("fsync"))?;
            self.dir.sync().map_err(io_err("sync resumable area"))?;
            Ok((id, state))
        })();
        if made.is_err() {
            self.shared.usage.release(ENTRY_COST);
        }
        made
    }

    /// The state of upload `id`, `None` if there is none.
    pub fn state(&self, id: UploadId) -> Result<Option<ResumableState>, StoreError> {
        self.read_state(id)
    }

    /// Whether an append to `id` is running.
    pub fn is_busy(&self, id: UploadId) -> bool {
        self.busy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&id)
    }

    /// Starts appending to `id` at `offset` (the client's `Upload-Offset`): the upload must
    /// exist, be incomplete, be free and be at that offset. `length`: a length the request
    /// declares, recorded now (an inconsistent one is the caller's to refuse first).
    pub fn append(
        &self,
        id: UploadId,
        offset: u64,
        length: Option<u64>,
    ) -> Result<(Appending, Upload), ResumableError> {
        let release = self.claim(id)?;
        let Some(mut state) = self.read_state(id)? else {
            return Err(ResumableError::Unknown);
        };
        if state.complete {
            return Err(ResumableError::Completed);
        }
        if offset != state.offset {
            return Err(ResumableError::OffsetMismatch {
                expected: state.offset,
                provided: offset,
            });
        }
        if state.length.is_none() && length.is_some() {
            state.length = length;
            self.write_state(id, &state)?;
        }
        let data_name = id.data_name();
        let mut file = match self.shared.staging.open_rw(&data_name) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Its data went with a failed commit: the upload is over.
                self.remove(id)?;
                return Err(ResumableError::Unknown);
            }
            Err(e) => return Err(StoreError::from_io("open resumable data", e).into()),
        };
        // Bytes past the offset were never acknowledged (an append whose checkpoint did not
        // run): the next bytes go in their place.
        file.set_len(state.offset).map_err(io_err("truncate"))?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(state.offset))
            .map_err(io_err("seek"))?;
        let digest = match &state.expected_digest {
            Some(d) => Some(ContentDigest::parse(d).map_err(|_| StoreError::Discarded)?),
            None => None,
        };
        let upload = Upload::adopt(
            self.shared.clone(),
            &state.target,
            data_name,
            (file, state.offset),
            state.sha256(),
            UploadOptions {
                hash: state.hash,
                expected_digest: digest,
                expected_len: None,
                object_meta: None,
            },
        );
        let appending = Appending {
            resumables: Resumables {
                shared: self.shared.clone(),
                dir: self.dir.clone(),
                expiry: self.expiry,
                busy: self.busy.clone(),
            },
            id,
            state,
            finished: false,
            started_at: offset,
            in_flight: None,
            _busy: release,
        };
        Ok((appending, upload))
    }

    /// Marks upload `id` busy (one append or cancel at a time) until the guard drops;
    /// [`ResumableError::Busy`] if it already is.
    fn claim(&self, id: UploadId) -> Result<BusyGuard, ResumableError> {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if !busy.insert(id) {
            return Err(ResumableError::Busy);
        }
        Ok(BusyGuard {
            busy: self.busy.clone(),
            id,
        })
    }

    /// Cancels upload `id`: removes its data and record, gives its space back. `Busy` while
    /// an append runs.
    pub fn cancel(&self, id: UploadId) -> Result<(), ResumableError> {
        let _release = self.claim(id)?;
        if self.read_state(id)?.is_none() {
            return Err(ResumableError::Unknown);
        }
        self.remove(id)?;
        Ok(())
    }

    /// Removes expired uploads (not those being appended to) and data without a record.
    pub fn sweep(&self) -> Result<Swept, StoreError> {
        self.sweep_at(now_secs(), false)
    }

    fn sweep_at(&self, now: u64, at_open: bool) -> Result<Swept, StoreError> {
        let mut swept = Swept::default();
        for name in self.dir.names().map_err(io_err("read resumable area"))? {
            let Some(name) = name.to_str() else { continue };
            if self.dir.stat(name).ok().flatten().is_none() {
                continue; // removed with its other half
            }
            let Some((stem, ext)) = name.split_once('.') else {
                continue;
            };
            let Some(id) = UploadId::parse(stem) else {
                // A record being written when a crash came: never renamed into place.
                if at_open && name.ends_with(".tmp") {
                    let _ = self.dir.unlink(name);
                }
                continue;
            };
            if ext != "meta" && ext != "data" {
                continue;
            }
            let state = self.read_state(id)?;
            let expired = match &state {
                Some(s) => {
                    now >= s.active.saturating_add(self.expiry.as_secs())
                        // A record whose data a crash removed (after a commit, or before the
                        // data was created).
                        || (at_open
                            && !s.complete
                            && self.dir.stat(&id.file_name(".data")).ok().flatten().is_none())
                }
                // An orphan data file (its record was never written, or already removed).
                None => ext == "data",
            };
            if !expired {
                continue;
            }
            {
                let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
                if !busy.insert(id) {
                    continue;
                }
            }
            let _release = BusyGuard {
                busy: self.busy.clone(),
                id,
            };
            swept.bytes += self.remove(id)?;
            swept.uploads += 1;
        }
        Ok(swept)
    }

    /// Unlinks the data (releasing its space and entry) and then the record. Returns the
    /// bytes freed.
    fn remove(&self, id: UploadId) -> Result<u64, StoreError> {
        let data = id.file_name(".data");
        let size = match self.dir.stat(&data).map_err(io_err("stat"))? {
            Some(m) if m.kind == EntryKind::File => {
                self.dir
                    .unlink(&data)
                    .map_err(io_err("remove resumable data"))?;
                self.shared.usage.release(m.size.saturating_add(ENTRY_COST));
                m.size
            }
            _ => 0,
        };
        match self.dir.unlink(&id.file_name(".meta")) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::from_io("remove resumable record", e)),
        }
        self.dir.sync().map_err(io_err("sync resumable area"))?;
        Ok(size)
    }

    fn read_state(&self, id: UploadId) -> Result<Option<ResumableState>, StoreError> {
        let mut f = match self.dir.open_read(&id.file_name(".meta")) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::from_io("open resumable record", e)),
        };
        let not_text = |e| io::Error::new(io::ErrorKind::InvalidData, e);
        // Read on every request on an upload (twice for an append): a record fits on the stack
        // unless its target or metadata is long, which is read into a `String` instead.
        let mut stack = [0u8; 2048];
        let mut filled = 0;
        while filled < stack.len() {
            match f.read(&mut stack[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(StoreError::from_io("read resumable record", e)),
            }
        }
        // A record that does not parse was not written by this code: treat as absent (the
        // sweep removes its data).
        if filled < stack.len() {
            let text = std::str::from_utf8(&stack[..filled])
                .map_err(|e| StoreError::from_io("read resumable record", not_text(e)))?;
            return Ok(ResumableState::decode(text));
        }
        // ALLOCATION: only for a record longer than the stack buffer.
        let mut bytes = stack.to_vec();
        f.read_to_end(&mut bytes)
            .map_err(io_err("read resumable record"))?;
        let text = String::from_utf8(bytes)
            .map_err(|e| StoreError::from_io("read resumable record", not_text(e.utf8_error())))?;
        Ok(ResumableState::decode(&text))
    }

    /// Replaces the record of `id` durably (see [`write_record`]).
    fn write_state(&self, id: UploadId, state: &ResumableState) -> Result<(), StoreError> {
        write_record(&self.dir, id, state)
    }
}

/// Replaces the record of `id` in `dir` durably: temporary, fsync, rename, directory fsync.
/// One writer per upload at a time (its busy mark, and at most one [`CheckpointJob`] out,
/// which the [`Appending`] waits for before writing itself): the temporary's name is fixed.
fn write_record(dir: &DirHandle, id: UploadId, state: &ResumableState) -> Result<(), StoreError> {
    let temp = id.file_name(".meta.tmp");
    let _ = dir.unlink(&temp);
    let mut file = dir
        .create_new(&temp)
        .map_err(io_err("create resumable record"))?;
    file.write_all(state.encode().as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io_err("write resumable record"))?;
    dir.rename(&temp, dir, &id.file_name(".meta"))
        .map_err(io_err("rename resumable record"))?;
    dir.sync().map_err(io_err("sync resumable area"))
}

/// Frees an upload for the next writer when dropped.
#[derive(Debug)]
struct BusyGuard {
    busy: Arc<Mutex<HashSet<UploadId>>>,
    id: UploadId,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.busy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

mod appending;
pub use appending::{AppendEnd, Appending, CHECKPOINT_BYTES, CheckpointJob};

#[cfg(test)]
mod tests;
