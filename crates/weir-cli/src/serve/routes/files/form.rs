//! `POST /files/{dir}/` with `multipart/form-data` (browser forms, `curl -F`): every file part
//! is streamed into the store under `{dir}/{filename}`. Written once, generic over weir-store's
//! `Store` (static dispatch).
//!
//! The body is read straight into a pooled buffer (`Exchange::read_body`, direct reads) and
//! the parser hands out slices of it, which `StoreUpload::write` takes in place (a local
//! upload hashes and writes them; a bucket's copies them into its part). The only other copy
//! moves the few bytes held back at the end of the buffer (a possible delimiter, or a part's
//! headers not yet complete) to its front before the next read.
//!
//! **Nothing before the end.** Each file goes to its own upload, and none is committed before
//! the whole body has arrived and parsed. A body that fails midway (client gone, malformed, too
//! large, disk full, a store failure), a part whose target fails the preconditions (checked
//! when its part begins), a form without a file: every upload is aborted, and the aborts are
//! awaited before the answer, so nothing is left pending and nothing is visible. When a part
//! ends its upload `finish_writes`: a local one parks its temporary (its descriptor closed: a
//! form holds one open upload file at a time however many files it has); a bucket's sends its
//! last part and waits for its parts (small files kept within one part size in total), so a
//! form holds at most `part_size × (parts_in_flight + 1)` for the file being written, plus
//! one `part_size` of small files waiting, plus the read buffer. Form fields without a file
//! name are read and ignored. `filename` may contain `/` (a browser's folder upload); it is
//! validated as a store path like any URL path.
//!
//! **Commit** (`Store::commit_all`), with the request's preconditions (`If-None-Match: *`:
//! create only) checked against each file's own target, and where the stores differ
//! (`Store::ATOMIC_COMMIT_ALL`):
//! - the local store commits all or none (`LocalStore::commit_all`): two parts with the same
//!   file name, a part whose path another part (or the tree) needs as a directory, a refused
//!   precondition: none of its files is stored, no directory is made, even across a crash
//!   during the commit;
//! - a bucket cannot commit several objects at once: the files are committed in order, each
//!   checked atomically with its own write; if one fails, the files this form already *created*
//!   are deleted again (each only if it is still the version the form wrote), and the answer is
//!   the failure's. A file the form *replaced* is left in place (the earlier version cannot be
//!   put back) and the answer names it. Between the first commit and the last, other clients
//!   can see the form's earlier files, and a node that dies there leaves them stored (tests:
//!   `s3_forms`).

use crate::serve::body::{self, BodyFailure, too_large};
use crate::serve::multipart::{self, Event, MultipartError, Parser};
use crate::serve::preconditions;
use crate::serve::reply::{self, Problem, hex};
use crate::serve::service::Service;
use http::StatusCode;
use std::future::Future;
use weir::{Exchange, Request, http};
use weir_proto::conditional;
use weir_store::{
    Committed, FileMeta, MediaType, Store, StoreError, StorePath, StoreUpload, UploadOptions,
    VersionCheck,
};

/// Most files in one form: each is a temporary file in the staging area (or, over S3, an
/// upload) until the end of the body.
const MAX_FILES: usize = 1000;

/// A form's files into `store` under `dir` (see the module doc).
pub(in crate::serve) async fn post<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    dir: Option<StorePath>,
) -> Result<(), weir::Error> {
    let Some(parser) = parser_for(svc, ex).await? else {
        return Ok(());
    };
    let conditional = conditional::has_preconditions(&preconditions::Fields(ex.request()));
    let mut sink = StagedForm {
        svc,
        store,
        current: None,
        staged: Vec::new(),
        held: 0,
    };
    if let Err(failure) = receive(svc, ex, parser, dir.as_ref(), &mut sink).await {
        sink.abort().await;
        return failure.answer(ex, svc.options.max_upload).await;
    }
    if sink.staged.is_empty() {
        return no_file(ex).await;
    }
    let staged = std::mem::take(&mut sink.staged);
    // ALLOCATION: the paths, kept for the answer (the store takes the uploads).
    let paths: Vec<StorePath> = staged.iter().map(|(path, _)| path.clone()).collect();
    let head = ex.request();
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let check: Option<VersionCheck<'_>> = if conditional { Some(&check) } else { None };
    let failed = match store.commit_all(staged, check).await {
        Ok(committed) => return answer_stored(svc, ex, &paths, committed).await,
        Err(failed) => failed,
    };
    if failed.kept.is_empty() {
        return commit_failed(ex, &failed.error).await;
    }
    // ALLOCATION: the names in the answer, on this failure only.
    let mut names = String::new();
    for (i, committed) in &failed.kept {
        svc.on_stored(paths[*i].as_str(), committed);
        if !names.is_empty() {
            names.push_str(", ");
        }
        names.push_str(paths[*i].as_str());
    }
    let e = &failed.error;
    let message = format!(
        "{e}; the form's commit stopped there, and these of its files stay stored (each \
         replaced an earlier version, which cannot be put back, or could not be deleted \
         again): {names}"
    );
    reply::error(ex, reply::store_problem(e), &message, &[]).await
}

/// The checks before a form's body (its media type and boundary, the size limit), which set
/// the body's limit: the parser for the body, or `None` once the refusal is answered.
async fn parser_for(svc: &Service, ex: &mut Exchange<'_>) -> Result<Option<Parser>, weir::Error> {
    let boundary = ex
        .request()
        .header_str("content-type")
        .and_then(multipart::boundary);
    let Some(boundary) = boundary else {
        reply::error(
            ex,
            Problem::UnsupportedMediaType,
            "POST needs multipart/form-data with a boundary (use PUT for a raw body)",
            &[],
        )
        .await?;
        return Ok(None);
    };
    let max = svc.options.max_upload;
    if ex.request().content_length().is_some_and(|len| len > max) {
        too_large(ex, max).await?;
        return Ok(None);
    }
    ex.set_max_body_size(Some(max));
    match Parser::new(&boundary) {
        Ok(p) => Ok(Some(p)),
        Err(e) => {
            reply::error(ex, Problem::BadRequest, e.0, &[]).await?;
            Ok(None)
        }
    }
}

/// `400`: the form held no file part.
async fn no_file(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    reply::error(ex, Problem::BadRequest, "no file in the form", &[]).await
}

/// The answer to a form whose files were all committed: `201` and each file's path, size and
/// SHA-256; the hooks' `stored` events.
async fn answer_stored(
    svc: &Service,
    ex: &mut Exchange<'_>,
    paths: &[StorePath],
    committed: Vec<Committed>,
) -> Result<(), weir::Error> {
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
    if body::wants_internals(ex) {
        body["body"] = body::body_stats_json(&ex.body_stats());
    }
    reply::json(ex, StatusCode::CREATED, &body).await
}

/// The answer to a form whose commit was refused (nothing of it stored).
async fn commit_failed(ex: &mut Exchange<'_>, e: &StoreError) -> Result<(), weir::Error> {
    match e {
        StoreError::PreconditionFailed => preconditions::failed(ex).await,
        StoreError::DuplicatePath { .. } => {
            let message = format!("two parts of the form have the same file name: {e}");
            reply::error(ex, Problem::PathConflict, &message, &[]).await
        }
        StoreError::NotADirectory | StoreError::IsDirectory => {
            let message = format!(
                "a part's path conflicts with another part or a stored file or directory ({e}); \
                 nothing was stored"
            );
            reply::error(ex, Problem::PathConflict, &message, &[]).await
        }
        e => reply::store_error(ex, e).await,
    }
}

/// Why a form's body was not received whole.
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

impl From<StoreError> for FormFailure {
    fn from(e: StoreError) -> Self {
        Self::Body(BodyFailure::Store(e))
    }
}

impl FormFailure {
    /// Answers the client (nothing of the form is stored).
    pub(in crate::serve) async fn answer(
        self,
        ex: &mut Exchange<'_>,
        max: u64,
    ) -> Result<(), weir::Error> {
        match self {
            Self::Malformed(message) => reply::error(ex, Problem::BadRequest, message, &[]).await,
            Self::Body(failure) => failure.answer(ex, max).await,
            Self::Precondition => preconditions::failed(ex).await,
        }
    }
}

/// Where [`receive`] puts a form's file parts: one store's uploads. Parts come one at a time:
/// `begin`, its data in `write`s, `end`; at most one is open.
trait FormSink: Send {
    /// A file part begins, to be stored at `path` (with the part's media type, if any); `head`
    /// is the request's (its preconditions apply to each file's target).
    fn begin(
        &mut self,
        head: &Request,
        path: StorePath,
        media_type: Option<MediaType>,
    ) -> impl Future<Output = Result<(), FormFailure>> + Send;

    /// Data of the part begun last.
    fn write(&mut self, data: &[u8]) -> impl Future<Output = Result<(), FormFailure>> + Send;

    /// The part begun last is whole.
    fn end(&mut self) -> impl Future<Output = Result<(), FormFailure>> + Send;
}

/// Reads and parses the whole body, handing each file part to `sink`.
async fn receive<K: FormSink>(
    svc: &Service,
    ex: &mut Exchange<'_>,
    mut parser: Parser,
    dir: Option<&StorePath>,
    sink: &mut K,
) -> Result<(), FormFailure> {
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Current {
        /// Between parts.
        Between,
        /// A form field without a file name: its data is skipped.
        Field,
        /// A file part, in `sink`.
        File,
    }
    let mut buf = svc.buffers.take();
    let (mut start, mut end) = (0usize, 0usize);
    let mut files = 0usize;
    let mut current = Current::Between;
    loop {
        loop {
            let (consumed, event) = parser.step(&buf[start..end])?;
            start += consumed;
            match event {
                None => break,
                Some(Event::Part(head)) => {
                    current = match head.filename {
                        Some(name) if !name.is_empty() => {
                            if files == MAX_FILES {
                                return Err(FormFailure::Malformed("too many files in one form"));
                            }
                            files += 1;
                            let path = crate::serve::target::file_in(dir, &name)
                                .map_err(FormFailure::Malformed)?;
                            sink.begin(ex.request(), path, head.content_type).await?;
                            Current::File
                        }
                        _ => Current::Field,
                    };
                }
                Some(Event::Data(data)) => match current {
                    Current::File => sink.write(data).await?,
                    Current::Field => {}
                    Current::Between => return Err(FormFailure::Malformed("data outside a part")),
                },
                Some(Event::PartEnd) => {
                    if current == Current::File {
                        sink.end().await?;
                    }
                    current = Current::Between;
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
    Ok(())
}

/// The sink of [`receive`]: each file part in its own upload of `store`, staged until the
/// form is whole.
struct StagedForm<'a, S: Store> {
    svc: &'a Service,
    store: &'a S,
    /// The part being received.
    current: Option<(StorePath, S::Upload)>,
    /// The parts received whole, waiting for their commit.
    staged: Vec<(StorePath, S::Upload)>,
    /// Bytes the staged uploads keep in memory (`StoreUpload::finish_writes`).
    held: u64,
}

impl<S: Store> StagedForm<'_, S> {
    /// Aborts every upload, waiting for each, so that none is left pending in the store when
    /// the answer goes out.
    async fn abort(&mut self) {
        if let Some((_, upload)) = self.current.take() {
            let _ = upload.abort().await;
        }
        for (_, upload) in self.staged.drain(..) {
            let _ = upload.abort().await;
        }
        self.held = 0;
    }
}

impl<S: Store> FormSink for StagedForm<'_, S> {
    async fn begin(
        &mut self,
        head: &Request,
        path: StorePath,
        media_type: Option<MediaType>,
    ) -> Result<(), FormFailure> {
        if !preconditions::hold_now(self.store, head, &path).await? {
            return Err(FormFailure::Precondition);
        }
        let options = UploadOptions {
            hash: self.svc.options.hash,
            ..UploadOptions::default()
        };
        let upload = self.store.begin(&path, options, media_type).await?;
        self.current = Some((path, upload));
        Ok(())
    }

    async fn write(&mut self, data: &[u8]) -> Result<(), FormFailure> {
        if let Some((_, upload)) = &mut self.current {
            // Waits while the store is busy with earlier parts: the backpressure.
            upload.write(data).await?;
        }
        Ok(())
    }

    async fn end(&mut self) -> Result<(), FormFailure> {
        if let Some((path, mut upload)) = self.current.take() {
            upload.finish_writes(&mut self.held).await?;
            self.staged.push((path, upload));
        }
        Ok(())
    }
}
