//! `GET /files/{dir}/?html` (and the same URL from `wget` or rclone: `folder_formats.rs`): a
//! folder as a plain HTML index, the kind `wget -r` and rclone's `http` backend walk. One
//! `<a href>` per entry, relative to the folder's URL: a file's name, a folder's name with a
//! `/`; names percent-encoded in the `href` (everything but RFC 3986's unreserved
//! characters, so no link has a `?` and none leaves the folder) and HTML-escaped in the text.
//! No link to the parent or to other formats (a mirroring client would follow them).
//! `Content-Type: text/html; charset=utf-8` (rclone reads only that type) with a policy that
//! allows no script, style or frame.
//!
//! The whole folder is listed in one answer (rclone follows no pagination): the store's pages
//! ([`PAGE`] entries) are rendered and sent one after the other in a chunked body, so the
//! answer holds one page whatever the folder's size. The first page is listed before the
//! head, so a missing folder is still a `404`; a failure after it cuts the body (the client
//! sees an incomplete answer, never a short listing that looks whole).

use crate::serve::list_pages;
use crate::serve::reply::{self, Problem};
use crate::serve::service::Service;
use http::{Method, StatusCode};
use std::io::Write;
use std::num::NonZeroUsize;
use weir::{Exchange, http};
use weir_store::{ListPage, Store, StorePath};

/// Entries per store page.
const PAGE: usize = 1000;

/// The policy of the index: nothing but links.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// `GET`/`HEAD` of a folder as an HTML index (see the module doc).
pub(in crate::serve) async fn serve<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    dir: Option<&StorePath>,
) -> Result<(), weir::Error> {
    let limit = NonZeroUsize::new(PAGE).expect("not zero");
    let first = match list_pages::list_page(svc, store, dir, None, limit).await {
        Ok(page) => page,
        Err(list_pages::PageError::Store(e)) => return reply::store_error(ex, &e).await,
        Err(e) => {
            tracing::error!(error = %e, "directory listing failed");
            return reply::error(ex, Problem::Internal, "listing failed", &[]).await;
        }
    };
    if let Some(dir) = dir {
        if first.entries.is_empty() && first.next.is_none() {
            match store.is_dir(dir).await {
                Ok(true) => {}
                Ok(false) => {
                    return reply::error(ex, Problem::NotFound, "no such directory", &[]).await;
                }
                Err(e) => return reply::store_error(ex, &e).await,
            }
        }
    }
    let head_only = *ex.request().method() == Method::HEAD;
    // ALLOCATION: the page's HTML, reused for every page (about 100 bytes per entry).
    let mut body = Vec::with_capacity(16 * 1024);
    // ALLOCATION: the title, once per answer.
    let title = match dir {
        Some(dir) => format!("/files/{dir}/"),
        None => "/files/".to_owned(),
    };
    body.extend_from_slice(
        b"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ",
    );
    escape(&mut body, &title);
    body.extend_from_slice(b"</title></head>\n<body><h1>Index of ");
    escape(&mut body, &title);
    body.extend_from_slice(b"</h1>\n<ul>\n");
    let response = ex
        .respond(StatusCode::OK)
        .header("content-type", "text/html; charset=utf-8")
        .header("cache-control", "no-store")
        .header("vary", "accept, user-agent")
        .header("content-security-policy", CONTENT_SECURITY_POLICY)
        .header("x-content-type-options", "nosniff");
    let mut writer = response.stream(None).await?;
    if head_only {
        return writer.finish().await;
    }
    let mut page = first;
    loop {
        render(&mut body, &page);
        writer.write(&body).await?;
        body.clear();
        let Some(after) = page.next.take() else {
            break;
        };
        page = match list_pages::list_page(svc, store, dir, Some(&after), limit).await {
            Ok(page) => page,
            Err(e) => {
                // The head is out: the body stays open and the engine cuts it.
                tracing::error!(error = %e, "directory listing failed");
                return Err(weir::Error::user(e));
            }
        };
    }
    writer.write(b"</ul>\n</body></html>\n").await?;
    writer.finish().await
}

/// Appends one `<li>` per entry of `page`.
fn render(body: &mut Vec<u8>, page: &ListPage) {
    for e in &page.entries {
        let slash = if e.is_dir { "/" } else { "" };
        body.extend_from_slice(b"<li><a href=\"");
        percent_encode(body, &e.name);
        body.extend_from_slice(slash.as_bytes());
        body.extend_from_slice(b"\">");
        escape(body, &e.name);
        body.extend_from_slice(slash.as_bytes());
        body.extend_from_slice(b"</a>");
        if !e.is_dir {
            let _ = write!(body, " {}", e.size);
        }
        body.extend_from_slice(b"</li>\n");
    }
}

/// `s` with HTML's special characters as references.
fn escape(out: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&#39;"),
            _ => out.push(b),
        }
    }
}

/// `s` percent-encoded but for RFC 3986's unreserved characters (a path segment that is also
/// safe inside a quoted attribute).
fn percent_encode(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;
    use weir_store::Entry;

    #[test]
    fn entries_are_encoded_links() {
        let entry = |name: &str, is_dir| Entry {
            name: name.into(),
            size: 3,
            modified: UNIX_EPOCH,
            is_dir,
        };
        let page = ListPage {
            entries: vec![entry("a b&<x>\"%é?.txt", false), entry("sub dir", true)],
            next: None,
        };
        let mut body = Vec::new();
        render(&mut body, &page);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "<li><a href=\"a%20b%26%3Cx%3E%22%25%C3%A9%3F.txt\">a b&amp;&lt;x&gt;&quot;%é?.txt</a> 3</li>\n\
             <li><a href=\"sub%20dir/\">sub dir/</a></li>\n"
        );
    }
}
