//! Validators and preconditions for every `/files/` route: the one definition of a stored
//! file's `ETag`, and the evaluation of `If-Match`, `If-None-Match`, `If-Unmodified-Since` and
//! `If-Modified-Since` ([`weir_proto::conditional`], RFC 9110 §13) against it.
//!
//! Where each route evaluates them:
//! - `GET`/`HEAD`: on the opened file (`download.rs`): 412, 304 or the file;
//! - `PUT`: on the file at the target before any body byte is read ([`hold_now`]: 412 costs the
//!   client its head only: weir sends no `100 Continue` for an answer given before reading),
//!   then again by the store, atomically with the commit (`StoreUpload::commit`'s check: under
//!   the local store's commit lock with the rename; the bucket's conditional write), so two
//!   racing `If-None-Match: *` uploads of one path store exactly one;
//! - `POST` (multipart form): for each file part against its own target, when its head arrives
//!   and again inside the form's commit (`Store::commit_all`'s check: locally under the store's
//!   lock before any rename, all or none; in a bucket with each file's write):
//!   `If-None-Match: *` means "create only", for every file of the form; a refusal is a 412
//!   for the whole form;
//! - `DELETE`: atomically with the delete (`Store::delete`'s check: the local unlink under the
//!   commit lock; the bucket's `If-Match`);
//! - a resumable upload's creation with `--store s3://` (`resumable.rs`): before it is
//!   created, against the object there, then kept with the upload ([`write_condition`]) and
//!   evaluated again when it completes, maybe through another node, atomically with the
//!   completion's write ([`kept_hold`]): `If-None-Match: *` on the creating request means
//!   "create only" even if another writer creates the target while the upload is incomplete.
//!
//! A missing file is 404 for `GET`, `HEAD` and `DELETE` whatever the preconditions (RFC 9110
//! §13.2.1: the unconditional answer would not be 2xx); for `PUT` it is a target with no
//! current representation (`If-Match` fails, `If-None-Match: *` holds).

use super::reply::{self, Problem};
use std::time::UNIX_EPOCH;
use weir::{Exchange, Request, http};
use weir_proto::RequestHead;
use weir_proto::conditional::{self, Outcome, RequestFields, Validators};
use weir_store::{FileMeta, Store, StoreError, StoreObject, StorePath};

/// The entity tag of a stored file: its SHA-256 when the store has it, else its size and
/// modification time in nanoseconds. The digest in base64, as `Content-Digest` carries it
/// (`"sha256-<44 characters>"`, 53 bytes; the same digest in hex made 73): short enough
/// that a client's `If:` header with two entity tags and a lock token fits the 200 bytes
/// litmus formats it into (`tests/webdav.rs`), and fewer bytes in every listing.
pub(super) fn etag(meta: &FileMeta) -> String {
    match &meta.sha256 {
        Some(sha256) => {
            let mut tag = String::with_capacity(53);
            tag.push_str("\"sha256-");
            super::base64::encode_into(sha256, &mut tag);
            tag.push('"');
            tag
        }
        None => {
            let nanos = meta
                .modified
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            format!("\"{:x}-{nanos:x}\"", meta.size)
        }
    }
}

/// The validators the preconditions compare with: `etag` (from [`etag`]) and the file's
/// `Last-Modified`, weak when an earlier version shared its second.
pub(super) fn validators<'a>(meta: &FileMeta, etag: &'a str) -> Validators<'a> {
    Validators {
        etag,
        last_modified: conditional::seconds(meta.modified),
        date_shared: meta.date_shared(),
    }
}

/// Whether the request's preconditions let a write go on, given the file at the target
/// (`None`: none).
pub(super) fn hold(head: &Request, meta: Option<&FileMeta>) -> bool {
    hold_head(&Fields(head), meta)
}

/// A request's fields as [`weir_proto::conditional`] reads them.
pub(super) struct Fields<'r>(pub(super) &'r Request);

impl RequestFields for Fields<'_> {
    fn method(&self) -> &http::Method {
        self.0.method()
    }

    fn field_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.0.header_all(name)
    }
}

/// [`hold`] on a request's fields (a request's, or a head rebuilt by [`kept_hold`]).
fn hold_head(head: &impl RequestFields, meta: Option<&FileMeta>) -> bool {
    let outcome = match meta {
        None => conditional::evaluate(head, None),
        Some(meta) => {
            // ALLOCATION: the entity tag's text, once per conditional write.
            let etag = etag(meta);
            conditional::evaluate(head, Some(&validators(meta, &etag)))
        }
    };
    outcome == Outcome::Proceed
}

/// The precondition fields a write is judged by (`If-Modified-Since` applies to `GET` and
/// `HEAD` only, RFC 9110 §13.1.3), in [`conditional::evaluate`]'s terms.
const WRITE_FIELDS: [&str; 3] = ["if-match", "if-none-match", "if-unmodified-since"];

/// A write's preconditions as `(field name, value)` pairs, every line in order, to keep with
/// a resumable upload and evaluate again when it completes ([`kept_hold`]); empty when it has
/// none. `Err` (answer 400) when a value is not visible ASCII: it could not be kept as text
/// (no entity tag or date needs more).
pub(super) fn write_condition(head: &Request) -> Result<Vec<(String, String)>, &'static str> {
    let mut kept = Vec::new();
    for name in WRITE_FIELDS {
        for value in head.header_all(name) {
            let visible = value
                .iter()
                .all(|&b| matches!(b, b' ' | b'\t' | b'!'..=b'~'));
            match std::str::from_utf8(value) {
                Ok(text) if visible => kept.push((name.to_owned(), text.to_owned())),
                _ => return Err("a precondition field of an upload must be visible ASCII"),
            }
        }
    }
    Ok(kept)
}

/// Whether the preconditions kept by [`write_condition`] hold for the file at the target
/// (`None`: none): the evaluation of [`hold`], on a head rebuilt from the kept fields, so the
/// completion judges exactly what the creating request would have been judged by.
pub(super) fn kept_hold(kept: &[(String, String)], meta: Option<&FileMeta>) -> bool {
    // ALLOCATION: a small head, once per completion of an upload created with preconditions.
    let mut head = RequestHead::new();
    head.set_request_line(http::Method::PUT, "/", http::Version::HTTP_11);
    for (name, value) in kept {
        head.push_header(name, value.as_bytes());
    }
    hold_head(&head, meta)
}

/// Checks a write's preconditions before its body is read, against the object at `path` now
/// in `store`. `true` when there are none, when they hold, or when the target cannot be read
/// as a file (a directory, a symlink, a file on the way: the write itself gives the right
/// answer). A store that cannot be read (a bucket's failure) is its error.
pub(super) async fn hold_now<S: Store>(
    store: &S,
    head: &Request,
    path: &StorePath,
) -> Result<bool, StoreError> {
    if !conditional::has_preconditions(&Fields(head)) {
        return Ok(true);
    }
    match store.open(path).await {
        Ok(object) => Ok(hold(head, Some(object.meta()))),
        Err(StoreError::NotFound) => Ok(hold(head, None)),
        Err(StoreError::IsDirectory | StoreError::NotADirectory | StoreError::SymlinkRefused) => {
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

/// `412 Precondition Failed`.
pub(super) async fn failed(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    reply::error(
        ex,
        Problem::PreconditionFailed,
        "precondition failed: the file is not the version the request names",
        &[],
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn etags() {
        let meta = FileMeta {
            size: 255,
            modified: UNIX_EPOCH + Duration::from_nanos(4096),
            sha256: None,
        };
        assert_eq!(etag(&meta), "\"ff-1000\"");
        let meta = FileMeta {
            sha256: Some([0xab; 32]),
            ..meta
        };
        // 32 bytes of 0xab in base64: ten "q6ur" (30 bytes), then "q6s=" for the last two.
        let tag = etag(&meta);
        assert_eq!(tag, format!("\"sha256-{}q6s=\"", "q6ur".repeat(10)));
        assert_eq!(tag.len(), 53);
    }
}
