//! `GET`/`HEAD /files/{path}`: a stored object, whole or one range. Written once, generic over
//! weir-store's `Store` (static dispatch); how the bytes go out is the object's capability:
//! - a local file (`StoreObject::sendfile_source`): `sendfile`, page cache → socket;
//! - a range of at least `FORWARD_AT_LEAST` (1 MiB) from a plain-`http://` bucket
//!   (`StoreObject::read_socket`): a connection of its own, spliced to the client
//!   (`BodyWriter::splice_from`: over plain HTTP/1.1 the bytes never enter user space; TLS and
//!   HTTP/2 clients get them through a buffer);
//! - else the store's chunks (`StoreObject::read`: a bucket's `GetObject`, hyper's frames),
//!   written as they come; the read starts before the answer, so its failure is still a 502.
//!
//! The object is opened once and everything comes from it (its metadata, its stored digest,
//! its bytes), so a concurrent upload replacing the path cannot mix two versions into one
//! response: a local handle keeps reading the version it opened; a bucket's reads carry
//! `If-Match` on the version its `HeadObject` saw.
//!
//! Validators: `ETag` (`preconditions::etag`, the one definition every route uses) is the stored SHA-256
//! when the store has it (strong, content-based), else size and modification time in
//! nanoseconds (strong in practice: every commit is a new file with a new mtime, and versions
//! committed within one second get distinct ones, see weir-store's `version_date.rs`).
//! `Last-Modified` is the commit time; when an earlier version had the same second, the date
//! is a weak validator (`preconditions::validators`). Preconditions are evaluated by
//! [`weir_proto::conditional`] in RFC 9110 §13.2.2's order, on the opened file's validators:
//! `If-Match`/`If-Unmodified-Since` can answer `412`, `If-None-Match`/`If-Modified-Since`
//! `304`. A missing file is `404` whatever the preconditions (§13.2.1: the unconditional
//! answer would not be 2xx). `If-Range` (strong comparison, or an exact strong date) keeps a
//! `Range` only while the file is unchanged. `Repr-Digest` (RFC 9530) carries the stored
//! SHA-256 of the whole file, for 200 and 206 alike, so `weir get` can verify what it wrote.

use crate::serve::mime;
use crate::serve::preconditions::{self, etag, validators};
use crate::serve::reply::{self, Problem};
use http::{Method, StatusCode};
use std::time::SystemTime;
use weir::{Exchange, Response, http};
use weir_proto::conditional::{self, Outcome};
use weir_proto::range::{self, RangeAnswer};
use weir_store::{ContentDigest, FileMeta, Store, StoreError, StoreObject, StorePath, StoreReader};

/// Ranges at least this long are forwarded from a socket of their own
/// (`StoreObject::read_socket`) when the store offers one: below it, the extra connection
/// costs more than the copies it saves.
#[cfg(feature = "s3")]
const FORWARD_AT_LEAST: u64 = 1 << 20;

/// `GET`/`HEAD /files/{path}` from `store` (see the module doc).
pub(in crate::serve) async fn serve<S: Store>(
    store: &S,
    ex: &mut Exchange<'_>,
    path: &StorePath,
) -> Result<(), weir::Error> {
    let object = match store.open(path).await {
        Ok(o) => o,
        // The listing lives at the slash form of the URL: a local directory, or a bucket's
        // "directory" (keys below it, or a folder's marker).
        Err(StoreError::IsDirectory) => return moved_to_listing(ex).await,
        Err(StoreError::NotFound) if store.is_dir(path).await.unwrap_or(false) => {
            return moved_to_listing(ex).await;
        }
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let meta = *object.meta();
    let Some(answer) = Answer::evaluate(ex, &meta).await? else {
        return Ok(());
    };
    // Locally one fgetxattr(2): the type the client gave the file, if it was kept.
    let content_type = mime::content_type(object.media_type().copied(), path.file_name());
    let response = |ex| answer.respond(ex, &meta, content_type);
    send(ex, object, &answer, path, response).await
}

/// Sends `answer`'s bytes of `object`, the head made by `head` (the route's: `/files/`'s,
/// or the S3 API's with its own fields): `sendfile` for a local file, else the store's chunks
/// or socket (see the module doc). Shared by every route that serves an object's bytes.
pub(in crate::serve) async fn send<'x, 'c, O: StoreObject>(
    ex: &'x mut Exchange<'c>,
    object: O,
    answer: &Answer,
    path: &StorePath,
    head: impl FnOnce(&'x mut Exchange<'c>) -> Response<'x, 'c>,
) -> Result<(), weir::Error> {
    let (start, len) = (answer.start, answer.len);
    if let Some(file) = object.sendfile_source() {
        let response = head(ex);
        // `sendfile` on plain sockets: page cache → socket, no user-space copy. HEAD sends the
        // head only (weir knows the method).
        return response.file(file, start, len).await;
    }
    let head_only = *ex.request().method() == Method::HEAD;
    // The read starts before the answer, so a store failure can still be answered (502).
    // A large range is taken on a socket of its own when the store offers one, and spliced.
    #[cfg(feature = "s3")]
    let socket = if !head_only && len >= FORWARD_AT_LEAST {
        match object.read_socket(start..start + len).await {
            Ok(s) => s,
            Err(e) => return reply::store_error(ex, &e).await,
        }
    } else {
        None
    };
    #[cfg(not(feature = "s3"))]
    let socket: Option<std::convert::Infallible> = None;
    let mut reader = if head_only || socket.is_some() {
        None
    } else {
        match object.read(start..start + len).await {
            Ok(r) => Some(r),
            Err(e) => return reply::store_error(ex, &e).await,
        }
    };
    let response = head(ex);
    let mut writer = response.stream(Some(len)).await?;
    #[cfg(feature = "s3")]
    if let Some(body) = &socket {
        if !body.head.is_empty() {
            writer.write(&body.head).await?;
        }
        if let Err(e) = writer
            .splice_from(&body.stream, body.rest, body.idle_timeout)
            .await
        {
            // As below: the declared length not reached, the client sees a cut body.
            tracing::error!(error = %e, path = %path, "forwarding the object failed");
            return Err(e);
        }
    }
    if let Some(reader) = &mut reader {
        loop {
            match reader.next_chunk().await {
                Ok(Some(chunk)) => writer.write(&chunk).await?,
                Ok(None) => break,
                Err(e) => {
                    // The head is out: the declared length not reached ends the connection,
                    // so the client sees a cut body, never a wrong one.
                    tracing::error!(error = %e, path = %path, "object store read failed");
                    return Err(weir::Error::user(e));
                }
            }
        }
    }
    writer.finish().await
}

/// `301` to the slash form of the URL, where a directory's listing is.
async fn moved_to_listing(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    let location = format!("{}/", ex.request().path());
    ex.respond(StatusCode::MOVED_PERMANENTLY)
        .header("location", location)
        .empty()
        .await
}

/// Why a conditional or partial read is not answered with the object ([`Answer::judge`]).
pub(in crate::serve) enum Refusal {
    /// `304`, with the validators the answer carries.
    NotModified { etag: String, last_modified: String },
    /// `412`.
    PreconditionFailed,
    /// `416`, for an object of `size` bytes.
    Unsatisfiable { size: u64 },
}

/// A `GET`/`HEAD` of one stored version once its preconditions and `Range` were judged.
pub(in crate::serve) struct Answer {
    status: StatusCode,
    /// The first byte sent and how many.
    pub(in crate::serve) start: u64,
    pub(in crate::serve) len: u64,
    etag: String,
    last_modified: String,
}

impl Answer {
    /// Judges the request's preconditions (RFC 9110 §13.2.2's order) and `Range` (kept only
    /// while `If-Range` holds) on `meta`; `None` once a `304`, `412` or `416` was answered.
    pub(in crate::serve) async fn evaluate(
        ex: &mut Exchange<'_>,
        meta: &FileMeta,
    ) -> Result<Option<Self>, weir::Error> {
        match Self::judge(ex.request(), meta) {
            Ok(answer) => Ok(Some(answer)),
            Err(Refusal::NotModified {
                etag,
                last_modified,
            }) => {
                ex.respond(StatusCode::NOT_MODIFIED)
                    .header("etag", &etag)
                    .header("last-modified", &last_modified)
                    .empty()
                    .await?;
                Ok(None)
            }
            Err(Refusal::PreconditionFailed) => {
                preconditions::failed(ex).await?;
                Ok(None)
            }
            Err(Refusal::Unsatisfiable { size }) => {
                let content_range = format!("bytes */{size}");
                let headers = [("content-range", content_range.as_str())];
                let message = "range not satisfiable";
                reply::error(ex, Problem::RangeNotSatisfiable, message, &headers).await?;
                Ok(None)
            }
        }
    }

    /// The judgement of [`Answer::evaluate`], without answering: the one rule of conditional
    /// and partial reads, whatever protocol then answers a refusal (`/files/`'s problem
    /// bodies, the S3 API's XML).
    pub(in crate::serve) fn judge(
        request: &weir::Request,
        meta: &FileMeta,
    ) -> Result<Self, Refusal> {
        let etag = etag(meta);
        let current = validators(meta, &etag);
        // Never later than the response's `Date` (RFC 9110 §8.8.2.1): a modification time in
        // the future is shown as now. Comparisons keep the real time, so such a date never
        // matches.
        let last_modified = httpdate::fmt_http_date(meta.modified.min(SystemTime::now()));
        let fields = crate::serve::preconditions::Fields(request);
        match conditional::evaluate(&fields, Some(&current)) {
            Outcome::Proceed => {}
            Outcome::NotModified => {
                return Err(Refusal::NotModified {
                    etag,
                    last_modified,
                });
            }
            Outcome::PreconditionFailed => return Err(Refusal::PreconditionFailed),
        }
        let range = match request.header("range") {
            Some(range) if conditional::if_range_holds(&fields, &current) => {
                range::evaluate(range, meta.size)
            }
            _ => RangeAnswer::Full,
        };
        let (status, start, len) = match range {
            RangeAnswer::Full => (StatusCode::OK, 0, meta.size),
            RangeAnswer::Partial { start, len } => (StatusCode::PARTIAL_CONTENT, start, len),
            RangeAnswer::Unsatisfiable => return Err(Refusal::Unsatisfiable { size: meta.size }),
        };
        Ok(Self {
            status,
            start,
            len,
            etag,
            last_modified,
        })
    }

    /// The answer narrowed to `len` bytes from `start` (within the object: S3's `partNumber`),
    /// a partial answer unless that is the whole object.
    pub(in crate::serve) fn narrowed(mut self, start: u64, len: u64, size: u64) -> Self {
        debug_assert!(start + len <= size);
        self.start = start;
        self.len = len;
        if start != 0 || len != size {
            self.status = StatusCode::PARTIAL_CONTENT;
        }
        self
    }

    /// The response head: status, validators, type, `Repr-Digest` and `Content-Range`; the
    /// caller sends the body.
    pub(in crate::serve) fn respond<'x, 'c>(
        &self,
        ex: &'x mut Exchange<'c>,
        meta: &FileMeta,
        content_type: impl std::fmt::Display,
    ) -> Response<'x, 'c> {
        let mut response = ex
            .respond(self.status)
            .header_display("content-type", content_type)
            .header("accept-ranges", "bytes")
            .header("etag", &self.etag)
            .header("last-modified", &self.last_modified)
            .header("x-content-type-options", "nosniff")
            // Uploaded HTML must not run scripts in this origin.
            .header("content-security-policy", "sandbox");
        if let Some(sha256) = meta.sha256 {
            let digest = ContentDigest {
                sha256: Some(sha256),
                sha512: None,
            };
            response = response.header("repr-digest", digest.to_header_value());
        }
        if self.status == StatusCode::PARTIAL_CONTENT {
            let end = self.start + self.len - 1;
            response = response.header(
                "content-range",
                format!("bytes {}-{end}/{}", self.start, meta.size),
            );
        }
        response
    }
}
