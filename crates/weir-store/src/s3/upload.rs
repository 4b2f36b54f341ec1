//! `S3Upload`: an upload streamed into one `PutObject` or a multipart upload with bounded parts
//! in flight (see the parent module's docs).

use super::sidecar::CHECKSUM_FOLLOWS_META;
use super::*;
use crate::{ContentDigest, DigestAlgorithm};
use std::borrow::Cow;

/// A multipart upload under way.
#[derive(Debug)]
pub(super) struct Multipart {
    pub(super) upload_id: String,
    /// Part number of the next part to send (from 1).
    pub(super) next_part: u16,
    /// Parts being sent: each task answers its part number and ETag.
    pub(super) in_flight: JoinSet<Result<(u16, String), StoreError>>,
    /// Parts sent, by number.
    pub(super) done: Vec<(u16, String)>,
    /// The SHA-256 given to `CreateMultipartUpload` as the object's metadata: the one the
    /// client announced before the body, or the one computed when every byte was written before
    /// the upload was created (a form's finished file, [`StoreUpload::finish_writes`]); `None`:
    /// the object gets a sidecar at completion.
    pub(super) sha256_meta: Option<[u8; 32]>,
    /// Created with [`CHECKSUM_FOLLOWS_META`]: a `HeadObject` reads the sidecar though the
    /// SHA-256 is in the metadata, so a checksum kept now can still go there.
    pub(super) checksum_follows: bool,
}

/// An upload to S3 (see the module doc). Dropped without commit: the multipart upload, if
/// one was begun, is aborted from a task.
#[derive(Debug)]
pub struct S3Upload {
    pub(super) store: S3Store,
    pub(super) key: String,
    pub(super) options: UploadOptions,
    pub(super) media_type: Option<MediaType>,
    pub(super) hashers: Hashers,
    /// The part being filled.
    pub(super) part: BytesMut,
    pub(super) size: u64,
    pub(super) multipart: Option<Multipart>,
    /// Bytes taken from the store's usage for this upload (see "Quota" in the module docs):
    /// given back on a drop without commit, kept as the object's on commit.
    pub(super) reserved: u64,
    /// A checksum is announced for after the body ([`StoreUpload::checksum_follows`]).
    pub(super) checksum_follows: bool,
    /// The checksum kept after the multipart upload's creation (a [`crate::CHECKSUM_FIELD`]
    /// value): written to the sidecar after the completion.
    pub(super) late_checksum: Option<String>,
}

impl S3Upload {
    /// The headers an object is created with (signed with it).
    fn creation_headers(&self, sha256: Option<&[u8; 32]>) -> Vec<(Cow<'static, str>, String)> {
        let mut h = Vec::with_capacity(2);
        if let Some(m) = &self.media_type {
            h.push(("content-type".into(), m.as_str().to_owned()));
        }
        if let Some(d) = sha256 {
            h.push((SHA256_META.into(), hex(d)));
        }
        // The S3 metadata, created with the object (or its backend multipart upload): never
        // an object without it.
        h.extend(
            self.options
                .object_meta
                .iter()
                .flat_map(super::meta::headers),
        );
        h
    }

    /// Creates the multipart upload, with the SHA-256 as metadata when it is known now: the
    /// client announced it, or (`whole`) every byte has been written.
    async fn start_multipart(&mut self, whole: bool) -> Result<(), StoreError> {
        let announced = self.options.expected_digest.as_ref().and_then(|d| d.sha256);
        // A clone of the hash state (a few hundred bytes), so the commit still finishes its own.
        let sha256 = announced.or_else(|| {
            whole
                .then(|| self.hashers.clone().finish().sha256)
                .flatten()
        });
        let mut headers = self.creation_headers(sha256.as_ref());
        // Marked only when it changes what a `HeadObject` does: without the SHA-256 the
        // sidecar is read anyway (see "Sidecars of multipart versions" in the module doc).
        let checksum_follows = self.checksum_follows && sha256.is_some();
        if checksum_follows {
            headers.push((CHECKSUM_FOLLOWS_META.into(), "1".to_owned()));
        }
        let s = &self.store;
        let upload_id = create_multipart_request(s, &self.key, &headers).await?;
        self.multipart = Some(Multipart {
            upload_id,
            next_part: 1,
            in_flight: JoinSet::new(),
            done: Vec::new(),
            sha256_meta: sha256,
            checksum_follows,
        });
        Ok(())
    }

    /// Sends the filled part from a task; first waits while `parts_in_flight` are being sent
    /// (the backpressure). `whole`: no byte follows (see [`S3Upload::start_multipart`]).
    async fn send_part(&mut self, whole: bool) -> Result<(), StoreError> {
        if self.multipart.is_none() {
            self.start_multipart(whole).await?;
        }
        let limit = self.store.inner.parts_in_flight;
        let Some(mp) = self.multipart.as_mut() else {
            unreachable!("started above")
        };
        while mp.in_flight.len() >= limit {
            join_one(mp).await?;
        }
        let number = mp.next_part;
        mp.next_part = number.checked_add(1).ok_or_else(|| StoreError::Backend {
            op: "upload part",
            message: "more than 65535 parts: raise the part size".into(),
        })?;
        // No copy: the filled buffer is frozen and sent; a new one is allocated for the next.
        let body = std::mem::take(&mut self.part).freeze();
        let store = self.store.clone();
        let key = self.key.clone();
        let upload_id = mp.upload_id.clone();
        mp.in_flight.spawn(async move {
            let etag = upload_part(store, key, upload_id, number, body).await?;
            Ok((number, etag))
        });
        Ok(())
    }

    /// Aborts the multipart upload, if one was begun (parts in flight are cancelled first).
    async fn abort_multipart(&mut self) -> Result<(), StoreError> {
        let Some(mut mp) = self.multipart.take() else {
            return Ok(());
        };
        mp.in_flight.abort_all();
        while mp.in_flight.join_next().await.is_some() {}
        abort_request(&self.store, &self.key, &mp.upload_id).await
    }

    async fn commit_inner(
        &mut self,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Committed, StoreError> {
        if let Some(expected) = self.options.expected_len {
            if expected != self.size {
                return Err(StoreError::LengthMismatch {
                    expected,
                    actual: self.size,
                });
            }
        }
        let digests = std::mem::replace(&mut self.hashers, Hashers::new(false, false)).finish();
        // The digests given at begin and those given later (a trailer) alike, before anything
        // is written.
        if let Some(expected) = &self.options.expected_digest {
            if let Some(algorithm) = digests.mismatch(expected) {
                return Err(StoreError::DigestMismatch { algorithm });
            }
        }
        if self.multipart.is_some() {
            // Every part sent before the check, so the check-to-write window stays short.
            if !self.part.is_empty() {
                self.send_part(true).await?;
            }
            if let Some(mp) = self.multipart.as_mut() {
                while !mp.in_flight.is_empty() {
                    join_one(mp).await?;
                }
            }
        }
        let store = self.store.clone();
        let (written, stored_sha256, marked) = if self.multipart.is_none() {
            // One part: a single PutObject, with the digest just computed as its metadata.
            let headers = self.creation_headers(digests.sha256.as_ref());
            // No copy: the part's bytes are the object's body.
            let body = std::mem::take(&mut self.part).freeze();
            let write = ObjectWrite::Put { headers, body };
            (
                store.write_checked(&self.key, check, write).await?,
                digests.sha256,
                false,
            )
        } else {
            let Some(mp) = self.multipart.as_mut() else {
                unreachable!("multipart checked above")
            };
            mp.done.sort_by_key(|(n, _)| *n);
            let etags = mp.done.iter().map(|(_, e)| e.as_str()).collect();
            let write = ObjectWrite::Complete {
                upload_id: &mp.upload_id,
                etags,
            };
            let written = store.write_checked(&self.key, check, write).await?;
            (written, mp.sha256_meta, mp.checksum_follows)
        };
        // Completed: nothing left to abort.
        self.multipart = None;
        let replaced = written.replaced.is_some();
        // The reservation becomes the object's; the version it replaced gives its share back.
        let taken = std::mem::take(&mut self.reserved);
        store.note_committed(taken, written.replaced);
        let stored = store
            .committed_meta(
                &self.key,
                self.size,
                stored_sha256,
                digests.sha256,
                written.etag.as_deref(),
                Late {
                    checksum: self.late_checksum.as_deref(),
                    marked,
                },
            )
            .await?;
        Ok(Committed {
            size: self.size,
            sha256: digests.sha256,
            replaced,
            stored,
        })
    }
}

/// How a commit writes its object ([`S3Store::write_checked`]).
pub(super) enum ObjectWrite<'a> {
    /// One `PutObject` of `body`, created with `headers` (its metadata, signed with it).
    Put {
        headers: Vec<(Cow<'static, str>, String)>,
        body: Bytes,
    },
    /// `CopyObject`: a `PutObject` without a body whose `headers` name the source
    /// (`x-amz-copy-source`) and the copy's metadata (signed with it).
    Copy {
        headers: Vec<(Cow<'static, str>, String)>,
    },
    /// `CompleteMultipartUpload` of `upload_id` with its parts' S3 ETags, in part order.
    Complete {
        upload_id: &'a str,
        etags: Vec<&'a str>,
    },
}

/// What a version's creation could not hold, for its sidecar ([`S3Store::committed_meta`]);
/// the default: nothing.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Late<'a> {
    /// A checksum kept after the creation (a [`crate::CHECKSUM_FIELD`] value: a trailer's).
    pub(super) checksum: Option<&'a str>,
    /// Created with [`CHECKSUM_FOLLOWS_META`]: its `HeadObject` reads the sidecar, so it gets
    /// one even without a checksum.
    pub(super) marked: bool,
}

/// What [`S3Store::write_checked`] wrote over.
pub(super) struct Written {
    /// The size of the version replaced; `None`: there was none.
    pub(super) replaced: Option<u64>,
    /// The S3 ETag the write's answer named (`PutObject`'s field, the completion's `<ETag>`):
    /// the version this write made, for the digest sidecar and for telling it from a version
    /// another node wrote since.
    pub(super) etag: Option<String>,
}

impl S3Store {
    /// The last step of every commit, a plain upload's or a resumable one's: `check` (when
    /// given) on the version at `key` now, then the write, conditional on that version
    /// (`If-None-Match: *` when the check saw none, else `If-Match` on its S3 ETag), so that a
    /// version slipping in between makes the store refuse ([`StoreError::PreconditionFailed`]).
    /// A conditional multipart completion is serialized per key through the commit lock: some
    /// stores (SeaweedFS 4.48) check a completion's condition apart from the write, so racing
    /// creators could each pass it; a single `PutObject`'s condition is atomic.
    pub(super) async fn write_checked(
        &self,
        key: &str,
        check: Option<VersionCheck<'_>>,
        write: ObjectWrite<'_>,
    ) -> Result<Written, StoreError> {
        let lock = match (check.is_some(), &write) {
            (true, ObjectWrite::Complete { .. }) => Some(self.lock(key).await?),
            _ => None,
        };
        let written = self.check_and_write(key, check, write).await;
        if let Some(lock) = lock {
            self.unlock(lock).await;
        }
        written
    }

    /// [`S3Store::write_checked`] without the lock.
    async fn check_and_write(
        &self,
        key: &str,
        check: Option<VersionCheck<'_>>,
        write: ObjectWrite<'_>,
    ) -> Result<Written, StoreError> {
        // Also for an unconditional write: `replaced` (201 or 200) comes from it.
        let current = self.head(key).await?;
        let mut condition = None;
        if let Some(check) = check {
            if !check(current.as_ref().map(|h| &h.meta)) {
                return Err(StoreError::PreconditionFailed);
            }
            condition = Some(S3Store::condition(current.as_ref()));
        }
        let etag;
        match write {
            ObjectWrite::Put { mut headers, body } => {
                headers.extend(condition.map(|(k, v)| (k.into(), v)));
                let resp = self.put_small(key, &headers, body).await?;
                etag = super::etag(&resp).map(str::to_owned);
                check_write("put object", resp).await?;
            }
            ObjectWrite::Copy { mut headers } => {
                headers.extend(condition.map(|(k, v)| (k.into(), v)));
                let resp = self.put_small(key, &headers, Bytes::new()).await?;
                // The answer's ETag is in its body; S3 may answer 200 with an error there.
                let status = resp.status();
                let body = collect("copy object", resp).await?;
                if !status.is_success() || body.windows(7).any(|w| w == b"<Error>") {
                    return Err(write_failure("copy object", status, &body));
                }
                etag = completion_etag(&body);
            }
            ObjectWrite::Complete { upload_id, etags } => {
                let i = &self.inner;
                let mut action = i.bucket.complete_multipart_upload(
                    Some(&i.credentials),
                    key,
                    upload_id,
                    etags.into_iter(),
                );
                if let Some((k, v)) = &condition {
                    action.headers_mut().insert(*k, v.as_str());
                }
                let url = action.sign(SIGNED_FOR);
                let xml = action.body();
                let pairs: Vec<(&str, &str)> =
                    condition.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let resp = self
                    .send(
                        "complete multipart upload",
                        Method::POST,
                        url,
                        &pairs,
                        Bytes::from(xml),
                    )
                    .await?;
                // S3 may answer 200 and put the error in the body (it is decided late).
                let status = resp.status();
                let body = collect("complete multipart upload", resp).await?;
                if !status.is_success() || body.windows(7).any(|w| w == b"<Error>") {
                    return Err(write_failure("complete multipart upload", status, &body));
                }
                etag = completion_etag(&body);
            }
        }
        Ok(Written {
            replaced: current.map(|h| h.meta.size),
            etag,
        })
    }

    /// The metadata of the version a commit just wrote at `key` (`size` bytes), as a later
    /// `open` reads it, so that validators computed now agree with later reads; taken from a
    /// `HeadObject` only if it sees the version this write made (`etag`, the S3 ETag the
    /// write's answer named): a version another node wrote since is not described as this one
    /// (a form's undo deletes only what this describes, `store/in_order.rs`). A
    /// version created without its SHA-256 (`stored_sha256`: `None`; a multipart upload whose
    /// digest was not known at its creation) gets the sidecar that binds `sha256` to that ETag
    /// (see "Sidecars of multipart versions" in the module doc), and so does one given a
    /// checksum after its creation ([`Late`]) and one created marked even without a checksum: its
    /// `HeadObject` reads the sidecar, which must then be its own, not one an earlier version
    /// with the same bytes in the same parts (so the same S3 ETag) left. A version another
    /// node wrote since has another ETag, so never gets this digest or checksum. A sidecar
    /// that cannot be written leaves the version without them (it is stored already: an error
    /// now would report a stored object as not stored).
    pub(super) async fn committed_meta(
        &self,
        key: &str,
        size: u64,
        stored_sha256: Option<[u8; 32]>,
        sha256: Option<[u8; 32]>,
        etag: Option<&str>,
        late: Late<'_>,
    ) -> Result<FileMeta, StoreError> {
        let Late { checksum, marked } = late;
        let mut stored = match self.head_raw(key).await? {
            Some(h) if etag.is_none_or(|e| same_etag(e, &h.etag)) => h.meta,
            _ => FileMeta {
                size,
                modified: SystemTime::now(),
                sha256: stored_sha256,
            },
        };
        let digest_missing = stored_sha256.is_none() && sha256.is_some();
        if let Some(etag) = etag.filter(|_| digest_missing || checksum.is_some() || marked) {
            let written = self.put_sidecar(key, etag, sha256.as_ref(), checksum).await;
            if written.is_ok() && stored.sha256.is_none() {
                stored.sha256 = sha256;
            }
        }
        Ok(stored)
    }
}

impl StoreUpload for S3Upload {
    async fn write(&mut self, mut bytes: &[u8]) -> Result<(), StoreError> {
        let size = self.size + bytes.len() as u64;
        if let Some(expected) = self.options.expected_len {
            if size > expected {
                let _ = self.abort_multipart().await;
                return Err(StoreError::LengthMismatch {
                    expected,
                    actual: size,
                });
            }
        }
        // The quota: what the declared length did not reserve at begin is taken as it comes.
        let needed = size.saturating_add(ENTRY_COST);
        if needed > self.reserved {
            if let Err(e) = self.store.inner.usage.reserve(needed - self.reserved) {
                let _ = self.abort_multipart().await;
                return Err(e);
            }
            self.reserved = needed;
        }
        self.hashers.update(bytes);
        self.size = size;
        let part_size = self.store.inner.part_size;
        while !bytes.is_empty() {
            if self.part.capacity() == 0 {
                // ALLOCATION: one part buffer at a time per upload (the sent ones are owned by
                // their tasks until sent).
                self.part.reserve(part_size);
            }
            let n = bytes.len().min(part_size - self.part.len());
            // COPY: the body's bytes into the part (a part must be one contiguous body).
            self.part.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.part.len() == part_size {
                if let Err(e) = self.send_part(false).await {
                    let _ = self.abort_multipart().await;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn set_modified(&mut self, client: std::time::SystemTime) {
        // Created with the object (`creation_headers`), which no write has sent yet.
        debug_assert!(self.multipart.is_none());
        self.options.object_meta = super::meta::with_mtime(self.options.object_meta.take(), client);
    }

    fn keep_checksum(
        &mut self,
        algorithm: &str,
        kind: &str,
        value: &str,
    ) -> Result<bool, StoreError> {
        let Some(mp) = &self.multipart else {
            let meta = self.options.object_meta.get_or_insert_with(ObjectMeta::new);
            meta.set_checksum(algorithm, kind, value)?;
            return Ok(true);
        };
        // Created with its metadata already (`creation_headers`): the sidecar written after
        // the completion holds the checksum, if a `HeadObject` will read it (the SHA-256 was
        // not in the metadata, or the creation was marked).
        if mp.sha256_meta.is_some() && !mp.checksum_follows {
            return Ok(false);
        }
        // Checked as the metadata field would be, so the sidecar holds only what it could.
        let mut field = ObjectMeta::new();
        field.set_checksum(algorithm, kind, value)?;
        // ALLOCATION: the field's text, once per upload kept with a late checksum.
        self.late_checksum = Some(format!("{algorithm} {kind} {value}"));
        Ok(true)
    }

    fn checksum_follows(&mut self) {
        // Read when the multipart upload is created (`start_multipart`), which no write has
        // done yet.
        debug_assert!(self.multipart.is_none());
        self.checksum_follows = true;
    }

    fn expect_digest(&mut self, digest: ContentDigest) -> Result<(), StoreError> {
        // The bytes went to the store as they came: only what was hashed on the way can be
        // checked (SHA-256 always; SHA-512 when one was expected at begin).
        for (given, algorithm) in [
            (digest.sha256.is_some(), DigestAlgorithm::Sha256),
            (digest.sha512.is_some(), DigestAlgorithm::Sha512),
        ] {
            if given && !self.hashers.computes(algorithm) {
                return Err(StoreError::DigestUnavailable { algorithm });
            }
        }
        let expected = self
            .options
            .expected_digest
            .get_or_insert_with(ContentDigest::default);
        if digest.sha256.is_some() {
            expected.sha256 = digest.sha256;
        }
        if digest.sha512.is_some() {
            expected.sha512 = digest.sha512;
        }
        Ok(())
    }

    async fn finish_writes(&mut self, held: &mut u64) -> Result<(), StoreError> {
        let result = self.finish_inner(held).await;
        if result.is_err() {
            let _ = self.abort_multipart().await;
        }
        result
    }

    async fn commit(mut self, check: Option<VersionCheck<'_>>) -> Result<Committed, StoreError> {
        let result = self.commit_inner(check).await;
        if result.is_err() {
            let _ = self.abort_multipart().await;
        }
        result
    }

    async fn abort(mut self) -> Result<(), StoreError> {
        self.abort_multipart().await
    }
}

impl Drop for S3Upload {
    fn drop(&mut self) {
        self.store
            .inner
            .usage
            .release(std::mem::take(&mut self.reserved));
        let Some(mut mp) = self.multipart.take() else {
            return;
        };
        mp.in_flight.abort_all();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = self.store.clone();
        let key = std::mem::take(&mut self.key);
        runtime.spawn(async move {
            while mp.in_flight.join_next().await.is_some() {}
            if let Err(e) = abort_request(&store, &key, &mp.upload_id).await {
                report_abort_failure(&e);
            }
        });
    }
}

impl S3Upload {
    /// [`StoreUpload::finish_writes`]: an upload still within one part keeps its bytes (in a
    /// buffer of their size) when they fit, with `held`, in one part size; else they are sent
    /// now as a multipart upload's parts, created with the SHA-256 since every byte is known.
    /// An empty upload holds nothing either way (a part cannot be empty).
    async fn finish_inner(&mut self, held: &mut u64) -> Result<(), StoreError> {
        let len = self.part.len() as u64;
        let part_size = self.store.inner.part_size as u64;
        if self.multipart.is_none() && (len == 0 || held.saturating_add(len) <= part_size) {
            if self.part.capacity() > self.part.len() {
                // ALLOCATION, COPY: the bytes into a buffer of their size, so that the part
                // buffer's capacity is not held until the commit.
                self.part = BytesMut::from(&self.part[..]);
            }
            *held += len;
            return Ok(());
        }
        if !self.part.is_empty() {
            self.send_part(true).await?;
        }
        if let Some(mp) = self.multipart.as_mut() {
            while !mp.in_flight.is_empty() {
                join_one(mp).await?;
            }
        }
        Ok(())
    }
}

/// Whether two S3 ETags name the same version (quotes and a weak prefix aside: stores differ
/// in how they write them).
fn same_etag(a: &str, b: &str) -> bool {
    fn bare(e: &str) -> &str {
        e.trim_start_matches("W/").trim_matches('"')
    }
    bare(a) == bare(b)
}

/// No logging crate in the store: a failed abort from a drop goes to stderr (a sweep of
/// pending uploads, [`S3Store::pending_multipart_keys`], finds what it left).
fn report_abort_failure(e: &StoreError) {
    eprintln!("weir-store: aborting a dropped multipart upload failed: {e}");
}

/// Waits for one part in flight and records it.
async fn join_one(mp: &mut Multipart) -> Result<(), StoreError> {
    match mp.in_flight.join_next().await {
        Some(Ok(Ok(done))) => {
            mp.done.push(done);
            Ok(())
        }
        Some(Ok(Err(e))) => Err(e),
        Some(Err(e)) => Err(StoreError::Backend {
            op: "upload part",
            message: format!("part task: {e}"),
        }),
        None => Ok(()),
    }
}

/// `CreateMultipartUpload` of `key` with `headers` (its metadata: S3 takes it only here);
/// the new upload's id.
pub(super) async fn create_multipart_request<K: AsRef<str>>(
    store: &S3Store,
    key: &str,
    headers: &[(K, String)],
) -> Result<String, StoreError> {
    let i = &store.inner;
    let mut action = i.bucket.create_multipart_upload(Some(&i.credentials), key);
    for (k, v) in headers {
        action.headers_mut().insert(k.as_ref(), v.as_str());
    }
    let url = action.sign(SIGNED_FOR);
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_str()))
        .collect();
    let resp = store
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
    let parsed = rusty_s3::actions::CreateMultipartUpload::parse_response(&body).map_err(|e| {
        StoreError::Backend {
            op: "create multipart upload",
            message: e.to_string(),
        }
    })?;
    Ok(parsed.upload_id().to_owned())
}

pub(super) async fn abort_request(
    store: &S3Store,
    key: &str,
    upload_id: &str,
) -> Result<(), StoreError> {
    let i = &store.inner;
    let url = i
        .bucket
        .abort_multipart_upload(Some(&i.credentials), key, upload_id)
        .sign(SIGNED_FOR);
    let resp = store
        .send(
            "abort multipart upload",
            Method::DELETE,
            url,
            &[],
            Bytes::new(),
        )
        .await?;
    if resp.status().is_success() || resp.status() == StatusCode::NOT_FOUND {
        Ok(())
    } else {
        Err(failure("abort multipart upload", resp).await)
    }
}

/// The `<ETag>` of a `CompleteMultipartUpload` answer, as `HeadObject` gives it (quoted).
pub(super) fn completion_etag(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let (_, rest) = text.split_once("<ETag>")?;
    let (value, _) = rest.split_once("</ETag>")?;
    let value = xml_unescape(value.trim());
    (!value.is_empty()).then_some(value)
}

/// `UploadPart` of `body` as part `number` (a plain upload's and a resumable one's): its S3 ETag.
pub(super) async fn upload_part(
    store: S3Store,
    key: String,
    upload_id: String,
    number: u16,
    body: Bytes,
) -> Result<String, StoreError> {
    let i = &store.inner;
    let url = i
        .bucket
        .upload_part(Some(&i.credentials), &key, number, &upload_id)
        .sign(SIGNED_FOR);
    let resp = store
        .send("upload part", Method::PUT, url, &[], body)
        .await?;
    if !resp.status().is_success() {
        return Err(failure("upload part", resp).await);
    }
    super::etag(&resp)
        .map(str::to_owned)
        .ok_or_else(|| StoreError::Backend {
            op: "upload part",
            message: "no ETag in the answer".into(),
        })
}
