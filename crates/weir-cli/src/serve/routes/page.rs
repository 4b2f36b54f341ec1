//! The browser page: `GET /`, its script and style sheet, and every folder's URL when a
//! browser navigates to it.
//!
//! The page (`crates/weir-cli/assets/`: plain HTML, CSS and JavaScript, no build step) is
//! compiled into the binary with `include_bytes!`, so `weir serve` needs no files and no
//! network to serve it. It renders folders itself from the JSON listings, so a folder's URL
//! (`/files/a/b/`) answers the page when the request's `Accept` prefers `text/html` over
//! `application/json` (a browser's navigation), unless its query names another format
//! (`?tar`, `?zip`, `?html`: `folder_formats.rs`), and the JSON listing otherwise, as before: one
//! renderer (the page) instead of a second one in Rust, and the listing's JSON stays the one
//! interface. Serving the page needs no token: it holds no data, and it is where the token is
//! entered.
//!
//! Every answer carries a strict `Content-Security-Policy` (scripts, styles and connections
//! from this origin only; no inline script or style, no frames, no plugins), `nosniff` and
//! `Referrer-Policy: no-referrer`. Assets are validated by an `ETag` (their SHA-256, computed
//! once) and revalidated on every use (`Cache-Control: no-cache`), so a new binary's page is
//! never mixed with an old script.

use crate::serve::service::method_not_allowed;
use http::{Method, StatusCode};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
use weir::{Exchange, Request, http};
use weir_proto::conditional::{self, Outcome, Validators};

/// One embedded file.
pub(in crate::serve) struct Asset {
    content_type: &'static str,
    bytes: &'static [u8],
    etag: OnceLock<String>,
}

impl Asset {
    const fn new(content_type: &'static str, bytes: &'static [u8]) -> Self {
        Self {
            content_type,
            bytes,
            etag: OnceLock::new(),
        }
    }

    fn etag(&self) -> &str {
        self.etag.get_or_init(|| {
            let digest = Sha256::digest(self.bytes);
            format!("\"{}\"", crate::serve::reply::hex(&digest[..16]))
        })
    }
}

static INDEX: Asset = Asset::new(
    "text/html; charset=utf-8",
    include_bytes!("../../../assets/index.html"),
);
static SCRIPT: Asset = Asset::new(
    "text/javascript; charset=utf-8",
    include_bytes!("../../../assets/weir.js"),
);
static STYLE: Asset = Asset::new(
    "text/css; charset=utf-8",
    include_bytes!("../../../assets/weir.css"),
);

/// The page's policy: everything from this origin, nothing inline, never framed.
pub(in crate::serve) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// The asset this request asks for, if it is one of the page's: `/`, `/assets/...`, or a
/// folder's URL (ending in `/`) asked for as HTML. Other requests are not the page's.
pub(in crate::serve) fn route(request: &Request) -> Option<&'static Asset> {
    match request.path() {
        "/" => Some(&INDEX),
        "/assets/weir.js" => Some(&SCRIPT),
        "/assets/weir.css" => Some(&STYLE),
        path if path.starts_with("/files/")
            && path.ends_with('/')
            && matches!(*request.method(), Method::GET | Method::HEAD)
            && !crate::serve::folder_formats::query_names_format(request)
            && prefers_html(request.header("accept").unwrap_or_default()) =>
        {
            Some(&INDEX)
        }
        _ => None,
    }
}

/// `GET`/`HEAD` of an asset, with its validator (`304` when `If-None-Match` has it).
pub(in crate::serve) async fn serve(
    ex: &mut Exchange<'_>,
    asset: &Asset,
) -> Result<(), weir::Error> {
    if !matches!(*ex.request().method(), Method::GET | Method::HEAD) {
        return method_not_allowed(ex, "GET, HEAD").await;
    }
    let etag = asset.etag();
    // No `Last-Modified` is sent; a date the client made up never makes the page "not
    // modified" (the newest possible modification time).
    let current = Validators {
        etag,
        last_modified: u64::MAX,
        date_shared: true,
    };
    let status = match conditional::evaluate(
        &crate::serve::preconditions::Fields(ex.request()),
        Some(&current),
    ) {
        Outcome::NotModified => StatusCode::NOT_MODIFIED,
        Outcome::Proceed | Outcome::PreconditionFailed => StatusCode::OK,
    };
    let response = ex
        .respond(status)
        .header("etag", etag)
        .header("cache-control", "no-cache")
        // The same folder URL answers the page or JSON.
        .header("vary", "accept")
        .header("content-security-policy", CONTENT_SECURITY_POLICY)
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer");
    if status == StatusCode::NOT_MODIFIED {
        return response.empty().await;
    }
    response
        .header("content-type", asset.content_type)
        .body(asset.bytes)
        .await
}

/// Whether an `Accept` value prefers `text/html` to `application/json` (RFC 9110 §12.5.1:
/// the most specific matching range gives each its weight). A browser's navigation sends
/// `text/html,...,*/*;q=0.8`: HTML; `fetch()` and curl send `*/*`: a tie, so JSON, as before.
pub(in crate::serve) fn prefers_html(accept: &[u8]) -> bool {
    let html = weight(accept, b"text", b"html");
    let json = weight(accept, b"application", b"json");
    html > json
}

/// The weight (in thousandths) `accept` gives `kind/sub`: that of the most specific range
/// matching it, 0 when none does.
fn weight(accept: &[u8], kind: &[u8], sub: &[u8]) -> u16 {
    let mut best: Option<(u8, u16)> = None;
    for range in accept.split(|&b| b == b',') {
        let mut params = range.split(|&b| b == b';');
        let media = params.next().unwrap_or_default().trim_ascii();
        let Some(slash) = media.iter().position(|&b| b == b'/') else {
            continue;
        };
        let (k, s) = (&media[..slash], &media[slash + 1..]);
        let specificity = if k.eq_ignore_ascii_case(kind) && s.eq_ignore_ascii_case(sub) {
            2
        } else if k.eq_ignore_ascii_case(kind) && s == b"*" {
            1
        } else if k == b"*" && s == b"*" {
            0
        } else {
            continue;
        };
        let mut q = 1000;
        for param in params {
            let param = param.trim_ascii();
            if param.len() > 2 && param[..2].eq_ignore_ascii_case(b"q=") {
                q = parse_qvalue(&param[2..]).unwrap_or(0);
            }
        }
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map_or(0, |(_, q)| q)
}

/// A `qvalue` (`0`, `0.5`, `1.000`) in thousandths; `None` when malformed.
fn parse_qvalue(text: &[u8]) -> Option<u16> {
    let (int, frac) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &b""[..]),
    };
    if int.len() != 1 || frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + frac.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match int[0] {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_get_the_page_and_programs_json() {
        // Chromium's and Firefox's navigation.
        assert!(prefers_html(
            b"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
        ));
        assert!(prefers_html(b"text/html"));
        assert!(prefers_html(b"text/*, application/json;q=0.5"));
        // fetch(), curl, weir get, nothing at all.
        assert!(!prefers_html(b"*/*"));
        assert!(!prefers_html(b""));
        assert!(!prefers_html(b"application/json"));
        assert!(!prefers_html(b"application/json, text/html;q=0.9"));
        assert!(!prefers_html(b"text/html;q=0, */*"));
        assert!(!prefers_html(b"text/html, application/json"));
    }

    #[test]
    fn qvalues() {
        assert_eq!(parse_qvalue(b"1"), Some(1000));
        assert_eq!(parse_qvalue(b"1.000"), Some(1000));
        assert_eq!(parse_qvalue(b"0.8"), Some(800));
        assert_eq!(parse_qvalue(b"0.125"), Some(125));
        assert_eq!(parse_qvalue(b"0"), Some(0));
        for bad in [&b"1.5"[..], b"2", b"0.1234", b"", b".5", b"x", b"0.a"] {
            assert_eq!(parse_qvalue(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn assets_are_embedded_and_reference_no_other_origin() {
        for asset in [&INDEX, &SCRIPT, &STYLE] {
            let text = std::str::from_utf8(asset.bytes).unwrap();
            assert!(!text.contains("http://") && !text.contains("https://"));
            assert_eq!(asset.etag().len(), 34);
        }
        let html = std::str::from_utf8(INDEX.bytes).unwrap();
        assert!(!html.contains("<script>") && !html.contains("style="));
        assert!(html.contains("src=\"/assets/weir.js\""));
    }
}
