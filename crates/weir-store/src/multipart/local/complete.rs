//! [`LocalMultiparts`]' completion (the module doc of `local.rs`, "Completion"): the parts
//! judged, the assembly made ahead taken over when it is their start, the rest copied and
//! hashed on two threads, the commit; and a completion sent again while one runs, which waits
//! for it and gets its answer (a client whose read timed out and that retries).

use super::in_place::Whole;
use super::*;

impl LocalMultiparts {
    pub(super) fn complete_now(
        &self,
        id: UploadId,
        listed: &[CompletePart],
        checksum: Option<&ObjectChecksum>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Completed, MultipartError> {
        let Some((dir, upload)) = self.claim(id)? else {
            return self.completed_before(id, listed);
        };
        let _claim = Claim { parts: self, id };
        self.assemble(id, dir, upload, listed, checksum, check)
    }

    /// Claims upload `id` for a completion: its directory and record, or `None` if it is no
    /// more (completed, aborted). While another completion of it runs (a client's retry after
    /// its read timed out), waits for that one's end: then it is completed (and this one gets
    /// the same answer from its record) or refused and still there (and this one tries).
    fn claim(&self, id: UploadId) -> Result<Option<(DirHandle, MultipartUpload)>, MultipartError> {
        let mut inner = self.lock();
        loop {
            let opened = match self.open_upload(id) {
                Ok(opened) => opened,
                Err(MultipartError::NoSuchUpload) => return Ok(None),
                Err(e) => return Err(e),
            };
            if inner.completing.insert(id) {
                return Ok(Some(opened));
            }
            #[cfg(test)]
            self.waiting.fetch_add(1, Ordering::Relaxed);
            inner = self
                .completed
                .wait(inner)
                .unwrap_or_else(|e| e.into_inner());
            #[cfg(test)]
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The completion of a claimed upload (`listed` judged, the object assembled and
    /// committed, the upload's records replaced by its `done` record).
    pub(super) fn assemble(
        &self,
        id: UploadId,
        dir: DirHandle,
        upload: MultipartUpload,
        listed: &[CompletePart],
        checksum: Option<&ObjectChecksum>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Completed, MultipartError> {
        #[cfg(test)]
        self.whole.store(false, Ordering::Relaxed);
        let mut data_names = Vec::with_capacity(listed.len());
        let mut failed = None;
        let parts = select_parts(listed, |n| match read_part(&dir, n) {
            Ok(Some((part, data))) => {
                data_names.push((n, data));
                Some(part)
            }
            Ok(None) => None,
            Err(e) => {
                failed.get_or_insert(e);
                None
            }
        });
        if let Some(e) = failed {
            return Err(e.into());
        }
        let parts = parts?;
        // Parts in place whose file is gone: an earlier completion stored the object but could
        // not record it. The upload is completed, and goes as the record would have taken it.
        let in_place = data_names
            .iter()
            .any(|(_, d)| in_place::offset_of(d).is_some());
        if in_place && in_place::file_gone(&dir)? {
            self.drop_upload(self.lock(), id)?;
            return Err(MultipartError::NoSuchUpload);
        }
        check_part_checksums(&parts, checksum)?;
        let total = parts.iter().map(|p| p.size).sum::<u64>();
        // Checked at creation, so it is the object's (an old record's error: none).
        let object_meta = upload
            .meta
            .completed_object_meta(parts.iter().map(|p| p.size), checksum)
            .ok()
            .filter(|meta| !meta.is_empty());
        // The parts written in place fill the upload's file: it is the object.
        if let Some(whole) = self.whole_file(id, &dir, &upload, (&parts, &data_names), total)? {
            return self.commit_whole(id, dir, upload, whole, parts, object_meta, check);
        }
        // The assembly made while the parts arrived, if it is the start of these parts: the
        // object's first bytes, already copied and hashed.
        let ahead = self.lock().ahead.remove(&id);
        let resumed = ahead
            .and_then(|ahead| ahead.take())
            .filter(|assembly| assembly.starts(&data_names))
            .and_then(|assembly| Some((assembly.object?, assembly.hashers, assembly.parts)));
        let (mut object, hashers, done) = match resumed {
            Some((mut object, hashers, done)) => {
                if let Some(meta) = &object_meta {
                    object.write_object_meta(meta)?;
                }
                (object, hashers, done.len())
            }
            None => {
                let options = UploadOptions {
                    hash: true,
                    expected_digest: None,
                    expected_len: Some(total),
                    object_meta,
                };
                let object = self.store.begin(&upload.key, options)?;
                let hashers = object.commit_hashers();
                (object, hashers, 0)
            }
        };
        #[cfg(test)]
        self.resumed
            .store(done, std::sync::atomic::Ordering::Relaxed);
        if let Some(media_type) = &upload.meta.media_type {
            object.set_media_type(media_type);
        }
        let rest = &parts[done..];
        // Every remaining part's bytes, opened before a byte is copied.
        let mut sources = Vec::with_capacity(rest.len());
        for (_, data) in &data_names[done..] {
            sources.push(open_data(&dir, data).map_err(io_err("open part"))?);
        }
        let stop = AtomicBool::new(false);
        let digests = std::thread::scope(|scope| {
            // The object's digests from the parts, on a second thread while this one copies
            // them: both read the same cached pages, so the assembly takes the longer of the
            // two instead of their sum, and commit reads nothing back. Without a thread (none
            // could start), commit reads the assembled file back, as for any external write.
            // ALLOCATION: the thread (its stack), once per completion.
            let hashing = (!hashers.is_empty())
                .then(|| {
                    std::thread::Builder::new()
                        .name("weir-assemble-hash".into())
                        .spawn_scoped(scope, || hash_parts(&sources, rest, hashers, &stop))
                        .ok()
                })
                .flatten();
            let copied = copy_parts(&sources, rest, &mut object);
            if copied.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            let digests = hashing.and_then(|h| h.join().ok()).and_then(Result::ok);
            copied.map(|()| digests)
        })?;
        if let Some(digests) = digests {
            object.supply_digests(digests);
        }
        // The commit fsyncs and renames the object over the key if the check accepts the
        // version there (under the commit lock).
        let committed = match check {
            Some(check) => object.commit_if(check)?,
            None => object.commit()?,
        };
        Ok(self.recorded(id, &dir, committed, parts, upload))
    }

    /// The object's upload over the upload's own file, when the listed parts fill it from its
    /// start (`in_place.rs`), and where the parts in place end when the last part was copied
    /// after them; `None`: the parts are copied.
    fn whole_file(
        &self,
        id: UploadId,
        dir: &DirHandle,
        upload: &MultipartUpload,
        (parts, data): (&[PartRecord], &[(u32, String)]),
        total: u64,
    ) -> Result<Option<(Upload, Option<u64>)>, StoreError> {
        let appended = match self.take_whole(id, parts, data) {
            Whole::No => return Ok(None),
            Whole::Yes => None,
            Whole::LastAt(end) => Some(end),
        };
        let file = dir
            .open_rw(in_place::OBJECT_FILE)
            .map_err(io_err("open multipart file"))?;
        if let (Some(end), Some(last), Some((_, last_data))) = (appended, parts.last(), data.last())
        {
            // No record names bytes past the parts in place (`take_whole`): cut them, then the
            // last part after them. COPY: inside the kernel, one short part.
            file.set_len(end).map_err(io_err("cut multipart file"))?;
            let (source, from) = open_data(dir, last_data).map_err(io_err("open part"))?;
            let (_, n) = sys::copy_file_at((&source, from), (&file, end), last.size)
                .map_err(io_err("assemble parts"))?;
            if n != last.size {
                return Ok(None);
            }
        }
        let len = file.metadata().map_err(io_err("stat"))?.len();
        // Bytes past the parts (a part not listed, a slot given up): they are not the object's.
        if len != total {
            return Ok(None);
        }
        // The parts hashed while they arrived, if they are the start of these: the rest is
        // hashed here (a copy ahead, from an earlier part 1, is dropped).
        let ahead = self.lock().ahead.remove(&id);
        let hashed = ahead
            .and_then(|ahead| ahead.take())
            .filter(|assembly| assembly.object.is_none() && assembly.starts(data))
            .map(|assembly| (assembly.hashers, assembly.end, assembly.parts.len()));
        #[cfg(test)]
        self.resumed.store(
            hashed.as_ref().map_or(0, |(_, _, n)| *n),
            std::sync::atomic::Ordering::Relaxed,
        );
        let mut object = self.adopt_whole(dir, &upload.key, file, total)?;
        if let Some((mut hashers, end, _)) = hashed {
            // ALLOCATION: one read buffer per completion; COPY: page cache → buffer, the rest's
            // one pass for the SHA-256.
            let mut buf = vec![0u8; READ_BACK_BUF];
            let file = object.file_mut();
            match hash_part((file, end), total - end, &mut hashers, &mut buf) {
                Ok(()) => object.supply_digests(hashers.finish()),
                Err(e) => {
                    let _ = object.abort();
                    return Err(StoreError::from_io("read back for digest", e));
                }
            }
        }
        Ok(Some((object, appended)))
    }

    /// Commits the upload's own file as the object (`whole_file`): its metadata and media type
    /// given, its SHA-256 read back once by the commit, nothing copied.
    #[allow(clippy::too_many_arguments)]
    fn commit_whole(
        &self,
        id: UploadId,
        dir: DirHandle,
        upload: MultipartUpload,
        (mut object, appended): (Upload, Option<u64>),
        parts: Vec<PartRecord>,
        object_meta: Option<crate::ObjectMeta>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Completed, MultipartError> {
        #[cfg(test)]
        self.whole.store(true, Ordering::Relaxed);
        // Refused, the file goes back to the parts in place: a copy of the last part after
        // them is no record's, and would stay there uncharged.
        let refused = |e: StoreError| {
            if let (Some(end), Ok(file)) = (appended, dir.open_rw(in_place::OBJECT_FILE)) {
                let _ = file.set_len(end);
            }
            MultipartError::from(e)
        };
        if let Some(meta) = &object_meta {
            if let Err(e) = object.write_object_meta(meta) {
                let _ = object.abort();
                return Err(refused(e));
            }
        }
        if let Some(media_type) = &upload.meta.media_type {
            object.set_media_type(media_type);
        }
        let committed = match check {
            Some(check) => object.commit_if(check),
            None => object.commit(),
        }
        .map_err(refused)?;
        // The object's file no longer belongs to the upload: gone from it at once, so that
        // nothing done to the upload later (a part's range given back, were the completion's
        // record to fail) can reach the object's bytes.
        let _ = dir.unlink(in_place::OBJECT_FILE);
        Ok(self.recorded(id, &dir, committed, parts, upload))
    }

    /// The completion, recorded in place of the upload (`finish`).
    fn recorded(
        &self,
        id: UploadId,
        dir: &DirHandle,
        committed: crate::Committed,
        parts: Vec<PartRecord>,
        upload: MultipartUpload,
    ) -> Completed {
        let done = Completed {
            committed,
            parts,
            upload,
            repeated: false,
        };
        let mut inner = self.lock();
        inner.slots.remove(&id);
        // The object is stored: a failure to record it leaves the upload to the sweep (or to
        // a completion sent again, which stores the same object again).
        let _ = self.finish(dir, &done);
        drop(inner);
        done
    }

    /// Replaces a completed upload's records and parts with its `done` record. Call with the
    /// lock held.
    fn finish(&self, dir: &DirHandle, done: &Completed) -> Result<(), StoreError> {
        write_record(dir, DONE_RECORD, &record::encode_done(done))?;
        match dir.unlink(UPLOAD_RECORD) {
            Ok(()) => self.shared.usage.release(ENTRY_COST),
            Err(e) if crate::tree::is_absent(&e) => {}
            Err(e) => return Err(StoreError::from_io("remove multipart record", e)),
        }
        let freed = remove_dir_files(dir, Some(DONE_RECORD))?;
        self.shared.usage.release(freed);
        dir.sync().map_err(io_err("sync multipart upload"))
    }

    /// A completion of an upload that is no more: the same answer again if it was completed
    /// with these parts, else `NoSuchUpload`.
    fn completed_before(
        &self,
        id: UploadId,
        listed: &[CompletePart],
    ) -> Result<Completed, MultipartError> {
        let dir = match self.dir.open_dir(&id.to_string()) {
            Ok(dir) => dir,
            Err(e) if crate::tree::is_absent(&e) => return Err(MultipartError::NoSuchUpload),
            Err(e) => return Err(StoreError::from_io("open multipart upload", e).into()),
        };
        match read_text(&dir, DONE_RECORD)?.and_then(|t| decode_done(id, &t)) {
            Some(done) if same_parts(&done, listed) => Ok(done),
            _ => Err(MultipartError::NoSuchUpload),
        }
    }
}

/// Frees an upload being completed when dropped, and wakes the completions waiting for it.
pub(in crate::multipart) struct Claim<'a> {
    pub(super) parts: &'a LocalMultiparts,
    pub(super) id: UploadId,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.parts.lock().completing.remove(&self.id);
        self.parts.completed.notify_all();
    }
}

/// Copies each part's bytes into `object`, in order, after what it holds.
fn copy_parts(
    sources: &[(std::fs::File, u64)],
    parts: &[PartRecord],
    object: &mut Upload,
) -> Result<(), MultipartError> {
    for ((source, from), part) in sources.iter().zip(parts) {
        copy_part((source, *from), part.size, object)?;
    }
    Ok(())
}

/// Appends a part's `size` bytes (from `from` in `source`) to `object`.
pub(in crate::multipart) fn copy_part(
    (source, from): (&std::fs::File, u64),
    size: u64,
    object: &mut Upload,
) -> Result<(), StoreError> {
    object.reserve_next(size)?;
    // COPY: inside the kernel (`copy_file_range`, blocks shared where the filesystem can),
    // never through user space.
    let at = object.size();
    let copied = sys::copy_file_at((source, from), (object.file_mut(), at), size);
    let (_, n) = copied.map_err(|e| StoreError::from_io("assemble parts", e))?;
    if n != size {
        return Err(StoreError::LengthMismatch {
            expected: size,
            actual: n,
        });
    }
    object.record_external_write(n)
}

/// The digests of the parts' bytes, in order, after what `hashers` saw: the assembled
/// object's. Gives up (an error) when `stop` is set, at the next part.
fn hash_parts(
    sources: &[(std::fs::File, u64)],
    parts: &[PartRecord],
    mut hashers: Hashers,
    stop: &AtomicBool,
) -> io::Result<Digests> {
    // ALLOCATION: one read buffer per completion.
    let mut buf = vec![0u8; READ_BACK_BUF];
    for ((source, from), part) in sources.iter().zip(parts) {
        if stop.load(Ordering::Relaxed) {
            return Err(io::Error::other("assembly failed"));
        }
        hash_part((source, *from), part.size, &mut hashers, &mut buf)?;
    }
    Ok(hashers.finish())
}

/// Hashes a part's `size` bytes (from `from` in `source`), read through `buf`.
pub(in crate::multipart) fn hash_part(
    (source, from): (&std::fs::File, u64),
    size: u64,
    hashers: &mut Hashers,
    buf: &mut [u8],
) -> io::Result<()> {
    // COPY: page cache → buffer, the one pass the object's SHA-256 needs, since its bytes
    // are copied inside the kernel.
    read_range(source, from, size, buf, |bytes| hashers.update(bytes))
}
