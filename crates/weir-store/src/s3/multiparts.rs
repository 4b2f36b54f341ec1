//! [`S3Multiparts`]: multipart uploads ([`MultipartStore`], `multipart/`) over a bucket. It
//! lives here, beside the S3 client it uses (signing, the commit's conditional write and lock,
//! the backend's own multipart requests); the rules every store shares are `multipart/`'s.
//!
//! Objects, under `{prefix}.weir-multipart/{id}/` (never listed or served, as `.weir-uploads/`):
//! - `upload`: the upload's record (`multipart/record.rs`), created with `If-None-Match: *`;
//! - `{n}.rec`: part `n`'s record (size, ETag, checksums, the key of its data);
//! - `{n}-{nonce}.part`: a part's bytes, written by an ordinary [`S3Upload`] (one `PutObject`,
//!   or the backend's multipart upload past a part size: memory bounded as any upload), a fresh
//!   key per upload of the part. The record's `PutObject` is the replacement (atomic in S3);
//!   the data the previous record named is then deleted.
//!
//! A part's ETag is the route's (`multipart/part_tag.rs`: the MD5 the client sent, else the
//! bytes' CRC-64, computed as they pass through weir on their way to the bucket) or, when not
//! given, its CRC tag read back with a `GetObject`.
//!
//! **Completion**: the listed parts judged (`multipart/validate.rs`); the object's SHA-256
//! computed by reading the parts back in order (`GetObject`s, chunk by chunk: the one read pass
//! a bucket needs, since SHA-256 cannot be combined from the parts'); then the backend's own
//! multipart upload of the key, created with the media type, the user metadata and the
//! SHA-256 (`x-amz-meta-weir-sha256`), filled by `UploadPartCopy` of each part's data
//! (server-side: no byte through weir), and completed through the store's commit
//! (`write_checked`: the caller's check on a `HeadObject`, `If-None-Match: *` / `If-Match`,
//! the commit lock): nothing is visible before that completion, which S3 makes atomic. Any
//! failure aborts the backend's upload and keeps weir's (the client may complete it again).
//!
//! **UploadPartCopy** of a stored object's range streams it through weir (a `GetObject` into
//! the part's upload): a part is always an object of its own under the upload's prefix.
//!
//! **Sweep**: every key under `.weir-multipart/` listed (every page), grouped by upload; an
//! upload whose newest object is older than the age given is deleted whole (the record first).

use super::upload::{Late, ObjectWrite, S3Upload};
use super::*;
use crate::ObjectChecksum;
use crate::UploadId;
use crate::multipart::record::{
    self, data_name, decode_done, decode_part, decode_upload, record_number, same_parts,
};
use crate::multipart::{
    CompletePart, Completed, MAX_PART_SIZE, MultipartError, MultipartMeta, MultipartStore,
    MultipartUpload, PartRecord, PartSeal, PartTagHasher, PartsPage, UploadsPage,
    check_part_checksums, check_part_number, select_parts,
};
use std::collections::BTreeMap;

/// The area's directory under the store's prefix.
const AREA: &str = ".weir-multipart/";

/// Multipart uploads in a bucket (see the module doc). Cheap to clone.
#[derive(Clone, Debug)]
pub struct S3Multiparts {
    store: S3Store,
}

fn random_id() -> Result<UploadId, StoreError> {
    UploadId::random().map_err(|e| StoreError::from_io("random id", e))
}

impl S3Multiparts {
    /// Multipart uploads over `store`'s bucket and prefix.
    pub fn new(store: S3Store) -> S3Multiparts {
        S3Multiparts { store }
    }

    /// The store the uploads complete into.
    pub fn store(&self) -> &S3Store {
        &self.store
    }

    fn area(&self) -> String {
        format!("{}{AREA}", self.store.inner.prefix)
    }

    fn dir(&self, id: UploadId) -> String {
        format!("{}{id}/", self.area())
    }

    /// Every key under `.weir-multipart/` (tests, operators).
    pub async fn stored_keys(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .list_all(&self.area())
            .await?
            .into_iter()
            .map(|(k, _, _)| k)
            .collect())
    }

    /// A small object's text; `None` when absent.
    async fn get_text(&self, key: &str) -> Result<Option<String>, StoreError> {
        let s = &self.store;
        let url = s
            .inner
            .bucket
            .get_object(Some(&s.inner.credentials), key)
            .sign(SIGNED_FOR);
        let resp = s
            .send("read multipart record", Method::GET, url, &[], Bytes::new())
            .await?;
        match resp.status() {
            StatusCode::NOT_FOUND => Ok(None),
            st if st.is_success() => {
                let body = collect("read multipart record", resp).await?;
                Ok(String::from_utf8(body.to_vec()).ok())
            }
            _ => Err(failure("read multipart record", resp).await),
        }
    }

    async fn delete_key(&self, key: &str) -> Result<(), StoreError> {
        let s = &self.store;
        let url = s
            .inner
            .bucket
            .delete_object(Some(&s.inner.credentials), key)
            .sign(SIGNED_FOR);
        let resp = s
            .send(
                "delete multipart object",
                Method::DELETE,
                url,
                &[],
                Bytes::new(),
            )
            .await?;
        if resp.status().is_success() || resp.status() == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(failure("delete multipart object", resp).await)
        }
    }

    /// Every key under `prefix` with its size and time, every page read before the caller
    /// acts (its deletes never move a page under the listing).
    async fn list_all(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, u64, Option<SystemTime>)>, StoreError> {
        let i = &self.store.inner;
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut action = i.bucket.list_objects_v2(Some(&i.credentials));
            action.with_prefix(prefix);
            action.with_max_keys(i.list_page);
            if let Some(t) = &token {
                action.with_continuation_token(t.as_str());
            }
            let parsed = self
                .store
                .list_objects("list multipart objects", action)
                .await?;
            let more = !parsed.contents.is_empty();
            keys.extend(parsed.contents.into_iter().map(|c| {
                let at = super::list::parse_iso8601(&c.last_modified);
                (c.key, c.size, at)
            }));
            match parsed.next_continuation_token {
                Some(t) if more => token = Some(t),
                _ => return Ok(keys),
            }
        }
    }

    async fn read_upload(&self, id: UploadId) -> Result<MultipartUpload, MultipartError> {
        let key = format!("{}upload", self.dir(id));
        self.get_text(&key)
            .await?
            .and_then(|t| decode_upload(id, &t))
            .ok_or(MultipartError::NoSuchUpload)
    }

    async fn read_part(
        &self,
        id: UploadId,
        number: u32,
    ) -> Result<Option<(PartRecord, String)>, StoreError> {
        let key = format!("{}{number}.rec", self.dir(id));
        Ok(self
            .get_text(&key)
            .await?
            .and_then(|t| decode_part(number, &t)))
    }

    /// An object's bytes in `range`, chunk by chunk, to `each` (a read-back: MD5, SHA-256).
    async fn read_back(
        &self,
        key: &str,
        range: Range<u64>,
        mut each: impl FnMut(&[u8]),
    ) -> Result<u64, StoreError> {
        let Some(head) = self.store.head_raw(key).await? else {
            return Err(StoreError::NotFound);
        };
        let object = read::S3Object {
            store: self.store.clone(),
            key: key.to_owned(),
            head,
        };
        let mut reader = object.read(range).await?;
        let mut n = 0u64;
        // COPY: none here; each chunk is hyper's frame, hashed where it lies.
        while let Some(chunk) = reader.next_chunk().await? {
            each(&chunk);
            n += chunk.len() as u64;
        }
        Ok(n)
    }

    /// Deletes every object of upload `id`, its record first (so that a failure midway
    /// leaves no upload, and objects the sweep removes).
    async fn remove(&self, id: UploadId) -> Result<(), StoreError> {
        let dir = self.dir(id);
        let record = format!("{dir}upload");
        self.delete_key(&record).await?;
        for (key, size, _) in self.list_all(&dir).await? {
            self.delete_key(&key).await?;
            if key.ends_with(".part") {
                self.store.note_deleted(size);
            }
        }
        Ok(())
    }

    /// Replaces a completed upload's objects with its `done` record (kept for a completion
    /// sent again, until the sweep): the record written first, then the upload's record, then
    /// its parts deleted.
    async fn finish(&self, id: UploadId, done: &Completed) -> Result<(), StoreError> {
        let dir = self.dir(id);
        let text = Bytes::from(record::encode_done(done));
        let resp = self
            .store
            .put_small(&format!("{dir}done"), NO_HEADERS, text)
            .await?;
        check_write("record a completed multipart upload", resp).await?;
        self.delete_key(&format!("{dir}upload")).await?;
        for (key, size, _) in self.list_all(&dir).await? {
            if key.ends_with("/done") {
                continue;
            }
            self.delete_key(&key).await?;
            if key.ends_with(".part") {
                self.store.note_deleted(size);
            }
        }
        Ok(())
    }

    /// `UploadPartCopy` of the whole object `source` as part `number` of the backend's
    /// multipart upload `upload_id` of `key`: its S3 ETag.
    async fn upload_part_copy(
        &self,
        key: &str,
        upload_id: &str,
        number: u16,
        source: &str,
    ) -> Result<String, StoreError> {
        let i = &self.store.inner;
        let copy_source = copy::copy_source(i.bucket.name(), source);
        let mut action = i
            .bucket
            .upload_part(Some(&i.credentials), key, number, upload_id);
        action
            .headers_mut()
            .insert("x-amz-copy-source", copy_source.as_str());
        let url = action.sign(SIGNED_FOR);
        let headers = [("x-amz-copy-source", copy_source.as_str())];
        let resp = self
            .store
            .send("upload part copy", Method::PUT, url, &headers, Bytes::new())
            .await?;
        let status = resp.status();
        let body = collect("upload part copy", resp).await?;
        if !status.is_success() || body.windows(7).any(|w| w == b"<Error>") {
            return Err(write_failure("upload part copy", status, &body));
        }
        upload::completion_etag(&body).ok_or_else(|| StoreError::Backend {
            op: "upload part copy",
            message: "no ETag in the answer".into(),
        })
    }

    async fn assemble(
        &self,
        upload: &MultipartUpload,
        parts: &[(PartRecord, String)],
        checksum: Option<&ObjectChecksum>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Committed, StoreError> {
        use sha2::Digest;
        let total: u64 = parts.iter().map(|(p, _)| p.size).sum();
        // One read pass for the SHA-256 (see the module doc), bounded by a chunk.
        let mut sha = sha2::Sha256::new();
        for (part, data) in parts {
            let n = self
                .read_back(data, 0..part.size, |chunk| sha.update(chunk))
                .await?;
            if n != part.size {
                return Err(StoreError::LengthMismatch {
                    expected: part.size,
                    actual: n,
                });
            }
        }
        let sha256: [u8; 32] = sha.finalize().into();
        let key = self.store.key(&upload.key);
        let mut headers: Vec<(&'static str, String)> = vec![(SHA256_META, super::hex(&sha256))];
        if let Some(media_type) = &upload.meta.media_type {
            headers.push(("content-type", media_type.as_str().to_owned()));
        }
        // The S3 metadata (`meta.rs`): the header names are built per name, so they are
        // leaked-free `String`s signed one by one below. Checked at creation (an old
        // record's error: none).
        let user: Vec<(String, String)> = upload
            .meta
            .completed_object_meta(parts.iter().map(|(p, _)| p.size), checksum)
            .iter()
            .flat_map(super::meta::headers)
            .map(|(n, v)| (n.into_owned(), v))
            .collect();
        let upload_id = self.create_backend_upload(&key, &headers, &user).await?;
        let copied = async {
            let mut etags = Vec::with_capacity(parts.len());
            for (i, (_, data)) in parts.iter().enumerate() {
                let number = u16::try_from(i + 1).map_err(|_| StoreError::Backend {
                    op: "upload part copy",
                    message: "more than 65535 parts".into(),
                })?;
                etags.push(
                    self.upload_part_copy(&key, &upload_id, number, data)
                        .await?,
                );
            }
            Ok::<_, StoreError>(etags)
        }
        .await;
        let reserved = total.saturating_add(ENTRY_COST);
        let written = match copied {
            Ok(etags) => match self.store.inner.usage.reserve(reserved) {
                Ok(()) => {
                    let write = ObjectWrite::Complete {
                        upload_id: &upload_id,
                        etags: etags.iter().map(String::as_str).collect(),
                    };
                    let written = self.store.write_checked(&key, check, write).await;
                    if written.is_err() {
                        self.store.inner.usage.release(reserved);
                    }
                    written
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        let written = match written {
            Ok(w) => w,
            Err(e) => {
                let _ = abort_request(&self.store, &key, &upload_id).await;
                return Err(e);
            }
        };
        self.store.note_committed(reserved, written.replaced);
        let stored = self
            .store
            .committed_meta(
                &key,
                total,
                Some(sha256),
                Some(sha256),
                written.etag.as_deref(),
                Late::default(),
            )
            .await?;
        Ok(Committed {
            size: total,
            sha256: Some(sha256),
            replaced: written.replaced.is_some(),
            stored,
        })
    }

    /// `CreateMultipartUpload` of `key` with `headers` and the user metadata `user`.
    async fn create_backend_upload(
        &self,
        key: &str,
        headers: &[(&'static str, String)],
        user: &[(String, String)],
    ) -> Result<String, StoreError> {
        if user.is_empty() {
            return create_multipart_request(&self.store, key, headers).await;
        }
        let i = &self.store.inner;
        let mut action = i.bucket.create_multipart_upload(Some(&i.credentials), key);
        for (k, v) in headers {
            action.headers_mut().insert(*k, v.as_str());
        }
        for (k, v) in user {
            action.headers_mut().insert(k.as_str(), v.as_str());
        }
        let url = action.sign(SIGNED_FOR);
        let mut pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        pairs.extend(user.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let resp = self
            .store
            .send(
                "create multipart upload",
                Method::POST,
                url,
                &pairs,
                Bytes::new(),
            )
            .await?;
        if !resp.status().is_success() {
            return Err(failure("create multipart upload", resp).await);
        }
        let body = collect("create multipart upload", resp).await?;
        let parsed =
            rusty_s3::actions::CreateMultipartUpload::parse_response(&body).map_err(|e| {
                StoreError::Backend {
                    op: "create multipart upload",
                    message: e.to_string(),
                }
            })?;
        Ok(parsed.upload_id().to_owned())
    }
}

impl MultipartStore for S3Multiparts {
    type Upload = S3Upload;

    async fn create(
        &self,
        key: &StorePath,
        meta: MultipartMeta,
    ) -> Result<MultipartUpload, MultipartError> {
        record::check_recordable(&meta)?;
        let upload = MultipartUpload {
            id: random_id()?,
            key: key.clone(),
            initiated: record::now(),
            meta,
        };
        let record_key = format!("{}upload", self.dir(upload.id));
        let headers = [("if-none-match", "*".to_owned())];
        let body = Bytes::from(record::encode_upload(&upload));
        let resp = self.store.put_small(&record_key, &headers, body).await?;
        check_write("create multipart upload record", resp).await?;
        Ok(upload)
    }

    async fn upload(&self, id: UploadId) -> Result<MultipartUpload, MultipartError> {
        self.read_upload(id).await
    }

    async fn begin_part(
        &self,
        id: UploadId,
        number: u32,
        expected_len: Option<u64>,
    ) -> Result<S3Upload, MultipartError> {
        check_part_number(number)?;
        if expected_len.is_some_and(|n| n > MAX_PART_SIZE) {
            return Err(MultipartError::EntityTooLarge);
        }
        self.read_upload(id).await?;
        let key = format!("{}{}", self.dir(id), data_name(number, random_id()?));
        let options = UploadOptions {
            // A part's own digest is its tag (the route's, or read back); the object's SHA-256 is
            // computed at completion.
            hash: false,
            expected_digest: None,
            expected_len,
            object_meta: None,
        };
        Ok(self.store.begin_key(key, false, options, None)?)
    }

    async fn finish_part(
        &self,
        id: UploadId,
        number: u32,
        upload: S3Upload,
        seal: PartSeal,
    ) -> Result<PartRecord, MultipartError> {
        check_part_number(number)?;
        if upload.size > MAX_PART_SIZE {
            return Err(MultipartError::EntityTooLarge);
        }
        let data = upload.key.clone();
        let dir = self.dir(id);
        if data
            .strip_prefix(&dir)
            .is_none_or(|d| !record::is_data_name(number, d))
        {
            return Err(MultipartError::InvalidPart(number));
        }
        let committed = upload.commit(None).await?;
        let recorded = async {
            let tag = match seal.tag {
                Some(tag) => tag,
                None => {
                    let mut hasher = PartTagHasher::default();
                    self.read_back(&data, 0..committed.size, |c| hasher.update(c))
                        .await?;
                    hasher.finish()
                }
            };
            let part = PartRecord {
                number,
                size: committed.size,
                tag,
                checksums: seal.checksums,
                modified: record::now(),
            };
            // An upload aborted (or completed) meanwhile takes no part.
            self.read_upload(id).await?;
            let previous = self.read_part(id, number).await?;
            let rec = format!("{dir}{number}.rec");
            let name = &data[dir.len()..];
            let body = Bytes::from(record::encode_part(&part, name));
            let resp = self.store.put_small(&rec, NO_HEADERS, body).await?;
            check_write("record multipart part", resp).await?;
            if let Some((old, old_data)) = previous {
                if old_data != name {
                    self.delete_key(&format!("{dir}{old_data}")).await?;
                    self.store.note_deleted(old.size);
                }
            }
            Ok::<_, MultipartError>(part)
        }
        .await;
        if recorded.is_err() {
            let _ = self.delete_key(&data).await;
            self.store.note_deleted(committed.size);
        }
        recorded
    }

    async fn copy_part(
        &self,
        id: UploadId,
        number: u32,
        from: &StorePath,
        range: Option<Range<u64>>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<PartRecord, MultipartError> {
        check_part_number(number)?;
        let source = self.store.open(from).await?;
        if let Some(check) = check {
            if !check(Some(source.meta())) {
                return Err(StoreError::PreconditionFailed.into());
            }
        }
        let size = source.meta().size;
        let range = range.unwrap_or(0..size);
        if range.start > range.end || range.end > size {
            return Err(MultipartError::InvalidRange);
        }
        let len = range.end - range.start;
        let mut upload = self.begin_part(id, number, Some(len)).await?;
        let mut tag = PartTagHasher::default();
        // The source version pinned by its ETag (`If-Match`): a replaced source fails.
        let mut reader = source.read(range).await?;
        while let Some(chunk) = reader.next_chunk().await? {
            tag.update(&chunk);
            // COPY: into the part's buffer, as any upload's bytes.
            upload.write(&chunk).await?;
        }
        let seal = PartSeal {
            tag: Some(tag.finish()),
            checksums: Vec::new(),
        };
        self.finish_part(id, number, upload, seal).await
    }

    async fn list_parts(
        &self,
        id: UploadId,
        after: u32,
        limit: usize,
    ) -> Result<PartsPage, MultipartError> {
        let upload = self.read_upload(id).await?;
        let dir = self.dir(id);
        let mut numbers: Vec<u32> = self
            .list_all(&dir)
            .await?
            .iter()
            .filter_map(|(k, _, _)| k.strip_prefix(&dir).and_then(record_number))
            .filter(|&n| n > after)
            .collect();
        numbers.sort_unstable();
        let truncated = numbers.len() > limit;
        let mut parts = Vec::with_capacity(numbers.len().min(limit));
        for number in numbers.into_iter().take(limit) {
            if let Some((part, _)) = self.read_part(id, number).await? {
                parts.push(part);
            }
        }
        Ok(PartsPage {
            upload,
            parts,
            truncated,
        })
    }

    async fn list_uploads(
        &self,
        prefix: &str,
        after: Option<(&str, Option<UploadId>)>,
        limit: usize,
    ) -> Result<UploadsPage, MultipartError> {
        let area = self.area();
        // ALLOCATION: every upload's record is read to sort them by key (the uploads in
        // progress, which the sweep bounds in time).
        let mut uploads = Vec::new();
        for (key, _, _) in self.list_all(&area).await? {
            let Some(id) = key
                .strip_prefix(&area)
                .and_then(|rest| rest.strip_suffix("/upload"))
                .and_then(UploadId::parse)
            else {
                continue;
            };
            let upload = match self.read_upload(id).await {
                Ok(upload) => upload,
                Err(MultipartError::NoSuchUpload) => continue,
                Err(e) => return Err(e),
            };
            let key = upload.key.as_str();
            let after_marker = match after {
                None => true,
                Some((k, None)) => key > k,
                Some((k, Some(m))) => (key, upload.id.to_string()) > (k, m.to_string()),
            };
            if key.starts_with(prefix) && after_marker {
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

    async fn abort(&self, id: UploadId) -> Result<(), MultipartError> {
        self.read_upload(id).await?;
        Ok(self.remove(id).await?)
    }

    async fn complete(
        &self,
        id: UploadId,
        listed: &[CompletePart],
        checksum: Option<&ObjectChecksum>,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Completed, MultipartError> {
        let upload = match self.read_upload(id).await {
            Ok(upload) => upload,
            // Completed before: the same answer again if with these parts.
            Err(MultipartError::NoSuchUpload) => {
                let done = self.get_text(&format!("{}done", self.dir(id))).await?;
                return match done.and_then(|t| decode_done(id, &t)) {
                    Some(done) if same_parts(&done, listed) => Ok(done),
                    _ => Err(MultipartError::NoSuchUpload),
                };
            }
            Err(e) => return Err(e),
        };
        // ALLOCATION: the named parts' records (at most 10,000), read one request each.
        let mut records = BTreeMap::new();
        for entry in listed {
            if check_part_number(entry.number).is_ok() && !records.contains_key(&entry.number) {
                if let Some(found) = self.read_part(id, entry.number).await? {
                    records.insert(entry.number, found);
                }
            }
        }
        let parts = select_parts(listed, |n| records.get(&n).map(|(p, _)| p.clone()))?;
        check_part_checksums(&parts, checksum)?;
        let dir = self.dir(id);
        let with_data: Vec<(PartRecord, String)> = parts
            .iter()
            .map(|p| (p.clone(), format!("{dir}{}", records[&p.number].1)))
            .collect();
        let committed = self.assemble(&upload, &with_data, checksum, check).await?;
        let done = Completed {
            committed,
            parts,
            upload,
            repeated: false,
        };
        // The object is stored: a failure to record it leaves the upload to the sweep.
        let _ = self.finish(id, &done).await;
        Ok(done)
    }

    async fn sweep(&self, older_than: Duration) -> Result<u64, StoreError> {
        let area = self.area();
        let cutoff = SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(UNIX_EPOCH);
        // The newest object of each upload.
        let mut newest: BTreeMap<UploadId, Option<SystemTime>> = BTreeMap::new();
        for (key, _, at) in self.list_all(&area).await? {
            let Some(id) = key
                .strip_prefix(&area)
                .and_then(|rest| rest.split_once('/'))
                .and_then(|(id, _)| UploadId::parse(id))
            else {
                continue;
            };
            let entry = newest.entry(id).or_insert(at);
            *entry = (*entry).max(at);
        }
        let mut removed = 0;
        for (id, at) in newest {
            // An object with no parseable time is left alone.
            if at.is_some_and(|t| t <= cutoff) {
                self.remove(id).await?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}
