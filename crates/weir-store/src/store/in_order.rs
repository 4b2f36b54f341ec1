//! [`Store::commit_all`] for a store that cannot commit several objects at once (`S3Store`):
//! in order, each checked atomically with its own write, and undone as far as it can be when
//! one fails.
//!
//! The undo deletes only what the batch *created*, and each only if the version there is still
//! the one it stored (the delete's check compares the stored version's metadata; `S3Store`'s
//! delete carries `If-Match` on the S3 ETag of the version it checked): a newer version another
//! writer stored meanwhile is kept. A file that *replaced* a version is left in place: the
//! earlier version cannot be put back, and deleting it would lose both. What stays is named in
//! [`CommitAllError::kept`]. The window that remains: between the first commit and the last (or
//! the undo), other clients can see the earlier files, and a process that dies there leaves
//! them stored (no record survives it; `LocalStore` has its intent records for that).

use super::{CommitAllError, Store, StoreUpload, VersionCheck};
use crate::{Committed, FileMeta, StoreError, StorePath};

/// [`Store::commit_all`]'s default (see the module doc).
pub(crate) async fn commit_in_order<S: Store + ?Sized>(
    store: &S,
    staged: Vec<(StorePath, S::Upload)>,
    check: Option<VersionCheck<'_>>,
) -> Result<Vec<Committed>, CommitAllError> {
    let (paths, uploads): (Vec<_>, Vec<_>) = staged.into_iter().unzip();
    if let Some(path) = named_twice(&paths) {
        // Aborted and awaited, so that nothing is left pending when the caller answers.
        for upload in uploads {
            let _ = upload.abort().await;
        }
        return Err(StoreError::DuplicatePath { path }.into());
    }
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
    let kept = undo(store, &paths, &committed).await;
    Err(CommitAllError { error, kept })
}

/// The first path named twice, if any.
fn named_twice(paths: &[StorePath]) -> Option<String> {
    let mut seen = std::collections::HashSet::with_capacity(paths.len());
    paths
        .iter()
        .find(|path| !seen.insert(path.as_str()))
        .map(|path| path.as_str().to_owned())
}

/// Deletes again, last first, the files of `committed` (for the first `paths`) that the batch
/// created, each only if the version there is still the one it stored. Returns those that stay:
/// the ones that replaced a version, and the ones whose delete failed.
async fn undo<S: Store + ?Sized>(
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
            // Deleted; or another writer's version is there now, or none: not the batch's.
            Ok(()) | Err(StoreError::PreconditionFailed | StoreError::NotFound) => {}
            // It stays: the caller names it among the files kept.
            Err(_) => kept.push((i, *stored)),
        }
    }
    kept.reverse();
    kept
}
