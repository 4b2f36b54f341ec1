//! `POST /files/{dir}/` with `multipart/form-data` over weir-store's storage interface
//! (`--store s3://`): the local form route's parsing, limits and answers (`form.rs`'s
//! [`form::receive`], `MAX_FILES`, the size limit, `If-None-Match: *` per file, the JSON), with
//! each file part in its own [`StoreUpload`].
//!
//! **Memory.** One file is written at a time, through the store's backpressure as a `PUT` is
//! (`remote.rs`). When its part ends, the upload [`finish_writes`](StoreUpload::finish_writes):
//! a multipart upload sends its last part and waits for its parts, so it holds no buffer while
//! it waits for its commit; a file within one part keeps its bytes (in a buffer of their size)
//! only while the form's files kept so hold at most one part size in total: later ones are sent
//! at once, as multipart uploads of one part. So a form holds at most
//! `part_size × (parts_in_flight + 1)` for the file being written, plus one `part_size` of small
//! files waiting, plus the read buffer, however many files it has.
//!
//! **Nothing before the end.** No upload is committed before the whole body has arrived and
//! parsed. A body that fails (client gone, malformed, too large, a store failure), a part whose
//! target fails the preconditions (checked when its part begins), two parts with one file name
//! (the local route's `409`), a form without a file: every upload is aborted, and the aborts are
//! awaited before the answer, so no multipart upload is left pending and nothing is visible.
//!
//! **Commit.** Then the uploads are committed in order, each with the request's preconditions
//! checked by the store against its own target, atomically with its write (`If-None-Match: *`
//! or `If-Match` on the S3 request: `remote.rs`). S3 cannot commit several objects at once, so
//! if one commit fails, the files this form already *created* are deleted again, each only if
//! it is still the version the form wrote (the delete's check compares the stored version's
//! metadata, and the store's `DeleteObject` carries `If-Match` on the S3 ETag of the version it
//! checked: a newer version another writer stored meanwhile is kept), the remaining uploads are
//! aborted, and the answer is the failure's, as the local route's. A file the form *replaced* is
//! left in place: the earlier version cannot be put back, and deleting it would lose both; the
//! answer names such files (and any whose delete failed). The window that remains: between the
//! first commit and the last (or the undo), other clients can see the form's earlier files, and
//! a node that dies there leaves them stored (no record survives it to undo them; a local store
//! has its intent records for that, `LocalStore::commit_all`).

use super::form::{self, FormFailure, FormSink};
use super::preconditions;
use super::reply;
use super::service::Service;
use weir::{Exchange, Request};
use weir_proto::conditional;
use weir_store::{
    Committed, FileMeta, MediaType, Store, StoreError, StorePath, StoreUpload, UploadOptions,
    VersionCheck,
};

/// A form's files into `store` under `dir` (see the module doc).
pub(super) async fn post<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    dir: Option<StorePath>,
) -> Result<(), weir::Error> {
    let Some(parser) = form::parser_for(svc, ex).await? else {
        return Ok(());
    };
    let conditional = conditional::has_preconditions(&super::preconditions::Fields(ex.request()));
    let mut sink = RemoteForm {
        store,
        conditional,
        current: None,
        staged: Vec::new(),
        held: 0,
    };
    if let Err(failure) = form::receive(svc, ex, parser, dir.as_ref(), &mut sink).await {
        sink.abort().await;
        return failure.answer(ex, svc.options.max_upload).await;
    }
    if sink.staged.is_empty() {
        return form::no_file(ex).await;
    }
    if let Some(path) = named_twice(&sink.staged) {
        sink.abort().await;
        return form::commit_failed(ex, &StoreError::DuplicatePath { path }).await;
    }
    let (paths, uploads): (Vec<_>, Vec<_>) = std::mem::take(&mut sink.staged).into_iter().unzip();
    let failed = match commit_in_order(store, ex.request(), conditional, &paths, uploads).await {
        Ok(committed) => return form::answer_stored(svc, ex, &paths, committed).await,
        Err(failed) => failed,
    };
    if failed.kept.is_empty() {
        return form::commit_failed(ex, &failed.error).await;
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

/// The first path named by two parts of the form, if any.
fn named_twice<U>(staged: &[(StorePath, U)]) -> Option<String> {
    let mut seen = std::collections::HashSet::with_capacity(staged.len());
    staged
        .iter()
        .find(|(path, _)| !seen.insert(path.as_str()))
        .map(|(path, _)| path.as_str().to_owned())
}

/// A commit that failed partway (see [`commit_in_order`]).
struct Failed {
    error: StoreError,
    /// Files the form stored that stay: (index in the form, what was stored).
    kept: Vec<(usize, Committed)>,
}

/// Commits `uploads` (for `paths`) in order, each checked against the request's preconditions
/// when it has any. On a failure: the remaining uploads are aborted and the files committed so
/// far undone ([`undo`]).
async fn commit_in_order<S: Store>(
    store: &S,
    head: &Request,
    conditional: bool,
    paths: &[StorePath],
    uploads: Vec<S::Upload>,
) -> Result<Vec<Committed>, Failed> {
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let check: Option<VersionCheck<'_>> = if conditional { Some(&check) } else { None };
    let mut committed = Vec::with_capacity(uploads.len());
    let mut uploads = uploads.into_iter();
    let mut error = None;
    for upload in uploads.by_ref() {
        match upload.commit(check).await {
            Ok(c) => committed.push(c),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let Some(error) = error else {
        return Ok(committed);
    };
    for rest in uploads {
        let _ = rest.abort().await;
    }
    let kept = undo(store, paths, &committed).await;
    Err(Failed { error, kept })
}

/// Deletes again, last first, the files of `committed` (for the first `paths`) that the form
/// created, each only if the version there is still the one it stored. Returns those that stay:
/// the ones that replaced a version, and the ones whose delete failed.
async fn undo<S: Store>(
    store: &S,
    paths: &[StorePath],
    committed: &[Committed],
) -> Vec<(usize, Committed)> {
    let mut kept = Vec::new();
    for (i, (path, stored)) in paths.iter().zip(committed).enumerate().rev() {
        if stored.replaced {
            kept.push((i, *stored));
            continue;
        }
        let ours = |meta: Option<&FileMeta>| meta == Some(&stored.stored);
        match store.delete(path, Some(&ours)).await {
            // Deleted; or another writer's version is there now, or none: not the form's.
            Ok(()) | Err(StoreError::PreconditionFailed | StoreError::NotFound) => {}
            Err(e) => {
                tracing::warn!(error = %e, path = %path, "undoing a failed form's file failed");
                kept.push((i, *stored));
            }
        }
    }
    kept.reverse();
    kept
}

/// The sink of [`form::receive`] over a [`Store`]: each file part in its own upload.
struct RemoteForm<'a, S: Store> {
    store: &'a S,
    /// The request has preconditions: each part's target is checked when the part begins.
    conditional: bool,
    /// The part being received.
    current: Option<(StorePath, S::Upload)>,
    /// The parts received whole, waiting for their commit.
    staged: Vec<(StorePath, S::Upload)>,
    /// Bytes the staged uploads keep in memory ([`StoreUpload::finish_writes`]).
    held: u64,
}

impl<S: Store> RemoteForm<'_, S> {
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

impl<S: Store> FormSink for RemoteForm<'_, S> {
    async fn begin(
        &mut self,
        head: &Request,
        path: StorePath,
        media_type: Option<MediaType>,
    ) -> Result<(), FormFailure> {
        if self.conditional {
            let meta = super::remote::current(self.store, &path).await?;
            if !preconditions::hold(head, meta.as_ref()) {
                return Err(FormFailure::Precondition);
            }
        }
        let options = UploadOptions {
            hash: true,
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
