//! Folders: `PUT /files/{dir}/` without a body creates one (and its missing parents: the page's
//! "New folder"), `DELETE /files/{dir}/` deletes an empty one. Written once, generic over
//! weir-store's `Store`: locally a directory; in a bucket a zero-byte `{dir}/` marker object
//! (see `Store::create_dir`, `Store::delete_dir`).
//!
//! | request | answer |
//! | --- | --- |
//! | `PUT /files/{dir}/`, no body | `201` made, `200` already a folder; `400` with a body (the client meant to store a file); `409` a file is there |
//! | `DELETE /files/{dir}/` | `204`; `409` (`path-conflict`) anything in it, or a file; `404` none |

use crate::serve::reply;
use crate::serve::service::Service;
use http::StatusCode;
use weir::{Exchange, http};
use weir_store::{Store, StorePath};

/// `PUT /files/{dir}/`: refuses a body (rather than dropping it), else creates the folder.
pub(in crate::serve) async fn create<S: Store>(
    store: &S,
    ex: &mut Exchange<'_>,
    dir: &StorePath,
) -> Result<(), weir::Error> {
    if ex.request().framing() != weir::Framing::Length(0) {
        let message =
            "a folder is created by a PUT without a body (to store a file, drop the final /)";
        return reply::error(ex, reply::Problem::BadRequest, message, &[]).await;
    }
    match store.create_dir(dir).await {
        Ok(created) => {
            let status = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let value =
                serde_json::json!({ "path": format!("{}/", dir.as_str()), "created": created });
            reply::json(ex, status, &value).await
        }
        Err(e) => reply::store_error(ex, &e).await,
    }
}

/// `DELETE /files/{dir}/`: the hooks' `deleted` event names the folder as `{dir}/`.
pub(in crate::serve) async fn delete<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    dir: &StorePath,
) -> Result<(), weir::Error> {
    match store.delete_dir(dir).await {
        Ok(()) => {
            // ALLOCATION: the folder's path with its slash, once per folder deleted.
            svc.on_deleted(&format!("{}/", dir.as_str()));
            ex.respond(StatusCode::NO_CONTENT).empty().await
        }
        Err(e) => reply::store_error(ex, &e).await,
    }
}
