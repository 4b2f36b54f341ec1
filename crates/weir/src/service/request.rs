//! The `http::Request` a tower service gets, built from weir's request head.
//!
//! This is where the tower path pays what weir's native [`Handler`](crate::Handler) does not:
//! weir's head is one pooled buffer with byte ranges, an `http::Request` owns its parts. Per
//! request (ALLOCATIONS): the URI (its bytes copied into a `Bytes`), the `HeaderMap` (its index
//! and entry tables), each header value (copied into a `Bytes`) and each header name that is
//! not one of `http`'s standard names, an extension method, and the extensions map with the
//! [`ExchangeHandle`] and [`PeerAddr`](crate::transport::PeerAddr) in it. hyper's server pays the same for the same
//! `http::Request`.

use super::link::Link;
use super::{Body, ExchangeHandle};
use crate::{Error, Exchange, Framing};
use http::header::{HeaderName, HeaderValue};
use http::{StatusCode, Uri};
use std::sync::Arc;

/// Builds the request for `exchange`, its body reading through `link`. A head that `http`'s
/// types refuse (weir's parser is as strict, so this is not expected) is answered `400`.
pub(crate) fn build(
    exchange: &Exchange<'_>,
    link: &Arc<Link>,
) -> Result<http::Request<Body>, Error> {
    let head = exchange.request();
    let declared = match head.framing() {
        Framing::Length(n) => Some(n),
        Framing::Chunked | Framing::Unknown => None,
    };
    let mut request = http::Request::new(Body::new(Arc::clone(link), declared));
    *request.method_mut() = head.method().clone();
    *request.version_mut() = head.version();
    // The target as sent: origin form (`/path?query`) over both protocols; over HTTP/2 the
    // authority is in `host` (weir copies `:authority` there), as over HTTP/1.1.
    *request.uri_mut() = Uri::try_from(head.target()).map_err(|_| bad_request())?;
    let headers = request.headers_mut();
    headers.reserve(head.header_count());
    for (name, value) in head.headers() {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_request())?;
        let value = HeaderValue::from_bytes(value).map_err(|_| bad_request())?;
        headers.append(name, value);
    }
    let extensions = request.extensions_mut();
    extensions.insert(ExchangeHandle::new(Arc::clone(link)));
    extensions.insert(exchange.peer_addr());
    Ok(request)
}

fn bad_request() -> Error {
    Error::status(StatusCode::BAD_REQUEST)
}
