//! What a request stored or deleted, and who made it: noted where an upload commits or a file
//! is deleted, read once the request is answered, by the access log and the metrics; the
//! hooks and webhooks read who made it when the event is queued.
//!
//! The note is a task-local slot, set up around each request that may store or delete by
//! `observe.rs`, rather than a value returned through every route: the commit sites (`upload`,
//! `form`, `resumable`, `tus`, the remote store's) and the deletes each reach it through
//! `Service::on_stored` / `on_deleted`, and no route's signature changes. A request's handler
//! runs on one task (HTTP/1.1: the connection's; HTTP/2: the stream's), so the slot is the
//! request's own. Outside such a scope (unit tests calling a route directly) noting does
//! nothing and nobody is named.
//!
//! Invariant (issue 35's audit trail): every request that stores, replaces or deletes a file
//! runs inside a scope, so its log line names each path it touched, and the token that made it
//! (its name, never the token) is in the scope from the start: a resumable `PATCH` that
//! completes an upload names the upload's file and the token of that `PATCH`.

use std::cell::RefCell;
use std::sync::Arc;
use weir_store::Committed;

/// The files a request committed or deleted: how many it stored, their total size, the SHA-256
/// of the last one (when computed), and the store paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stored {
    pub files: u32,
    pub bytes: u64,
    pub sha256: Option<[u8; 32]>,
    /// The store paths committed, in order.
    pub paths: Vec<String>,
    /// How many of them replaced a file.
    pub replaced: u32,
    /// The store paths deleted (a folder's ends in `/`).
    pub deleted: Vec<String>,
}

/// A request's note: what it stored, and who it is.
#[derive(Default)]
struct Note {
    stored: Stored,
    who: Option<Arc<str>>,
}

tokio::task_local! {
    static NOTE: RefCell<Note>;
}

/// Whether a request with `method` can reach a commit site: only `PUT`, `POST` and `PATCH`
/// store (uploads, forms, resumable and tus uploads, folders); the metrics count these as
/// uploads in flight. Other requests but `DELETE` ([`may_touch`]) run without a scope: it
/// costs a task-local swap on every poll and a move of the route's future, which a `GET`
/// (`/healthz`, a small file) should not pay; their note would stay empty anyway.
pub(super) fn may_store(method: &http::Method) -> bool {
    matches!(
        *method,
        http::Method::PUT | http::Method::POST | http::Method::PATCH
    )
}

/// Whether a request with `method` may store or delete: it runs in a scope ([`scope`]).
pub(super) fn may_touch(method: &http::Method) -> bool {
    may_store(method) || *method == http::Method::DELETE || super::routes::webdav::may_touch(method)
}

/// Runs `request` with an empty note naming `who` (the request's token's name); returns its
/// output and what it stored.
pub(super) async fn scope<F: Future>(who: Option<Arc<str>>, request: F) -> (F::Output, Stored) {
    let (output, stored, _) = scope_naming(who, request).await;
    (output, stored)
}

/// [`scope`], returning also who the request was made by at its end (named at the start, or
/// later by [`set_who`]).
pub(super) async fn scope_naming<F: Future>(
    who: Option<Arc<str>>,
    request: F,
) -> (F::Output, Stored, Option<Arc<str>>) {
    let note = Note {
        stored: Stored::default(),
        who,
    };
    NOTE.scope(RefCell::new(note), async move {
        let output = request.await;
        let note = NOTE.with(|n| std::mem::take(&mut *n.borrow_mut()));
        (output, note.stored, note.who)
    })
    .await
}

/// Notes a file committed at `path` for the current request.
pub(super) fn note(path: &str, committed: &Committed) {
    let _ = NOTE.try_with(|note| {
        let stored = &mut note.borrow_mut().stored;
        stored.files += 1;
        stored.bytes += committed.size;
        stored.sha256 = committed.sha256;
        stored.replaced += u32::from(committed.replaced);
        // ALLOCATION: the path, once per committed file.
        stored.paths.push(path.to_owned());
    });
}

/// Notes a file (or a folder, `…/`) deleted at `path` for the current request.
pub(super) fn note_deleted(path: &str) {
    let _ = NOTE.try_with(|note| note.borrow_mut().stored.deleted.push(path.to_owned()));
}

/// Names who made the current request, once that is known only inside the route (the S3 API
/// knows the access key once the signature is verified). Outside a scope, nothing.
pub(super) fn set_who(who: Arc<str>) {
    let _ = NOTE.try_with(|note| note.borrow_mut().who = Some(who));
}

/// The name of the token that made the current request, if it carried a known one.
pub(super) fn who() -> Option<Arc<str>> {
    NOTE.try_with(|note| note.borrow().who.clone())
        .ok()
        .flatten()
}
