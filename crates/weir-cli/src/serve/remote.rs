//! The `/files/` routes over weir-store's storage interface ([`Store`]), for a store that is
//! not the local directory: `weir serve --store s3://BUCKET/PREFIX` (`S3Store`).
//!
//! | request | answer |
//! | --- | --- |
//! | `PUT /files/{path}` | the body streamed into the store (multipart parts): `201`/`200` + JSON, `412`, `413`, `400` (digest, length) |
//! | `GET`/`HEAD /files/{path}` | the object: validators, conditionals (`304`, `412`), one `Range` (`206`, `416`), `Repr-Digest` |
//! | `GET /files/` or `/files/{dir}/` | the JSON listing of `listing.rs`, in pages |
//! | `DELETE /files/{path}` | `204`, `404`, `412` |
//! | resumable (`Upload-Complete`, `/uploads/`), tus (`/tus/`) | kept in the bucket: `resumable.rs`, `tus.rs` over `S3Resumables` (without them: `501`, `not-implemented`) |
//! | `POST /files/{dir}/` (`multipart/form-data`) | the form's files, all or none: `remote_form.rs` (`201` + JSON, `412`, `413`, `409`, `400`, as the local route) |
//! | `PUT /files/{dir}/` (no body) | a folder: the zero-byte marker object `{dir}/` (`201`, `200` if it is one already) |
//! | `DELETE /files/{dir}/` | an empty folder's marker deleted (`204`); `409` if anything is below it (or a file is at `{dir}`), `404` if none |
//!
//! The checks before the route (method, token, path, scope: `service.rs`) are the local
//! routes'; so are the `ETag` and precondition definitions (`preconditions.rs`), the media
//! type rules (`mime.rs`) and the answers' JSON. What differs is where bytes go:
//!
//! - **Uploads**: each body chunk (`Exchange::read_body_chunk`, the read buffer's own bytes)
//!   is handed to [`StoreUpload::write`], which returns only when the store has room: while
//!   the parts in flight are being sent, the body is not read, so the server's pause threshold
//!   stops reading the socket and the client's TCP window closes. Memory per upload is the
//!   store's bound (`part_size × (parts_in_flight + 1)`) plus the pause threshold.
//!   Preconditions are evaluated on the object's metadata before the body (412 costs the head
//!   only) and again by the store at commit, atomically with the write (S3's conditional
//!   `If-None-Match: *` / `If-Match` on the completion).
//! - **Downloads**: one `HeadObject` for the validators, then a `GetObject` of the range pinned
//!   to that version. A range of at least [`FORWARD_AT_LEAST`] from a plain-`http://` store
//!   comes on a connection of its own ([`StoreObject::read_socket`]) and is spliced to the
//!   client (`BodyWriter::splice_from`: over plain HTTP/1.1 the bytes never enter user space;
//!   TLS and HTTP/2 clients get them through a buffer); other ranges' chunks (hyper's frames)
//!   are written as they come.
//!
//! A `Content-Digest` trailer (after a chunked body, or HTTP/2's trailing HEADERS) is verified
//! as one in the head is: it arrives after the last body byte and before the commit, and the
//! store hashed every byte on its way to a part, so the commit compares, then completes the
//! multipart upload only if it matches (else it is aborted: 400, nothing stored, nothing
//! pending). Read by `upload.rs`'s `expect_trailer_digest`, as for the local `PUT`.

use super::preconditions::{self, etag};
use super::reply::{self, Problem, hex};
use super::service::Service;
use super::target::Target;
use super::{download, listing, mime, remote_form, upload};
use http::{Method, StatusCode};
use std::sync::Arc;
use weir::{Exchange, http};
use weir_proto::conditional;
use weir_store::{
    FileMeta, S3ResumableOptions, S3Resumables, S3Store, Store, StoreError, StoreObject, StorePath,
    StoreReader, StoreUpload, UploadOptions,
};

impl Service {
    /// Serves `/files/` from `store` instead of the local root (resumable and tus uploads need
    /// [`Service::with_remote_resumable`]).
    pub fn with_remote(mut self, store: S3Store) -> Self {
        self.remote = Some(Arc::new(store));
        self
    }

    /// With [`Service::with_remote`]'s store: resumable and tus uploads kept in its bucket
    /// (`resumable.rs`, `tus.rs`), so that any node continues any upload.
    pub fn with_remote_resumable(mut self, options: S3ResumableOptions) -> Self {
        self.remote_resumables = self
            .remote
            .as_deref()
            .map(|store| S3Resumables::new(store.clone(), options));
        self
    }
}

/// How often the sweep runs (and once at start).
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);
/// How often the usage is listed again: other nodes' commits and deletes, and objects changed
/// behind weir's back, count from then on.
const LIST_USAGE_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// Starts the thread that removes expired resumable uploads (`resumable.rs`) and aborts
/// abandoned multipart uploads (begun more than `after` ago, `--s3-sweep-after`: left by a node
/// that died mid-upload; a live one aborts its own failures at once; a live resumable upload's
/// are kept) under the store's prefix, at start and every [`SWEEP_EVERY`], and lists the usage
/// of `serving` (the quota's and the metrics' count) again every [`LIST_USAGE_EVERY`]: with its
/// own client and runtime, so the service's workers never wait for it. Several nodes sweeping
/// the same prefix abort the same uploads; an abort of one already gone is not an error.
pub(super) fn start_sweeper(
    config: weir_store::S3Config,
    after: std::time::Duration,
    serving: S3Store,
) -> std::io::Result<()> {
    let store = S3Store::new(config).map_err(std::io::Error::other)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("weir-s3-sweep".into())
        .spawn(move || {
            let uploads = S3Resumables::new(store.clone(), S3ResumableOptions::default());
            runtime.block_on(async {
                let mut swept_at: Option<tokio::time::Instant> = None;
                loop {
                    if swept_at.is_none_or(|t| t.elapsed() >= SWEEP_EVERY) {
                        swept_at = Some(tokio::time::Instant::now());
                        // Expired resumable uploads first (each manifest holds its own expiry),
                        // so that their multipart uploads are no longer "live" below.
                        match uploads.sweep().await {
                            Ok((0, _)) => {}
                            Ok((n, _)) => {
                                tracing::info!(removed = n, "expired resumable uploads removed")
                            }
                            Err(e) => tracing::warn!(error = %e, "resumable upload sweep failed"),
                        }
                        match store.sweep_multipart(after).await {
                            Ok(0) => {}
                            Ok(n) => {
                                tracing::info!(aborted = n, "aborted abandoned multipart uploads")
                            }
                            Err(e) => tracing::warn!(error = %e, "multipart sweep failed"),
                        }
                    }
                    tokio::time::sleep(LIST_USAGE_EVERY).await;
                    match store.list_usage().await {
                        Ok(listed) => serving.set_listed_usage(listed),
                        Err(e) => tracing::warn!(error = %e, "listing the store's usage failed"),
                    }
                }
            });
        })?;
    Ok(())
}

/// Answers a route this store does not have.
pub(super) async fn not_implemented(ex: &mut Exchange<'_>, what: &str) -> Result<(), weir::Error> {
    let message = format!("{what} is not available with this store (--store s3://)");
    reply::error(ex, Problem::NotImplemented, &message, &[]).await
}

/// Routes an authorized `/files/` request (see the module doc).
pub(super) async fn serve<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    method: Method,
    target: Target,
) -> Result<(), weir::Error> {
    match (method, target) {
        (Method::GET | Method::HEAD, Target::File(p)) => download(store, ex, &p).await,
        (Method::GET | Method::HEAD, Target::Root) => list(store, ex, None).await,
        (Method::GET | Method::HEAD, Target::Dir(p)) => list(store, ex, Some(&p)).await,
        (Method::PUT, Target::File(p)) => put(svc, store, ex, p).await,
        (Method::PUT, Target::Dir(p)) => {
            super::service::folder_created(ex, &p, store.create_dir(&p)).await
        }
        (Method::POST, target) => {
            let dir = match target {
                Target::Root => None,
                Target::Dir(p) | Target::File(p) => Some(p),
            };
            remote_form::post(svc, store, ex, dir).await
        }
        (Method::DELETE, Target::File(p)) => delete(svc, store, ex, &p).await,
        (Method::DELETE, Target::Dir(p)) => {
            super::service::folder_deleted(svc, ex, &p, store.delete_dir(&p)).await
        }
        (Method::DELETE | Method::PUT, Target::Root) => {
            super::service::method_not_allowed(ex, "GET, HEAD, POST").await
        }
        _ => super::service::method_not_allowed(ex, "GET, HEAD, PUT, POST, DELETE").await,
    }
}

/// The object's metadata now (`None`: absent), for preconditions evaluated before the body
/// (a `PUT`'s, a resumable upload's creation: `resumable.rs`).
pub(super) async fn current<S: Store>(
    store: &S,
    path: &StorePath,
) -> Result<Option<FileMeta>, StoreError> {
    match store.open(path).await {
        Ok(obj) => Ok(Some(*obj.meta())),
        Err(StoreError::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `path` is a "directory" in the bucket: keys below it, or a folder's marker.
async fn is_dir<S: Store>(store: &S, path: &StorePath) -> bool {
    store.is_dir(path).await.unwrap_or(false)
}

async fn put<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    path: StorePath,
) -> Result<(), weir::Error> {
    let max = svc.options.max_upload;
    let declared = ex.request().content_length();
    if declared.is_some_and(|len| len > max) {
        return upload::too_large(ex, max).await;
    }
    ex.set_max_body_size(Some(max));
    let expected_digest = match upload::content_digest(ex) {
        Ok(d) => d,
        Err(message) => return reply::error(ex, Problem::BadRequest, &message, &[]).await,
    };
    let conditional = conditional::has_preconditions(&super::preconditions::Fields(ex.request()));
    if conditional {
        match current(store, &path).await {
            Ok(meta) if preconditions::hold(ex.request(), meta.as_ref()) => {}
            Ok(_) => return preconditions::failed(ex).await,
            Err(e) => return reply::store_error(ex, &e).await,
        }
    }
    let options = UploadOptions {
        hash: true,
        expected_digest: (!expected_digest.is_empty()).then_some(expected_digest),
        expected_len: declared,
    };
    let mut upload = match store.begin(&path, options, mime::of_request(ex)).await {
        Ok(u) => u,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    loop {
        match ex.read_body_chunk().await {
            Ok(Some(chunk)) => {
                // Waits while the store is busy with earlier parts: the backpressure.
                if let Err(e) = upload.write(&chunk).await {
                    return reply::store_error(ex, &e).await;
                }
            }
            Ok(None) => break,
            Err(e) => {
                // Dropping the upload aborts it.
                drop(upload);
                return upload::BodyFailure::Body(e).answer(ex, max).await;
            }
        }
    }
    let trailer = upload::expect_trailer_digest(ex, &expected_digest, |d| upload.expect_digest(d));
    if let Err(message) = trailer {
        // Aborted before answering, so nothing is left pending when the client hears of it.
        if let Err(e) = upload.abort().await {
            tracing::warn!(error = %e, path = %path, "aborting a refused upload failed");
        }
        return reply::error(ex, Problem::BadRequest, &message, &[]).await;
    }
    let head = ex.request();
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let committed = match upload
        .commit(if conditional { Some(&check) } else { None })
        .await
    {
        Ok(c) => c,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    svc.on_stored(path.as_str(), &committed);
    let etag = etag(&committed.stored);
    let status = if committed.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let body = serde_json::json!({
        "path": path.as_str(),
        "size": committed.size,
        "sha256": committed.sha256.map(|d| hex(&d)),
        "replaced": committed.replaced,
    });
    reply::json_with(ex, status, &body, &[("etag", &etag)]).await
}

/// Ranges at least this long are forwarded from a socket of their own
/// ([`StoreObject::read_socket`]) when the store offers one: below it, the extra connection
/// costs more than the copies it saves.
const FORWARD_AT_LEAST: u64 = 1 << 20;

async fn download<S: Store>(
    store: &S,
    ex: &mut Exchange<'_>,
    path: &StorePath,
) -> Result<(), weir::Error> {
    let object = match store.open(path).await {
        Ok(o) => o,
        Err(StoreError::NotFound) if is_dir(store, path).await => {
            // As for a local directory: the listing lives at the slash form of the URL.
            let location = format!("{}/", ex.request().path());
            return ex
                .respond(StatusCode::MOVED_PERMANENTLY)
                .header("location", location)
                .empty()
                .await;
        }
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let meta = *object.meta();
    let Some(answer) = download::Answer::evaluate(ex, &meta).await? else {
        return Ok(());
    };
    let (start, len) = (answer.start, answer.len);
    let content_type = mime::content_type(object.media_type().cloned(), path.file_name());
    let head_only = *ex.request().method() == Method::HEAD;
    // The read starts before the answer, so a store failure can still be answered (502).
    // A large range is taken on a socket of its own when the store offers one, and spliced.
    let mut socket = None;
    if !head_only && len >= FORWARD_AT_LEAST {
        match object.read_socket(start..start + len).await {
            Ok(s) => socket = s,
            Err(e) => return reply::store_error(ex, &e).await,
        }
    }
    let mut reader = if head_only || socket.is_some() {
        None
    } else {
        match object.read(start..start + len).await {
            Ok(r) => Some(r),
            Err(e) => return reply::store_error(ex, &e).await,
        }
    };
    let response = answer.respond(ex, &meta, content_type);
    let mut writer = response.stream(Some(len)).await?;
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

async fn delete<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    path: &StorePath,
) -> Result<(), weir::Error> {
    let head = ex.request();
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let conditional = conditional::has_preconditions(&super::preconditions::Fields(head));
    let deleted = store
        .delete(path, if conditional { Some(&check) } else { None })
        .await;
    match deleted {
        Ok(()) => {
            svc.on_deleted(path.as_str());
            ex.respond(StatusCode::NO_CONTENT).empty().await
        }
        Err(StoreError::PreconditionFailed) => preconditions::failed(ex).await,
        Err(e) => reply::store_error(ex, &e).await,
    }
}

async fn list<S: Store>(
    store: &S,
    ex: &mut Exchange<'_>,
    dir: Option<&StorePath>,
) -> Result<(), weir::Error> {
    let query = match listing::PageQuery::parse(ex.request().query()) {
        Ok(q) => q,
        Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
    };
    let page = match store
        .list_page(dir, query.after.as_deref(), query.limit)
        .await
    {
        Ok(p) => p,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    if let Some(dir) = dir {
        if query.after.is_none() && page.entries.is_empty() && page.next.is_none() {
            // Nothing listed: an empty folder if its marker is there, else none (404, as
            // locally).
            match store.is_dir(dir).await {
                Ok(true) => {}
                Ok(false) => {
                    return reply::error(ex, Problem::NotFound, "no such directory", &[]).await;
                }
                Err(e) => return reply::store_error(ex, &e).await,
            }
        }
    }
    let (body, next) = listing::render(dir, &page);
    listing::answer(ex, query.limit, body, next).await
}
