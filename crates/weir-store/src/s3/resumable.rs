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

mod held;
use held::Held;

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

/// The manifest: the recorded state of an upload (see the module doc). Serialized as lines
/// `name value`; `-` for an absent value; one `part NUMBER ETAG` line per part.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Manifest {
    target: String,
    length: Option<u64>,
    offset: u64,
    part_size: u64,
    /// Seconds since the epoch.
    expires: u64,
    /// Bumped by every write.
    generation: u64,
    media_type: Option<String>,
    /// The `Repr-Digest` announced at creation, as its header value.
    digest: Option<String>,
    upload_id: Option<String>,
    /// The tail object's name (under the upload's directory), when `offset % part_size > 0`.
    tail: Option<String>,
    sha256: [u8; SAVED_LEN],
    parts: Vec<(u16, String)>,
    /// Completed: kept (without parts, tail or multipart upload) so that a `HEAD` says so.
    complete: bool,
    /// tus's `Upload-Metadata`, verbatim (one line): written only when there is one, so
    /// manifests from before it still parse.
    metadata: Option<String>,
    /// The creating request's preconditions, a line `condition NAME VALUE` each: written only
    /// when there are some, so manifests from before them still parse (and a node from before
    /// them refuses a manifest that has some, as damaged, rather than complete it unchecked).
    condition: Vec<(String, String)>,
}

const MANIFEST_VERSION: &str = "weir-upload 1";

impl Manifest {
    fn to_text(&self) -> String {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
        // ALLOCATION: the manifest's text, once per write (per part, per request end).
        let mut s = String::with_capacity(512 + self.parts.len() * 48);
        let _ = writeln!(s, "{MANIFEST_VERSION}");
        let _ = writeln!(s, "target {}", self.target);
        let _ = writeln!(
            s,
            "length {}",
            self.length
                .map_or_else(|| "-".to_owned(), |l| l.to_string())
        );
        let _ = writeln!(s, "offset {}", self.offset);
        let _ = writeln!(s, "part-size {}", self.part_size);
        let _ = writeln!(s, "expires {}", self.expires);
        let _ = writeln!(s, "generation {}", self.generation);
        let _ = writeln!(s, "media-type {}", opt(&self.media_type));
        let _ = writeln!(s, "digest {}", opt(&self.digest));
        let _ = writeln!(s, "upload-id {}", opt(&self.upload_id));
        let _ = writeln!(s, "tail {}", opt(&self.tail));
        let _ = writeln!(s, "sha256 {}", hex(&self.sha256));
        let _ = writeln!(s, "complete {}", u8::from(self.complete));
        if let Some(m) = &self.metadata {
            let _ = writeln!(s, "metadata {m}");
        }
        for (name, value) in &self.condition {
            let _ = writeln!(s, "condition {name} {value}");
        }
        for (n, etag) in &self.parts {
            let _ = writeln!(s, "part {n} {etag}");
        }
        s
    }

    /// Parses a manifest; `None` for anything malformed or inconsistent (a damaged manifest
    /// is no upload, never a wrong one).
    fn parse(text: &str) -> Option<Manifest> {
        let mut lines = text.lines();
        if lines.next()? != MANIFEST_VERSION {
            return None;
        }
        let mut m = Manifest {
            target: String::new(),
            length: None,
            offset: 0,
            part_size: 0,
            expires: 0,
            generation: 0,
            media_type: None,
            digest: None,
            upload_id: None,
            tail: None,
            sha256: [0; SAVED_LEN],
            parts: Vec::new(),
            complete: false,
            metadata: None,
            condition: Vec::new(),
        };
        let opt = |v: &str| (v != "-").then(|| v.to_owned());
        let mut sha = None;
        for line in lines {
            let (name, value) = line.split_once(' ')?;
            match name {
                "target" => m.target = value.to_owned(),
                "length" => m.length = opt(value).map(|v| v.parse()).transpose().ok()?,
                "offset" => m.offset = value.parse().ok()?,
                "part-size" => m.part_size = value.parse().ok()?,
                "expires" => m.expires = value.parse().ok()?,
                "generation" => m.generation = value.parse().ok()?,
                "media-type" => m.media_type = opt(value),
                "digest" => m.digest = opt(value),
                "upload-id" => m.upload_id = opt(value),
                "tail" => m.tail = opt(value),
                "sha256" => sha = parse_state(value),
                "complete" => m.complete = value == "1",
                "metadata" => m.metadata = Some(value.to_owned()),
                "condition" => {
                    let (field, v) = value.split_once(' ')?;
                    if !valid_condition(field, v) {
                        return None;
                    }
                    m.condition.push((field.to_owned(), v.to_owned()));
                }
                "part" => {
                    let (n, etag) = value.split_once(' ')?;
                    m.parts.push((n.parse().ok()?, etag.to_owned()));
                }
                _ => return None,
            }
        }
        m.sha256 = sha?;
        let state = ResumableSha256::from_bytes(&m.sha256)?;
        let whole = m.offset.checked_div(m.part_size)?;
        if m.complete {
            let done = state.len() == m.offset
                && StorePath::parse(&m.target).is_ok()
                && m.parts.is_empty()
                && m.tail.is_none()
                && m.upload_id.is_none();
            return done.then_some(m);
        }
        let consistent = state.len() == m.offset
            && StorePath::parse(&m.target).is_ok()
            && m.parts.len() as u64 == whole
            && m.parts
                .iter()
                .enumerate()
                .all(|(i, p)| usize::from(p.0) == i + 1)
            && (m.offset % m.part_size == 0) == m.tail.is_none()
            && (m.parts.is_empty() || m.upload_id.is_some());
        consistent.then_some(m)
    }

    fn state(&self) -> S3UploadState {
        S3UploadState {
            target: StorePath::parse(&self.target).expect("checked when parsed or created"),
            offset: self.offset,
            length: self.length,
            expires: self.expires,
            complete: self.complete,
            metadata: self.metadata.clone(),
            expected_digest: self.digest.clone(),
            condition: self.condition.clone(),
        }
    }
}

fn parse_state(text: &str) -> Option<[u8; SAVED_LEN]> {
    let text = text.as_bytes();
    if text.len() != 2 * SAVED_LEN {
        return None;
    }
    let mut out = [0u8; SAVED_LEN];
    for (b, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        let digit = |c: u8| (c as char).to_digit(16);
        *b = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
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
                let etag = resp
                    .headers()
                    .get("etag")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
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

fn etag_of(resp: &Response<Incoming>) -> String {
    resp.headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// A part being sent: its number, the hash state at its end, the task.
type PartInFlight = (u16, [u8; SAVED_LEN], JoinHandle<Result<String, StoreError>>);

/// One request's append to an upload (holds its lease). End it with [`S3Append::finish`];
/// dropped without it, its parts in flight are cancelled and its lease released from a task
/// (the manifest keeps the last recorded state).
#[derive(Debug)]
pub struct S3Append {
    up: S3Resumables,
    id: String,
    manifest: Manifest,
    manifest_etag: String,
    lease: Option<Lease>,
    /// When the lease was last renewed: a request whose parts take long (a slow client) renews
    /// it from [`S3Append::write`] every third of its duration, so it lapses only when the
    /// node stops.
    lease_renewed: std::time::Instant,
    hasher: ResumableSha256,
    /// The part being filled: bytes `[received - part.len(), received)`.
    part: BytesMut,
    /// Bytes of the upload received so far (the recorded offset plus this request's).
    received: u64,
    /// The upload's length, if known.
    length: Option<u64>,
    /// Parts sent, oldest first: recorded in order, so the recorded offset has no holes.
    in_flight: VecDeque<PartInFlight>,
    /// Bytes taken from the store's usage for the upload (see "Quota" in the module doc):
    /// given back on drop unless a completion made them the object's.
    reserved: u64,
    /// The SHA-256 the completion must also match, given after the body
    /// ([`S3Append::expect_digest`]).
    late_sha256: Option<[u8; 32]>,
    /// This request's parts are recorded only at its end, or never ([`S3Append::hold_records`]).
    held: Option<Held>,
    /// The tail the held parts made stale, deleted once the manifest no longer names it.
    stale_tail: Option<String>,
}

impl S3Append {
    /// The upload's state as recorded now.
    pub fn state(&self) -> S3UploadState {
        self.manifest.state()
    }

    /// Bytes received so far (recorded or not).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Adds a digest of the whole upload that the completion must match, known only after
    /// the body: a trailer of the request that completes it. Checked against the SHA-256
    /// finalized from the kept state, before anything is written. Only `sha-256` can be
    /// (the manifest keeps that state alone): a `sha-512` member is refused
    /// ([`StoreError::DigestUnavailable`]) rather than left unchecked.
    pub fn expect_digest(&mut self, digest: &ContentDigest) -> Result<(), StoreError> {
        if digest.sha512.is_some() {
            return Err(StoreError::DigestUnavailable {
                algorithm: crate::DigestAlgorithm::Sha512,
            });
        }
        if digest.sha256.is_some() {
            self.late_sha256 = digest.sha256;
        }
        Ok(())
    }

    /// Appends `bytes`: copied into the part buffer, hashed; a full part is sent from a task
    /// (waiting first while `parts_in_flight` are out, the backpressure). Returns the offset
    /// newly recorded, when a part's acknowledgment moved it (for a progress `104`).
    pub async fn write(&mut self, mut bytes: &[u8]) -> Result<Option<u64>, StoreError> {
        let end = self.received + bytes.len() as u64;
        if let Some(length) = self.length {
            if end > length {
                return Err(StoreError::LengthMismatch {
                    expected: length,
                    actual: end,
                });
            }
        }
        // The quota: bytes past what the append reserved at its start are taken as they come;
        // refused ones are not kept (the client resumes from the recorded offset).
        let needed = end.saturating_add(ENTRY_COST);
        if needed > self.reserved {
            self.up.store.inner.usage.reserve(needed - self.reserved)?;
            self.reserved = needed;
        }
        let part_size = usize::try_from(self.manifest.part_size).unwrap_or(usize::MAX);
        let mut recorded = None;
        while !bytes.is_empty() {
            if self.part.capacity() == 0 {
                // ALLOCATION: one part buffer at a time (sent ones are owned by their tasks).
                self.part.reserve(part_size);
            }
            let n = bytes.len().min(part_size - self.part.len());
            self.hasher.update(&bytes[..n]);
            if let Some(held) = &mut self.held {
                // A second pass over the bytes, only for a request that carries its checksum.
                held.sha256.update(&bytes[..n]);
            }
            // COPY: the body's bytes into the part (a part must be one contiguous body).
            self.part.extend_from_slice(&bytes[..n]);
            self.received += n as u64;
            bytes = &bytes[n..];
            if self.part.len() == part_size {
                if let Some(offset) = self.send_part().await? {
                    recorded = Some(offset);
                }
            }
        }
        if self.lease_renewed.elapsed() > self.up.options.lease / 3 {
            self.renew_lease().await?;
        }
        // Parts the store acknowledged meanwhile are recorded now, not when the next part
        // needs their place: the recorded offset (what a node killed now leaves) keeps up.
        while self
            .in_flight
            .front()
            .is_some_and(|(_, _, task)| task.is_finished())
        {
            recorded = self.record_oldest().await?.or(recorded);
        }
        Ok(recorded)
    }

    fn part_key(&self) -> Result<String, StoreError> {
        Ok(self.up.store.key(&StorePath::parse(&self.manifest.target)?))
    }

    /// Creates the multipart upload and records its id, with the announced SHA-256 as
    /// metadata (S3 takes metadata only here).
    async fn start_multipart(&mut self) -> Result<(), StoreError> {
        let s = self.up.store.clone();
        let key = self.part_key()?;
        let mut headers: Vec<(&'static str, String)> = Vec::with_capacity(2);
        if let Some(m) = &self.manifest.media_type {
            headers.push(("content-type", m.clone()));
        }
        if let Some(d) = self.announced_sha256() {
            headers.push((SHA256_META, hex(&d)));
        }
        let upload_id = create_multipart_request(&s, &key, &headers).await?;
        self.manifest.upload_id = Some(upload_id.clone());
        if let Err(e) = self.write_manifest().await {
            // Not recorded: nobody would ever complete or abort it.
            let _ = abort_request(&s, &key, &upload_id).await;
            return Err(e);
        }
        Ok(())
    }

    fn announced_sha256(&self) -> Option<[u8; 32]> {
        let d = self.manifest.digest.as_deref()?;
        ContentDigest::parse(d).ok()?.sha256
    }

    /// Sends the filled part from a task, after recording the oldest ones while
    /// `parts_in_flight` are out. Returns the offset recorded meanwhile, if it moved.
    async fn send_part(&mut self) -> Result<Option<u64>, StoreError> {
        if self.manifest.upload_id.is_none() {
            self.start_multipart().await?;
        }
        let mut recorded = None;
        while self.in_flight.len() >= self.up.store.inner.parts_in_flight {
            recorded = self.record_oldest().await?.or(recorded);
        }
        let number = u16::try_from(self.received / self.manifest.part_size).map_err(|_| {
            StoreError::Backend {
                op: "upload part",
                message: "more than 65535 parts: raise the part size".into(),
            }
        })?;
        let state = self.hasher.to_bytes();
        // No copy: the filled buffer is frozen and sent; a new one is allocated for the next.
        let body = std::mem::take(&mut self.part).freeze();
        let task = tokio::spawn(upload_part(
            self.up.store.clone(),
            self.part_key()?,
            self.manifest.upload_id.clone().unwrap_or_default(),
            number,
            body,
        ));
        self.in_flight.push_back((number, state, task));
        Ok(recorded)
    }

    /// Waits for the oldest part in flight and records it: the offset moves to its end, the
    /// hash state to the one taken when it was filled, the tail is gone. Returns the offset
    /// recorded; `None` when nothing was (no part in flight, or a held request's part, kept
    /// aside until the request's end: [`S3Append::hold_records`]).
    async fn record_oldest(&mut self) -> Result<Option<u64>, StoreError> {
        let Some((number, state, task)) = self.in_flight.pop_front() else {
            return Ok(None);
        };
        let etag = task.await.map_err(|e| StoreError::Backend {
            op: "upload part",
            message: format!("part task: {e}"),
        })??;
        if let Some(held) = &mut self.held {
            held.parts.push((number, etag, state));
            return Ok(None);
        }
        let old_tail = self.manifest.tail.take();
        self.manifest.parts.push((number, etag));
        self.manifest.offset = u64::from(number) * self.manifest.part_size;
        self.manifest.sha256 = state;
        self.write_manifest().await?;
        if let Some(tail) = old_tail {
            let key = format!("{}{tail}", self.up.dir(&self.id));
            // A failure leaves an object the upload's removal deletes anyway.
            let _ = self.up.delete_key(&key, None).await;
        }
        Ok(Some(self.manifest.offset))
    }

    /// Rewrites the manifest (`If-Match` on the last one seen) and renews the lease.
    async fn write_manifest(&mut self) -> Result<(), StoreError> {
        self.manifest.generation += 1;
        self.manifest.expires = now_secs() + self.up.options.expiry.as_secs();
        let key = format!("{}manifest", self.up.dir(&self.id));
        let headers = [("if-match", self.manifest_etag.clone())];
        let body = Bytes::from(self.manifest.to_text());
        let resp = self.up.store.put_small(&key, &headers, body).await?;
        if !resp.status().is_success() {
            // Another writer recorded meanwhile (this one's lease was taken over) or the
            // upload was cancelled: this request's bytes are not recorded.
            return check_write("write upload manifest", resp).await;
        }
        self.manifest_etag = etag_of(&resp);
        self.renew_lease().await
    }

    async fn renew_lease(&mut self) -> Result<(), StoreError> {
        let Some(lease) = &mut self.lease else {
            return Ok(());
        };
        let body = Bytes::from(format!(
            "{} {}",
            now_millis() + lease_millis(self.up.options.lease),
            self.id
        ));
        let headers = [("if-match", lease.etag.clone())];
        let resp = self.up.store.put_small(&lease.key, &headers, body).await?;
        if resp.status().is_success() {
            lease.etag = etag_of(&resp);
            self.lease_renewed = std::time::Instant::now();
            return Ok(());
        }
        // Taken over (this request stalled past its lease): it must stop appending.
        let lost = check_write("renew upload lease", resp).await;
        if matches!(lost, Err(StoreError::PreconditionFailed)) {
            // Not ours any more: not to be released either.
            self.lease = None;
        }
        lost
    }

    /// Ends the request. Every part in flight is recorded first. `complete`: the upload ends
    /// here (its length is what was received; the SHA-256 checked against the announced
    /// digests), the object is stored and the upload's objects removed; else the bytes past
    /// the last part are stored as a new tail and recorded with the offset (a cut request
    /// ends this way too: the client resumes from what arrived).
    pub async fn finish(self, complete: bool) -> Result<S3AppendEnd, StoreError> {
        self.finish_checked(complete, None).await
    }

    /// [`S3Append::finish`], where a completion writes the object only if `check` (when
    /// given) accepts the version at the target then: the creating request's preconditions
    /// ([`S3UploadState::condition`]) evaluated again, atomically with the write as a plain
    /// upload's commit does (`S3Store::write_checked`). A completion refused for good (the
    /// check: [`StoreError::PreconditionFailed`]; a digest mismatch) stores nothing and
    /// removes the upload, as a failed commit discards a plain upload: its multipart upload
    /// aborted, its objects deleted, nothing left pending.
    pub async fn finish_checked(
        mut self,
        complete: bool,
        check: Option<VersionCheck<'_>>,
    ) -> Result<S3AppendEnd, StoreError> {
        let result = self.finish_inner(complete, check).await;
        if let Some(lease) = self.lease.take() {
            self.up.release(lease).await;
        }
        result
    }

    async fn finish_inner(
        &mut self,
        complete: bool,
        check: Option<VersionCheck<'_>>,
    ) -> Result<S3AppendEnd, StoreError> {
        while !self.in_flight.is_empty() {
            self.record_oldest().await?;
        }
        // A held request that ends here is recorded with the rest of its end.
        self.fold_held();
        if complete {
            return match self.complete(check).await {
                Ok(committed) => Ok(S3AppendEnd::Completed(committed)),
                Err(e @ (StoreError::DigestMismatch { .. } | StoreError::PreconditionFailed)) => {
                    // It can never complete as it is: removed, the lease with its objects.
                    if let Err(removal) = self.up.remove(&self.id, &self.manifest).await {
                        eprintln!("weir-store: removing refused upload {}: {removal}", self.id);
                    }
                    self.lease = None;
                    Err(e)
                }
                Err(e) => Err(e),
            };
        }
        if self.received != self.manifest.offset {
            let name = format!(
                "tail-{}-{}",
                self.manifest.generation + 1,
                random_hex::<4>()?
            );
            let key = format!("{}{name}", self.up.dir(&self.id));
            // No copy: the part's bytes are the tail object's body.
            let body = std::mem::take(&mut self.part).freeze();
            let resp = self.up.store.put_small(&key, &[], body).await?;
            check_write("write upload tail", resp).await?;
            let old = self.manifest.tail.replace(name);
            self.manifest.offset = self.received;
            self.manifest.sha256 = self.hasher.to_bytes();
            self.write_manifest().await?;
            if let Some(old) = old {
                let _ = self
                    .up
                    .delete_key(&format!("{}{old}", self.up.dir(&self.id)), None)
                    .await;
            }
        } else {
            // Nothing new past the last record: the expiry is still renewed.
            self.write_manifest().await?;
        }
        self.delete_stale_tail().await;
        Ok(S3AppendEnd::Incomplete(self.manifest.state()))
    }

    /// Stores the object: the tail as the last part and `CompleteMultipartUpload`, or one
    /// `PutObject` for an upload smaller than a part, conditional on `check` (see
    /// [`S3Append::finish_checked`]); then removes the upload's objects.
    async fn complete(&mut self, check: Option<VersionCheck<'_>>) -> Result<Committed, StoreError> {
        let size = self.received;
        if let Some(expected) = self.length {
            if expected != size {
                return Err(StoreError::LengthMismatch {
                    expected,
                    actual: size,
                });
            }
        }
        let sha256 = self.hasher.clone().finalize();
        // The digest announced at creation and the one given after the body, if any.
        for expected in [self.announced_sha256(), self.late_sha256]
            .into_iter()
            .flatten()
        {
            if expected != sha256 {
                return Err(StoreError::DigestMismatch {
                    algorithm: crate::DigestAlgorithm::Sha256,
                });
            }
        }
        let s = self.up.store.clone();
        let key = self.part_key()?;
        let (written, stored_sha256) = match self.manifest.upload_id.clone() {
            None => {
                let mut headers = Vec::with_capacity(2);
                if let Some(m) = &self.manifest.media_type {
                    headers.push(("content-type", m.clone()));
                }
                headers.push((SHA256_META, hex(&sha256)));
                // No copy: the part's bytes are the object's body.
                let body = std::mem::take(&mut self.part).freeze();
                let write = ObjectWrite::Put { headers, body };
                (s.write_checked(&key, check, write).await?, Some(sha256))
            }
            Some(upload_id) => {
                let mut parts = self.manifest.parts.clone();
                if !self.part.is_empty() {
                    let number =
                        u16::try_from(parts.len() + 1).map_err(|_| StoreError::Backend {
                            op: "upload part",
                            message: "more than 65535 parts".into(),
                        })?;
                    let body = std::mem::take(&mut self.part).freeze();
                    let etag = upload_part(s.clone(), key.clone(), upload_id.clone(), number, body)
                        .await?;
                    parts.push((number, etag));
                }
                let etags = parts.iter().map(|(_, e)| e.as_str()).collect();
                let write = ObjectWrite::Complete {
                    upload_id: &upload_id,
                    etags,
                };
                // The metadata given at the multipart upload's creation: the announced digest.
                (
                    s.write_checked(&key, check, write).await?,
                    self.announced_sha256(),
                )
            }
        };
        let replaced = written.replaced.is_some();
        // The reservation becomes the object's; the version it replaced gives its share back.
        // What was reserved past the object (a declared length is exact, so nothing here)
        // is given back.
        let taken = size.saturating_add(ENTRY_COST);
        let spare = std::mem::take(&mut self.reserved).saturating_sub(taken);
        s.inner.usage.release(spare);
        s.note_committed(taken, written.replaced);
        // The object is stored: the parts and tails go; the manifest stays, completed, until
        // it expires, so that a client that lost the answer learns the upload is complete
        // (a failure leaves objects the upload's removal deletes anyway).
        if let Err(e) = self.up.delete_dir_but_manifest(&self.id).await {
            eprintln!("weir-store: cleaning completed upload {}: {e}", self.id);
        }
        // Deleted with the rest (or left to lapse): nothing to renew or release.
        self.lease = None;
        self.manifest.tail = None;
        self.manifest.complete = true;
        self.manifest.offset = size;
        self.manifest.length = Some(size);
        self.manifest.sha256 = self.hasher.to_bytes();
        self.manifest.parts.clear();
        self.manifest.upload_id = None;
        if let Err(e) = self.write_manifest().await {
            eprintln!("weir-store: recording completed upload {}: {e}", self.id);
        }
        // A multipart object created without its digest gets the sidecar, as a plain one.
        let completed_etag = written.etag.as_deref();
        let stored = s
            .committed_meta(&key, size, stored_sha256, Some(sha256), completed_etag)
            .await?;
        Ok(Committed {
            size,
            sha256: Some(sha256),
            replaced,
            stored,
        })
    }
}

impl Drop for S3Append {
    fn drop(&mut self) {
        self.up
            .store
            .inner
            .usage
            .release(std::mem::take(&mut self.reserved));
        for (_, _, task) in &self.in_flight {
            task.abort();
        }
        let Some(lease) = self.lease.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let up = self.up.clone();
        runtime.spawn(async move { up.release(lease).await });
    }
}

/// `UploadPart` of `body` as part `number`: its S3 ETag.
async fn upload_part(
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
    resp.headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| StoreError::Backend {
            op: "upload part",
            message: "no ETag in the answer".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut h = ResumableSha256::new();
        h.update(&[7u8; 12]);
        Manifest {
            target: "a/b c.bin".into(),
            length: Some(30),
            offset: 12,
            part_size: 5,
            expires: 99,
            generation: 4,
            media_type: Some("text/plain; charset=utf-8".into()),
            digest: Some("sha-256=:AAAA:".into()),
            upload_id: Some("u-1".into()),
            tail: Some("tail-4-abcd".into()),
            sha256: h.to_bytes(),
            parts: vec![(1, "\"e1\"".into()), (2, "\"e2\"".into())],
            complete: false,
            metadata: Some("filename aGk=,dir ZA==".into()),
            condition: vec![
                ("if-none-match".into(), "*".into()),
                (
                    "if-unmodified-since".into(),
                    "Sat, 29 Oct 1994 19:43:31 GMT".into(),
                ),
            ],
        }
    }

    #[test]
    fn manifest_round_trips() {
        let m = sample();
        assert_eq!(Manifest::parse(&m.to_text()), Some(m));
        let mut done = sample();
        (done.complete, done.tail, done.upload_id) = (true, None, None);
        done.parts.clear();
        assert_eq!(Manifest::parse(&done.to_text()), Some(done));
    }

    #[test]
    fn conditions_are_kept_and_parsed_strictly() {
        // A manifest from before conditions (no `condition` line) still parses, with none.
        let mut old = sample();
        old.condition.clear();
        let text = old.to_text();
        assert!(!text.contains("condition"), "{text}");
        assert_eq!(Manifest::parse(&text), Some(old));
        // Each kept field comes back, value spaces and all, and reaches the state.
        let m = sample();
        let parsed = Manifest::parse(&m.to_text()).unwrap();
        assert_eq!(parsed.state().condition, m.condition);
        assert_eq!(
            parsed.state().expected_digest.as_deref(),
            Some("sha-256=:AAAA:")
        );
        // A line without a value, an upper-case or empty name, a control byte: no upload.
        let base = sample().to_text();
        for bad in [
            "condition if-match\n",
            "condition If-Match \"a\"\n",
            "condition  *\n",
            "condition if-match \"a\u{7}\"\n",
        ] {
            let text = format!("{base}{bad}");
            assert_eq!(Manifest::parse(&text), None, "{bad:?}");
        }
        assert!(valid_condition("if-none-match", "*"));
        assert!(!valid_condition("if-match", "a\rb"));
    }

    #[test]
    fn inconsistent_manifests_are_refused() {
        // Parts that do not cover offset / part size, a tail at a part boundary, a hash state
        // of another length: each is no upload rather than a wrong one.
        let mut m = sample();
        m.parts.pop();
        assert_eq!(Manifest::parse(&m.to_text()), None);
        let mut m = sample();
        m.tail = None;
        assert_eq!(Manifest::parse(&m.to_text()), None);
        let mut m = sample();
        m.offset = 13;
        assert_eq!(Manifest::parse(&m.to_text()), None);
        let text = sample()
            .to_text()
            .replace("target a/b c.bin", "target ../x");
        assert_eq!(Manifest::parse(&text), None);
        assert_eq!(Manifest::parse("garbage"), None);
    }

    #[test]
    fn lease_expiry_parses() {
        assert_eq!(lease_expiry(b"1234 abcd"), 1234);
        assert_eq!(lease_expiry(b"junk"), 0);
        assert!(valid_id("0123456789abcdef0123456789abcdef"));
        assert!(!valid_id("../0123456789abcdef0123456789abcd"));
    }
}
