//! The checks of an HTTP/2 request head that `h2` does not make, before a handler sees it.
//!
//! RFC 9113 calls a request that breaks them *malformed* (§8.1.1): a stream error of type
//! PROTOCOL_ERROR, answered with RST_STREAM before any handler runs. `h2` already rejects
//! uppercase or connection-specific field names, CR, LF and NUL in values, pseudo-header
//! faults and a content-length the DATA frames contradict; what it lets through is here.
//! Each check is found by the `httpwg` conformance suite (`tests/h2_conformance.rs`) or by
//! `tests/integration/h2_frames.rs`.

use http::header::HOST;
use http::{HeaderMap, Method, Uri};

/// Why a request head is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Malformed {
    /// No `:path` on a request other than CONNECT (§8.3.1). `h2` rejects an empty `:path`, and
    /// a missing one when `:authority` is present (the URI cannot be built), but lets a request
    /// with neither through with an empty URI.
    NoPath,
    /// CONNECT without `:authority` (§8.5).
    ConnectWithoutAuthority,
    /// A field value that starts or ends with a space or a tab (§8.2.1).
    ValueWhitespace,
    /// A `host` field that names another authority than `:authority` (§8.3.1).
    HostMismatch,
}

/// The first way the request head breaks RFC 9113 that `h2` did not catch, if any.
pub(crate) fn malformed(method: &Method, uri: &Uri, headers: &HeaderMap) -> Option<Malformed> {
    // `Uri::path` is empty only for a URI built without path (and without scheme: h2 drops
    // `:scheme` when there is no `:authority`); `path_and_query()` would say "/".
    if *method == Method::CONNECT {
        if uri.authority().is_none() {
            return Some(Malformed::ConnectWithoutAuthority);
        }
    } else if uri.path().is_empty() {
        return Some(Malformed::NoPath);
    }
    let padded =
        |v: &[u8]| matches!(v.first().zip(v.last()), Some((a, b)) if is_ws(*a) || is_ws(*b));
    if headers.values().any(|v| padded(v.as_bytes())) {
        return Some(Malformed::ValueWhitespace);
    }
    if let (Some(authority), Some(host)) = (uri.authority(), headers.get(HOST)) {
        // Userinfo is not part of the entity (and deprecated in `:authority` anyway).
        let entity = authority.as_str().rsplit('@').next().unwrap_or_default();
        if !host.as_bytes().eq_ignore_ascii_case(entity.as_bytes()) {
            return Some(Malformed::HostMismatch);
        }
    }
    None
}

fn is_ws(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn check(method: Method, uri: &str, headers: &[(&str, &str)]) -> Option<Malformed> {
        let uri: Uri = uri.parse().unwrap();
        let mut map = HeaderMap::new();
        for (n, v) in headers {
            map.append(
                http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        malformed(&method, &uri, &map)
    }

    #[test]
    fn a_request_without_path_is_malformed() {
        // What h2 builds from a request with neither `:path` nor `:authority`.
        let empty = Uri::from_parts(http::uri::Parts::default()).unwrap();
        assert_eq!(
            malformed(&Method::GET, &empty, &HeaderMap::new()),
            Some(Malformed::NoPath)
        );
        for uri in ["/", "*", "https://h/x?q"] {
            assert_eq!(check(Method::GET, uri, &[]), None, "{uri}");
        }
    }

    #[test]
    fn connect_needs_an_authority() {
        assert_eq!(check(Method::CONNECT, "h:443", &[]), None);
        let empty = Uri::from_parts(http::uri::Parts::default()).unwrap();
        assert_eq!(
            malformed(&Method::CONNECT, &empty, &HeaderMap::new()),
            Some(Malformed::ConnectWithoutAuthority)
        );
    }

    #[test]
    fn values_with_leading_or_trailing_whitespace_are_malformed() {
        for v in [" a", "a ", "\ta", "a\t", " "] {
            assert_eq!(
                check(Method::GET, "/", &[("x-a", v)]),
                Some(Malformed::ValueWhitespace),
                "{v:?}"
            );
        }
        for v in ["", "a", "a b", "a\tb"] {
            assert_eq!(check(Method::GET, "/", &[("x-a", v)]), None, "{v:?}");
        }
    }

    #[test]
    fn host_must_agree_with_authority() {
        let uri = "https://example.com:8443/x";
        assert_eq!(
            check(Method::GET, uri, &[("host", "EXAMPLE.com:8443")]),
            None
        );
        assert_eq!(
            check(Method::GET, uri, &[("host", "example.com")]),
            Some(Malformed::HostMismatch)
        );
        assert_eq!(
            check(Method::GET, uri, &[("host", "other.example")]),
            Some(Malformed::HostMismatch)
        );
        // Without `:authority`, `host` stands alone.
        assert_eq!(check(Method::GET, "/x", &[("host", "a")]), None);
    }
}
