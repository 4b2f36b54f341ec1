//! The `/files/` routes of one store, once the request is authorized (`service.rs` checks the
//! method, the token, the path and the scope first, and dispatches here once per request with
//! the service's store: the local root, or `--store s3://`'s bucket). Everything below is
//! generic over weir-store's `Store` (static dispatch): one module per operation, none asking
//! which store it has.
//!
//! | request | route |
//! | --- | --- |
//! | `GET`/`HEAD /files/{path}` | `download.rs` |
//! | `GET`/`HEAD /files/` or `/files/{dir}/` | `listing.rs` (JSON) |
//! | the same with `?tar`, `?zip` | `archive/` (`folder_formats.rs` decides) |
//! | the same with `?html`, or from `wget`/rclone | `html_listing.rs` |
//! | `PUT /files/{path}` | `upload.rs` |
//! | `POST /files/{dir}/` (`multipart/form-data`) | `form.rs` |
//! | `DELETE /files/{path}` | `delete.rs` |
//! | `PUT`/`DELETE /files/{dir}/` | `folders.rs` |
//!
//! `download`, `upload`, `delete` and `listing` are also WebDAV's (`routes/webdav/`), which
//! calls them once its own checks pass.

use crate::serve::folder_formats::{self, FolderFormat};
use crate::serve::service::{Service, method_not_allowed};
use crate::serve::target::Target;
use http::Method;
use weir::{Exchange, http};
use weir_store::Store;

mod archive;
pub(in crate::serve) use archive::ZIP_MAX_ENTRIES;
pub(in crate::serve) mod delete;
pub(in crate::serve) mod download;
mod folders;
mod form;
mod html_listing;
pub(in crate::serve) mod listing;
pub(in crate::serve) mod upload;

/// Routes an authorized `/files/` request to `store` (see the module doc).
pub(in crate::serve) async fn serve<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    method: Method,
    target: Target,
) -> Result<(), weir::Error> {
    if matches!(method, Method::GET | Method::HEAD) && !matches!(target, Target::File(_)) {
        let dir = match &target {
            Target::Dir(p) => Some(p),
            _ => None,
        };
        let archive = match folder_formats::requested(ex.request()) {
            FolderFormat::Default => return listing::serve(svc, store, ex, dir).await,
            FolderFormat::Html => return html_listing::serve(svc, store, ex, dir).await,
            FolderFormat::Tar => archive::Format::Tar,
            FolderFormat::Zip => archive::Format::Zip,
            FolderFormat::Zip64 => archive::Format::Zip64,
        };
        return archive::serve(svc, store, ex, dir, archive).await;
    }
    match (method, target) {
        (Method::GET | Method::HEAD, Target::File(p)) => download::serve(store, ex, &p).await,
        (Method::GET | Method::HEAD, Target::Root) => listing::serve(svc, store, ex, None).await,
        (Method::GET | Method::HEAD, Target::Dir(p)) => {
            listing::serve(svc, store, ex, Some(&p)).await
        }
        (Method::PUT, Target::Dir(p)) => folders::create(store, ex, &p).await,
        (Method::PUT, Target::File(p)) => upload::put(svc, store, ex, p).await,
        (Method::POST, target) => {
            let dir = match target {
                Target::Root => None,
                Target::Dir(p) | Target::File(p) => Some(p),
            };
            form::post(svc, store, ex, dir).await
        }
        (Method::DELETE, Target::File(p)) => delete::serve(svc, store, ex, &p).await,
        (Method::DELETE, Target::Dir(p)) => folders::delete(svc, store, ex, &p).await,
        (Method::DELETE | Method::PUT, Target::Root) => {
            method_not_allowed(ex, "GET, HEAD, POST").await
        }
        _ => method_not_allowed(ex, "GET, HEAD, PUT, POST, DELETE").await,
    }
}
