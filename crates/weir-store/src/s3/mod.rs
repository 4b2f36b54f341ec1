//! `S3Store`: the storage interface ([`Store`]) over an S3-compatible bucket (feature `s3`).
//!
//! Requests are signed by `rusty-s3` (sans-IO: presigned URLs, SigV4, the XML of listings and
//! multipart uploads) and sent by hyper's pooled HTTP/1.1 client (rustls with `ring` for
//! `https://` endpoints). A store path `a/b.txt` is the key `{prefix}a/b.txt`; "directories"
//! are key prefixes ending in `/` (listed with the delimiter `/`).
//!
//! # Uploads
//! Bytes are copied into a part buffer of [`S3Config::part_size`]. Small uploads (at most one
//! part) are one `PutObject` at commit. Past one part, the first full part creates the
//! multipart upload and each full part is sent by its own task; at most
//! [`S3Config::parts_in_flight`] are sent at once, and [`StoreUpload::write`] waits for one of
//! them to finish before it starts another: memory per upload is at most
//! `part_size × (parts_in_flight + 1)`, and a slow store slows the writer (which stops reading
//! its client), with no queue in between. SHA-256 (and SHA-512 when a `sha-512` digest is
//! expected) is computed as bytes are written, before they are copied.
//!
//! A digest that arrives after the body (a `Content-Digest` trailer,
//! [`StoreUpload::expect_digest`]) is checked at the commit like one given at begin, before
//! anything is written: the hashes saw every byte on its way to a part. Only an algorithm they
//! computed can be (SHA-256 always, SHA-512 when expected at begin): the bytes are not kept,
//! so another is refused ([`StoreError::DigestUnavailable`]).
//!
//! [`StoreUpload::finish_writes`] (a form's file waiting for the rest of the form): a multipart
//! upload sends its last part and waits for its parts, so it holds no part buffer until its
//! commit; a one-part upload keeps its bytes (in a buffer of their size) only while the caller's
//! waiting uploads hold at most [`S3Config::part_size`] together, else it becomes a multipart
//! upload of one part at once, created with its SHA-256 (every byte is known by then).
//!
//! The commit checks length and digests, then completes the multipart upload (or puts the
//! single part) with a conditional header (`S3Store::write_checked`, which resumable uploads'
//! completions share): `If-None-Match: *` when the check accepted "no
//! object", else `If-Match` with the S3 ETag of the version the check saw, so a version that
//! slipped in after the check makes the store refuse (412/409 → [`StoreError::PreconditionFailed`]).
//! A conditional *multipart* completion is also serialized per key by a lock object
//! (`{prefix}.weir-locks/{path}`, taken with a single conditional `PutObject`, released after,
//! taken over once its 30 s lease is past): SeaweedFS 4.48 checks a completion's condition apart
//! from its write, and 20 racing creators stored 1 to 4 "winners" without the lock (a single
//! `PutObject`'s condition it decides atomically: always one).
//! Any failure, and a drop without commit, aborts the multipart upload (from a task on the
//! runtime, for a drop): nothing partial becomes visible. The commit's `Committed::stored` is
//! a `HeadObject` of the new version, taken only when its ETag is the one the write answered
//! (else the metadata the upload knows): it never describes a version another node wrote since,
//! so a caller can later delete "the version it stored" with it (a form's undo).
//!
//! The SHA-256 is stored as the object's user metadata `x-amz-meta-weir-sha256` (hex) when it
//! is known when the object is created: always for a one-part upload, and for a multipart one
//! when the client announced it before the body (`Content-Digest` in the head), since S3 takes
//! metadata only at the creation of a multipart upload.
//!
//! # Sidecars of multipart versions
//! S3 takes an object's metadata only at the creation of its multipart upload, before the
//! body. What becomes known later goes to a sidecar written after the completion: the object
//! `{prefix}.weir-meta/{path}`, lines of text (`sidecar.rs`): the S3 ETag the completion
//! answered, the SHA-256, and a checksum kept after the creation, if any. Two cases write one:
//! - a multipart upload without a digest announced before its body (none, or a
//!   `Content-Digest` trailer's): the SHA-256;
//! - a checksum known only after the body (S3's `x-amz-trailer`,
//!   [`StoreUpload::keep_checksum`]) once a part has gone to the backend: the checksum
//!   (with the SHA-256). Up to one part it goes in the object's own metadata instead.
//!
//! `HeadObject` of a multipart version (ETag `…-N`) reads the sidecar when it may hold
//! something the metadata lacks, and takes it only when the ETags match: a sidecar never
//! gives a digest or a checksum to another version (one written later by another node, or one
//! whose own sidecar was not written). "May hold" is decided without a request: the SHA-256 is
//! missing from the metadata (every trailer-announced upload but one whose head also named a
//! SHA-256), or the creation was marked `x-amz-meta-weir-checksum-follows` (a trailer was
//! announced, [`StoreUpload::checksum_follows`], and the SHA-256 was in the metadata). A
//! multipart version created with its digest and no trailer announced, the common case of
//! `/files/`, tus and WebDAV uploads with `Content-Digest`, costs one `HeadObject` as before.
//! The marker is added only in that one case, so it costs no metadata room otherwise.
//!
//! Every version whose `HeadObject` reads a sidecar writes its own, even with nothing new in
//! it (a marked version whose checksum never came: the SHA-256 alone). An S3 ETag names a
//! version's bytes and part sizes, not the version: without that, a version with the same
//! bytes in the same parts as an earlier one would read the earlier one's checksum. Only a
//! failed sidecar write leaves that (a checksum of the very same bytes).
//! A delete removes the sidecar; one left behind (a replace by a one-part upload) names a
//! version that is gone, so it is never used. A copy takes what the source's `HeadObject`
//! gave, sidecar included, into its own metadata (a `CopyObject` is one request: all of it
//! is known at its creation).
//!
//! # Listings
//! The listings that must see everything (the usage, the sweeps of multipart and resumable
//! uploads) walk every page: `ListObjectsV2` continuation tokens, `ListMultipartUploads`
//! markers, [`S3Store::with_list_page`] keys a page.
//!
//! # Quota
//! With [`S3Store::with_max_storage`], uploads reserve their bytes as `LocalStore`'s do
//! (`quota::Usage`, [`ENTRY_COST`] per object). The objects' share comes from a listing
//! ([`S3Store::list_usage`], [`S3Store::set_listed_usage`]) and is moved by this node's own
//! commits and deletes: exact for one node, approximate across several (see
//! `set_listed_usage`).
//!
//! # Copies and renames
//! [`Store::copy`] is one `CopyObject` (at most 5 GiB), pinned to the source version and
//! checked at the target as a commit is; [`Store::rename`] a copy, then the source's
//! `DeleteObject` if it is still the version copied: not atomic (`copy.rs`).
//!
//! # Reads
//! [`Store::open`] is a `HeadObject`; [`StoreObject::read`] a `GetObject` with `Range` and
//! `If-Match` on the S3 ETag the head returned, so a replaced object fails instead of mixing
//! versions. Chunks are hyper's frames, passed on without a copy. [`StoreObject::read_socket`]
//! sends the same request on a connection of its own and hands that out (`read.rs`).

use crate::digest::Hashers;
use crate::quota::{ENTRY_COST, Usage};
use crate::store::{Store, StoreObject, StoreReader, StoreUpload, VersionCheck};
use crate::{
    Committed, CopyMeta, Entry, FileMeta, ListPage, MediaType, ObjectMeta, StoreError, StorePath,
    UploadOptions, validate_name,
};
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::task::JoinSet;
use url::Url;

/// How long a signed request stays valid: it is sent at once, so this only bounds a replay.
const SIGNED_FOR: Duration = Duration::from_secs(15 * 60);
/// The most keys (or multipart uploads) an S3 listing answers per page.
const LIST_PAGE: usize = 1000;
/// No headers, for [`S3Store::put_small`] (its header names' type then still known).
const NO_HEADERS: &[(&str, String)] = &[];

/// The user metadata holding the SHA-256 (hex), without S3's `x-amz-meta-` prefix.
const SHA256_META: &str = "x-amz-meta-weir-sha256";

/// Where and how to reach the bucket.
#[derive(Clone, Debug)]
pub struct S3Config {
    /// `http://host:port` or `https://host` of the S3 API.
    pub endpoint: String,
    /// The signing region (`us-east-1` for most S3-compatible stores).
    pub region: String,
    /// The bucket.
    pub bucket: String,
    /// Keys start with this (empty, or ending in `/`).
    pub prefix: String,
    /// Access key id.
    pub access_key: String,
    /// Secret access key.
    pub secret_key: String,
    /// Session token of temporary credentials, if any.
    pub session_token: Option<String>,
    /// Bytes per multipart part (S3 requires at least 5 MiB for every part but the last).
    pub part_size: usize,
    /// Parts of one upload sent at once.
    pub parts_in_flight: usize,
    /// Path-style URLs (`endpoint/bucket/key`, what SeaweedFS and MinIO serve) rather than
    /// virtual-hosted ones (`bucket.endpoint/key`).
    pub path_style: bool,
    /// Longest wait for a request's answer head (a part's upload included): a store that stopped
    /// answering fails the upload ([`StoreError::Backend`]) instead of holding it forever.
    pub request_timeout: Duration,
}

impl S3Config {
    /// Default part size: 8 MiB (AWS's CLI default).
    pub const DEFAULT_PART_SIZE: usize = 8 << 20;
    /// Default parts in flight per upload.
    pub const DEFAULT_PARTS_IN_FLIGHT: usize = 2;
    /// Default [`S3Config::request_timeout`]: a part of the default size needs well under this
    /// on any link an upload server should use.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

    /// A bucket at `endpoint` with these credentials and the defaults for the rest: region
    /// `us-east-1`, no prefix, no session token, path-style URLs, the default part size, parts
    /// in flight and request timeout. Change a field with struct update syntax.
    pub fn new(endpoint: &str, bucket: &str, access_key: &str, secret_key: &str) -> S3Config {
        S3Config {
            endpoint: endpoint.to_owned(),
            region: "us-east-1".to_owned(),
            bucket: bucket.to_owned(),
            prefix: String::new(),
            access_key: access_key.to_owned(),
            secret_key: secret_key.to_owned(),
            session_token: None,
            part_size: Self::DEFAULT_PART_SIZE,
            parts_in_flight: Self::DEFAULT_PARTS_IN_FLIGHT,
            path_style: true,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// An S3 bucket (under a prefix) as a [`Store`]. Cheap to clone.
#[derive(Clone, Debug)]
pub struct S3Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    bucket: Bucket,
    credentials: Credentials,
    prefix: String,
    part_size: usize,
    parts_in_flight: usize,
    request_timeout: Duration,
    client: HttpClient,
    /// Bytes used under the prefix as this node knows them (objects, this node's uploads in
    /// progress, [`ENTRY_COST`] each), against the quota ([`S3Store::with_max_storage`]).
    usage: Usage,
    /// The objects' share of `usage`: set from a listing ([`S3Store::set_listed_usage`]),
    /// then moved by this node's commits and deletes.
    committed: AtomicU64,
    /// Keys (or multipart uploads) asked per page of the listings that walk every page
    /// ([`S3Store::with_list_page`]).
    list_page: usize,
}

/// What a `HeadObject` told.
#[derive(Clone, Debug)]
struct Head {
    meta: FileMeta,
    media_type: Option<MediaType>,
    /// Dead properties kept in the object's metadata (`props.rs`).
    props: Option<Vec<u8>>,
    /// The S3 metadata kept with it (`meta.rs`).
    object_meta: Option<ObjectMeta>,
    /// S3's ETag of this version, for `If-Match`.
    etag: String,
    /// Created with [`sidecar::CHECKSUM_FOLLOWS_META`]: its sidecar may hold a checksum though
    /// its metadata has the SHA-256.
    checksum_follows: bool,
}

impl S3Store {
    /// A store over `config`'s bucket. Sends nothing yet (see [`S3Store::check`]).
    pub fn new(config: S3Config) -> Result<S3Store, StoreError> {
        let bad = |message: String| StoreError::Backend {
            op: "configure",
            message,
        };
        let endpoint: Url = config
            .endpoint
            .parse()
            .map_err(|e| bad(format!("endpoint {:?}: {e}", config.endpoint)))?;
        let style = if config.path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let bucket = Bucket::new(endpoint.clone(), style, config.bucket, config.region)
            .map_err(|e| bad(format!("bucket: {e}")))?;
        let credentials = match config.session_token {
            Some(t) => Credentials::new_with_token(config.access_key, config.secret_key, t),
            None => Credentials::new(config.access_key, config.secret_key),
        };
        let mut prefix = config.prefix.trim_matches('/').to_owned();
        if !prefix.is_empty() {
            prefix.push('/');
        }
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let builder = match builder.with_native_roots() {
            Ok(b) => b,
            // No system roots: fine for a plain-HTTP endpoint (loopback, a private network).
            Err(_) if endpoint.scheme() == "http" => hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(
                    rustls::ClientConfig::builder()
                        .with_root_certificates(rustls::RootCertStore::empty())
                        .with_no_client_auth(),
                ),
            Err(e) => return Err(bad(format!("no trusted certificates for https: {e}"))),
        };
        let connector = builder.https_or_http().enable_http1().build();
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(S3Store {
            inner: Arc::new(Inner {
                bucket,
                credentials,
                prefix,
                part_size: config.part_size.max(1),
                parts_in_flight: config.parts_in_flight.max(1),
                request_timeout: config.request_timeout,
                client,
                usage: Usage::new(0, None),
                committed: AtomicU64::new(0),
                list_page: LIST_PAGE,
            }),
        })
    }

    /// The same store asking `keys` keys (at least 1) per page of the listings that walk
    /// every page (the usage, the sweeps of multipart and resumable uploads); S3's largest
    /// page, 1000, by default. Small pages let a test cross page boundaries with a
    /// few keys. Call it on a new store, before it is cloned.
    pub fn with_list_page(mut self, keys: usize) -> S3Store {
        let inner = Arc::get_mut(&mut self.inner).expect("with_list_page on a new S3Store");
        inner.list_page = keys.clamp(1, LIST_PAGE);
        self
    }

    /// The same store with a quota: uploads that would take the usage past `limit` bytes fail
    /// with [`StoreError::QuotaExceeded`] (before their body when they declare a length), as
    /// `LocalStore`'s `max_storage`. Call it on a new store, before it is cloned.
    pub fn with_max_storage(mut self, limit: Option<u64>) -> S3Store {
        let inner = Arc::get_mut(&mut self.inner).expect("with_max_storage on a new S3Store");
        inner.usage = Usage::new(inner.usage.used(), limit);
        self
    }

    /// The quota ([`S3Store::with_max_storage`]).
    pub fn max_storage(&self) -> Option<u64> {
        self.inner.usage.limit()
    }

    /// Bytes used as this node counts them: the last listing ([`S3Store::set_listed_usage`]),
    /// moved by this node's commits and deletes since, plus its uploads in progress.
    pub fn usage(&self) -> u64 {
        self.inner.usage.used()
    }

    /// Takes `listed` ([`S3Store::list_usage`]) as the objects' bytes now, keeping this node's
    /// uploads in progress on top. Another node's commits between two listings are missing
    /// until the next one; one of this node's commits that the listing already saw counts
    /// twice until then.
    pub fn set_listed_usage(&self, listed: u64) {
        let before = self.inner.committed.swap(listed, Ordering::Relaxed);
        self.inner.usage.charge(listed);
        self.inner.usage.release(before);
    }

    /// A commit: `taken` (the upload's reservation, now the object's) joins the objects'
    /// share; the version it replaced, `replaced` bytes, leaves both.
    pub(super) fn note_committed(&self, taken: u64, replaced: Option<u64>) {
        self.inner.committed.fetch_add(taken, Ordering::Relaxed);
        if let Some(size) = replaced {
            self.note_deleted(size);
        }
    }

    /// An object of `size` bytes gone.
    fn note_deleted(&self, size: u64) {
        let share = size.saturating_add(ENTRY_COST);
        let _ = self
            .inner
            .committed
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(c.saturating_sub(share))
            });
        self.inner.usage.release(share);
    }

    /// Whether the bucket is there and these credentials reach it (`HeadBucket`).
    pub async fn check(&self) -> Result<(), StoreError> {
        let url = self
            .inner
            .bucket
            .head_bucket(Some(&self.inner.credentials))
            .sign(SIGNED_FOR);
        let resp = self
            .send("check bucket", Method::HEAD, url, &[], Bytes::new())
            .await?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(failure("check bucket", resp).await)
        }
    }

    /// Creates the bucket if it is not there (tests, first runs).
    pub async fn create_bucket_if_missing(&self) -> Result<(), StoreError> {
        if self.check().await.is_ok() {
            return Ok(());
        }
        let url = self
            .inner
            .bucket
            .create_bucket(&self.inner.credentials)
            .sign(SIGNED_FOR);
        let resp = self
            .send("create bucket", Method::PUT, url, &[], Bytes::new())
            .await?;
        if resp.status().is_success() || resp.status() == StatusCode::CONFLICT {
            Ok(())
        } else {
            Err(failure("create bucket", resp).await)
        }
    }

    fn key(&self, path: &StorePath) -> String {
        // ALLOCATION: the key, once per operation.
        format!("{}{}", self.inner.prefix, path.as_str())
    }

    /// Sends one request; any answer is returned, only transport failures are errors.
    async fn send(
        &self,
        op: &'static str,
        method: Method,
        url: Url,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Response<Incoming>, StoreError> {
        let mut req = Request::builder().method(method).uri(url.as_str());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Full::new(body)).map_err(|e| StoreError::Backend {
            op,
            message: e.to_string(),
        })?;
        match tokio::time::timeout(self.inner.request_timeout, self.inner.client.request(req)).await
        {
            Ok(answer) => answer.map_err(|e| StoreError::Backend {
                op,
                message: format!("{e} ({})", source_chain(&e)),
            }),
            Err(_) => Err(StoreError::Backend {
                op,
                message: format!("no answer within {:?}", self.inner.request_timeout),
            }),
        }
    }

    /// `HeadObject`, with what the version's sidecar holds (the SHA-256, a checksum) when it
    /// may hold something its metadata lacks (see "Sidecars of multipart versions" in the
    /// module docs): `None` when there is no object.
    async fn head(&self, key: &str) -> Result<Option<Head>, StoreError> {
        let Some(mut head) = self.head_raw(key).await? else {
            return Ok(None);
        };
        // Only multipart versions (S3 ETag `…-N`) can lack the metadata weir writes; of those,
        // only the ones without the SHA-256 or marked at creation can have a sidecar to read,
        // so a version created with its digest costs no second request.
        let lacking = head.meta.sha256.is_none() || head.checksum_follows;
        if lacking && head.etag.contains('-') {
            if let Some(sidecar) = self.sidecar(key, &head.etag).await? {
                sidecar.fill(&mut head);
            }
        }
        Ok(Some(head))
    }

    /// `HeadObject` alone: `None` when there is no object.
    async fn head_raw(&self, key: &str) -> Result<Option<Head>, StoreError> {
        let url = self
            .inner
            .bucket
            .head_object(Some(&self.inner.credentials), key)
            .sign(SIGNED_FOR);
        let resp = self
            .send("head object", Method::HEAD, url, &[], Bytes::new())
            .await?;
        match resp.status() {
            StatusCode::NOT_FOUND => Ok(None),
            s if s.is_success() => Ok(Some(head_from(resp.headers())?)),
            _ => Err(failure("head object", resp).await),
        }
    }

    /// The condition header a write or delete sends, after `check` accepted `current`.
    fn condition(current: Option<&Head>) -> (&'static str, String) {
        match current {
            None => ("if-none-match", "*".to_owned()),
            Some(h) => ("if-match", h.etag.clone()),
        }
    }
}

impl S3Store {
    /// [`Store::begin`] at a key of weir's own (a multipart upload's part, `multiparts.rs`) or
    /// a store path's, hashing SHA-256 only when `sha256` (a part's digest is its MD5).
    pub(super) fn begin_key(
        &self,
        key: String,
        sha256: bool,
        options: UploadOptions,
        media_type: Option<MediaType>,
    ) -> Result<S3Upload, StoreError> {
        let sha512 = options
            .expected_digest
            .as_ref()
            .is_some_and(|d| d.sha512.is_some());
        let sha256 = sha256
            || options
                .expected_digest
                .as_ref()
                .is_some_and(|d| d.sha256.is_some());
        // As `LocalStore`: the declared length and the entry are taken before any byte arrives,
        // so an upload that cannot fit is refused before its body.
        let reserved = options.expected_len.unwrap_or(0).saturating_add(ENTRY_COST);
        self.inner.usage.reserve(reserved)?;
        Ok(S3Upload {
            reserved,
            store: self.clone(),
            key,
            hashers: Hashers::new(sha256, sha512),
            options,
            media_type,
            // ALLOCATION: the part buffer, once per upload (and again per part sent).
            part: BytesMut::new(),
            size: 0,
            multipart: None,
            checksum_follows: false,
            late_checksum: None,
        })
    }

    /// A `PutObject` of a small body with these (signed) headers.
    async fn put_small<K: AsRef<str>>(
        &self,
        key: &str,
        headers: &[(K, String)],
        body: Bytes,
    ) -> Result<Response<Incoming>, StoreError> {
        let mut action = self
            .inner
            .bucket
            .put_object(Some(&self.inner.credentials), key);
        for (k, v) in headers {
            action.headers_mut().insert(k.as_ref(), v.as_str());
        }
        let url = action.sign(SIGNED_FOR);
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_ref(), v.as_str()))
            .collect();
        self.send("put object", Method::PUT, url, &pairs, body)
            .await
    }
}

impl Store for S3Store {
    type Upload = S3Upload;
    type Object = S3Object;

    const ATOMIC_COMMIT_ALL: bool = false;
    const ATOMIC_RENAME: bool = false;

    fn quota(&self) -> Option<(u64, u64)> {
        self.max_storage().map(|max| (self.usage(), max))
    }

    async fn props(&self, path: &StorePath) -> Result<Option<Vec<u8>>, StoreError> {
        self.object_props(path).await
    }

    async fn set_props(&self, path: &StorePath, value: Option<&[u8]>) -> Result<(), StoreError> {
        self.set_object_props(path, value).await
    }

    async fn set_modified(
        &self,
        path: &StorePath,
        client: std::time::SystemTime,
    ) -> Result<(), StoreError> {
        self.set_object_modified(path, client).await
    }

    async fn copy(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<VersionCheck<'_>>,
        meta: CopyMeta<'_>,
    ) -> Result<Committed, StoreError> {
        self.copy_object(from, to, check, meta)
            .await
            .map(|(c, _)| c)
    }

    async fn rename(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Committed, StoreError> {
        self.rename_object(from, to, check).await
    }

    async fn begin(
        &self,
        path: &StorePath,
        options: UploadOptions,
        media_type: Option<MediaType>,
    ) -> Result<S3Upload, StoreError> {
        // SHA-256 always: the object's digest, stored with it.
        self.begin_key(self.key(path), true, options, media_type)
    }

    async fn open(&self, path: &StorePath) -> Result<S3Object, StoreError> {
        let key = self.key(path);
        match self.head(&key).await? {
            Some(head) => Ok(S3Object {
                store: self.clone(),
                key,
                head,
            }),
            None => Err(StoreError::NotFound),
        }
    }

    async fn list_page(
        &self,
        dir: Option<&StorePath>,
        after: Option<&str>,
        limit: NonZeroUsize,
    ) -> Result<ListPage, StoreError> {
        // A page of names that are never served (weir's own `.weir-locks/` and `.weir-meta/`
        // at the top, a foreign writer's invalid names) would come back empty with a cursor:
        // the next ones are fetched instead, a few times at most.
        let mut page = self.list_page_once(dir, after, limit).await?;
        for _ in 0..4 {
            match (&page.next, page.entries.is_empty()) {
                (Some(next), true) => {
                    let next = next.clone();
                    page = self.list_page_once(dir, Some(&next), limit).await?;
                }
                _ => break,
            }
        }
        Ok(page)
    }

    async fn create_dir(&self, path: &StorePath) -> Result<bool, StoreError> {
        let key = self.key(path);
        if self.head_raw(&key).await?.is_some() {
            return Err(StoreError::NotADirectory);
        }
        if self.is_dir(path).await? {
            return Ok(false);
        }
        // As `LocalStore` counts a directory; `list_usage` counts the marker the same way.
        self.inner.usage.reserve(ENTRY_COST)?;
        // ALLOCATION: the marker's key, once per folder created.
        let marker = format!("{key}/");
        let headers = [("if-none-match", "*".to_owned())];
        let resp = match self.put_small(&marker, &headers, Bytes::new()).await {
            Ok(r) => r,
            Err(e) => {
                self.inner.usage.release(ENTRY_COST);
                return Err(e);
            }
        };
        match resp.status() {
            s if s.is_success() => {
                self.note_committed(ENTRY_COST, None);
                Ok(true)
            }
            // Another request made it meanwhile.
            StatusCode::PRECONDITION_FAILED | StatusCode::CONFLICT => {
                self.inner.usage.release(ENTRY_COST);
                Ok(false)
            }
            _ => {
                self.inner.usage.release(ENTRY_COST);
                Err(failure("create folder", resp).await)
            }
        }
    }

    async fn is_dir(&self, path: &StorePath) -> Result<bool, StoreError> {
        Ok(self.dir_modified(path).await?.is_some())
    }

    async fn dir_modified(&self, path: &StorePath) -> Result<Option<SystemTime>, StoreError> {
        // One key under `path/` is enough, the marker or anything below: no delimiter. The
        // marker `path/` sorts before every other key below it, so when `create_dir` made the
        // folder its time is the one answered.
        let i = &self.inner;
        let below = format!("{}/", self.key(path));
        let mut action = i.bucket.list_objects_v2(Some(&i.credentials));
        action.with_prefix(below.as_str());
        action.with_max_keys(1);
        let parsed = self.list_objects("list objects", action).await?;
        Ok(parsed
            .contents
            .first()
            .map(|c| list::parse_iso8601(&c.last_modified).unwrap_or(UNIX_EPOCH)))
    }

    async fn delete_dir(&self, path: &StorePath) -> Result<(), StoreError> {
        // Two keys under `path/` tell everything: none (no folder, unless an object is at
        // `path`), the marker alone (an empty folder), anything else (keys below it).
        let i = &self.inner;
        let key = self.key(path);
        // ALLOCATION: the marker's key, once per folder delete.
        let marker = format!("{key}/");
        let mut action = i.bucket.list_objects_v2(Some(&i.credentials));
        action.with_prefix(marker.as_str());
        action.with_max_keys(2);
        let parsed = self.list_objects("list objects", action).await?;
        let only_marker = parsed.contents.len() == 1 && parsed.contents[0].key == marker;
        if parsed.contents.is_empty() {
            return match self.head_raw(&key).await? {
                Some(_) => Err(StoreError::NotADirectory),
                None => Err(StoreError::NotFound),
            };
        }
        if !only_marker {
            return Err(StoreError::DirectoryNotEmpty);
        }
        // A key written below between the listing and this delete keeps the folder listed
        // (as its prefix): nothing is lost, the folder only stops being an empty one.
        let url = i
            .bucket
            .delete_object(Some(&i.credentials), &marker)
            .sign(SIGNED_FOR);
        let resp = self
            .send("delete folder", Method::DELETE, url, &[], Bytes::new())
            .await?;
        match resp.status() {
            s if s.is_success() => {
                self.note_deleted(0);
                Ok(())
            }
            StatusCode::NOT_FOUND => Err(StoreError::NotFound),
            _ => Err(failure("delete folder", resp).await),
        }
    }

    async fn delete(
        &self,
        path: &StorePath,
        check: Option<VersionCheck<'_>>,
    ) -> Result<(), StoreError> {
        let key = self.key(path);
        let Some(current) = self.head(&key).await? else {
            return Err(StoreError::NotFound);
        };
        let mut action = self
            .inner
            .bucket
            .delete_object(Some(&self.inner.credentials), &key);
        let condition;
        if let Some(check) = check {
            if !check(Some(&current.meta)) {
                return Err(StoreError::PreconditionFailed);
            }
            condition = Self::condition(Some(&current));
            action
                .headers_mut()
                .insert(condition.0, condition.1.as_str());
        }
        let headers: Vec<(&str, &str)> = action.headers_mut().iter().collect();
        let headers: Vec<(String, String)> = headers
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let url = action.sign(SIGNED_FOR);
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let resp = self
            .send("delete object", Method::DELETE, url, &pairs, Bytes::new())
            .await?;
        match resp.status() {
            s if s.is_success() => {
                self.note_deleted(current.meta.size);
                if current.etag.contains('-') {
                    self.delete_sidecar(&key).await;
                }
                Ok(())
            }
            StatusCode::NOT_FOUND => Err(StoreError::NotFound),
            StatusCode::PRECONDITION_FAILED | StatusCode::CONFLICT => {
                Err(StoreError::PreconditionFailed)
            }
            _ => Err(failure("delete object", resp).await),
        }
    }
}

mod answers;
mod commit_lock;
mod copy;
mod list;
mod meta;
mod multipart_sweep;
mod multiparts;
mod props;
mod read;
mod resumable;
mod sidecar;
mod upload;

use answers::{
    check_write, collect, error_code, etag, etag_of, failure, head_from, hex, jiff_now,
    parse_hex32, source_chain, write_failure, xml_unescape,
};
pub use multiparts::S3Multiparts;
use read::S3Object;
pub use resumable::{
    S3Append, S3AppendEnd, S3Creation, S3ResumableOptions, S3Resumables, S3UploadState,
};
pub use upload::S3Upload;
use upload::{Late, ObjectWrite, abort_request, create_multipart_request, upload_part};
