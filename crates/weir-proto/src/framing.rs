//! How a request body is delimited (RFC 9112 §6.3), decided from the head with no leniency.
//!
//! The rules, strictest reading of the RFC, because every leniency here is a request-smuggling
//! vector when weir sits behind (or in front of) another parser:
//! - `Content-Length` must be one field with one value of 1 to 19 ASCII digits that fits `u64`.
//!   Lists (`5, 5`), repeats (even identical), signs, hex, spaces inside, empty: all rejected.
//! - `Transfer-Encoding` (all fields, in order) must end in `chunked` and contain it only once:
//!   otherwise the body length cannot be determined (400, §6.3 ¶4), whatever the other codings
//!   are. A well-framed body with another coding before `chunked` is not implemented (501, §6.1).
//! - Both `Content-Length` and `Transfer-Encoding`: rejected (§6.3 rule 3 allows it; the safe
//!   choice is 400 and close).
//! - `Transfer-Encoding` in an HTTP/1.0 request: faulty framing (§6.1).
//! - Neither: no body (a request is never delimited by connection close).

use crate::error::ProtoError;
use http::Version;

/// How the body of a request is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Exactly this many bytes follow the head (0: no body).
    Length(u64),
    /// Chunked transfer coding: chunks until the zero-size chunk, then trailers.
    Chunked,
    /// Delimited by the end of its stream, its length unknown until then: an HTTP/2 request
    /// without `content-length`. Never decided from an HTTP/1.1 head (a request is never
    /// delimited by closing the connection).
    Unknown,
}

/// Collects the framing header fields of one head, then decides.
#[derive(Debug, Default)]
pub(crate) struct FramingFields {
    content_length: Option<u64>,
    content_length_fields: u32,
    /// `Transfer-Encoding` seen at all.
    transfer_encoding: bool,
    /// `chunked` was the last coding seen so far.
    chunked_last: bool,
    chunked_count: u32,
    /// A coding other than `chunked` (a token weir does not implement, or not a token at all).
    other_coding: bool,
}

impl FramingFields {
    pub(crate) fn content_length(&mut self, value: &[u8]) -> Result<(), ProtoError> {
        self.content_length_fields += 1;
        if self.content_length_fields > 1 {
            return Err(ProtoError::InvalidContentLength);
        }
        self.content_length = Some(parse_content_length(value)?);
        Ok(())
    }

    pub(crate) fn transfer_encoding(&mut self, value: &[u8]) -> Result<(), ProtoError> {
        self.transfer_encoding = true;
        for coding in value.split(|&b| b == b',') {
            let coding = trim_ows(coding);
            if coding.is_empty() {
                // RFC 9110 §5.6.1: empty list elements are allowed and ignored.
                continue;
            }
            if coding.eq_ignore_ascii_case(b"chunked") {
                self.chunked_count += 1;
                self.chunked_last = true;
            } else {
                // Another token, or parameters, quotes, stray bytes (`chunked;q=1`,
                // `"chunked"`): not `chunked`, so where it is last the framing is unknown.
                self.other_coding = true;
                self.chunked_last = false;
            }
        }
        Ok(())
    }

    pub(crate) fn decide(&self, version: Version) -> Result<Framing, ProtoError> {
        if !self.transfer_encoding {
            return Ok(Framing::Length(self.content_length.unwrap_or(0)));
        }
        if version == Version::HTTP_10 {
            return Err(ProtoError::TransferEncodingInHttp10);
        }
        if self.content_length_fields > 0 {
            return Err(ProtoError::ContentLengthWithTransferEncoding);
        }
        // §6.3 ¶4: chunked not final (or absent: `gzip`, an empty field) means the length of
        // the body cannot be determined: 400 and close, before any thought of the codings.
        if self.chunked_count != 1 || !self.chunked_last {
            return Err(ProtoError::ChunkedNotFinal);
        }
        if self.other_coding {
            // `gzip, chunked` is well framed, but weir does not decode transfer codings for the
            // handler; 501 is the RFC's answer (§6.1).
            return Err(ProtoError::UnknownTransferCoding);
        }
        Ok(Framing::Chunked)
    }
}

/// Parses a `Content-Length` value: 1 to 19 ASCII digits after trimming optional whitespace,
/// checked for `u64` overflow.
pub fn parse_content_length(value: &[u8]) -> Result<u64, ProtoError> {
    let digits = trim_ows(value);
    if digits.is_empty() || digits.len() > 19 {
        // 19 digits always fit u64 (max is 20 digits); longer ones are either overflow or
        // leading zeros padding an attack.
        return Err(ProtoError::InvalidContentLength);
    }
    let mut n: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return Err(ProtoError::InvalidContentLength);
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(ProtoError::InvalidContentLength)?;
    }
    Ok(n)
}

/// Strips optional whitespace (SP, HTAB) at both ends (RFC 9110 §5.6.3).
pub(crate) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(version: Version, cl: &[&str], te: &[&str]) -> Result<Framing, ProtoError> {
        let mut f = FramingFields::default();
        for v in cl {
            f.content_length(v.as_bytes())?;
        }
        for v in te {
            f.transfer_encoding(v.as_bytes())?;
        }
        f.decide(version)
    }

    #[test]
    fn content_length_strict() {
        assert_eq!(parse_content_length(b"0"), Ok(0));
        assert_eq!(parse_content_length(b" 42 "), Ok(42));
        assert_eq!(
            parse_content_length(b"18446744073709551615"),
            Err(ProtoError::InvalidContentLength)
        );
        assert_eq!(
            parse_content_length(b"9999999999999999999"),
            Ok(9_999_999_999_999_999_999)
        );
        for bad in ["", " ", "+5", "-5", "0x10", "5 5", "5,5", "1e3", "5.0", "٣"] {
            assert_eq!(
                parse_content_length(bad.as_bytes()),
                Err(ProtoError::InvalidContentLength),
                "{bad:?}"
            );
        }
    }

    /// RFC 9112 §6.3 ¶4: whenever `chunked` is not the final coding, the length of the body
    /// cannot be determined, which is a 400 (MUST) even if the coding is unknown (not 501).
    #[test]
    fn chunked_not_final_is_400_whatever_the_coding() {
        use ProtoError::*;
        let v11 = Version::HTTP_11;
        for te in [
            "gzip",
            "identity",
            "xchunked",
            "\"chunked\"",
            "chunked;q=1",
            "chunked, gzip",
        ] {
            assert_eq!(decide(v11, &[], &[te]), Err(ChunkedNotFinal), "{te:?}");
            assert_eq!(ChunkedNotFinal.status(), http::StatusCode::BAD_REQUEST);
        }
        assert_eq!(
            decide(v11, &[], &["gzip, chunked"]),
            Err(UnknownTransferCoding)
        );
        assert_eq!(
            decide(v11, &[], &["x\"y, chunked"]),
            Err(UnknownTransferCoding)
        );
    }

    #[test]
    fn framing_decisions() {
        use Framing::*;
        use ProtoError::*;
        let v11 = Version::HTTP_11;
        assert_eq!(decide(v11, &[], &[]), Ok(Length(0)));
        assert_eq!(decide(v11, &["10"], &[]), Ok(Length(10)));
        assert_eq!(decide(v11, &["10", "10"], &[]), Err(InvalidContentLength));
        assert_eq!(decide(v11, &["10, 10"], &[]), Err(InvalidContentLength));
        assert_eq!(decide(v11, &[], &["chunked"]), Ok(Chunked));
        assert_eq!(decide(v11, &[], &["Chunked"]), Ok(Chunked));
        assert_eq!(decide(v11, &[], &[" , chunked"]), Ok(Chunked));
        assert_eq!(
            decide(v11, &["5"], &["chunked"]),
            Err(ContentLengthWithTransferEncoding)
        );
        assert_eq!(decide(v11, &[], &["chunked, gzip"]), Err(ChunkedNotFinal));
        assert_eq!(
            decide(v11, &[], &["chunked", "chunked"]),
            Err(ChunkedNotFinal)
        );
        assert_eq!(
            decide(v11, &[], &["chunked, chunked"]),
            Err(ChunkedNotFinal)
        );
        assert_eq!(
            decide(v11, &[], &["gzip, chunked"]),
            Err(UnknownTransferCoding)
        );
        assert_eq!(decide(v11, &[], &[""]), Err(ChunkedNotFinal));
        assert_eq!(
            decide(v11, &[], &["gzip;level=1, chunked"]),
            Err(UnknownTransferCoding)
        );
        assert_eq!(
            decide(v11, &[], &["gzip", "chunked"]),
            Err(UnknownTransferCoding)
        );
        assert_eq!(
            decide(Version::HTTP_10, &[], &["chunked"]),
            Err(TransferEncodingInHttp10)
        );
        assert_eq!(
            decide(Version::HTTP_10, &["3"], &["chunked"]),
            Err(TransferEncodingInHttp10)
        );
    }
}
