//! `COPY` and `MOVE` (RFC 4918 §9.8, §9.9): `Destination` (a URL under `/dav/` of this
//! server, else `502`), `Overwrite` (`T` by default; `F` with something there: `412`),
//! `Depth` (`COPY` of a collection: `0` or `infinity`; `MOVE`: `infinity` only).
//!
//! A file goes with one store operation and no byte through weir: `Store::copy` (a reflink or
//! an in-kernel copy locally, `CopyObject` in a bucket) or `Store::rename`. On the local store
//! a rename is `rename(2)` under the commit lock (`Store::ATOMIC_RENAME`): the file is at one
//! name or the other, never both, never neither, and a file replaced at the destination is
//! replaced atomically. In a bucket a move is a copy, then a delete of the source: a failure
//! between the two leaves both (never neither).
//!
//! A collection's `MOVE` is `Store::rename_dir` where the store can: on the local store one
//! `rename(2)` of the directory under the commit lock, so the folder and everything in it are
//! at the old path or the new one, never split, even across a crash. A bucket has no
//! directories to rename (`rename_dir` answers it cannot): there, and for every `COPY`, the
//! collection is walked (`walk.rs`): each folder created at the destination, each object
//! copied or moved (`CopyObject` then `DeleteObject`), and for a move each emptied source
//! folder removed after its content. Other clients can see such a folder half moved, and a
//! failure midway leaves it so (each object is at one name or, after a failed delete, both;
//! never neither); the answer is then a `207` naming the members that failed. A destination
//! that exists is deleted first (with `Overwrite: T`), as RFC 4918 §9.9.3 says. Dead
//! properties go along: a file's with the store's copy or rename, a folder's copied here.
//!
//! A file's `COPY` or `MOVE` with `X-OC-Mtime` (rclone's server-side copy and move with an
//! ownCloud-style vendor) gives the file at the destination that time afterwards
//! (`Store::set_modified`), answered `X-OC-Mtime: accepted`; should that fail, the copy or
//! move stands and the answer has no `accepted` (rclone then sets the time itself, or sends
//! the file again). A value that is not seconds is `400` before anything changes.

use super::locks::Change;
use super::walk::{Step, Walk};
use super::write::{Failure, delete_tree, multi_status, note};
use super::{Kind, Resource, kind, locks, parent_exists, resource_of_url, status};
use crate::serve::auth::{Access, Verdict};
use crate::serve::service::Service;
use http::StatusCode;
use weir::{Exchange, http};
use weir_store::{CopyMeta, Store, StoreError, StorePath};

/// `COPY` (`moving` false) or `MOVE` of `src`.
pub(super) async fn serve<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    src: Resource,
    moving: bool,
) -> Result<(), weir::Error> {
    let Some(destination) = ex.request().header_str("destination") else {
        return status(ex, StatusCode::BAD_REQUEST).await;
    };
    let dst = match resource_of_url(destination.trim()) {
        Some(Ok(r)) => r,
        Some(Err(_)) => return status(ex, StatusCode::BAD_REQUEST).await,
        None => return status(ex, StatusCode::BAD_GATEWAY).await,
    };
    let auth = svc.auth();
    let authorization = crate::serve::auth::authorization(ex.request()).unwrap_or(None);
    match auth.check_bearer_or_basic(authorization, Access::Write, Some(dst.as_str())) {
        Verdict::Allowed => {}
        Verdict::Unauthorized => return status(ex, StatusCode::UNAUTHORIZED).await,
        Verdict::Forbidden => return status(ex, StatusCode::FORBIDDEN).await,
    }
    let overwrite = match ex.request().header_str("overwrite").map(str::trim) {
        None | Some("T" | "t") => true,
        Some("F" | "f") => false,
        Some(_) => return status(ex, StatusCode::BAD_REQUEST).await,
    };
    let deep = match ex.request().header_str("depth").map(str::trim) {
        None => true,
        Some(d) if d.eq_ignore_ascii_case("infinity") => true,
        Some("0") if !moving => false,
        Some(_) => return status(ex, StatusCode::BAD_REQUEST).await,
    };
    let modified = match ex.request().header_str("x-oc-mtime") {
        None => None,
        Some(v) => match super::extras::mtime(v) {
            Some(t) => Some(t),
            None => return status(ex, StatusCode::BAD_REQUEST).await,
        },
    };
    if src.path == dst.path {
        return status(ex, StatusCode::FORBIDDEN).await;
    }
    let (Some(src_path), Some(dst_path)) = (src.path.clone(), dst.path.clone()) else {
        // The root can be neither moved nor replaced.
        return status(ex, StatusCode::FORBIDDEN).await;
    };
    if moving && let Some(refused) = locks::check_write(svc, store, ex, &src, Change::Tree).await {
        return refused;
    }
    if let Some(refused) = locks::check_write(svc, store, ex, &dst, Change::Tree).await {
        return refused;
    }
    let source = match kind(store, Some(&src_path)).await {
        Ok(Kind::Nothing) => return status(ex, StatusCode::NOT_FOUND).await,
        Ok(k) => k,
        Err(e) => return status(ex, super::store_status(&e)).await,
    };
    let collection = matches!(source, Kind::Collection);
    drop(source);
    if collection && (dst.within(&src) || src.within(&dst)) {
        // Into itself, or over a folder holding it.
        return status(ex, StatusCode::FORBIDDEN).await;
    }
    match parent_exists(store, &dst).await {
        Ok(true) => {}
        Ok(false) => return status(ex, StatusCode::CONFLICT).await,
        Err(e) => return status(ex, super::store_status(&e)).await,
    }
    let existing = match kind(store, Some(&dst_path)).await {
        Ok(k) => k,
        Err(e) => return status(ex, super::store_status(&e)).await,
    };
    let existed = !matches!(existing, Kind::Nothing);
    if existed && !overwrite {
        return status(ex, StatusCode::PRECONDITION_FAILED).await;
    }
    // A file replaced by a file is replaced atomically by the store; anything else at the
    // destination goes first.
    let replace_in_place = !collection && matches!(existing, Kind::File(_));
    if existed && !replace_in_place {
        let removed = match existing {
            Kind::Collection => delete_tree(svc, store, &dst).await,
            _ => match store.delete(&dst_path, None).await {
                Ok(()) | Err(StoreError::NotFound) => Ok(Vec::new()),
                Err(e) => Err(super::store_status(&e)),
            },
        };
        match removed {
            Ok(failures) if failures.is_empty() => {}
            Ok(failures) => return multi_status(ex, &failures).await,
            Err(code) => return status(ex, code).await,
        }
        svc.dav_locks.forget_within(&dst);
    }
    drop(existing);
    let done = if existed {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::CREATED
    };
    if !collection {
        let result = if moving {
            store.rename(&src_path, &dst_path, None).await
        } else {
            store
                .copy(&src_path, &dst_path, None, CopyMeta::Source)
                .await
        };
        return match result {
            Ok(committed) => {
                svc.on_stored(dst_path.as_str(), &committed);
                if moving {
                    svc.on_deleted(src_path.as_str());
                    svc.dav_locks.forget_within(&src);
                }
                let Some(t) = modified else {
                    return status(ex, done).await;
                };
                match store.set_modified(&dst_path, t).await {
                    Ok(()) => {
                        ex.respond(done)
                            .header("x-oc-mtime", "accepted")
                            .empty()
                            .await
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, path = dst_path.as_str(), "X-OC-Mtime");
                        status(ex, done).await
                    }
                }
            }
            Err(e) => status(ex, super::store_status(&e)).await,
        };
    }
    // A folder moved whole where the store can (`LocalStore`: one rename, all or none); else
    // member by member below.
    if moving {
        match store.rename_dir(&src_path, &dst_path).await {
            Ok(true) => {
                // ALLOCATION: the folders' paths with their slash, for the log and hooks.
                svc.on_deleted(&format!("{}/", src_path.as_str()));
                svc.dav_locks.forget_within(&src);
                return status(ex, done).await;
            }
            Ok(false) => {}
            Err(e) => return status(ex, super::store_status(&e)).await,
        }
    }
    if let Err(e) = store.create_dir(&dst_path).await {
        return status(ex, super::store_status(&e)).await;
    }
    copy_props(store, &src_path, &dst_path).await;
    if !deep {
        return status(ex, done).await;
    }
    let failures = match tree(svc, store, &src_path, &dst_path, moving).await {
        Ok(f) => f,
        Err(code) => return status(ex, code).await,
    };
    if moving {
        svc.dav_locks.forget_within(&src);
    }
    if failures.is_empty() {
        status(ex, done).await
    } else {
        multi_status(ex, &failures).await
    }
}

/// Copies or moves everything under the folder `src` into the folder `dst` (made already).
async fn tree<S: Store + Clone>(
    svc: &Service,
    store: &S,
    src: &StorePath,
    dst: &StorePath,
    moving: bool,
) -> Result<Vec<Failure>, StatusCode> {
    let mut failures = Vec::new();
    let mut walk = Walk::new(Some(src.clone()));
    // ALLOCATION: each member's destination path, one per member.
    let target = |p: &StorePath| {
        let rest = &p.as_str()[src.as_str().len()..];
        StorePath::parse(&format!("{}{rest}", dst.as_str()))
    };
    loop {
        let step = match walk.next(svc, store).await {
            Ok(Some(step)) => step,
            Ok(None) => return Ok(failures),
            Err(e) => {
                tracing::warn!(error = %e, path = src.as_str(), "WebDAV copy/move walk");
                return Err(StatusCode::INTERNAL_SERVER_ERROR);
            }
        };
        match step {
            Step::Enter(dir) => {
                let Ok(to) = target(&dir) else {
                    failures.push((dir.as_str().to_owned(), true, StatusCode::BAD_REQUEST));
                    continue;
                };
                match store.create_dir(&to).await {
                    Ok(_) => copy_props(store, &dir, &to).await,
                    Err(e) => note(&mut failures, dir.as_str(), true, &e),
                }
            }
            Step::File(file) => {
                let Ok(to) = target(&file) else {
                    failures.push((file.as_str().to_owned(), false, StatusCode::BAD_REQUEST));
                    continue;
                };
                let result = if moving {
                    store.rename(&file, &to, None).await
                } else {
                    store.copy(&file, &to, None, CopyMeta::Source).await
                };
                match result {
                    Ok(committed) => {
                        svc.on_stored(to.as_str(), &committed);
                        if moving {
                            svc.on_deleted(file.as_str());
                        }
                    }
                    Err(e) => note(&mut failures, file.as_str(), false, &e),
                }
            }
            Step::Leave(Some(dir)) if moving => match store.delete_dir(&dir).await {
                Ok(()) | Err(StoreError::NotFound | StoreError::DirectoryNotEmpty) => {}
                Err(e) => note(&mut failures, dir.as_str(), true, &e),
            },
            Step::Leave(_) => {}
        }
    }
}

/// A folder's dead properties onto its copy (a file's go with `Store::copy` and
/// `Store::rename`). Best effort, as RFC 4918 §9.8.2 asks ("SHOULD"): the folder is copied
/// even when they cannot be.
async fn copy_props<S: Store>(store: &S, from: &StorePath, to: &StorePath) {
    if let Ok(Some(props)) = store.props(from).await
        && let Err(e) = store.set_props(to, Some(&props)).await
    {
        tracing::warn!(error = %e, path = to.as_str(), "WebDAV: a folder's properties not copied");
    }
}
