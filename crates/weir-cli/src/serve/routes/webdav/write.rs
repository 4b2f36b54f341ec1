//! `GET`, `HEAD`, `PUT`, `DELETE` and `MKCOL` over WebDAV. The file operations are `/files/`'s
//! own (`files::download`, `files::upload`, `files::delete`, the JSON listing for a
//! collection's `GET`): WebDAV adds only what it asks beyond them: the parent collection must
//! exist (`409`), the locks and the `If:` header (`locks.rs`), a collection's `DELETE` with
//! everything in it, and `MKCOL`.
//!
//! | request | answer |
//! | --- | --- |
//! | `PUT` | `files/upload.rs`'s (`201`/`200`, atomic: a cut body leaves the old file), with a client's `X-OC-Mtime` and `X-Expected-Entity-Length` (`extras.rs`; `400` for a bad one); `409` when the parent collection is missing; `405` onto a collection |
//! | `DELETE` of a file | `files/delete.rs`'s (`204`, `404`, `412`) |
//! | `DELETE` of a collection | everything in it, deepest first, then itself: `204`; `207` naming what could not be deleted (at most [`MAX_FAILURES`]) |
//! | `MKCOL` | `201`; `405` something is there; `409` no parent; `415` with a body |

use super::locks::Change;
use super::walk::{Step, Walk};
use super::{Kind, MULTI_STATUS, Resource, XML_DECL, kind, locks, parent_exists, status};
use crate::serve::reply::{self, Problem};
use crate::serve::routes::files::{delete as file_delete, download, listing, upload};
use crate::serve::service::Service;
use http::StatusCode;
use weir::{Exchange, http};
use weir_store::{Store, StoreError};

/// The most failed members a `207` names (the rest are counted in the log).
pub(super) const MAX_FAILURES: usize = 1000;

/// `GET`/`HEAD`: a file through `files/download.rs`, a collection's JSON listing.
pub(super) async fn get<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    res: Resource,
) -> Result<(), weir::Error> {
    match (&res.path, res.slash) {
        (Some(path), false) => download::serve(store, ex, path).await,
        (path, _) => listing::serve(svc, store, ex, path.as_ref()).await,
    }
}

/// `PUT` through `files/upload.rs`, once the parent collection and the locks allow it.
pub(super) async fn put<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    res: Resource,
) -> Result<(), weir::Error> {
    let Some(path) = res.path.clone().filter(|_| !res.slash) else {
        return status(ex, StatusCode::METHOD_NOT_ALLOWED).await;
    };
    let extras = match super::extras::of_put(ex.request()) {
        Ok(extras) => extras,
        Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
    };
    // A new file is a new member of its collection; asked only when a depth-0 lock is on that
    // collection (no lock: nothing to ask).
    let change = match svc.dav_locks.on_parent(&res) {
        true => match kind(store, Some(&path)).await {
            Ok(Kind::Nothing) => Change::Member,
            _ => Change::Content,
        },
        false => Change::Content,
    };
    if let Some(refused) = locks::check_write(svc, store, ex, &res, change).await {
        return refused;
    }
    match parent_exists(store, &res).await {
        Ok(true) => {}
        Ok(false) => return status(ex, StatusCode::CONFLICT).await,
        Err(e) => return status(ex, super::store_status(&e)).await,
    }
    if store.is_dir(&path).await.unwrap_or(false) {
        return status(ex, StatusCode::METHOD_NOT_ALLOWED).await;
    }
    upload::put_with(svc, store, ex, path, extras).await
}

/// `MKCOL`.
pub(super) async fn mkcol<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    res: Resource,
) -> Result<(), weir::Error> {
    // RFC 4918 §9.3: a body the server does not understand is 415.
    let empty = matches!(ex.request().framing(), weir::Framing::Length(0));
    if !empty {
        return status(ex, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    }
    let Some(path) = res.path.clone() else {
        return status(ex, StatusCode::METHOD_NOT_ALLOWED).await;
    };
    if let Some(refused) = locks::check_write(svc, store, ex, &res, Change::Member).await {
        return refused;
    }
    match kind(store, Some(&path)).await {
        Ok(Kind::Nothing) => {}
        Ok(_) => return status(ex, StatusCode::METHOD_NOT_ALLOWED).await,
        Err(e) => return status(ex, super::store_status(&e)).await,
    }
    match parent_exists(store, &res).await {
        Ok(true) => {}
        Ok(false) => return status(ex, StatusCode::CONFLICT).await,
        Err(e) => return status(ex, super::store_status(&e)).await,
    }
    match store.create_dir(&path).await {
        Ok(true) => status(ex, StatusCode::CREATED).await,
        Ok(false) => status(ex, StatusCode::METHOD_NOT_ALLOWED).await,
        Err(e) => status(ex, super::store_status(&e)).await,
    }
}

/// `DELETE`: a file through `files/delete.rs`, a collection with everything in it.
pub(super) async fn delete<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    res: Resource,
) -> Result<(), weir::Error> {
    if let Some(refused) = locks::check_write(svc, store, ex, &res, Change::Tree).await {
        return refused;
    }
    let found = match kind(store, res.path.as_ref()).await {
        Ok(k) => k,
        Err(e) => return status(ex, super::store_status(&e)).await,
    };
    let answer = match (found, &res.path) {
        (Kind::Nothing, _) => return status(ex, StatusCode::NOT_FOUND).await,
        (Kind::File(object), Some(path)) => {
            drop(object);
            let answer = file_delete::serve(svc, store, ex, path).await;
            svc.dav_locks.forget_within(&res);
            return answer;
        }
        // The root is never deleted (`/files/` refuses it too).
        (_, None) => return status(ex, StatusCode::FORBIDDEN).await,
        (_, Some(_)) => delete_tree(svc, store, &res).await,
    };
    svc.dav_locks.forget_within(&res);
    match answer {
        Ok(failures) if failures.is_empty() => status(ex, StatusCode::NO_CONTENT).await,
        Ok(failures) => multi_status(ex, &failures).await,
        Err(code) => status(ex, code).await,
    }
}

/// A member that failed, for a `207`: its path, whether a collection, its status.
pub(super) type Failure = (String, bool, StatusCode);

/// Deletes the collection `res` with everything in it, deepest first; the members that could
/// not be deleted (a folder left because something in it was is not named again).
pub(super) async fn delete_tree<S: Store + Clone>(
    svc: &Service,
    store: &S,
    res: &Resource,
) -> Result<Vec<Failure>, StatusCode> {
    let mut failures = Vec::new();
    let mut walk = Walk::new(res.path.clone());
    loop {
        let step = match walk.next(svc, store).await {
            Ok(Some(step)) => step,
            Ok(None) => return Ok(failures),
            Err(e) => {
                tracing::warn!(error = %e, path = res.as_str(), "WebDAV delete walk");
                return Err(StatusCode::INTERNAL_SERVER_ERROR);
            }
        };
        match step {
            Step::Enter(_) => {}
            Step::File(path) => match store.delete(&path, None).await {
                Ok(()) | Err(StoreError::NotFound) => svc.on_deleted(path.as_str()),
                Err(e) => note(&mut failures, path.as_str(), false, &e),
            },
            Step::Leave(None) => {}
            Step::Leave(Some(dir)) => match store.delete_dir(&dir).await {
                // A bucket's folder without a marker is gone with its last key.
                Ok(()) | Err(StoreError::NotFound) => {
                    // ALLOCATION: the folder's path with its slash, once per folder.
                    svc.on_deleted(&format!("{}/", dir.as_str()));
                }
                // Something in it could not be deleted: already named.
                Err(StoreError::DirectoryNotEmpty) => {}
                Err(e) => note(&mut failures, dir.as_str(), true, &e),
            },
        }
    }
}

/// Records a failed member (at most [`MAX_FAILURES`]).
pub(super) fn note(failures: &mut Vec<Failure>, path: &str, dir: bool, e: &StoreError) {
    tracing::warn!(error = %e, path, "WebDAV: a member could not be changed");
    if failures.len() < MAX_FAILURES {
        failures.push((path.to_owned(), dir, super::store_status(e)));
    }
}

/// `207` naming each failed member.
pub(super) async fn multi_status(
    ex: &mut Exchange<'_>,
    failures: &[Failure],
) -> Result<(), weir::Error> {
    let mut body = Vec::with_capacity(256 + failures.len() * 128);
    body.extend_from_slice(XML_DECL);
    body.extend_from_slice(b"<D:multistatus xmlns:D=\"DAV:\">\n");
    for (path, dir, code) in failures {
        super::status_response(&mut body, Some(path), *dir, *code);
    }
    body.extend_from_slice(b"</D:multistatus>\n");
    super::xml_answer(ex, MULTI_STATUS, &body, &[]).await
}
