//! CORS (the Fetch standard's cross-origin protocol) for pages served from other origins:
//! `weir serve --cors-origin ORIGIN`, repeatable; off by default.
//!
//! For a request whose `Origin` is one of the configured origins:
//! - a preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here, before the
//!   token check (a preflight carries no credentials): `204` with the methods and request
//!   headers weir's routes use, valid for [`MAX_AGE`] seconds;
//! - every other request goes on to its route, and its answer, whichever route sends it
//!   (errors and `401` too, so the page can tell why), carries `Access-Control-Allow-Origin`
//!   (that origin), `Access-Control-Expose-Headers` (the resumable-upload and tus fields,
//!   `Location`, validators, `Content-Range`, `Link`) and `Vary: Origin`
//!   (`Exchange::add_response_header`).
//!
//! Requests from other origins get no CORS field at all, so the browser keeps their answers
//! from the page. No `Access-Control-Allow-Credentials`: a cross-origin page sends the token
//! itself in `Authorization` (which the preflight allows), and the browser page's token
//! cookie is never usable from another origin.

use weir::{Exchange, http};

/// How long a browser may reuse a preflight's answer, in seconds.
pub(crate) const MAX_AGE: &str = "600";

const ALLOW_METHODS: &str = "GET, HEAD, PUT, POST, PATCH, DELETE";

/// The request fields weir's routes read (RFC 9110 conditionals and ranges, digests, the
/// resumable-upload draft's and tus's fields); `Content-Type` for forms and appends.
const ALLOW_HEADERS: &str = "authorization, content-type, content-digest, repr-digest, \
     if-match, if-none-match, if-modified-since, if-unmodified-since, if-range, range, \
     upload-complete, upload-offset, upload-length, upload-draft-interop-version, \
     tus-resumable, upload-metadata, upload-checksum, upload-defer-length";

/// The answer fields a cross-origin page may read beyond the CORS-safelisted ones.
const EXPOSE_HEADERS: &str = "location, upload-offset, upload-complete, upload-length, \
     upload-limit, upload-draft-interop-version, upload-expires, upload-metadata, \
     tus-resumable, tus-version, tus-extension, tus-max-size, tus-checksum-algorithm, etag, \
     repr-digest, content-range, accept-ranges, link, www-authenticate";

/// The origins allowed to read weir's answers; empty: CORS is off.
#[derive(Clone, Debug, Default)]
pub struct Cors {
    origins: Vec<String>,
}

impl Cors {
    /// Checks each origin (`http` or `https`, a host, an optional port; no path, no `*`) and
    /// keeps it in the serialized form browsers send (lower-case scheme and host).
    pub fn new(origins: &[String]) -> Result<Self, String> {
        let mut out = Vec::with_capacity(origins.len());
        for origin in origins {
            let lower = origin.to_ascii_lowercase();
            let rest = lower
                .strip_prefix("https://")
                .or_else(|| lower.strip_prefix("http://"))
                .ok_or_else(|| format!("--cors-origin {origin}: not http:// or https://"))?;
            let valid = !rest.is_empty()
                && rest.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
                });
            if !valid {
                return Err(format!(
                    "--cors-origin {origin}: an origin is scheme://host[:port], without a path"
                ));
            }
            out.push(lower);
        }
        Ok(Self { origins: out })
    }

    /// The request's `Origin` when it is allowed (one field, listed).
    fn allowed<'r>(&self, request: &'r weir::Request) -> Option<&'r [u8]> {
        if self.origins.is_empty() {
            return None;
        }
        let mut fields = request.header_all("origin");
        let origin = fields.next()?;
        if fields.next().is_some() {
            return None;
        }
        self.lists(origin).then_some(origin)
    }

    /// Whether `origin` (an `Origin` field's value) is one of the configured origins.
    pub(super) fn lists(&self, origin: &[u8]) -> bool {
        self.origins.iter().any(|o| o.as_bytes() == origin)
    }
}

/// Applies CORS to a request before it is routed: answers a preflight from an allowed origin
/// (`Ok(true)`: nothing more to do), or marks the answer of any other request from one.
pub(super) async fn apply(cors: &Cors, ex: &mut Exchange<'_>) -> Result<bool, weir::Error> {
    let Some(origin) = cors.allowed(ex.request()) else {
        return Ok(false);
    };
    // ALLOCATION: the origin, to release the borrow of the request (CORS requests only).
    let origin = origin.to_vec();
    let preflight = *ex.request().method() == http::Method::OPTIONS
        && ex
            .request()
            .header("access-control-request-method")
            .is_some();
    if preflight {
        ex.respond(http::StatusCode::NO_CONTENT)
            .header("access-control-allow-origin", &origin)
            .header("access-control-allow-methods", ALLOW_METHODS)
            .header("access-control-allow-headers", ALLOW_HEADERS)
            .header("access-control-max-age", MAX_AGE)
            .header("vary", "origin")
            .empty()
            .await?;
        return Ok(true);
    }
    ex.add_response_header("access-control-allow-origin", &origin);
    ex.add_response_header("access-control-expose-headers", EXPOSE_HEADERS);
    ex.add_response_header("vary", "origin");
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_checked_and_kept_as_browsers_send_them() {
        let cors = Cors::new(&[
            "HTTPS://App.Example:8443".into(),
            "http://[::1]:3000".into(),
        ])
        .unwrap();
        assert_eq!(
            cors.origins,
            ["https://app.example:8443", "http://[::1]:3000"]
        );
        for bad in [
            "*",
            "app.example",
            "https://",
            "https://a.example/",
            "ftp://a",
            "https://a b",
        ] {
            assert!(Cors::new(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(Cors::new(&[]).unwrap().origins.is_empty());
    }
}
