//! `DELETE /files/{path}`: the object removed, `204`; `404` if there is none (whatever the
//! preconditions: RFC 9110 §13.2.1), `412` if a precondition fails. Written once, generic over
//! weir-store's `Store`: the preconditions are judged by the store atomically with the delete
//! (locally under the commit lock with the unlink; in a bucket with `If-Match` on the version
//! judged), so a version written in between is never deleted by a check made on another.

use crate::serve::preconditions;
use crate::serve::reply;
use crate::serve::service::Service;
use http::StatusCode;
use weir::{Exchange, http};
use weir_proto::conditional;
use weir_store::{FileMeta, Store, StoreError, StorePath};

/// Deletes the object at `path` (see the module doc); the hooks' `deleted` event.
pub(in crate::serve) async fn serve<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    path: &StorePath,
) -> Result<(), weir::Error> {
    let head = ex.request();
    let check = |meta: Option<&FileMeta>| preconditions::hold(head, meta);
    let conditional = conditional::has_preconditions(&preconditions::Fields(head));
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
