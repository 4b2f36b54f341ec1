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
//! The URI: the target as sent over HTTP/1.1 (origin form `/path?query`, or an absolute URI
//! with its scheme and authority); over HTTP/2 `:scheme://:authority` + `:path`, as hyper gives
//! it (weir also copies `:authority` to `host`, so the authority is `host`'s value).

use super::pool::Spare;
use super::{Body, ExchangeHandle};
use crate::{Error, Exchange, Framing};
use bytes::BufMut;
use http::header::{HeaderName, HeaderValue};
use http::{Method, StatusCode, Uri, Version};
use std::sync::Arc;

/// Builds the request for `exchange` from `spare`'s parts. A head that `http`'s types refuse
/// (weir's parser is as strict, so this is not expected) is answered `400`.
pub(crate) fn build(
    exchange: &Exchange<'_>,
    spare: &mut Spare,
) -> Result<http::Request<Body>, Error> {
    let head = exchange.request();
    let declared = match head.framing() {
        Framing::Length(n) => Some(n),
        Framing::Chunked | Framing::Unknown => None,
    };
    let mut request = http::Request::new(Body::new(Arc::clone(spare.link()), declared));
    *request.method_mut() = head.method().clone();
    *request.version_mut() = head.version();

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
    let uri = bytes.split().freeze();
    *request.uri_mut() = Uri::from_maybe_shared(uri).map_err(|_| bad_request())?;

    for (_, value) in head.header_bytes() {
        bytes.put_slice(value);
    }
    let values = bytes.split().freeze();
    let mut headers = std::mem::take(&mut spare.headers);
    headers.reserve(head.header_count());
    let mut at = 0;
    for (name, value) in head.header_bytes() {
        // `http`'s standard names are constants; any other name is copied (ALLOCATION, as in
        // hyper's server).
        let name = HeaderName::from_bytes(name).map_err(|_| bad_request())?;
        let value = HeaderValue::from_maybe_shared(values.slice(at..at + value.len()))
            .map_err(|_| bad_request())?;
        at += value.len();
        headers.append(name, value);
    }
    *request.headers_mut() = headers;
    // The handle is zero-sized: its box in the map does not allocate (`handle`).
    request.extensions_mut().insert(ExchangeHandle::new());
    Ok(request)
}

fn bad_request() -> Error {
    Error::status(StatusCode::BAD_REQUEST)
}
