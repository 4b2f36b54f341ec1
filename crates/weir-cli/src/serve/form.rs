//! `POST /files/{dir}/` with `multipart/form-data` (browser forms, `curl -F`): every file part
//! is streamed into the store under `{dir}/{filename}`.
//!
//! The body is read straight into a pooled buffer (`Exchange::read_body`, direct reads) and
//! the parser hands out slices of it, which `Upload::write` hashes and writes in place. The only
//! other copy moves the few bytes held back at the end of the buffer (a possible delimiter, or
//! a part's headers not yet complete) to its front before the next read.
//!
//! All or nothing per request: each file goes to its own temporary file, and they are committed
//! together (`LocalStore::commit_all`) only once the whole body has arrived and parsed. A body
//! that fails midway (client gone, malformed, too large, disk full), two parts with the same
//! file name, or a part whose path another part (or the tree) needs as a directory: none of its
//! files is stored, no directory is made, even across a crash during the commit. A finished
//! part's temporary is parked (its descriptor closed): a form holds one open upload file at a
//! time however many files it has. Form fields without a file
//! name are read and ignored. `filename` may contain `/` (a browser's folder upload); it is
//! validated as a store path like any URL path. Preconditions (`If-None-Match: *`: create
//! only) apply to each file's own target, when its part begins and again inside the form's
//! commit, under the store's lock before any rename (`preconditions.rs`); one failing is a 412
//! for the form, and nothing is stored.

use super::multipart::{self, Event, MultipartError, Parser};
use super::preconditions;
use super::reply::{self, Problem, hex};
use super::service::Service;
use super::upload::{BodyFailure, too_large};
use http::StatusCode;
use weir::{Exchange, http};
use weir_store::{StoreError, StorePath, Upload, UploadOptions};

/// Most files in one form: each is a temporary file in the staging area until the end of the
/// body (closed once its part is received).
const MAX_FILES: usize = 1000;

pub(super) async fn post(
    svc: &Service,
    ex: &mut Exchange<'_>,
    dir: Option<StorePath>,
) -> Result<(), weir::Error> {
    let boundary = ex
        .request()
        .header_str("content-type")
        .and_then(multipart::boundary);
    let Some(boundary) = boundary else {
        return reply::error(
            ex,
            Problem::UnsupportedMediaType,
            "POST needs multipart/form-data with a boundary (use PUT for a raw body)",
            &[],
        )
        .await;
    };
    let max = svc.options.max_upload;
    if ex.request().content_length().is_some_and(|len| len > max) {
        return too_large(ex, max).await;
    }
    ex.set_max_body_size(Some(max));
    let parser = match Parser::new(&boundary) {
        Ok(p) => p,
        Err(e) => return reply::error(ex, Problem::BadRequest, e.0, &[]).await,
    };
    let staged = match receive(svc, ex, parser, dir.as_ref()).await {
        Ok(staged) => staged,
        Err(FormFailure::Malformed(message)) => {
            return reply::error(ex, Problem::BadRequest, message, &[]).await;
        }
        Err(FormFailure::Body(failure)) => return failure.answer(ex, max).await,
        Err(FormFailure::Precondition) => return preconditions::failed(ex).await,
    };
    if staged.is_empty() {
        return reply::error(ex, Problem::BadRequest, "no file in the form", &[]).await;
    }
    let (paths, uploads): (Vec<_>, Vec<_>) = staged.into_iter().unzip();
    // The preconditions of every part are checked again inside the commit, under the store's
    // lock and before anything is renamed: one refused stores none of the files.
    let committed = match preconditions::commit_all_checked(&svc.store, uploads, ex.request()) {
        Ok(c) => c,
        Err(StoreError::PreconditionFailed) => return preconditions::failed(ex).await,
        Err(e @ StoreError::DuplicatePath { .. }) => {
            let message = format!("two parts of the form have the same file name: {e}");
            return reply::error(ex, Problem::PathConflict, &message, &[]).await;
        }
        Err(e @ (StoreError::NotADirectory | StoreError::IsDirectory)) => {
            let message = format!(
                "a part's path conflicts with another part or a stored file or directory ({e}); \
                 nothing was stored"
            );
            return reply::error(ex, Problem::PathConflict, &message, &[]).await;
        }
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let mut stored = Vec::with_capacity(committed.len());
    for (path, committed) in paths.iter().zip(committed) {
        svc.on_stored(path.as_str(), &committed);
        stored.push(serde_json::json!({
            "path": path.as_str(),
            "size": committed.size,
            "sha256": committed.sha256.map(|d| hex(&d)),
            "replaced": committed.replaced,
        }));
    }
    let mut body = serde_json::json!({ "files": stored });
    if super::upload::wants_internals(ex) {
        body["body"] = super::upload::body_stats_json(&ex.body_stats());
    }
    reply::json(ex, StatusCode::CREATED, &body).await
}

enum FormFailure {
    Malformed(&'static str),
    Body(BodyFailure),
    /// A file part's target fails the request's preconditions (`preconditions.rs`).
    Precondition,
}

impl From<MultipartError> for FormFailure {
    fn from(e: MultipartError) -> Self {
        Self::Malformed(e.0)
    }
}

/// Reads and parses the whole body, writing each file part to its own upload.
async fn receive(
    svc: &Service,
    ex: &mut Exchange<'_>,
    mut parser: Parser,
    dir: Option<&StorePath>,
) -> Result<Vec<(StorePath, Upload)>, FormFailure> {
    let mut buf = svc.buffers.take();
    let (mut start, mut end) = (0usize, 0usize);
    let mut staged = Vec::new();
    // The part being received: `None` between parts; `Some(None)` for a field being skipped.
    let mut current: Option<Option<(StorePath, Upload)>> = None;
    loop {
        loop {
            let (consumed, event) = parser.step(&buf[start..end])?;
            start += consumed;
            match event {
                None => break,
                Some(Event::Part(head)) => {
                    let upload = match head.filename {
                        Some(name) if !name.is_empty() => {
                            if staged.len() == MAX_FILES {
                                return Err(FormFailure::Malformed("too many files in one form"));
                            }
                            let (path, mut upload) = begin(svc, ex.request(), dir, &name)?;
                            if let Some(media_type) = &head.content_type {
                                upload.set_media_type(media_type);
                            }
                            Some((path, upload))
                        }
                        _ => None,
                    };
                    current = Some(upload);
                }
                Some(Event::Data(data)) => match current.as_mut() {
                    Some(Some((_, upload))) => upload
                        .write(data)
                        .map_err(|e| FormFailure::Body(BodyFailure::Store(e)))?,
                    Some(None) => {}
                    None => return Err(FormFailure::Malformed("data outside a part")),
                },
                Some(Event::PartEnd) => {
                    if let Some(Some((path, mut upload))) = current.take() {
                        upload
                            .park()
                            .map_err(|e| FormFailure::Body(BodyFailure::Store(e)))?;
                        staged.push((path, upload));
                    }
                }
                Some(Event::End) => {}
            }
        }
        if start == end {
            (start, end) = (0, 0);
        } else if start > 0 {
            // COPY: the held-back tail (under a delimiter's length, or an incomplete part
            // head) moves to the front so the next read can append to it.
            buf.copy_within(start..end, 0);
            (start, end) = (0, end - start);
        }
        if end == buf.len() {
            // Cannot happen: a part head is at most `MAX_PART_HEAD`, far below the buffer.
            return Err(FormFailure::Malformed("multipart part headers too large"));
        }
        let n = ex
            .read_body(&mut buf[end..])
            .await
            .map_err(|e| FormFailure::Body(BodyFailure::Body(e)))?;
        if n == 0 {
            break;
        }
        end += n;
    }
    if !parser.is_done() {
        return Err(FormFailure::Malformed(
            "multipart body ends before its close delimiter",
        ));
    }
    Ok(staged)
}

/// The store path of the file `filename` (which may contain `/`) under `dir` (the root when
/// `None`), validated as any store path.
pub(super) fn file_in(dir: Option<&StorePath>, filename: &str) -> Result<StorePath, &'static str> {
    let joined;
    let full = match dir {
        Some(dir) => {
            joined = format!("{dir}/{filename}");
            &joined
        }
        None => filename,
    };
    StorePath::parse(full).map_err(|e| e.as_str())
}

/// Starts the upload of one file part.
fn begin(
    svc: &Service,
    head: &weir::Request,
    dir: Option<&StorePath>,
    filename: &str,
) -> Result<(StorePath, Upload), FormFailure> {
    let path = file_in(dir, filename).map_err(FormFailure::Malformed)?;
    if !preconditions::hold_now(&svc.store, head, &path) {
        return Err(FormFailure::Precondition);
    }
    let options = UploadOptions {
        hash: svc.options.hash,
        ..UploadOptions::default()
    };
    let upload = svc
        .store
        .begin(&path, options)
        .map_err(|e| FormFailure::Body(BodyFailure::Store(e)))?;
    Ok((path, upload))
}
