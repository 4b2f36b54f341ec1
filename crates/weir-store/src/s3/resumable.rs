//! Resumable uploads whose state lives in the bucket ([`S3Resumables`]), so that an upload
//! begun through one weir node is looked at, continued and completed through any other.
//!
//! # Objects
//! Everything about upload `{id}` (32 random hex digits) lives under
//! `{prefix}.weir-uploads/{id}/`, a name no store path can take (`.weir-`), so it is never
//! listed or served:
//!
//! - `manifest`: the recorded state (a few text lines, [`Manifest`]): target, declared length,
//!   the **offset**, part size `P`, expiry, the multipart upload id, the parts sent `[number,
//!   S3 ETag]`, the key of the tail object, the SHA-256 state at the offset
//!   ([`ResumableSha256::to_bytes`]), and the creating request's preconditions, which the
//!   completion evaluates again ([`S3Append::finish_checked`]). Every rewrite carries
//!   `If-Match` on the S3 ETag the writer last saw, so a writer that lost its lease cannot
//!   overwrite a newer state.
//! - `tail-{generation}-{nonce}`: the bytes past the last full part (fewer than `P`), written
//!   when a request ends mid-part; a fresh name each time, so a crashed or superseded writer's
//!   tail is never the recorded one.
//! - `lease`: the node appending now (its expiry in milliseconds), created with
//!   `If-None-Match: *` (a single `PutObject`'s condition, which stores decide atomically),
//!   renewed (`If-Match`) with each manifest write and every third of its duration while
//!   bytes arrive, deleted at the request's end; one whose expiry passed is taken over (its
//!   holder died). The lease is what keeps writers apart; the manifest's `If-Match` is the
//!   second line, for a writer that stalled past its lease (a store may decide `If-Match` apart
//!   from the write, as SeaweedFS does a completion's condition, but not while the lease
//!   holds).
//!
//! # Invariants
//! Part `k` (from 1) always holds bytes `[(k-1)·P, k·P)` with the `P` recorded at creation, so
//! nodes with different part sizes continue each other's uploads, and a part a dead node sent
//! but did not record is overwritten with the same bytes. The recorded parts are exactly
//! `1..=offset/P`, the tail holds `offset % P` bytes, and the SHA-256 state is that of the
//! first `offset` bytes: a part is recorded only once the store acknowledged it and every part
//! before it, with the hash state taken when that part was filled. A *held* request (tus's
//! `checksum`, `held.rs`) records its parts only at its end, or never: the parts it sent past
//! the recorded offset are then sent again, under the same numbers, by the next append. Memory
//! per append is that of a plain upload: `P × (parts_in_flight + 1)`, the tail read back into
//! the part buffer.
//!
//! # Quota
//! With [`S3Store::with_max_storage`], an upload is held to the quota as a plain upload is: a
//! declared length that cannot fit is refused at creation ([`StoreError::QuotaExceeded`],
//! nothing recorded); an append reserves, on the node that runs it, the whole upload as far as
//! it is known (the declared length, or the recorded offset) plus [`ENTRY_COST`] before its
//! body, and every byte past that as it comes, so it fails at the byte that would pass the
//! quota; its reservation becomes the object's share at completion and is given back when the
//! append ends incomplete. Between two appends an incomplete upload's bytes are not counted:
//! they sit in parts and a tail that the usage listing does not see, on no node in particular
//! (each append counts them all again, so an upload never completes past the quota).

use super::*;
use crate::ResumableError;
// The rule of a kept condition line: the local store's records share it.
use crate::digest::ContentDigest;
use crate::resumable::valid_condition;
use crate::sha256_state::{ResumableSha256, SAVED_LEN};
use std::collections::{HashSet, VecDeque};
use std::fmt::Write as _;
use tokio::task::JoinHandle;

mod append;
mod held;
pub use append::S3Append;
mod manifest;
use held::Held;
use manifest::Manifest;

/// The directory of resumable uploads' objects, after the prefix.
const UPLOADS_DIR: &str = ".weir-uploads/";

/// Options of the resumable uploads of one store.
#[derive(Clone, Copy, Debug)]
pub struct S3ResumableOptions {
    /// How long an incomplete upload lives after its creation or last append.
    pub expiry: Duration,
    /// How long an append's lease lasts without renewal (each recorded part renews it): past
    /// it, the lease is another node's to take (its holder died).
    pub lease: Duration,
}

impl Default for S3ResumableOptions {
    fn default() -> Self {
        S3ResumableOptions {
            expiry: Duration::from_secs(24 * 3600),
            lease: Duration::from_secs(30),
        }
    }
}

/// The resumable uploads of an [`S3Store`] (see the module doc). Cheap to clone.
#[derive(Clone, Debug)]
pub struct S3Resumables {
    store: S3Store,
    options: S3ResumableOptions,
}

/// What a new upload records besides its target ([`S3Resumables::create_with`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct S3Creation<'a> {
    /// The upload's length, when declared.
    pub length: Option<u64>,
    /// The announced `Repr-Digest` of the whole upload; verified at completion, so it must
    /// carry `sha-256` (the one algorithm whose state can be kept between requests).
    pub digest: Option<&'a ContentDigest>,
    /// The media type the object is created with.
    pub media_type: Option<&'a MediaType>,
    /// tus's `Upload-Metadata`, verbatim (one line).
    pub metadata: Option<&'a str>,
    /// The creating request's preconditions, `(field name, value)` (lower-case names, values
    /// of visible ASCII and spaces): kept so that the request completing the upload, on any
    /// node, evaluates them again against the object there then
    /// ([`S3UploadState::condition`], [`S3Append::finish_checked`]).
    pub condition: &'a [(String, String)],
}

/// An upload's recorded state, as a `HEAD` answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3UploadState {
    /// The file the upload becomes.
    pub target: StorePath,
    /// Bytes recorded (durable in the bucket).
    pub offset: u64,
    /// The declared length, once known.
    pub length: Option<u64>,
    /// When it expires unless appended to, in seconds since the epoch.
    pub expires: u64,
    /// Completed: the object is stored; the resource answers `Upload-Complete: ?1` until it
    /// expires, and takes no more bytes.
    pub complete: bool,
    /// tus's `Upload-Metadata` given at creation, verbatim.
    pub metadata: Option<String>,
    /// The `Repr-Digest` announced at creation, as its header value.
    pub expected_digest: Option<String>,
    /// The creating request's preconditions ([`S3Creation::condition`]), to evaluate again
    /// at completion; empty when it had none.
    pub condition: Vec<(String, String)>,
}

/// What the end of an append left.
#[derive(Debug)]
pub enum S3AppendEnd {
    /// Still incomplete, at this state.
    Incomplete(S3UploadState),
    /// Completed: the object is stored and the upload's objects removed.
    Completed(Committed),
}

/// `n` random bytes as hex (upload ids, tail names, lease holders).
fn random_hex<const N: usize>() -> Result<String, StoreError> {
    use std::io::Read;
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| StoreError::Backend {
            op: "random id",
            message: e.to_string(),
        })?;
    Ok(hex(&bytes))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Whether `id` has the form of an upload id (so that it can be put in a key safely).
fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A held lease.
#[derive(Debug)]
struct Lease {
    key: String,
    etag: String,
}

impl S3Resumables {
    /// The resumable uploads kept in `store`'s bucket, under its prefix.
    pub fn new(store: S3Store, options: S3ResumableOptions) -> S3Resumables {
        S3Resumables { store, options }
    }

    /// The options given at construction.
    pub fn options(&self) -> S3ResumableOptions {
        self.options
    }

    fn dir(&self, id: &str) -> String {
        format!("{}{UPLOADS_DIR}{id}/", self.store.inner.prefix)
    }

    /// Creates an upload of `target` (its length if known, the announced `Repr-Digest` of the
    /// whole, the media type) and records it at offset 0. Returns its id and state. A digest
    /// must carry `sha-256` (the one algorithm whose state can be kept): else `BadDigest`.
    pub async fn create(
        &self,
        target: &StorePath,
        length: Option<u64>,
        digest: Option<&ContentDigest>,
        media_type: Option<&MediaType>,
    ) -> Result<(String, S3UploadState), StoreError> {
        self.create_with_metadata(target, length, digest, media_type, None)
            .await
    }

    /// [`S3Resumables::create`], keeping `metadata` (tus's `Upload-Metadata`) in the manifest;
    /// a line break in it is refused ([`StoreError::Discarded`]): the manifest is one field
    /// per line.
    pub async fn create_with_metadata(
        &self,
        target: &StorePath,
        length: Option<u64>,
        digest: Option<&ContentDigest>,
        media_type: Option<&MediaType>,
        metadata: Option<&str>,
    ) -> Result<(String, S3UploadState), StoreError> {
        let creation = S3Creation {
            length,
            digest,
            media_type,
            metadata,
            condition: &[],
        };
        self.create_with(target, creation).await
    }

    /// Creates an upload of `target` with everything [`S3Creation`] records, at offset 0.
    /// Metadata with a line break, or a condition that cannot be a manifest line, is refused
    /// ([`StoreError::Discarded`]): the manifest is one field per line.
    pub async fn create_with(
        &self,
        target: &StorePath,
        creation: S3Creation<'_>,
    ) -> Result<(String, S3UploadState), StoreError> {
        let S3Creation {
            length,
            digest,
            media_type,
            metadata,
            condition,
        } = creation;
        if metadata.is_some_and(|m| m.contains(['\n', '\r']))
            || !condition.iter().all(|(n, v)| valid_condition(n, v))
        {
            return Err(StoreError::Discarded);
        }
        // A declared length that cannot fit now fails before anything is recorded (as
        // `LocalStore`'s); the bytes are reserved by the appends that bring them.
        let declared = length.unwrap_or(0).saturating_add(ENTRY_COST);
        self.store.inner.usage.reserve(declared)?;
        self.store.inner.usage.release(declared);
        let id = random_hex::<16>()?;
        let manifest = Manifest {
            target: target.as_str().to_owned(),
            length,
            offset: 0,
            part_size: self.store.inner.part_size as u64,
            expires: now_secs() + self.options.expiry.as_secs(),
            generation: 0,
            media_type: media_type.map(|m| m.as_str().to_owned()),
            digest: digest
                .filter(|d| !d.is_empty())
                .map(|d| d.to_header_value()),
            upload_id: None,
            tail: None,
            sha256: ResumableSha256::new().to_bytes(),
            parts: Vec::new(),
            complete: false,
            metadata: metadata.map(str::to_owned),
            condition: condition.to_vec(),
        };
        let key = format!("{}manifest", self.dir(&id));
        let headers = [("if-none-match", "*".to_owned())];
        let body = Bytes::from(manifest.to_text());
        let resp = self.store.put_small(&key, &headers, body).await?;
        check_write("create upload manifest", resp).await?;
        Ok((id, manifest.state()))
    }

    /// The manifest and its S3 ETag; `None` when there is none (or it is damaged).
    async fn manifest(&self, id: &str) -> Result<Option<(Manifest, String)>, StoreError> {
        if !valid_id(id) {
            return Ok(None);
        }
        let key = format!("{}manifest", self.dir(id));
        let Some((body, etag)) = self.get_small(&key).await? else {
            return Ok(None);
        };
        let manifest = std::str::from_utf8(&body).ok().and_then(Manifest::parse);
        Ok(manifest.map(|m| (m, etag)))
    }

    /// A small object's bytes and S3 ETag; `None` when absent.
    async fn get_small(&self, key: &str) -> Result<Option<(Bytes, String)>, StoreError> {
        let s = &self.store;
        let url = s
            .inner
            .bucket
            .get_object(Some(&s.inner.credentials), key)
            .sign(SIGNED_FOR);
        let resp = s
            .send("read upload object", Method::GET, url, &[], Bytes::new())
            .await?;
        match resp.status() {
            StatusCode::NOT_FOUND => Ok(None),
            st if st.is_success() => {
                let etag = etag_of(&resp);
                Ok(Some((collect("read upload object", resp).await?, etag)))
            }
            _ => Err(failure("read upload object", resp).await),
        }
    }

    /// The upload's recorded state; `None`: no such upload, or expired.
    pub async fn state(&self, id: &str) -> Result<Option<S3UploadState>, StoreError> {
        Ok(self
            .manifest(id)
            .await?
            .map(|(m, _)| m)
            .filter(|m| m.expires >= now_secs())
            .map(|m| m.state()))
    }

    /// The state once no append holds the upload (waits while one does, at most `wait`):
    /// the offset a `HEAD` may answer, which the next append will accept. `Err(Busy)` if an
    /// append still holds it after `wait`.
    pub async fn settled_state(
        &self,
        id: &str,
        wait: Duration,
    ) -> Result<S3UploadState, ResumableError> {
        if !valid_id(id) {
            return Err(ResumableError::Unknown);
        }
        let deadline = std::time::Instant::now() + wait;
        let lease_key = format!("{}lease", self.dir(id));
        loop {
            let held = match self.get_small(&lease_key).await? {
                Some((body, _)) => lease_expiry(&body) > now_millis(),
                None => false,
            };
            if !held {
                return self.state(id).await?.ok_or(ResumableError::Unknown);
            }
            if std::time::Instant::now() >= deadline {
                return Err(ResumableError::Busy);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Takes the upload's lease: `Busy` while another live request holds it; one past its
    /// expiry is taken over.
    async fn take_lease(&self, id: &str) -> Result<Lease, ResumableError> {
        let key = format!("{}lease", self.dir(id));
        for _ in 0..3 {
            let body = Bytes::from(format!(
                "{} {}",
                now_millis() + lease_millis(self.options.lease),
                random_hex::<8>()?
            ));
            let headers = [("if-none-match", "*".to_owned())];
            let resp = self.store.put_small(&key, &headers, body).await?;
            if resp.status().is_success() {
                return Ok(Lease {
                    etag: etag_of(&resp),
                    key,
                });
            }
            match check_write("take upload lease", resp).await {
                Err(StoreError::PreconditionFailed) => {}
                Err(e) => return Err(e.into()),
                Ok(()) => unreachable!("not a success"),
            }
            match self.get_small(&key).await? {
                Some((body, etag)) if lease_expiry(&body) <= now_millis() => {
                    // Its holder died: removed (only if still that lease), then taken anew.
                    self.release(Lease {
                        key: key.clone(),
                        etag,
                    })
                    .await;
                }
                Some(_) => return Err(ResumableError::Busy),
                // Released meanwhile: try again.
                None => {}
            }
        }
        Err(ResumableError::Busy)
    }

    /// Deletes a lease if it is still the one taken (`If-Match`); errors ignored (it expires).
    async fn release(&self, lease: Lease) {
        let _ = self.delete_key(&lease.key, Some(&lease.etag)).await;
    }

    async fn delete_key(&self, key: &str, if_match: Option<&str>) -> Result<(), StoreError> {
        let s = &self.store;
        let mut action = s
            .inner
            .bucket
            .delete_object(Some(&s.inner.credentials), key);
        if let Some(e) = if_match {
            action.headers_mut().insert("if-match", e);
        }
        let url = action.sign(SIGNED_FOR);
        let headers: Vec<(&str, &str)> = if_match.map(|e| ("if-match", e)).into_iter().collect();
        let resp = s
            .send(
                "delete upload object",
                Method::DELETE,
                url,
                &headers,
                Bytes::new(),
            )
            .await?;
        if resp.status().is_success() || resp.status() == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(failure("delete upload object", resp).await)
        }
    }

    /// Begins an append at `offset`: takes the lease, checks the offset against the
    /// manifest's, reads the tail back and restores the hash state. `length`: the upload's
    /// length if this request declares it (checked against the recorded one by the caller).
    pub async fn append(
        &self,
        id: &str,
        offset: u64,
        length: Option<u64>,
    ) -> Result<S3Append, ResumableError> {
        // An unknown id is answered without creating a lease object for it.
        if self.manifest(id).await?.is_none() {
            return Err(ResumableError::Unknown);
        }
        let lease = self.take_lease(id).await?;
        let begun = self.begin_append(id, offset, length).await.and_then(|b| {
            // The quota: the whole upload as far as it is known, before the body.
            let known = b.0.length.unwrap_or(0).max(b.0.offset);
            let reserved = known.saturating_add(ENTRY_COST);
            self.store.inner.usage.reserve(reserved)?;
            Ok((b, reserved))
        });
        match begun {
            Ok(((manifest, etag, part), reserved)) => Ok(S3Append {
                reserved,
                up: self.clone(),
                id: id.to_owned(),
                hasher: ResumableSha256::from_bytes(&manifest.sha256).expect("checked when parsed"),
                received: manifest.offset,
                length: length.or(manifest.length),
                manifest,
                manifest_etag: etag,
                lease: Some(lease),
                lease_renewed: std::time::Instant::now(),
                part,
                in_flight: VecDeque::new(),
                late_sha256: None,
                held: None,
                stale_tail: None,
            }),
            Err(e) => {
                self.release(lease).await;
                Err(e)
            }
        }
    }

    async fn begin_append(
        &self,
        id: &str,
        offset: u64,
        length: Option<u64>,
    ) -> Result<(Manifest, String, BytesMut), ResumableError> {
        // Read again under the lease: the last holder may have recorded more meanwhile.
        let Some((mut manifest, etag)) = self.manifest(id).await? else {
            return Err(ResumableError::Unknown);
        };
        if manifest.expires < now_secs() {
            return Err(ResumableError::Unknown);
        }
        if manifest.complete {
            return Err(ResumableError::Completed);
        }
        if offset != manifest.offset {
            return Err(ResumableError::OffsetMismatch {
                expected: manifest.offset,
                provided: offset,
            });
        }
        if manifest.length.is_none() {
            manifest.length = length;
        }
        let part_size = usize::try_from(manifest.part_size).unwrap_or(usize::MAX);
        // ALLOCATION: the part buffer, once per request (and again per part sent).
        let mut part = BytesMut::with_capacity(part_size);
        if let Some(tail) = &manifest.tail {
            let key = format!("{}{tail}", self.dir(id));
            let Some((bytes, _)) = self.get_small(&key).await? else {
                return Err(StoreError::Backend {
                    op: "read upload tail",
                    message: format!("{key} is missing"),
                }
                .into());
            };
            if bytes.len() as u64 != manifest.offset % manifest.part_size {
                return Err(StoreError::Backend {
                    op: "read upload tail",
                    message: format!("{key} has {} bytes, not the recorded ones", bytes.len()),
                }
                .into());
            }
            // COPY: the tail into the part it begins (at most one part, once per request).
            part.extend_from_slice(&bytes);
        }
        Ok((manifest, etag, part))
    }

    /// Removes an upload: its multipart upload aborted, its objects deleted. `Unknown` if
    /// there is none.
    pub async fn cancel(&self, id: &str) -> Result<(), ResumableError> {
        let Some((manifest, _)) = self.manifest(id).await? else {
            return Err(ResumableError::Unknown);
        };
        self.remove(id, &manifest).await?;
        Ok(())
    }

    async fn remove(&self, id: &str, manifest: &Manifest) -> Result<(), StoreError> {
        if let Some(upload_id) = &manifest.upload_id {
            let key = self.store.key(&StorePath::parse(&manifest.target)?);
            abort_request(&self.store, &key, upload_id).await?;
        }
        self.delete_dir(id).await
    }

    /// Deletes every object under the upload's directory, the manifest last (so that a
    /// failure midway leaves a manifest the sweep finds again).
    async fn delete_dir(&self, id: &str) -> Result<(), StoreError> {
        self.delete_dir_but_manifest(id).await?;
        self.delete_key(&format!("{}manifest", self.dir(id)), None)
            .await
    }

    /// Deletes the upload's objects but its manifest (the lease included: the caller holds
    /// it and is ending).
    async fn delete_dir_but_manifest(&self, id: &str) -> Result<(), StoreError> {
        let dir = self.dir(id);
        let manifest = format!("{dir}manifest");
        for key in self.list_keys(&dir).await? {
            if key != manifest {
                self.delete_key(&key, None).await?;
            }
        }
        Ok(())
    }

    /// Every key under `{prefix}.weir-uploads/`: what the resumable uploads keep in the
    /// bucket now (tests, operators).
    pub async fn stored_keys(&self) -> Result<Vec<String>, StoreError> {
        self.list_keys(&format!("{}{UPLOADS_DIR}", self.store.inner.prefix))
            .await
    }

    /// Every key under `prefix`, read page after page (continuation tokens; pages of the
    /// store's [`S3Store::with_list_page`] keys), all collected before the caller acts on
    /// them, so that its deletes never move a page under the listing.
    async fn list_keys(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
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
                .list_objects("list upload objects", action)
                .await?;
            let more = !parsed.contents.is_empty();
            keys.extend(parsed.contents.into_iter().map(|c| c.key));
            match parsed.next_continuation_token {
                // A page without keys ends the walk even with a token: never a loop.
                Some(t) if more => token = Some(t),
                _ => return Ok(keys),
            }
        }
    }

    /// Removes the uploads past their expiry (multipart upload aborted, objects deleted) and
    /// returns how many, with the multipart upload ids the remaining (live) manifests name:
    /// what [`S3Store::sweep_multipart`] must leave alone.
    pub async fn sweep(&self) -> Result<(usize, HashSet<String>), StoreError> {
        let dir = format!("{}{UPLOADS_DIR}", self.store.inner.prefix);
        let mut removed = 0;
        let mut live = HashSet::new();
        for key in self.list_keys(&dir).await? {
            let Some(id) = key
                .strip_prefix(&dir)
                .and_then(|rest| rest.strip_suffix("/manifest"))
            else {
                continue;
            };
            let Some((manifest, _)) = self.manifest(id).await? else {
                continue;
            };
            if manifest.expires < now_secs() {
                self.remove(id, &manifest).await?;
                removed += 1;
            } else if let Some(u) = manifest.upload_id {
                live.insert(u);
            }
        }
        Ok((removed, live))
    }
}

impl S3Store {
    /// The multipart upload ids that live resumable uploads' manifests name (kept by
    /// [`S3Store::sweep_multipart`]).
    pub(super) async fn live_resumable_uploads(&self) -> Result<HashSet<String>, StoreError> {
        // Expiry is not judged here: a sweep of expired uploads is `S3Resumables::sweep`'s.
        let up = S3Resumables::new(self.clone(), S3ResumableOptions::default());
        let dir = format!("{}{UPLOADS_DIR}", self.inner.prefix);
        let mut live = HashSet::new();
        for key in up.list_keys(&dir).await? {
            let Some(id) = key
                .strip_prefix(&dir)
                .and_then(|rest| rest.strip_suffix("/manifest"))
            else {
                continue;
            };
            if let Some((m, _)) = up.manifest(id).await? {
                live.extend(m.upload_id);
            }
        }
        Ok(live)
    }
}

fn lease_millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A lease object's expiry (milliseconds since the epoch); 0 (expired) if unreadable.
fn lease_expiry(body: &[u8]) -> u64 {
    std::str::from_utf8(body)
        .ok()
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_expiry_parses() {
        assert_eq!(lease_expiry(b"1234 abcd"), 1234);
        assert_eq!(lease_expiry(b"junk"), 0);
        assert!(valid_id("0123456789abcdef0123456789abcdef"));
        assert!(!valid_id("../0123456789abcdef0123456789abcd"));
    }
}
