//! Percent-decoding and RFC 3986 encoding, as SigV4 and S3's routing need them.
//!
//! One definition for both: the key a route decodes from the path is the key the signature's
//! canonical URI re-encodes, so the two can never disagree on what a byte means. Decoding is
//! strict (a `%` not followed by two hex digits is an error, not a literal), because a lenient
//! decoder would let two different wire paths name the same key under one signature.

use crate::{ErrorCode, S3Error};

/// Whether `b` is an RFC 3986 unreserved character, the set SigV4 leaves unencoded.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes of `s`. With `plus_is_space` (query components, as S3 and every form
/// decoder read them), `+` is a space; in a path it is a `+`.
pub(crate) fn decode(s: &str, plus_is_space: bool) -> Result<Vec<u8>, S3Error> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hi = bytes.get(i + 1).copied().and_then(hex_value);
                let lo = bytes.get(i + 2).copied().and_then(hex_value);
                match (hi, lo) {
                    (Some(hi), Some(lo)) => out.push(hi << 4 | lo),
                    _ => {
                        return Err(S3Error::new(
                            ErrorCode::InvalidURI,
                            "Couldn't parse the specified URI: bad percent-encoding.",
                        ));
                    }
                }
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// [`decode`], then UTF-8: S3 keys, buckets and parameter values are text.
pub(crate) fn decode_utf8(s: &str, plus_is_space: bool) -> Result<String, S3Error> {
    String::from_utf8(decode(s, plus_is_space)?).map_err(|_| {
        S3Error::new(
            ErrorCode::InvalidURI,
            "Couldn't parse the specified URI: not UTF-8.",
        )
    })
}

/// Appends `bytes` to `out` encoded as SigV4 wants: unreserved characters as they are, every
/// other byte as `%XX` with upper-case hex; `/` kept when `keep_slash` (the canonical URI).
pub(crate) fn encode_into(out: &mut String, bytes: &[u8], keep_slash: bool) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        if unreserved(b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
}

/// `bytes` encoded as by [`encode_into`].
pub(crate) fn encode(bytes: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(bytes.len() * 3 / 2);
    encode_into(&mut out, bytes, keep_slash);
    out
}

/// The decoded `(name, value)` pairs of a raw query string, in their order. Empty segments
/// (`a=1&&b=2`) are skipped; a name without `=` has an empty value.
pub(crate) fn query_pairs(raw: &str) -> Result<Vec<(String, String)>, S3Error> {
    let mut pairs = Vec::new();
    for segment in raw.split('&').filter(|s| !s.is_empty()) {
        let (name, value) = segment.split_once('=').unwrap_or((segment, ""));
        pairs.push((decode_utf8(name, true)?, decode_utf8(value, true)?));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_is_strict() {
        assert_eq!(decode("a%20b+c", false).unwrap(), b"a b+c");
        assert_eq!(decode("a%20b+c", true).unwrap(), b"a b c");
        assert_eq!(decode("%2f%2F", false).unwrap(), b"//");
        for bad in ["%", "%2", "%zz", "a%g0"] {
            assert_eq!(
                decode(bad, false).unwrap_err().code,
                ErrorCode::InvalidURI,
                "{bad}"
            );
        }
    }

    #[test]
    fn encode_keeps_unreserved_only() {
        assert_eq!(encode(b"a-._~Z09/ +=$", true), "a-._~Z09/%20%2B%3D%24");
        assert_eq!(encode(b"a/b", false), "a%2Fb");
        assert_eq!(encode("é".as_bytes(), true), "%C3%A9");
    }
}
