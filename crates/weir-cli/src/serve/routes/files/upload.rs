//! `PUT /files/{path}`: the body streams into the store and becomes the file atomically, or
//! nothing is stored. Written once, generic over weir-store's `Store` (static dispatch); the
//! local store's powers are asked of the upload (`StoreUpload::file`), never of the store's
//! name.
//!
//! Before any body byte is read: the declared length against `--max-upload` (413), the
//! `Content-Digest` syntax (400), the preconditions against the file there now (412, checked
//! again by the store at commit, atomically with it: `preconditions.rs`), `begin` (which checks
//! the declared length against `--max-storage`: 507, and refuses a directory or symlink in the
//! way), and, into a local file, `Upload::preallocate` (507 if the filesystem's free space
//! cannot hold the declared length). Neither holds the whole length: the quota and the blocks
//! on disk are reserved a window ahead of the bytes received (weir-store's
//! `quota::reserved_end`: 8 MiB growing with what arrived, to 64 MiB), so a client that
//! declares much and sends little holds little. Then one of the data paths, recorded in the
//! answer's internals (`data_path` and the body counters, sent only on request:
//! `wants_internals`):
//!
//! - **splice** (a local file; `--no-hash`, no `Content-Digest`): `Exchange::body_to_file`
//!   moves the bytes socket → pipe → file inside the kernel; nothing enters user space. The
//!   bytes are reported to the upload afterwards (`record_external_write`), and commit checks
//!   the file's length.
//! - **hashed** (a local file): `Exchange::read_body` reads the socket straight into a pooled
//!   512 KiB buffer (the one user-space copy), which is written to the file and hashed in
//!   place, from the same buffer. The first `PIPELINE_AFTER` (`body.rs`) bytes are hashed inline
//!   (`Upload::write`: hash, then write, on the connection's task); beyond, the hashing is
//!   **pipelined**: up to three buffers take turns, each filled and written by the task, then
//!   hashed on a hashing thread (`hasher.rs`) while the task fills the next
//!   (`Upload::write_owned` → `hash_job` → `Hashed::chain` → `attach`, weir-store's protocol
//!   that keeps the digest exactly that of the bytes written). No copy is added: the hashing
//!   thread reads the buffer `write(2)` read. No allocation per read; per pipelined upload, one
//!   lane (buffers come from the pool). The answer's `hashing` says how many bytes were hashed
//!   `inline` and `pipelined`.
//! - **passed** (a local file): the client's open file, copied (`passed_file.rs`).
//! - **chunks** (a store without files, `--store s3://`): each body chunk handed to
//!   `StoreUpload::write`, which returns only when the store has room (the backpressure reaches
//!   the socket through the pause threshold). Memory per upload is the store's bound
//!   (`part_size × (parts_in_flight + 1)`) plus the pause threshold.
//!
//! A `Content-Digest` may also come as a trailer, after the body (`Exchange::trailers`): it is
//! verified at commit like one in the head (`expect_trailer_digest`). Announced in the head
//! (`Trailer: content-digest`), it makes the body take the hashed path even with `--no-hash`;
//! unannounced on the splice path, the store reads the file back to check it; a store that
//! hashed every byte on its way (a bucket) compares. Either way a mismatch is a 400 and nothing
//! is stored.
//!
//! Any failure aborts the upload (awaited before the answer), which removes its temporary file
//! or multipart upload: a client that disconnects, a body that is too large, a digest that does
//! not match, a full disk all leave the target as it was.

use crate::serve::body::{
    BodyFailure, NoCheckpoints, WhereHashed, announces_digest_trailer, body_stats_json,
    chunks_body, content_digest, expect_trailer_digest, hashed_body, splice_body, too_large,
    wants_internals,
};
use crate::serve::preconditions;
use crate::serve::reply::{self, Problem, hex};
use crate::serve::service::Service;
use http::StatusCode;
use weir::{Exchange, http};
use weir_proto::conditional;
use weir_store::{FileMeta, Store, StorePath, StoreUpload, Upload, UploadOptions};

#[cfg(target_os = "linux")]
mod passed_file;

/// Which way the body went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataPath {
    Splice,
    Hashed,
    /// The client passed its open file; copied with `copy_file_range` (`passed_file.rs`).
    Passed,
    /// Chunks through `StoreUpload::write`: a store without files (`--store s3://`).
    Chunks,
}

impl DataPath {
    fn as_str(self) -> &'static str {
        match self {
            Self::Splice => "splice",
            Self::Hashed => "hashed",
            Self::Passed => "passed",
            Self::Chunks => "chunks",
        }
    }
}

/// What another front end adds to a `PUT` beyond its request (WebDAV's headers: `webdav/`'s
/// `write.rs` reads them; `/files/` sends none).
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::serve) struct PutExtras {
    /// The client's modification time for the file (`StoreUpload::set_modified`); the answer
    /// then says `X-OC-Mtime: accepted`, as ownCloud's does.
    pub(in crate::serve) modified: Option<std::time::SystemTime>,
    /// The body's length when the request has no `Content-Length` (a chunked body with
    /// macOS's `X-Expected-Entity-Length`): checked like a declared length (413 beyond
    /// `--max-upload`, the quota at `begin`, and a body of another length stores nothing).
    pub(in crate::serve) expected_len: Option<u64>,
}

/// `PUT /files/{path}` into `store` (see the module doc).
pub(in crate::serve) async fn put<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    path: StorePath,
) -> Result<(), weir::Error> {
    put_with(svc, store, ex, path, PutExtras::default()).await
}

/// [`put`] with what another front end adds ([`PutExtras`]).
pub(in crate::serve) async fn put_with<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    path: StorePath,
    extras: PutExtras,
) -> Result<(), weir::Error> {
    let max = svc.options.max_upload;
    let declared = ex.request().content_length().or(extras.expected_len);
    if declared.is_some_and(|len| len > max) {
        return too_large(ex, max).await;
    }
    ex.set_max_body_size(Some(max));
    let expected_digest = match content_digest(ex) {
        Ok(d) => d,
        Err(message) => return reply::error(ex, Problem::BadRequest, &message, &[]).await,
    };
    match preconditions::hold_now(store, ex.request(), &path).await {
        Ok(true) => {}
        Ok(false) => return preconditions::failed(ex).await,
        Err(e) => return reply::store_error(ex, &e).await,
    }
    // A passed descriptor is taken only by a store whose uploads are files; else the body
    // comes as for any `PUT` (the descriptor is closed at the end of the exchange).
    #[cfg(target_os = "linux")]
    let passed = match S::LOCAL_FILES {
        true => match passed_file::take(ex) {
            Ok(passed) => passed,
            Err(reason) => return passed_file::refuse(ex, reason).await,
        },
        false => None,
    };
    let verify = !expected_digest.is_empty();
    // A digest announced to follow the body is checked like one in the head: hash while
    // receiving, rather than splice and read the file back at commit.
    let trailer_announced = announces_digest_trailer(ex);
    #[cfg(target_os = "linux")]
    let passed_path = passed.is_some();
    #[cfg(not(target_os = "linux"))]
    let passed_path = false;
    let data_path = if !S::LOCAL_FILES {
        DataPath::Chunks
    } else if passed_path {
        DataPath::Passed
    } else if !svc.options.hash
        && !verify
        && !trailer_announced
        && (declared.is_some() || !svc.options.limited_storage)
    {
        DataPath::Splice
    } else {
        DataPath::Hashed
    };
    #[cfg(target_os = "linux")]
    let hash_asked = passed_path && passed_file::wants_sha256(ex);
    #[cfg(not(target_os = "linux"))]
    let hash_asked = false;
    let options = UploadOptions {
        hash: svc.options.hash || trailer_announced || hash_asked,
        expected_digest: verify.then_some(expected_digest),
        expected_len: declared,
        object_meta: None,
    };
    // The client's media type is kept with the file when the store can; else it is served by
    // its name.
    let mut upload = match store
        .begin(&path, options, crate::serve::mime::of_request(ex))
        .await
    {
        Ok(u) => u,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    if let Some(t) = extras.modified {
        upload.set_modified(t);
    }
    let mut where_hashed = WhereHashed::default();
    #[cfg(target_os = "linux")]
    let mut passed_copy = None;
    let received = match upload.file() {
        Some(file) => {
            let body = FileBody {
                data_path,
                declared,
                hashing: svc.options.hash || verify || trailer_announced || hash_asked,
                #[cfg(target_os = "linux")]
                passed,
                #[cfg(target_os = "linux")]
                passed_copy: &mut passed_copy,
            };
            body.receive(svc, ex, file, &mut where_hashed).await
        }
        None => chunks_body(ex, &mut upload).await,
    };
    if let Err(failure) = received {
        // Aborted before answering, so nothing is left pending when the client hears of it.
        abort(upload, &path).await;
        return failure.answer(ex, max).await;
    }
    if let Err(message) = expect_trailer_digest(ex, &expected_digest, |d| upload.expect_digest(d)) {
        abort(upload, &path).await;
        return reply::error(ex, Problem::BadRequest, &message, &[]).await;
    }
    let head = ex.request();
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let conditional = conditional::has_preconditions(&preconditions::Fields(head));
    // Checked again by the store, atomically with the commit (under the local store's commit
    // lock; with the bucket's conditional write).
    let committed = match upload
        .commit(if conditional { Some(&check) } else { None })
        .await
    {
        Ok(c) => c,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    svc.on_stored(path.as_str(), &committed);
    let etag = preconditions::etag(&committed.stored);
    let stats = ex.body_stats();
    tracing::debug!(path = %path, size = committed.size, data_path = data_path.as_str(), "stored");
    let status = if committed.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let mut body = serde_json::json!({
        "path": path.as_str(),
        "size": committed.size,
        "sha256": committed.sha256.map(|d| hex(&d)),
        "replaced": committed.replaced,
    });
    if wants_internals(ex) {
        body["data_path"] = data_path.as_str().into();
        body["body"] = body_stats_json(&stats);
        body["hashing"] = where_hashed.json();
        #[cfg(target_os = "linux")]
        if let Some(way) = passed_copy {
            body["passed_copy"] = way.as_str().into();
        }
    }
    match extras.modified {
        Some(_) => {
            let headers = [("etag", etag.as_str()), ("x-oc-mtime", "accepted")];
            reply::json_with(ex, status, &body, &headers).await
        }
        None => reply::json_with(ex, status, &body, &[("etag", &etag)]).await,
    }
}

/// Discards a refused upload, waiting for the store (a bucket's multipart upload is aborted
/// before the client hears of it).
async fn abort<U: StoreUpload>(upload: U, path: &StorePath) {
    if let Err(e) = upload.abort().await {
        tracing::warn!(error = %e, path = %path, "aborting a refused upload failed");
    }
}

/// A body into an upload's own file (a store with [`Store::LOCAL_FILES`]): splice, direct
/// reads hashed beside the writes, or a passed descriptor's copy.
struct FileBody<'a> {
    data_path: DataPath,
    declared: Option<u64>,
    /// Anything is hashed (the answer's `hashing` counts it).
    hashing: bool,
    #[cfg(target_os = "linux")]
    passed: Option<std::fs::File>,
    #[cfg(target_os = "linux")]
    passed_copy: &'a mut Option<passed_file::CopyWay>,
    #[cfg(not(target_os = "linux"))]
    _life: std::marker::PhantomData<&'a ()>,
}

impl FileBody<'_> {
    async fn receive(
        self,
        svc: &Service,
        ex: &mut Exchange<'_>,
        upload: &mut Upload,
        where_hashed: &mut WhereHashed,
    ) -> Result<(), BodyFailure> {
        // A received body's declared length is checked before it is read: a disk that cannot
        // hold it is a 507 now, not after the client sent most of it; its blocks are then
        // reserved a window ahead of the bytes. (A passed file is cloned or copied by the
        // kernel, which allocates as it goes.)
        if self.data_path != DataPath::Passed {
            upload.preallocate().map_err(BodyFailure::Store)?;
        }
        match self.data_path {
            DataPath::Splice => splice_body(ex, upload, &mut NoCheckpoints).await,
            DataPath::Hashed => {
                let progress = &mut NoCheckpoints;
                hashed_body(svc, ex, upload, self.hashing, where_hashed, progress).await
            }
            // `take` checked that a passed file comes with a Content-Length.
            #[cfg(target_os = "linux")]
            DataPath::Passed => match (self.passed, self.declared) {
                (Some(file), Some(len)) => {
                    let copied = passed_file::copy(svc, upload, file, len, where_hashed).await;
                    copied.map(|way| *self.passed_copy = Some(way))
                }
                _ => unreachable!("the passed path is chosen with a file and a length"),
            },
            #[cfg(not(target_os = "linux"))]
            DataPath::Passed => unreachable!("files are passed on Linux only"),
            DataPath::Chunks => unreachable!("chosen for stores without files"),
        }
    }
}
