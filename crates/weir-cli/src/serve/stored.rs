//! What a request stored, noted where an upload commits and read once the request is answered,
//! by the access log and the metrics.
//!
//! The note is a task-local slot, set up around each request by `observe.rs`, rather than a
//! value returned through every route: the commit sites (`upload`, `form`, `resumable`, `tus`)
//! each add one call, and no route's signature changes. A request's handler runs on one task
//! (HTTP/1.1: the connection's; HTTP/2: the stream's), so the slot is the request's own. Outside
//! such a scope (unit tests calling a route directly) noting does nothing.

use std::cell::Cell;
use weir_store::Committed;

/// The files a request committed: how many, their total size, and the SHA-256 of the last one
/// (when computed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stored {
    pub files: u32,
    pub bytes: u64,
    pub sha256: Option<[u8; 32]>,
}

tokio::task_local! {
    static NOTE: Cell<Stored>;
}

/// Whether a request with `method` can reach a commit site: only `PUT`, `POST` and `PATCH`
/// store (uploads, forms, resumable and tus uploads, folders); the metrics count these as
/// uploads in flight. Other requests run without a
/// scope: it costs a task-local swap on every poll and a move of the route's future, which a
/// `GET` (`/healthz`, a small file) should not pay; their note would stay empty anyway.
pub(super) fn may_store(method: &http::Method) -> bool {
    matches!(
        *method,
        http::Method::PUT | http::Method::POST | http::Method::PATCH
    )
}

/// Runs `request` with an empty note; returns its output and what it stored.
pub(super) async fn scope<F: Future>(request: F) -> (F::Output, Stored) {
    NOTE.scope(Cell::new(Stored::default()), async move {
        let output = request.await;
        (output, NOTE.with(Cell::get))
    })
    .await
}

/// Notes a committed file for the current request.
pub(super) fn note(committed: &Committed) {
    let _ = NOTE.try_with(|note| {
        let mut stored = note.get();
        stored.files += 1;
        stored.bytes += committed.size;
        stored.sha256 = committed.sha256;
        note.set(stored);
    });
}
