//! The canonical request and the string to sign (SigV4, with S3's rules).
//!
//! S3's differences from the generic SigV4 rules: the path is URI-encoded once, not twice, and
//! is not normalized (`/a//b/../c` is signed as it is: S3 keys may contain `//` and `..`). So
//! the canonical URI here is the raw path, percent-decoded and re-encoded with the RFC 3986
//! unreserved set (`/` kept): a client that sent `%7e` or a bare `$` signed the same canonical
//! form as one that sent `~` or `%24`.
//!
//! The canonical request is built in one `Vec<u8>` per request (a header value may be any byte,
//! so bytes rather than `String`); its hash is all that goes into the string to sign.

use http::{HeaderMap, Method};
use sha2::{Digest, Sha256};

use super::key::hex32;
use super::time::AmzDate;
use crate::percent;
use crate::{ErrorCode, S3Error};

/// What the canonical request is made of.
pub(crate) struct CanonicalParts<'a> {
    pub(crate) method: &'a Method,
    /// The path as on the wire (percent-encoded), without the query.
    pub(crate) raw_path: &'a str,
    /// The query as on the wire, without `?`; empty if none.
    pub(crate) raw_query: &'a str,
    pub(crate) headers: &'a HeaderMap,
    /// The `SignedHeaders` list, as the client sent it (`;`-separated).
    pub(crate) signed_headers: &'a str,
    /// The payload hash line: a hex digest, `UNSIGNED-PAYLOAD` or a `STREAMING-…` value.
    pub(crate) payload_hash: &'a str,
    /// Presigned URLs: `X-Amz-Signature` is not part of what it signs.
    pub(crate) skip_signature_param: bool,
}

/// Checks a `SignedHeaders` list: not empty, lower-case header names, `host` among them.
pub(crate) fn check_signed_headers(list: &str, code: ErrorCode) -> Result<(), S3Error> {
    let mut has_host = false;
    for name in list.split(';') {
        let valid = !name.is_empty()
            && name.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b)
            });
        if !valid {
            return Err(S3Error::new(
                code,
                "SignedHeaders is not a list of lower-case header names.",
            ));
        }
        has_host |= name == "host";
    }
    if !has_host {
        return Err(S3Error::new(code, "The host header must be signed."));
    }
    Ok(())
}

/// The canonical URI: the decoded path re-encoded once (S3 does not double-encode).
pub(crate) fn canonical_uri(raw_path: &str, out: &mut String) -> Result<(), S3Error> {
    if raw_path.is_empty() {
        out.push('/');
        return Ok(());
    }
    let decoded = percent::decode(raw_path, false)?;
    percent::encode_into(out, &decoded, true);
    Ok(())
}

/// The canonical query string: every parameter decoded and re-encoded, sorted by name then
/// value (repeated names kept, in value order); a name without `=` has an empty value.
pub(crate) fn canonical_query(
    raw_query: &str,
    skip_signature_param: bool,
    out: &mut String,
) -> Result<(), S3Error> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in percent::query_pairs(raw_query)? {
        if skip_signature_param && name == "X-Amz-Signature" {
            continue;
        }
        pairs.push((
            percent::encode(name.as_bytes(), false),
            percent::encode(value.as_bytes(), false),
        ));
    }
    pairs.sort_unstable();
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(name);
        out.push('=');
        out.push_str(value);
    }
    Ok(())
}

/// Appends one header's canonical value: every value of that name in the request, each with
/// its whitespace trimmed and runs of whitespace collapsed to one space, joined by `,`.
fn canonical_header_value(headers: &HeaderMap, name: &str, out: &mut Vec<u8>) -> bool {
    let mut any = false;
    for value in headers.get_all(name) {
        if any {
            out.push(b',');
        }
        any = true;
        let mut first = true;
        for word in value
            .as_bytes()
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
        {
            if !first {
                out.push(b' ');
            }
            first = false;
            out.extend_from_slice(word);
        }
    }
    any
}

/// The canonical request, as bytes.
pub(crate) fn canonical_request(parts: &CanonicalParts<'_>) -> Result<Vec<u8>, S3Error> {
    let mut line = String::with_capacity(parts.raw_path.len() + parts.raw_query.len() + 16);
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.push(b'\n');
    canonical_uri(parts.raw_path, &mut line)?;
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
    line.clear();
    canonical_query(parts.raw_query, parts.skip_signature_param, &mut line)?;
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
    for name in parts.signed_headers.split(';') {
        out.extend_from_slice(name.as_bytes());
        out.push(b':');
        if !canonical_header_value(parts.headers, name, &mut out) {
            return Err(S3Error::new(
                ErrorCode::SignatureDoesNotMatch,
                format!("The signed header '{name}' is missing from the request."),
            ));
        }
        out.push(b'\n');
    }
    out.push(b'\n');
    out.extend_from_slice(parts.signed_headers.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(parts.payload_hash.as_bytes());
    Ok(out)
}

/// The string to sign: algorithm, timestamp, scope, hash of the canonical request.
pub(crate) fn string_to_sign(date: &AmzDate, scope: &str, canonical_request: &[u8]) -> Vec<u8> {
    let hash: [u8; 32] = Sha256::digest(canonical_request).into();
    let mut out = Vec::with_capacity(17 + 17 + scope.len() + 1 + 64);
    out.extend_from_slice(b"AWS4-HMAC-SHA256\n");
    out.extend_from_slice(&date.text);
    out.push(b'\n');
    out.extend_from_slice(scope.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&hex32(&hash));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(raw: &str) -> String {
        let mut out = String::new();
        canonical_query(raw, true, &mut out).unwrap();
        out
    }

    #[test]
    fn query_is_sorted_and_reencoded() {
        assert_eq!(query("b=2&a=1&a=0"), "a=0&a=1&b=2");
        assert_eq!(query("uploads"), "uploads=");
        assert_eq!(query("prefix=a%2fb&x=%7e"), "prefix=a%2Fb&x=~");
        assert_eq!(query("p=a+b"), "p=a%20b");
        assert_eq!(query("X-Amz-Signature=abc&X-Amz-Date=1"), "X-Amz-Date=1");
        assert_eq!(query(""), "");
    }

    #[test]
    fn uri_is_encoded_once_and_not_normalized() {
        let uri = |raw: &str| {
            let mut out = String::new();
            canonical_uri(raw, &mut out).unwrap();
            out
        };
        assert_eq!(uri("/b/a%20b/./../c//d"), "/b/a%20b/./../c//d");
        assert_eq!(uri("/b/%24$~%7E"), "/b/%24%24~~");
        assert_eq!(uri("/b/a%2Fb"), "/b/a/b");
        assert_eq!(uri(""), "/");
    }

    #[test]
    fn header_values_are_trimmed_and_collapsed() {
        let mut headers = HeaderMap::new();
        headers.append("x-amz-meta-a", "  one   two \t three ".parse().unwrap());
        headers.append("x-amz-meta-a", "four".parse().unwrap());
        let mut out = Vec::new();
        assert!(canonical_header_value(&headers, "x-amz-meta-a", &mut out));
        assert_eq!(out, b"one two three,four");
    }

    #[test]
    fn signed_headers_need_host_and_lower_case() {
        let code = ErrorCode::AuthorizationHeaderMalformed;
        assert!(check_signed_headers("host;x-amz-date", code).is_ok());
        assert!(check_signed_headers("x-amz-date", code).is_err());
        assert!(check_signed_headers("Host;x-amz-date", code).is_err());
        assert!(check_signed_headers("host;;x-amz-date", code).is_err());
        assert!(check_signed_headers("", code).is_err());
    }
}
