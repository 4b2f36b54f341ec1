//! [`LocalStore`]'s multipart uploads: parts written in place in one file of the upload, which
//! becomes the object, or in files of their own, assembled by `copy_file_range` into an
//! ordinary upload that the store commits.
//!
//! Layout, in `ROOT/.weir-staging/multipart/` (never listed, served or addressable):
//! - `{id}/` per upload (`id`: 32 hex digits, 128 random bits);
//! - `{id}/upload`: the upload's record (`record.rs`), written once at creation;
//! - `{id}/{n}.rec`: part `n`'s record (size, ETag, checksums, and the name of its data file);
//! - `{id}/{n}-{nonce}.part`: a part's bytes, a fresh name per upload of the part;
//! - `{id}/object`: the upload's file, where parts are written in place, each at the offset it
//!   will have in the object (`local/in_place.rs`); a record names such a part
//!   `object@OFFSET`.
//!
//! Records are replaced atomically (a temporary, `fsync`, `rename`, directory `fsync`).
//!
//! # A part
//! [`LocalMultiparts::begin_part`] is an upload into the part's place in the upload's file when
//! it can take one (`local/in_place.rs`), else an ordinary [`Upload`] in the staging area
//! (`hash` off either way: the route splices into it, or writes);
//! [`MultipartStore::finish_part`] takes its ETag (the route's, else its CRC tag read back in
//! 256 KiB steps: the part never in memory), fsyncs it, renames it into the upload's directory
//! under a fresh name (a part in place stays where it is), writes the part's record naming
//! it, and gives back the bytes the previous record named (a data file unlinked, a range in
//! place punched out). The record's rename is the replacement: a part is the old bytes or the
//! new, across a crash too.
//!
//! # Completion
//! The listed parts are judged (`validate.rs`); when they are in place and fill the upload's
//! file from its start, that file is the object (a second name of it becomes the object's
//! upload, which the commit renames over the key: nothing copied, `local/in_place.rs`).
//! Otherwise the assembly made while they arrived (`ahead.rs`) is taken if it is their start;
//! the parts after it are copied in order into
//! that [`Upload`] of the key, or into a new one (`copy_file_range` at each part's offset:
//! inside the kernel, blocks shared where btrfs or XFS allow; never through user space) while
//! a second thread reads them once, in order, for the object's SHA-256 (the bytes bypass the
//! upload's hashers); then the upload's commit: its `fsync` and its `rename` over the key,
//! with the caller's check under the commit lock. Only then is the upload's directory
//! removed. A completion of an upload being completed (a client's retry after its read timed
//! out) waits for that one and answers as it did, from the `done` record, or tries itself if
//! that one was refused (`local/complete.rs`). A `SIGKILL` before the rename leaves the old
//! object and the upload (its temporary is removed at the next start, as any); after it, the
//! new object, and an upload the client may complete again or the sweep removes.
//!
//! # Locking and the quota
//! One mutex per store (`Inner`) orders what changes an upload's directory: a part's rename and
//! record, an upload's removal, the completions in progress (a part recorded, or an abort, while
//! an upload is being assembled is refused as `NoSuchUpload`). A part's fsync is done before it
//! is taken, the assembly's copies without it. Every part (a `.part` file, or a range in
//! place) is charged its size and [`ENTRY_COST`] (what its [`Upload`] reserved) and each upload
//! one [`ENTRY_COST`]; whoever removes a part gives its charge back. [`LocalMultiparts::open`] counts them again
//! and removes what a crash left (temporaries, data files no record names, uploads without a
//! record).

use super::ahead::{Ahead, Lead};
use super::record::{
    self, data_name, decode_done, decode_part, decode_upload, record_number, same_parts,
};
use super::{
    CompletePart, Completed, MAX_PART_SIZE, MultipartError, MultipartMeta, MultipartStore,
    MultipartUpload, PartRecord, PartSeal, PartTag, PartTagHasher, PartsPage, UploadsPage,
    check_part_checksums, check_part_number, select_parts,
};
use crate::ObjectChecksum;
use crate::digest::{Digests, Hashers};
use crate::quota::ENTRY_COST;
use crate::read_back::{READ_BACK_BUF, read_range};
use crate::sys::{self, DirHandle, EntryKind};
use crate::tree::{Missing, Resolved, STAGING_NAME, Shared, walk};
use crate::{
    LocalStore, LocalUpload, StoreError, StorePath, Upload, UploadId, UploadOptions, VersionCheck,
    off_the_runtime,
};
use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

mod complete;
mod in_place;

pub(super) use complete::copy_part;
pub(super) use in_place::open_data;
use in_place::{in_place_charges, release_data};

/// The multipart area's name inside the staging area.
const DIR_NAME: &str = "multipart";
/// An upload's record's name in its directory.
const UPLOAD_RECORD: &str = "upload";
/// A completed upload's record (`record::encode_done`).
const DONE_RECORD: &str = "done";

fn io_err(op: &'static str) -> impl Fn(io::Error) -> StoreError {
    move |e| StoreError::from_io(op, e)
}

/// A part in place of an upload hashed ahead, and its offset in the upload's file: its answer
/// may wait for the hash ([`Ahead::caught_up`]).
type PartAhead = (Arc<Ahead>, u64);

/// The local store's multipart uploads (see the module doc). Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct LocalMultiparts {
    store: LocalStore,
    shared: Arc<Shared>,
    /// `ROOT/.weir-staging/multipart/`.
    dir: DirHandle,
    inner: Mutex<Inner>,
    /// Signalled when a completion ends (its [`Claim`](complete::Claim) dropped): a completion
    /// of the same upload sent meanwhile waits for it.
    completed: Condvar,
    /// How far a part in place may be answered ahead of the object's hash (`ahead.rs`).
    pub(super) lead: Lead,
    /// How many parts the last completion took from an assembly ahead (tests).
    #[cfg(test)]
    pub(super) resumed: std::sync::atomic::AtomicUsize,
    /// Completions waiting for another of the same upload (tests).
    #[cfg(test)]
    pub(super) waiting: std::sync::atomic::AtomicUsize,
    /// The last completion took the upload's own file whole (tests, `local/in_place.rs`).
    #[cfg(test)]
    pub(super) whole: AtomicBool,
}

#[derive(Debug, Default)]
struct Inner {
    /// Uploads being assembled.
    completing: HashSet<UploadId>,
    /// Uploads being assembled ahead of their completion (`ahead.rs`), from their part 1.
    ahead: HashMap<UploadId, Arc<Ahead>>,
    /// The slots of the uploads whose file this process made (`local/in_place.rs`).
    slots: HashMap<UploadId, in_place::Slots>,
}

impl LocalMultiparts {
    /// Opens (creating it) the multipart area of `store`: counts its parts against the quota
    /// and removes what a crash left half made.
    pub fn open(store: &LocalStore) -> Result<LocalMultiparts, StoreError> {
        let shared = store.shared_arc().clone();
        let dir = match walk(
            &shared.root,
            [STAGING_NAME, DIR_NAME].into_iter(),
            Missing::Create,
        )? {
            Some(Resolved::Below(dir)) => dir,
            _ => return Err(StoreError::NotFound),
        };
        let this = LocalMultiparts {
            store: store.clone(),
            shared,
            dir,
            inner: Mutex::default(),
            completed: Condvar::new(),
            lead: Lead::DEFAULT,
            #[cfg(test)]
            resumed: Default::default(),
            #[cfg(test)]
            waiting: Default::default(),
            #[cfg(test)]
            whole: Default::default(),
        };
        let mut charged = 0u64;
        for name in this.dir.names().map_err(io_err("read multipart area"))? {
            let Some(name) = name.to_str() else { continue };
            let Some(id) = UploadId::parse(name) else {
                continue;
            };
            let Ok(upload_dir) = this.dir.open_dir(name) else {
                continue;
            };
            let done = read_text(&upload_dir, DONE_RECORD)?.and_then(|t| decode_done(id, &t));
            if done.is_some() {
                // Completed: kept for a completion sent again, until the sweep.
                continue;
            }
            if read_text(&upload_dir, UPLOAD_RECORD)?
                .and_then(|t| decode_upload(id, &t))
                .is_none()
            {
                // Created up to its directory only: no client ever got its id.
                remove_dir_files(&upload_dir, None)?;
                let _ = this.dir.remove_dir(name);
                continue;
            }
            match recover_upload(&upload_dir)? {
                Some(parts) => charged += ENTRY_COST + parts,
                None => {
                    // Its completion stored the object, then the process stopped: completed.
                    remove_dir_files(&upload_dir, None)?;
                    let _ = this.dir.remove_dir(name);
                }
            }
        }
        this.shared.usage.charge(charged);
        Ok(this)
    }

    /// The store the uploads complete into.
    pub fn store(&self) -> &LocalStore {
        &self.store
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The directory and record of upload `id`, if it exists.
    fn open_upload(&self, id: UploadId) -> Result<(DirHandle, MultipartUpload), MultipartError> {
        let dir = match self.dir.open_dir(&id.to_string()) {
            Ok(dir) => dir,
            Err(e) if crate::tree::is_absent(&e) => return Err(MultipartError::NoSuchUpload),
            Err(e) => return Err(StoreError::from_io("open multipart upload", e).into()),
        };
        let upload = read_text(&dir, UPLOAD_RECORD)?
            .and_then(|t| decode_upload(id, &t))
            .ok_or(MultipartError::NoSuchUpload)?;
        Ok((dir, upload))
    }

    fn create_now(
        &self,
        key: &StorePath,
        meta: MultipartMeta,
    ) -> Result<MultipartUpload, MultipartError> {
        record::check_recordable(&meta)?;
        crate::upload::check_target(&self.shared, key)?;
        self.shared.usage.reserve(ENTRY_COST)?;
        let made = (|| -> Result<MultipartUpload, StoreError> {
            let id = UploadId::random().map_err(io_err("random id"))?;
            let upload = MultipartUpload {
                id,
                key: key.clone(),
                initiated: record::now(),
                meta,
            };
            let name = id.to_string();
            self.dir
                .mkdir(&name)
                .map_err(io_err("create multipart upload"))?;
            let dir = self
                .dir
                .open_dir(&name)
                .map_err(io_err("open multipart upload"))?;
            write_record(&dir, UPLOAD_RECORD, &record::encode_upload(&upload))?;
            self.dir.sync().map_err(io_err("sync multipart area"))?;
            Ok(upload)
        })();
        if made.is_err() {
            self.shared.usage.release(ENTRY_COST);
        }
        Ok(made?)
    }

    /// Records part `number`; with it, for a part in place of an upload hashed ahead, that
    /// assembly and the part's offset, for the answer's wait (`ahead.rs`).
    fn finish_part_now(
        &self,
        id: UploadId,
        number: u32,
        upload: Upload,
        seal: PartSeal,
    ) -> Result<(PartRecord, Option<PartAhead>), MultipartError> {
        check_part_number(number)?;
        // A part in place is hashed as soon as its bytes are all written, while its tag is
        // read back and it is made durable: its fsync flushes the upload's whole file, the
        // parts still arriving included, and the hash would otherwise wait for the disk.
        let early = match upload.is_in_place() {
            true => self.hash_written(id, number, upload.base(), upload.size()),
            false => None,
        };
        let recorded = self.record_part(id, number, upload, seal, early.as_ref());
        if let Some(early) = early {
            match &recorded {
                Ok(_) => early.recorded(number),
                Err(_) => early.unwritten(number),
            }
        }
        recorded
    }

    /// Tells upload `id`'s hash that part `number` is written in place (`Ahead::written`):
    /// part 1 starts that hash. The hash told, if any.
    fn hash_written(&self, id: UploadId, number: u32, base: u64, size: u64) -> Option<Arc<Ahead>> {
        let ahead = if number == 1 {
            let fresh = Ahead::hashing(self.dir.open_dir(&id.to_string()).ok()?);
            if let Some(slots) = self.lock().slots.get(&id) {
                slots.pace.hashed_by(&fresh);
            }
            fresh
        } else {
            self.lock().ahead.get(&id).cloned()?
        };
        ahead.written(number, base, size);
        Some(ahead)
    }

    /// [`LocalMultiparts::finish_part_now`]'s record; `early`, the hash told of the part.
    fn record_part(
        &self,
        id: UploadId,
        number: u32,
        mut upload: Upload,
        seal: PartSeal,
        early: Option<&Arc<Ahead>>,
    ) -> Result<(PartRecord, Option<PartAhead>), MultipartError> {
        let tag = match seal.tag {
            Some(tag) => tag,
            None => {
                let (base, size) = (upload.base(), upload.size());
                tag_of(upload.file_mut(), base, size).map_err(io_err("read part back"))?
            }
        };
        let (dir, opened) = self.open_upload(id)?;
        let in_place = upload.is_in_place();
        // Part 1 starts an assembly ahead (`ahead.rs`), replacing one that began with other
        // bytes: a copy into a temporary of the object made before the lock (without one, the
        // completion does it all), or, in place, the hash of the upload's file (started when
        // the part was written, `hash_written`).
        let fresh = match (number, in_place) {
            (1, false) => self.start_ahead(id, &opened.key),
            (1, true) => early.cloned(),
            _ => None,
        };
        let data = if in_place {
            in_place::data_at(upload.base())
        } else {
            data_name(number, UploadId::random().map_err(io_err("random id"))?)
        };
        // The rename and the record under the lock: no removal or completion in between.
        let sealed = upload.seal_into(&dir, &data, || {
            let inner = self.lock();
            let gone = dir.stat(UPLOAD_RECORD).ok().flatten().is_none();
            if inner.completing.contains(&id) || gone {
                return Err(StoreError::NotFound);
            }
            Ok(inner)
        });
        let (size, mut inner) = match sealed {
            Ok(sealed) => sealed,
            Err(StoreError::NotFound) => return Err(MultipartError::NoSuchUpload),
            Err(e) => return Err(e.into()),
        };
        let part = PartRecord {
            number,
            size,
            tag,
            checksums: seal.checksums,
            modified: record::now(),
        };
        let rec = format!("{number}.rec");
        let previous = read_text(&dir, &rec)?.and_then(|t| decode_part(number, &t));
        if let Err(e) = write_record(&dir, &rec, &record::encode_part(&part, &data)) {
            release_data(&self.shared, &dir, &data, size);
            return Err(e.into());
        }
        if let Some((old, old_data)) = previous {
            release_data(&self.shared, &dir, &old_data, old.size);
        }
        let (ahead, replaced) = match fresh {
            // In place, the pace already keeps to it (`hash_written`).
            Some(fresh) => {
                let replaced = inner.ahead.insert(id, Arc::clone(&fresh));
                (Some(fresh), replaced)
            }
            None => (inner.ahead.get(&id).cloned(), None),
        };
        drop(inner);
        if let Some(replaced) = replaced {
            replaced.discard();
        }
        if let Some(ahead) = &ahead {
            ahead.advance();
        }
        // A part in place may wait for the hash to come near its offset (`ahead.rs`).
        Ok((part, ahead.zip(in_place::offset_of(&data))))
    }

    /// A new assembly ahead of upload `id`'s completion, into a temporary of `key`; `None` if
    /// none could be made (the completion then assembles the whole object, as it can).
    fn start_ahead(&self, id: UploadId, key: &StorePath) -> Option<Arc<Ahead>> {
        let dir = self.dir.open_dir(&id.to_string()).ok()?;
        let options = UploadOptions {
            hash: true,
            expected_digest: None,
            // The object's length, metadata and media type are known at completion.
            expected_len: None,
            object_meta: None,
        };
        let object = self.store.begin(key, options).ok()?;
        Some(Ahead::new(dir, object))
    }

    /// Upload `id`'s assembly ahead (tests).
    #[cfg(test)]
    pub(super) fn ahead_of(&self, id: UploadId) -> Option<Arc<Ahead>> {
        self.lock().ahead.get(&id).cloned()
    }

    /// Waits until upload `id`'s assembly ahead has taken every part it can (tests).
    #[cfg(test)]
    pub(super) fn settle(&self, id: UploadId) {
        let ahead = self.lock().ahead.get(&id).cloned();
        if let Some(ahead) = ahead {
            ahead.settle();
            // And its thread gone (it drops its reference just after it stops): dropping the
            // store then drops the assembly's temporary, as a test that restarts expects.
            while Arc::strong_count(&ahead) > 2 {
                std::thread::yield_now();
            }
        }
    }

    fn copy_part_now(
        &self,
        id: UploadId,
        number: u32,
        from: &StorePath,
        range: Option<Range<u64>>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<PartRecord, MultipartError> {
        check_part_number(number)?;
        let (dir, upload) = self.open_upload(id)?;
        let key = upload.key;
        let (source, meta) = self.store.open_file(from)?;
        if let Some(check) = check {
            if !check(Some(&meta)) {
                return Err(StoreError::PreconditionFailed.into());
            }
        }
        let range = range.unwrap_or(0..meta.size);
        if range.start > range.end || range.end > meta.size {
            return Err(MultipartError::InvalidRange);
        }
        let len = range.end - range.start;
        if len > MAX_PART_SIZE {
            return Err(MultipartError::EntityTooLarge);
        }
        let options = UploadOptions {
            hash: false,
            expected_digest: None,
            expected_len: Some(len),
            object_meta: None,
        };
        // Into its place in the upload's file where it can take one, as a part sent.
        let placed = self.begin_in_place((id, &dir), &key, number, Some(len))?;
        let mut upload = match placed {
            Some(placed) => placed,
            None => self.store.begin(&key, options)?,
        };
        upload.reserve_next(len)?;
        // COPY: inside the kernel (`copy_file_range`), never through user space.
        let at = upload.base();
        let copied = sys::copy_file_at((&source, range.start), (upload.file_mut(), at), len);
        let (_, n) = copied.map_err(|e| StoreError::from_io("copy part", e))?;
        upload.record_external_write(n)?;
        // Copied inside the kernel, the part is no CPU's work: its answer does not wait for the
        // hash.
        let (part, _) = self.finish_part_now(id, number, upload, PartSeal::default())?;
        Ok(part)
    }

    fn list_parts_now(
        &self,
        id: UploadId,
        after: u32,
        limit: usize,
    ) -> Result<PartsPage, MultipartError> {
        let (dir, upload) = self.open_upload(id)?;
        let names = dir.names().map_err(io_err("read multipart upload"))?;
        // ALLOCATION: the part numbers (at most 10,000 u32s), sorted for the page.
        let mut numbers: Vec<u32> = names
            .iter()
            .filter_map(|n| n.to_str().and_then(record_number))
            .filter(|&n| n > after)
            .collect();
        numbers.sort_unstable();
        let truncated = numbers.len() > limit;
        let mut parts = Vec::with_capacity(numbers.len().min(limit));
        for number in numbers.into_iter().take(limit) {
            // A part replaced or removed since the listing is simply left out.
            if let Some((part, _)) = read_part(&dir, number)? {
                parts.push(part);
            }
        }
        Ok(PartsPage {
            upload,
            parts,
            truncated,
        })
    }

    fn list_uploads_now(
        &self,
        prefix: &str,
        after: Option<(&str, Option<UploadId>)>,
        limit: usize,
    ) -> Result<UploadsPage, MultipartError> {
        // ALLOCATION: every upload of the store is read to sort them by key: the memory of the
        // uploads in progress, which the sweep bounds in time.
        let mut uploads = Vec::new();
        for name in self.dir.names().map_err(io_err("read multipart area"))? {
            let Some(id) = name.to_str().and_then(UploadId::parse) else {
                continue;
            };
            let upload = match self.open_upload(id) {
                Ok((_, upload)) => upload,
                Err(MultipartError::NoSuchUpload) => continue,
                Err(e) => return Err(e),
            };
            if !upload.key.as_str().starts_with(prefix) {
                continue;
            }
            let after_marker = match after {
                None => true,
                Some((key, None)) => upload.key.as_str() > key,
                Some((key, Some(marker))) => {
                    (upload.key.as_str(), upload.id.to_string()) > (key, marker.to_string())
                }
            };
            if after_marker {
                uploads.push(upload);
            }
        }
        uploads.sort_by(|a, b| {
            (a.key.as_str(), a.id.to_string()).cmp(&(b.key.as_str(), b.id.to_string()))
        });
        let truncated = uploads.len() > limit;
        uploads.truncate(limit);
        Ok(UploadsPage { uploads, truncated })
    }

    fn abort_now(&self, id: UploadId) -> Result<(), MultipartError> {
        let inner = self.lock();
        if inner.completing.contains(&id) {
            return Err(MultipartError::NoSuchUpload);
        }
        self.open_upload(id)?;
        Ok(self.drop_upload(inner, id)?)
    }

    /// Removes upload `id` (`remove`) with what this process holds for it (its slots, its
    /// assembly ahead), then releases the lock `inner`.
    fn drop_upload(
        &self,
        mut inner: MutexGuard<'_, Inner>,
        id: UploadId,
    ) -> Result<(), StoreError> {
        let ahead = inner.ahead.remove(&id);
        inner.slots.remove(&id);
        let removed = self.remove(id);
        drop(inner);
        // Outside the lock: its thread may be in the middle of a part.
        if let Some(ahead) = ahead {
            ahead.discard();
        }
        removed
    }

    /// Removes upload `id`'s directory, giving back its charges. Call with the lock held.
    fn remove(&self, id: UploadId) -> Result<(), StoreError> {
        let name = id.to_string();
        let dir = match self.dir.open_dir(&name) {
            Ok(dir) => dir,
            Err(e) if crate::tree::is_absent(&e) => return Ok(()),
            Err(e) => return Err(StoreError::from_io("open multipart upload", e)),
        };
        // The record first, so that an upload half removed (a crash, an error) is no upload.
        match dir.unlink(UPLOAD_RECORD) {
            Ok(()) => self.shared.usage.release(ENTRY_COST),
            Err(e) if crate::tree::is_absent(&e) => {}
            Err(e) => return Err(StoreError::from_io("remove multipart record", e)),
        }
        let freed = remove_dir_files(&dir, None)?;
        self.shared.usage.release(freed);
        self.dir
            .remove_dir(&name)
            .map_err(io_err("remove multipart upload"))?;
        self.dir.sync().map_err(io_err("sync multipart area"))
    }

    fn sweep_now(&self, older_than: Duration) -> Result<u64, StoreError> {
        let now = SystemTime::now();
        let mut removed = 0;
        for name in self.dir.names().map_err(io_err("read multipart area"))? {
            let Some(id) = name.to_str().and_then(UploadId::parse) else {
                continue;
            };
            // A part's rename or record changes the directory's modification time.
            let Some(stat) = self.dir.stat(&id.to_string()).map_err(io_err("stat"))? else {
                continue;
            };
            let idle = now.duration_since(stat.modified).unwrap_or_default();
            if idle < older_than {
                continue;
            }
            let inner = self.lock();
            if inner.completing.contains(&id) {
                continue;
            }
            self.drop_upload(inner, id)?;
            removed += 1;
        }
        Ok(removed)
    }
}

#[cfg(test)]
impl LocalMultiparts {
    /// Holds upload `id` as a running completion does (tests: one in progress).
    pub(in crate::multipart) fn hold_claim(&self, id: UploadId) -> complete::Claim<'_> {
        assert!(self.lock().completing.insert(id));
        complete::Claim { parts: self, id }
    }

    /// What the completion holding upload `id` ([`LocalMultiparts::hold_claim`]) does.
    pub(in crate::multipart) fn complete_held(
        &self,
        id: UploadId,
        listed: &[CompletePart],
    ) -> Result<Completed, MultipartError> {
        let (dir, upload) = self.open_upload(id)?;
        self.assemble(id, dir, upload, listed, None, None)
    }

    /// [`MultipartStore::complete`] on this thread, whatever the runtime.
    pub(in crate::multipart) fn complete_here(
        &self,
        id: UploadId,
        listed: &[CompletePart],
    ) -> Result<Completed, MultipartError> {
        self.complete_now(id, listed, None, None)
    }
}

/// Unlinks a charged data file, giving its charge back if it was there.
fn unlink_charged(shared: &Shared, dir: &DirHandle, name: &str) {
    let Ok(Some(stat)) = dir.stat(name) else {
        return;
    };
    if dir.unlink(name).is_ok() {
        shared.usage.release(stat.size + ENTRY_COST);
    }
}

impl MultipartStore for LocalMultiparts {
    type Upload = LocalUpload;

    async fn create(
        &self,
        key: &StorePath,
        meta: MultipartMeta,
    ) -> Result<MultipartUpload, MultipartError> {
        // Two fsyncs: the runtime moves this worker's other tasks away first.
        off_the_runtime(|| self.create_now(key, meta))
    }

    async fn upload(&self, id: UploadId) -> Result<MultipartUpload, MultipartError> {
        self.open_upload(id).map(|(_, upload)| upload)
    }

    async fn begin_part(
        &self,
        id: UploadId,
        number: u32,
        expected_len: Option<u64>,
    ) -> Result<LocalUpload, MultipartError> {
        check_part_number(number)?;
        if expected_len.is_some_and(|n| n > MAX_PART_SIZE) {
            return Err(MultipartError::EntityTooLarge);
        }
        let (dir, upload) = self.open_upload(id)?;
        // Where it can, straight into its place in the object (`local/in_place.rs`).
        if let Some(placed) = self.begin_in_place((id, &dir), &upload.key, number, expected_len)? {
            return Ok(LocalUpload(placed));
        }
        let options = UploadOptions {
            // The part's MD5 is the route's or read back; the object's SHA-256 is computed at
            // completion.
            hash: false,
            expected_digest: None,
            expected_len,
            object_meta: None,
        };
        Ok(LocalUpload(self.store.begin(&upload.key, options)?))
    }

    async fn finish_part(
        &self,
        id: UploadId,
        number: u32,
        upload: LocalUpload,
        seal: PartSeal,
    ) -> Result<PartRecord, MultipartError> {
        if upload.0.size() > MAX_PART_SIZE {
            return Err(MultipartError::EntityTooLarge);
        }
        // A read back for the MD5, an fsync: off the runtime's workers.
        let (part, catch_up) =
            off_the_runtime(|| self.finish_part_now(id, number, upload.0, seal))?;
        // The answer waits, if it must, for the object's hash to come near the part
        // (`ahead.rs`, "held to the parts' pace").
        if let Some((ahead, offset)) = catch_up {
            ahead.caught_up(offset, self.lead).await;
        }
        Ok(part)
    }

    async fn copy_part(
        &self,
        id: UploadId,
        number: u32,
        from: &StorePath,
        range: Option<Range<u64>>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<PartRecord, MultipartError> {
        off_the_runtime(|| self.copy_part_now(id, number, from, range, check))
    }

    async fn list_parts(
        &self,
        id: UploadId,
        after: u32,
        limit: usize,
    ) -> Result<PartsPage, MultipartError> {
        off_the_runtime(|| self.list_parts_now(id, after, limit))
    }

    async fn list_uploads(
        &self,
        prefix: &str,
        after: Option<(&str, Option<UploadId>)>,
        limit: usize,
    ) -> Result<UploadsPage, MultipartError> {
        off_the_runtime(|| self.list_uploads_now(prefix, after, limit))
    }

    async fn abort(&self, id: UploadId) -> Result<(), MultipartError> {
        off_the_runtime(|| self.abort_now(id))
    }

    async fn complete(
        &self,
        id: UploadId,
        parts: &[CompletePart],
        checksum: Option<&ObjectChecksum>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Completed, MultipartError> {
        // Copies, a read back and fsyncs: off the runtime's workers.
        off_the_runtime(|| self.complete_now(id, parts, checksum, check))
    }

    async fn sweep(&self, older_than: Duration) -> Result<u64, StoreError> {
        off_the_runtime(|| self.sweep_now(older_than))
    }
}

/// Part `number`'s record and data file name, if one was recorded.
pub(super) fn read_part(
    dir: &DirHandle,
    number: u32,
) -> Result<Option<(PartRecord, String)>, StoreError> {
    Ok(read_text(dir, &format!("{number}.rec"))?.and_then(|t| decode_part(number, &t)))
}

/// Reads a small record file; `None` if absent or not text.
fn read_text(dir: &DirHandle, name: &str) -> Result<Option<String>, StoreError> {
    let mut file = match dir.open_read(name) {
        Ok(f) => f,
        Err(e) if crate::tree::is_absent(&e) => return Ok(None),
        Err(e) => return Err(StoreError::from_io("open multipart record", e)),
    };
    // ALLOCATION: a record of a few hundred bytes, per record read.
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Ok(None),
        Err(e) => Err(StoreError::from_io("read multipart record", e)),
    }
}

/// The CRC tag of a spliced part: its `size` bytes from `base`, read back.
fn tag_of(file: &std::fs::File, base: u64, size: u64) -> io::Result<PartTag> {
    let mut hasher = PartTagHasher::default();
    // ALLOCATION: one read buffer per part the route did not see; COPY: page cache → buffer,
    // the one pass its tag needs (at memory speed: the CRC is SIMD).
    let mut buf = vec![0u8; READ_BACK_BUF];
    read_range(file, base, size, &mut buf, |bytes| hasher.update(bytes))?;
    Ok(hasher.finish())
}

/// Replaces `dir/name` with `text` durably: temporary, fsync, rename, directory fsync.
fn write_record(dir: &DirHandle, name: &str, text: &str) -> Result<(), StoreError> {
    let temp = format!("{name}.tmp");
    let _ = dir.unlink(&temp);
    let mut file = dir
        .create_new(&temp)
        .map_err(io_err("create multipart record"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io_err("write multipart record"))?;
    dir.rename(&temp, dir, name)
        .map_err(io_err("rename multipart record"))?;
    dir.sync().map_err(io_err("sync multipart upload"))
}

/// Unlinks every file in `dir` but `keep`; returns the charges of the parts unlinked (`.part`
/// files, and those in place that records name: the caller gives them back, and the upload's
/// own entry).
fn remove_dir_files(dir: &DirHandle, keep: Option<&str>) -> Result<u64, StoreError> {
    // Read before the records go.
    let (mut freed, _) = in_place_charges(dir)?;
    for name in dir.names().map_err(io_err("read multipart upload"))? {
        let Some(name) = name.to_str() else { continue };
        if keep == Some(name) {
            continue;
        }
        let Some(stat) = dir.stat(name).map_err(io_err("stat"))? else {
            continue;
        };
        if stat.kind != EntryKind::File {
            continue;
        }
        match dir.unlink(name) {
            Ok(()) => {
                if name.ends_with(".part") {
                    freed += stat.size + ENTRY_COST;
                }
            }
            Err(e) if crate::tree::is_absent(&e) => {}
            Err(e) => return Err(StoreError::from_io("remove multipart file", e)),
        }
    }
    Ok(freed)
}

/// At open: removes an upload's temporaries and the data files no record names, and gives back
/// the bytes of its file no record names; returns what its parts take (sizes and entries), or
/// `None` when a completion stored it and was not recorded (the caller removes it). Its records
/// are read once, here.
fn recover_upload(dir: &DirHandle) -> Result<Option<u64>, StoreError> {
    let names: Vec<String> = dir
        .names()
        .map_err(io_err("read multipart upload"))?
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .collect();
    let mut named = HashSet::new();
    // ALLOCATION: a range per part in place, once per upload at open.
    let mut in_place = Vec::new();
    for name in &names {
        if let Some(number) = record_number(name) {
            match read_text(dir, name)?.and_then(|t| decode_part(number, &t)) {
                Some((part, data)) => {
                    if let Some(offset) = in_place::offset_of(&data) {
                        in_place.push((offset, part.size));
                    }
                    named.insert(data);
                }
                None => {
                    let _ = dir.unlink(name);
                }
            }
        }
    }
    if in_place::committed_unrecorded_at_open(dir, !in_place.is_empty())? {
        return Ok(None);
    }
    // Parts in place: charged as the records say (their file is kept while one names it, and
    // holds only what they name).
    let mut charged = in_place.iter().map(|(_, size)| size + ENTRY_COST).sum();
    if !in_place.is_empty() {
        in_place::trim_unrecorded(dir, in_place)?;
    } else if names.iter().any(|n| n == in_place::OBJECT_FILE) {
        let _ = dir.unlink(in_place::OBJECT_FILE);
    }
    for name in &names {
        if name.ends_with(".tmp") {
            let _ = dir.unlink(name);
        } else if name.ends_with(".part") {
            if named.contains(name) {
                let size = dir
                    .stat(name)
                    .map_err(io_err("stat"))?
                    .map_or(0, |s| s.size);
                charged += size + ENTRY_COST;
            } else {
                let _ = dir.unlink(name);
            }
        }
    }
    Ok(Some(charged))
}
