//! The `http::Request` a tower service gets, built from weir's request head.
//!
//! weir's head is one pooled buffer with byte ranges; an `http::Request` owns its parts. What
//! it would allocate per request comes from the thread's [`Spare`] instead (`pool`): the URI
//! and every header value are `Bytes` slices of the spare's byte buffer (one copy of their
//! bytes, a few hundred, out of the head: the head's buffer is reused by the connection's next
//! request, so it cannot be shared), the header map is the previous response's. What remains
//! (ALLOCATIONS): the extensions map with the one [`ExchangeHandle`] in it (its map and table,
//! which an axum `Router` would create anyway for its URL parameters; the handle is zero-sized,
//! so its box in the map is not an allocation),
//! a header name that is not one of `http`'s standard names (as on hyper), and a header map
//! or byte buffer that has to grow.
//!
//! What is not checked twice: a header value is handed to `HeaderValue` without its byte check,
//! which weir's parser has made (see the SAFETY note in [`build`]; debug builds check again);
//! the names most requests carry are matched to `http`'s constants ([`common_name`]). The URI
//! is parsed again by `http`, as on hyper: `Uri` has no constructor that skips it.
//!
//! The URI: the target as sent over HTTP/1.1 (origin form `/path?query`, or an absolute URI
//! with its scheme and authority); over HTTP/2 `:scheme://:authority` + `:path`, as hyper gives
//! it (weir also copies `:authority` to `host`, so the authority is `host`'s value).

use super::pool::Spare;
use super::{Body, ExchangeHandle};
use crate::{Error, Exchange, Framing};
use bytes::BufMut;
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, StatusCode, Uri, Version};
use std::sync::Arc;

/// Builds the request for `exchange` from `spare`'s parts. A head that `http`'s types refuse
/// (weir's parser is as strict, so this is not expected) is answered `400`.
pub(crate) fn build(
    exchange: &Exchange<'_>,
    spare: &mut Spare,
) -> Result<http::Request<Body>, Error> {
    let head = exchange.request();

    // An HTTP/2 request's scheme and authority, for the absolute URI: before a path, not
    // before `*` (`OPTIONS *`) nor for CONNECT (whose target is the authority).
    let target = head.target_bytes();
    // (The conditions first: an HTTP/1.1 request never looks its `host` up here.)
    let absolute = head.version() == Version::HTTP_2
        && head.method() != Method::CONNECT
        && target.first() == Some(&b'/');
    let origin = match absolute.then(|| (exchange.scheme(), head.header("host"))) {
        Some((Some(scheme), Some(authority))) => Some((scheme.as_str(), authority)),
        _ => None,
    };
    let values: usize = head.header_bytes().map(|(_, value)| value.len()).sum();
    let origin_len = origin.map_or(0, |(scheme, authority)| scheme.len() + 3 + authority.len());
    let bytes = spare.bytes(origin_len + target.len() + values);
    if let Some((scheme, authority)) = origin {
        bytes.put_slice(scheme.as_bytes());
        bytes.put_slice(b"://");
        bytes.put_slice(authority);
    }
    bytes.put_slice(target);
    for (_, value) in head.header_bytes() {
        bytes.put_slice(value);
    }
    // One `Bytes` for the URI and the values, each a slice of it (one split of the buffer).
    let shared = bytes.split().freeze();
    let uri_len = origin_len + target.len();
    // Parsed again by `http` (as hyper's server does): `Uri` has no constructor from parts
    // that skips its checks.
    let uri = Uri::from_maybe_shared(shared.slice(..uri_len)).map_err(|_| bad_request())?;

    let declared = match head.framing() {
        Framing::Length(n) => Some(n),
        Framing::Chunked | Framing::Unknown => None,
    };
    let mut request = http::Request::new(Body::new(Arc::clone(spare.link()), declared));
    *request.method_mut() = head.method().clone();
    *request.version_mut() = head.version();
    *request.uri_mut() = uri;
    // The spare's map in, the request's new empty one kept by the spare (not dropped here).
    std::mem::swap(request.headers_mut(), &mut spare.headers);
    let headers = request.headers_mut();
    headers.reserve(head.header_count());
    let mut at = uri_len;
    for (name, value) in head.header_bytes() {
        // `http`'s standard names are constants; any other name is copied (ALLOCATION, as in
        // hyper's server).
        let name = match common_name(name) {
            Some(name) => name,
            None => HeaderName::from_bytes(name).map_err(|_| bad_request())?,
        };
        let end = at + value.len();
        #[allow(unsafe_code)]
        // SAFETY: `from_maybe_shared_unchecked` wants bytes that `HeaderValue`'s checked
        // constructors accept (its docs say "UTF-8", but `HeaderValue::from_bytes` itself
        // admits obs-text, and hyper's server hands such values in the same way): HTAB, SP to
        // `~`, and 0x80 to 0xFF. weir's head guarantees exactly that of every value:
        // - HTTP/1.1: weir-proto's `parse_complete_head` takes the values from `httparse`,
        //   which fails the head (400) on any other byte (its `HEADER_VALUE_MAP` is that set),
        //   and only trims whitespace from their ends;
        // - HTTP/2: `h2::fill_head` copies `http::HeaderValue`s (h2 decodes every field with
        //   `HeaderValue::from_bytes`) and the `:authority` of a `Uri` (URI characters only).
        // `shared` holds those bytes after the URI's, copied above in the same order, so this
        // slice is one value. Debug builds check again and panic: the conformance suite's
        // tower rows (NUL, control bytes, DEL, obs-text in a value) run through here.
        let value = unsafe { HeaderValue::from_maybe_shared_unchecked(shared.slice(at..end)) };
        at = end;
        headers.append(name, value);
    }
    // The handle is zero-sized: its box in the map does not allocate (`handle`).
    request.extensions_mut().insert(ExchangeHandle::new());
    Ok(request)
}

/// `http`'s constant for a name most requests carry, found with one comparison instead of
/// `HeaderName::from_bytes`'s copy through its lowercase table and its search of the standard
/// names; `None` for any other name (which then takes that path). A name equal to a constant's
/// (ignoring case, which field names do) is that header, so nothing is left unchecked.
///
/// The comparison sets bit 0x20 of each byte of `name`: the constants are lowercase letters and
/// `-`, and a byte that matches one of them so is that letter in either case, or `-`, or CR
/// (0x0D | 0x20 is `-`), which a field name (a token: weir's parser and h2 check) never holds.
fn common_name(name: &[u8]) -> Option<HeaderName> {
    let known = match name.len() {
        4 => header::HOST,
        6 => header::ACCEPT,
        10 => header::USER_AGENT,
        12 => header::CONTENT_TYPE,
        14 => header::CONTENT_LENGTH,
        15 => header::ACCEPT_ENCODING,
        _ => return None,
    };
    let same = name
        .iter()
        .zip(known.as_str().as_bytes())
        .all(|(&sent, &lower)| sent | 0x20 == lower);
    same.then_some(known)
}

fn bad_request() -> Error {
    Error::status(StatusCode::BAD_REQUEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_names_are_found_in_any_case_and_others_are_not() {
        for (sent, name) in [
            (&b"Host"[..], header::HOST),
            (b"HOST", header::HOST),
            (b"accept", header::ACCEPT),
            (b"User-Agent", header::USER_AGENT),
            (b"content-TYPE", header::CONTENT_TYPE),
            (b"Content-Length", header::CONTENT_LENGTH),
            (b"Accept-Encoding", header::ACCEPT_ENCODING),
        ] {
            assert_eq!(common_name(sent), Some(name.clone()), "{sent:?}");
            // The same answer as the checked path.
            assert_eq!(HeaderName::from_bytes(sent).unwrap(), name);
        }
        // Same length, another name: left to `HeaderName::from_bytes`.
        for other in [
            &b"Hast"[..],
            b"cookie",
            b"connection",
            b"content_type",
            b"x-forwarded-fo",
            b"accept-language",
        ] {
            assert_eq!(common_name(other), None, "{other:?}");
        }
    }
}
