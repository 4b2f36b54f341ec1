//! `GET`/`HEAD /files/{path}`: a stored file, whole or one range, sent with `sendfile`.
//!
//! The file is opened once and everything comes from the open handle (its metadata, its
//! stored digest, its bytes), so a concurrent upload replacing the path cannot mix two versions
//! into one response: the handle keeps reading the version it opened.
//!
//! Validators: `ETag` is the stored SHA-256 when the store has it (strong, content-based), else
//! size and modification time in nanoseconds (strong in practice: every commit is a new file
//! with a new mtime). `Last-Modified` is the commit time. `If-None-Match` (weak comparison)
//! takes precedence over `If-Modified-Since` (RFC 9110 §13.2.2); either can answer `304`.
//! `If-Range` (strong comparison, or an exact date) keeps a `Range` only while the file is
//! unchanged. `Repr-Digest` (RFC 9530) carries the stored SHA-256 of the whole file, for 200
//! and 206 alike, so `weir get` can verify what it wrote.

use super::mime::content_type;
use super::reply::{self, hex};
use super::service::Service;
use http::StatusCode;
use std::time::{SystemTime, UNIX_EPOCH};
use weir::{Exchange, http};
use weir_proto::range::{self, RangeAnswer};
use weir_store::{ContentDigest, FileMeta, StoreError, StorePath};

pub(super) async fn serve(
    svc: &Service,
    ex: &mut Exchange<'_>,
    path: &StorePath,
) -> Result<(), weir::Error> {
    let (file, meta) = match svc.store.open_file(path) {
        Ok(opened) => opened,
        Err(StoreError::IsDirectory) => {
            // The listing lives at the slash form of the URL.
            let location = format!("{}/", ex.request().path());
            return ex
                .respond(StatusCode::MOVED_PERMANENTLY)
                .header("location", location)
                .empty()
                .await;
        }
        Err(e) => return reply::store_error(ex, &e).await,
    };
    let etag = etag(&meta);
    let last_modified = httpdate::fmt_http_date(meta.modified);
    if not_modified(ex, &etag, meta.modified) {
        return ex
            .respond(StatusCode::NOT_MODIFIED)
            .header("etag", &etag)
            .header("last-modified", &last_modified)
            .empty()
            .await;
    }
    let answer = match ex.request().header("range") {
        Some(range) if if_range_holds(ex, &etag, meta.modified) => {
            range::evaluate(range, meta.size)
        }
        _ => RangeAnswer::Full,
    };
    let (status, start, len) = match answer {
        RangeAnswer::Full => (StatusCode::OK, 0, meta.size),
        RangeAnswer::Partial { start, len } => (StatusCode::PARTIAL_CONTENT, start, len),
        RangeAnswer::Unsatisfiable => {
            let content_range = format!("bytes */{}", meta.size);
            return reply::error(
                ex,
                StatusCode::RANGE_NOT_SATISFIABLE,
                "range not satisfiable",
                &[("content-range", &content_range)],
            )
            .await;
        }
    };
    let repr_digest = meta.sha256.map(|sha256| {
        ContentDigest {
            sha256: Some(sha256),
            sha512: None,
        }
        .to_header_value()
    });
    let mut response = ex
        .respond(status)
        .header("content-type", content_type(path.file_name()))
        .header("accept-ranges", "bytes")
        .header("etag", &etag)
        .header("last-modified", &last_modified)
        .header("x-content-type-options", "nosniff")
        // Uploaded HTML must not run scripts in this origin.
        .header("content-security-policy", "sandbox");
    if let Some(digest) = &repr_digest {
        response = response.header("repr-digest", digest);
    }
    if status == StatusCode::PARTIAL_CONTENT {
        let end = start + len - 1;
        response = response.header(
            "content-range",
            format!("bytes {start}-{end}/{}", meta.size),
        );
    }
    // `sendfile` on plain sockets: page cache → socket, no user-space copy. HEAD sends the
    // head only (weir knows the method).
    response.file(&file, start, len).await
}

/// The entity tag of a stored file.
pub(super) fn etag(meta: &FileMeta) -> String {
    match &meta.sha256 {
        Some(sha256) => format!("\"sha256-{}\"", hex(sha256)),
        None => {
            let nanos = meta
                .modified
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            format!("\"{:x}-{nanos:x}\"", meta.size)
        }
    }
}

/// Whether the conditional headers make this a `304`.
fn not_modified(ex: &Exchange<'_>, etag: &str, modified: SystemTime) -> bool {
    let request = ex.request();
    let mut any_none_match = false;
    for value in request.header_all("if-none-match") {
        any_none_match = true;
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        if value.trim() == "*" || value.split(',').any(|tag| weak_eq(tag.trim(), etag)) {
            return true;
        }
    }
    if any_none_match {
        return false;
    }
    let since = request
        .header_str("if-modified-since")
        .and_then(|v| httpdate::parse_http_date(v.trim()).ok());
    since.is_some_and(|since| whole_seconds(modified) <= whole_seconds(since))
}

/// Whether `If-Range` (if any) lets the `Range` apply.
fn if_range_holds(ex: &Exchange<'_>, etag: &str, modified: SystemTime) -> bool {
    let Some(value) = ex.request().header_str("if-range") else {
        return true;
    };
    let value = value.trim();
    if value.starts_with('"') || value.starts_with("W/") {
        // Strong comparison: a weak tag never matches.
        return value == etag;
    }
    httpdate::parse_http_date(value)
        .is_ok_and(|date| whole_seconds(date) == whole_seconds(modified))
}

/// Weak comparison of entity tags (RFC 9110 §8.8.3.2): equal once `W/` is ignored.
fn weak_eq(a: &str, b: &str) -> bool {
    let strip = |t: &str| t.strip_prefix("W/").unwrap_or(t).to_owned();
    strip(a) == strip(b)
}

/// HTTP dates have one-second resolution.
fn whole_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
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
        assert_eq!(etag(&meta), format!("\"sha256-{}\"", "ab".repeat(32)));
    }

    #[test]
    fn weak_comparison() {
        assert!(weak_eq("W/\"a\"", "\"a\""));
        assert!(weak_eq("\"a\"", "\"a\""));
        assert!(!weak_eq("\"a\"", "\"b\""));
    }
}
