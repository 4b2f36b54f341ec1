//! Cross-site writes: a page of another origin must not store or delete files.
//!
//! A browser sends some writes from any page without asking the server first: a form `POST`,
//! a `fetch` in `no-cors` mode (`POST` with a form's content types), `navigator.sendBeacon`.
//! CORS only hides their answers from the page; the write itself would be done. So a write
//! (every method but `GET`, `HEAD` and `OPTIONS`) that a browser marks as coming from another
//! origin is refused here, before any route: `403`, problem `cross-site-write`.
//!
//! The rule, in order:
//! 1. two `Origin` fields are refused (no browser sends them); an `Origin` listed with
//!    `--cors-origin` passes (its pages are meant to write);
//! 2. `Sec-Fetch-Site: same-origin` or `none` passes, `cross-site` is refused; the browser
//!    says so itself, and a page cannot set the field (a forbidden request header). It is
//!    believed over the `Origin` comparison below, which a reverse proxy that rewrites `Host`
//!    would defeat;
//! 3. an `Origin` (browsers send it with every write, same-origin ones included) must name
//!    this server: its host and port those of `Host`, the scheme's default port dropped. The
//!    scheme itself is not compared: a port is served with one scheme, and weir cannot tell
//!    which one behind a proxy. `Origin: null` (sandboxed frames, `file:` pages) is foreign;
//! 4. with neither field (curl, `weir put`, tus clients, scripts: not browsers), the write
//!    passes: the guard is against pages, and only browsers carry them.
//!
//! Tokens do not enter the rule: a page of another origin cannot send `Authorization` without
//! a preflight, which only `--cors-origin` origins pass, and the browser page's cookie is
//! `SameSite=Strict` and good for reads only (`auth.rs`). So a foreign page could only write
//! where writes need no token, and that is where this guard matters; applying it whatever the
//! credentials keeps it one rule. `--allow-cross-site-writes` turns it off.
//!
//! Nothing is allocated: header values are compared where they lie.

use super::cors::Cors;
use weir::{Request, http::Method};

/// Whether `request` is a write that a browser sent from a page of another origin, not one of
/// `cors`'s.
pub(super) fn is_cross_site_write(request: &Request, cors: &Cors) -> bool {
    judge(
        request.method(),
        request.header("sec-fetch-site"),
        request.header_all("origin"),
        request.header("host"),
        cors,
    )
}

/// [`is_cross_site_write`] on the request's method and fields (`origins`: every `Origin`).
fn judge<'r>(
    method: &Method,
    sec_fetch_site: Option<&[u8]>,
    mut origins: impl Iterator<Item = &'r [u8]>,
    host: Option<&[u8]>,
    cors: &Cors,
) -> bool {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return false;
    }
    let origin = origins.next();
    // No browser sends two; a request that does names no one origin.
    if origins.next().is_some() {
        return true;
    }
    if origin.is_some_and(|o| cors.lists(o)) {
        return false;
    }
    match sec_fetch_site {
        Some(site) if site.eq_ignore_ascii_case(b"same-origin") => return false,
        Some(site) if site.eq_ignore_ascii_case(b"none") => return false,
        Some(site) if site.eq_ignore_ascii_case(b"cross-site") => return true,
        // `same-site` (another port or subdomain: another origin all the same), a value this
        // code does not know, or none: the `Origin` decides.
        _ => {}
    }
    origin.is_some_and(|o| !names_this_server(o, host))
}

/// Whether `origin` (`scheme://host[:port]`, as browsers serialize it) has the host and port
/// of `host` (the request's `Host`, or HTTP/2's `:authority`).
fn names_this_server(origin: &[u8], host: Option<&[u8]>) -> bool {
    let Some(host) = host else {
        return false;
    };
    let (authority, default_port) = if let Some(a) = strip_prefix_ci(origin, b"http://") {
        (a, &b":80"[..])
    } else if let Some(a) = strip_prefix_ci(origin, b"https://") {
        (a, &b":443"[..])
    } else {
        return false;
    };
    // Browsers leave the scheme's default port out of `Origin`; a client may put it in `Host`.
    let host = host.strip_suffix(default_port).unwrap_or(host);
    !authority.is_empty() && authority.eq_ignore_ascii_case(host)
}

fn strip_prefix_ci<'a>(s: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Judges a request given as `METHOD\r\nfield: value...`.
    fn foreign(head: &str, cors: &Cors) -> bool {
        let mut lines = head.split("\r\n");
        let method: Method = lines
            .next()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let fields: Vec<(&str, &[u8])> = lines
            .map(|l| {
                let (name, value) = l.split_once(": ").unwrap();
                (name, value.as_bytes())
            })
            .collect();
        let field = |name: &str| fields.iter().find(|f| f.0 == name).map(|f| f.1);
        let origins = fields.iter().filter(|f| f.0 == "origin").map(|f| f.1);
        judge(
            &method,
            field("sec-fetch-site"),
            origins,
            field("host"),
            cors,
        )
    }

    #[test]
    fn foreign_writes_are_told_apart() {
        let none = Cors::default();
        let listed = Cors::new(&["https://app.example".into()]).unwrap();
        let cases = [
            // (request, cross-site without and with https://app.example listed)
            ("PUT /files/a\r\nhost: localhost:8080", false, false),
            (
                "PUT /files/a\r\nhost: localhost:8080\r\norigin: http://localhost:8080",
                false,
                false,
            ),
            (
                "POST /files/\r\nhost: files.example\r\norigin: https://FILES.example",
                false,
                false,
            ),
            (
                "POST /files/\r\nhost: files.example:443\r\norigin: https://files.example",
                false,
                false,
            ),
            (
                "POST /files/\r\nhost: localhost:8080\r\norigin: http://evil.example",
                true,
                true,
            ),
            (
                "DELETE /files/a\r\nhost: localhost:8080\r\norigin: http://localhost:3000",
                true,
                true,
            ),
            (
                "PUT /files/a\r\nhost: localhost\r\norigin: null",
                true,
                true,
            ),
            (
                "PUT /files/a\r\nhost: localhost\r\norigin: https://app.example\r\norigin: http://localhost",
                true,
                true,
            ),
            (
                "PATCH /uploads/x\r\nhost: localhost\r\nsec-fetch-site: cross-site",
                true,
                true,
            ),
            (
                "PUT /files/a\r\nhost: localhost\r\norigin: https://app.example",
                true,
                false,
            ),
            (
                "PUT /files/a\r\nhost: localhost\r\norigin: https://app.example\r\nsec-fetch-site: cross-site",
                true,
                false,
            ),
            // A proxy that rewrote `Host`: the browser's own word decides.
            (
                "PUT /files/a\r\nhost: 127.0.0.1:8080\r\norigin: https://files.example\r\nsec-fetch-site: same-origin",
                false,
                false,
            ),
            (
                "PUT /files/a\r\nhost: localhost:8080\r\norigin: http://localhost:3000\r\nsec-fetch-site: same-site",
                true,
                true,
            ),
            (
                "GET /files/a\r\nhost: localhost\r\norigin: http://evil.example\r\nsec-fetch-site: cross-site",
                false,
                false,
            ),
            (
                "OPTIONS /tus/\r\nhost: localhost\r\norigin: http://evil.example",
                false,
                false,
            ),
        ];
        for (head, unlisted, listed_too) in cases {
            assert_eq!(foreign(head, &none), unlisted, "{head}");
            assert_eq!(foreign(head, &listed), listed_too, "{head}");
        }
    }
}
