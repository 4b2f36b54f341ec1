//! `GET /files/` and `GET /files/{dir}/`: a directory as JSON, one page at a time. Written
//! once, generic over weir-store's `Store` (a local directory, or a bucket's key prefix).
//!
//! ```json
//! {"path": "photos/", "entries": [
//!   {"name": "2024", "type": "dir", "size": 0, "modified": 1700000000},
//!   {"name": "cat.jpg", "type": "file", "size": 48213, "modified": 1700000123}],
//!  "next": "cat.jpg"}
//! ```
//!
//! `modified` is in seconds since the Unix epoch, or `null` when the store does not know it: an
//! S3 store's folders (a common prefix of keys has no time; weir-store reports the epoch for
//! them, which the page showed as "Jan 1, 1970"). A time of exactly the epoch is taken as
//! unknown for files too: no upload is stamped 1970. The store lists exactly what can be
//! fetched: no temporaries, reserved names, symlinks or special files.
//!
//! Pages: `?limit=N` (1 to [`MAX_LIMIT`], default [`DEFAULT_LIMIT`]) entries sorted by name
//! (byte order), `?after=NAME` (percent-encoded; `+` is a plus sign) the ones after `NAME`.
//! When more entries follow, the answer has `"next"` (the `after` of the next page) and a
//! `Link: <...>; rel="next"` header (RFC 8288) with that page's URL; the last page has neither,
//! so a directory of up to `limit` entries is answered as one page without `next`. A bad
//! `limit` or `after`, or either given twice, is `400`; other query parameters are ignored.
//!
//! Invariants, for the service's memory and latency:
//! - A request holds at most one page: the body is that page's JSON, sent with a
//!   `Content-Length`. A client that never reads holds one page, whatever the directory size.
//!   While it reads the directory, the local store keeps the page's candidates, or for a page
//!   of 256 entries or more a fixed window of up to 65,536 names (weir-store's `list.rs`).
//! - A local directory scan (`Store::LIST_BLOCKS`) runs on tokio's blocking pool, never on an
//!   async worker, and at most [`Scans`]' permits of them at once (one per core), so listings
//!   can take neither the workers from other requests nor every blocking thread; the page's
//!   JSON is made there too. A bucket's listing (`ListObjectsV2`) is awaited on the
//!   connection's task. A request waiting for
//!   a permit waits asynchronously; one given up (client gone) while its scan runs keeps the
//!   permit until the scan ends, so abandoned requests cannot pile up scans either.
//! - What a request allocated is freed when it ends. Between requests, the local store keeps
//!   the sorted names of at most 4 settled directories beyond the page a scan answered, so
//!   that the next pages of a large listing need no scan (weir-store's `list/cache.rs`:
//!   bounded, and dropped as soon as the directory changes).

use crate::serve::reply::{self, Problem};
use crate::serve::service::Service;
use crate::serve::target::percent_decode;
use http::StatusCode;
use std::io::Write;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::UNIX_EPOCH;
use weir::{Exchange, http};
use weir_store::{ListPage, MAX_SEGMENT_LEN, Store, StorePath};

/// Entries per page when the request gives no `limit`.
pub(crate) const DEFAULT_LIMIT: usize = 1000;
/// The largest `limit` accepted: the bound on what one listing request holds.
pub(crate) const MAX_LIMIT: usize = 10_000;

/// Which page a request asks for.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::serve) struct PageQuery {
    pub(in crate::serve) limit: NonZeroUsize,
    pub(in crate::serve) after: Option<String>,
}

impl PageQuery {
    /// Parses the query string (after `?`).
    pub(in crate::serve) fn parse(query: Option<&str>) -> Result<Self, &'static str> {
        let mut limit = None;
        let mut after = None;
        for pair in query.unwrap_or("").split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "limit" if limit.is_some() => return Err("limit given twice"),
                "limit" => {
                    limit = Some(
                        value
                            .parse::<usize>()
                            .ok()
                            // Digits only: no sign, no spaces.
                            .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                            .filter(|n| *n <= MAX_LIMIT)
                            .and_then(NonZeroUsize::new)
                            .ok_or("limit must be a whole number from 1 to 10000")?,
                    );
                }
                "after" if after.is_some() => return Err("after given twice"),
                "after" => {
                    // ALLOCATION: the decoded cursor, at most a name long.
                    let name = percent_decode(value)
                        .ok()
                        .filter(|name| !name.is_empty() && name.len() <= MAX_SEGMENT_LEN)
                        .ok_or("after must be a percent-encoded name of 1 to 255 bytes")?;
                    after = Some(name);
                }
                _ => {}
            }
        }
        Ok(Self {
            limit: limit.unwrap_or(NonZeroUsize::new(DEFAULT_LIMIT).expect("not zero")),
            after,
        })
    }
}

/// `GET /files/` or `/files/{dir}/` from `store` (see the module doc).
pub(in crate::serve) async fn serve<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    dir: Option<&StorePath>,
) -> Result<(), weir::Error> {
    let query = match PageQuery::parse(ex.request().query()) {
        Ok(q) => q,
        Err(message) => {
            return reply::error(ex, Problem::BadRequest, message, &[]).await;
        }
    };
    let rendered = if S::LIST_BLOCKS {
        scan(svc, store, dir, &query).await
    } else {
        store
            .list_page(dir, query.after.as_deref(), query.limit)
            .await
            .map(|page| Rendered::of(dir, &page))
            .map_err(Failed::Store)
    };
    let rendered = match rendered {
        Ok(r) => r,
        Err(Failed::Store(e)) => return reply::store_error(ex, &e).await,
        Err(Failed::Scan(join)) => {
            tracing::error!(error = %join, "directory listing failed");
            return reply::error(ex, Problem::Internal, "listing failed", &[]).await;
        }
    };
    if let Some(dir) = dir {
        if query.after.is_none() && rendered.empty {
            // Nothing listed: an empty folder if it is one (a bucket's marker), else none (a
            // bucket lists any prefix: 404, as a local directory that is not there).
            match store.is_dir(dir).await {
                Ok(true) => {}
                Ok(false) => {
                    return reply::error(ex, Problem::NotFound, "no such directory", &[]).await;
                }
                Err(e) => return reply::store_error(ex, &e).await,
            }
        }
    }
    answer(ex, query.limit, rendered.body, rendered.next).await
}

/// A page's JSON ([`render`]).
struct Rendered {
    body: Vec<u8>,
    next: Option<String>,
    /// No entry, and none after.
    empty: bool,
}

impl Rendered {
    fn of(dir: Option<&StorePath>, page: &ListPage) -> Self {
        let (body, next) = render(dir, page);
        let empty = page.entries.is_empty() && page.next.is_none();
        Self { body, next, empty }
    }
}

/// Why a page was not listed.
enum Failed {
    Store(weir_store::StoreError),
    /// The blocking task died.
    Scan(tokio::task::JoinError),
}

/// A page from a store whose listing blocks (`Store::LIST_BLOCKS`: a local directory scan),
/// listed and rendered on the blocking pool under one of [`Scans`]' permits (see the module
/// doc).
async fn scan<S: Store + Clone>(
    svc: &Service,
    store: &S,
    dir: Option<&StorePath>,
    query: &PageQuery,
) -> Result<Rendered, Failed> {
    let Ok(permit) = Arc::clone(&svc.listings.permits).acquire_owned().await else {
        unreachable!("the scan semaphore is never closed");
    };
    let store = store.clone();
    // ALLOCATION: the path and the cursor move to the blocking thread (a few bytes; not a
    // data path).
    let dir = dir.cloned();
    let after = query.after.clone();
    let limit = query.limit;
    // Such a store's future does its work when first polled, on the thread that polls it:
    // the blocking one.
    let runtime = tokio::runtime::Handle::current();
    let scan = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let page = runtime.block_on(store.list_page(dir.as_ref(), after.as_deref(), limit))?;
        Ok::<_, weir_store::StoreError>(Rendered::of(dir.as_ref(), &page))
    });
    match scan.await {
        Ok(listed) => listed.map_err(Failed::Store),
        Err(join) => Err(Failed::Scan(join)),
    }
}

/// Answers a rendered page.
pub(in crate::serve) async fn answer(
    ex: &mut Exchange<'_>,
    limit: NonZeroUsize,
    body: Vec<u8>,
    next: Option<String>,
) -> Result<(), weir::Error> {
    // The same path the client asked for, so the link is relative to nothing but the host.
    let link = next.map(|next| {
        format!(
            "<{}?limit={}&after={}>; rel=\"next\"",
            ex.request().path(),
            limit,
            percent_encode(&next)
        )
    });
    let mut response = ex
        .respond(StatusCode::OK)
        .header("content-type", "application/json")
        .header("cache-control", "no-store");
    if let Some(link) = &link {
        response = response.header("link", link);
    }
    response.body(body).await
}

/// The page's JSON body, and its `next` cursor.
pub(in crate::serve) fn render(
    dir: Option<&StorePath>,
    page: &ListPage,
) -> (Vec<u8>, Option<String>) {
    // ALLOCATION: the body, sized for the page (names plus about 80 bytes of JSON per entry);
    // it is the one thing a stalled reader holds.
    let names: usize = page.entries.iter().map(|e| e.name.len()).sum();
    let mut body = Vec::with_capacity(64 + names + 80 * page.entries.len());
    let write_str = |body: &mut Vec<u8>, s: &str| {
        serde_json::to_writer(body, s).expect("a string serializes into memory")
    };
    body.extend_from_slice(b"{\"path\":");
    match dir {
        Some(dir) => write_str(&mut body, &format!("{dir}/")),
        None => body.extend_from_slice(b"\"\""),
    }
    body.extend_from_slice(b",\"entries\":[");
    for (i, e) in page.entries.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(b"{\"name\":");
        write_str(&mut body, &e.name);
        let kind = if e.is_dir { "dir" } else { "file" };
        let _ = write!(
            body,
            ",\"type\":\"{kind}\",\"size\":{},\"modified\":",
            e.size
        );
        match e.modified.duration_since(UNIX_EPOCH) {
            Ok(d) if !d.is_zero() => {
                let _ = write!(body, "{}}}", d.as_secs());
            }
            // Unknown (see the module's documentation), or before 1970.
            _ => body.extend_from_slice(b"null}"),
        }
    }
    body.push(b']');
    if let Some(next) = &page.next {
        body.extend_from_slice(b",\"next\":");
        write_str(&mut body, next);
    }
    body.extend_from_slice(b"}\n");
    (body, page.next.clone())
}

/// Percent-encodes everything but RFC 3986 unreserved characters, for a query value.
fn percent_encode(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use weir_store::Entry;

    fn q(limit: usize, after: Option<&str>) -> PageQuery {
        PageQuery {
            limit: NonZeroUsize::new(limit).unwrap(),
            after: after.map(str::to_owned),
        }
    }

    #[test]
    fn queries() {
        assert_eq!(PageQuery::parse(None), Ok(q(DEFAULT_LIMIT, None)));
        assert_eq!(PageQuery::parse(Some("")), Ok(q(DEFAULT_LIMIT, None)));
        assert_eq!(PageQuery::parse(Some("limit=1")), Ok(q(1, None)));
        assert_eq!(PageQuery::parse(Some("limit=10000")), Ok(q(10_000, None)));
        assert_eq!(
            PageQuery::parse(Some("after=a%20b+c&limit=5&x=1&&")),
            Ok(q(5, Some("a b+c")))
        );
        assert_eq!(
            PageQuery::parse(Some("after=%C3%A9t%C3%A9")),
            Ok(q(DEFAULT_LIMIT, Some("été")))
        );
        let too_long = format!("after={}", "x".repeat(MAX_SEGMENT_LEN + 1));
        for bad in [
            "limit=0",
            "limit=10001",
            "limit=-1",
            "limit=+5",
            "limit=",
            "limit",
            "limit=1e3",
            "limit=99999999999999999999999",
            "limit=5&limit=5",
            "after=",
            "after=%zz",
            "after=%ff",
            "after=a&after=b",
            &too_long,
        ] {
            assert!(PageQuery::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn bodies_are_the_json_of_the_page() {
        let entry = |name: &str, is_dir| Entry {
            name: name.into(),
            size: if is_dir { 0 } else { 7 },
            modified: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            is_dir,
        };
        // An S3 store's folder: no time (weir-store says the epoch).
        let unknown = Entry {
            modified: UNIX_EPOCH,
            ..entry("s3dir", true)
        };
        let page = ListPage {
            entries: vec![entry("a \"q\"", false), unknown, entry("sub", true)],
            next: Some("sub".into()),
        };
        let dir = StorePath::parse("d/é").unwrap();
        let (body, next) = render(Some(&dir), &page);
        assert_eq!(next.as_deref(), Some("sub"));
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"path": "d/é/", "next": "sub", "entries": [
                {"name": "a \"q\"", "type": "file", "size": 7, "modified": 1_700_000_000u64},
                {"name": "s3dir", "type": "dir", "size": 0, "modified": null},
                {"name": "sub", "type": "dir", "size": 0, "modified": 1_700_000_000u64}]})
        );
        let (body, next) = render(
            None,
            &ListPage {
                entries: vec![],
                next: None,
            },
        );
        assert_eq!(
            (body.as_slice(), next),
            (&b"{\"path\":\"\",\"entries\":[]}\n"[..], None)
        );
    }

    #[test]
    fn cursors_are_encoded_for_a_query() {
        assert_eq!(percent_encode("a-b_c.d~9"), "a-b_c.d~9");
        assert_eq!(percent_encode("a b+c&d=é"), "a%20b%2Bc%26d%3D%C3%A9");
        assert_eq!(percent_decode(&percent_encode("x%y/z")).unwrap(), "x%y/z");
    }
}
