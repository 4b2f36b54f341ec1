//! `GET /files/` and `GET /files/{dir}/`: a directory as JSON.
//!
//! ```json
//! {"path": "photos/", "entries": [
//!   {"name": "2024", "type": "dir", "size": 0, "modified": 1700000000},
//!   {"name": "cat.jpg", "type": "file", "size": 48213, "modified": 1700000123}]}
//! ```
//!
//! `modified` is in seconds since the Unix epoch. The store lists exactly what can be fetched:
//! no temporaries, reserved names, symlinks or special files.

use super::reply;
use super::service::Service;
use http::StatusCode;
use std::time::UNIX_EPOCH;
use weir::{Exchange, http};
use weir_store::StorePath;

pub(super) async fn serve(
    svc: &Service,
    ex: &mut Exchange<'_>,
    dir: Option<&StorePath>,
) -> Result<(), weir::Error> {
    let entries = match svc.store.list(dir) {
        Ok(entries) => entries,
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let entries: Vec<_> = entries
        .iter()
        .map(|e| {
            serde_json::json!({
                "name": e.name,
                "type": if e.is_dir { "dir" } else { "file" },
                "size": e.size,
                "modified": e.modified.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            })
        })
        .collect();
    let path = dir.map_or_else(String::new, |d| format!("{d}/"));
    let body = serde_json::json!({ "path": path, "entries": entries });
    reply::json(ex, StatusCode::OK, &body).await
}
