//! Digest fields (RFC 9530): the grammar of `Content-Digest` and `Repr-Digest` values, parsed
//! and formatted. Computing the hashes is the store's business (`weir-store`'s `digest.rs`); this
//! module only knows how a digest travels in a header.
//!
//! A `Content-Digest` value is a Structured Field dictionary (RFC 8941 §3.2) whose keys are
//! algorithm names and whose values are byte sequences (`:<base64>:`). [`ContentDigest::parse`]
//! parses the whole dictionary strictly, so a malformed header is an error rather than a digest
//! silently not checked; it keeps `sha-256` and `sha-512` and skips other algorithms (RFC 9530
//! §2: a recipient ignores algorithms it does not support). A known algorithm whose value is not
//! a byte sequence of the right length is an error.
//!
//! Parsing allocates nothing: the digests are decoded into fixed arrays.

use std::fmt;

/// A digest algorithm weir can compute and verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DigestAlgorithm {
    /// SHA-256, key `sha-256`.
    Sha256,
    /// SHA-512, key `sha-512`.
    Sha512,
}

impl DigestAlgorithm {
    /// The key in a `Content-Digest` / `Repr-Digest` dictionary.
    pub fn key(self) -> &'static str {
        match self {
            DigestAlgorithm::Sha256 => "sha-256",
            DigestAlgorithm::Sha512 => "sha-512",
        }
    }
}

impl fmt::Display for DigestAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// The digests a client announced for a body (or that the store reports for a file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContentDigest {
    /// The `sha-256` member, if present.
    pub sha256: Option<[u8; 32]>,
    /// The `sha-512` member, if present.
    pub sha512: Option<[u8; 64]>,
}

/// Why a `Content-Digest` value could not be parsed. Answer 400.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DigestParseError {
    /// What was wrong.
    pub reason: &'static str,
    /// Byte offset in the input where it was noticed.
    pub at: usize,
}

impl fmt::Display for DigestParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid Content-Digest at byte {}: {}",
            self.at, self.reason
        )
    }
}

impl std::error::Error for DigestParseError {}

impl ContentDigest {
    /// Parses a `Content-Digest` (or `Repr-Digest`) field value. Several field lines must be
    /// joined with `", "` first (RFC 9110 §5.3). An empty value is an empty dictionary.
    ///
    /// Duplicate keys: the last one wins (RFC 8941 §4.2.2).
    pub fn parse(value: &str) -> Result<ContentDigest, DigestParseError> {
        let mut p = Parser {
            s: value.as_bytes(),
            i: 0,
        };
        let mut out = ContentDigest::default();
        p.skip_sp();
        if p.at_end() {
            return Ok(out);
        }
        loop {
            let key = p.key()?;
            let value_at = p.i;
            let value = if p.eat(b'=') {
                p.member_value()?
            } else {
                // A bare key is the boolean `true`, with optional parameters.
                p.parameters()?;
                Value::Other
            };
            match key {
                b"sha-256" => out.sha256 = Some(value.digest(value_at)?),
                b"sha-512" => out.sha512 = Some(value.digest(value_at)?),
                _ => {}
            }
            p.skip_ows();
            if p.at_end() {
                return Ok(out);
            }
            if !p.eat(b',') {
                return Err(p.error("expected ',' between members"));
            }
            p.skip_ows();
            if p.at_end() {
                return Err(p.error("trailing ','"));
            }
        }
    }

    /// Whether no known algorithm is present: there is nothing to verify.
    pub fn is_empty(&self) -> bool {
        self.sha256.is_none() && self.sha512.is_none()
    }

    /// Formats the digests as a field value, e.g. `sha-256=:47DEQpj8...=:`, for a
    /// `Repr-Digest` or `Content-Digest` response header. Empty if no digest is set.
    pub fn to_header_value(&self) -> String {
        let mut out = String::new();
        if let Some(d) = &self.sha256 {
            push_member(&mut out, DigestAlgorithm::Sha256, d);
        }
        if let Some(d) = &self.sha512 {
            push_member(&mut out, DigestAlgorithm::Sha512, d);
        }
        out
    }
}

fn push_member(out: &mut String, algorithm: DigestAlgorithm, digest: &[u8]) {
    if !out.is_empty() {
        out.push_str(", ");
    }
    out.push_str(algorithm.key());
    out.push_str("=:");
    base64_encode(digest, out);
    out.push(':');
}

/// A parsed member value, reduced to what a digest check cares about.
enum Value<'a> {
    /// A byte sequence, still base64 (validated).
    Bytes(&'a [u8]),
    /// Anything else (skipped, but syntax-checked).
    Other,
}

impl<'a> Value<'a> {
    fn digest<const N: usize>(&self, at: usize) -> Result<[u8; N], DigestParseError> {
        let Value::Bytes(b64) = self else {
            return Err(DigestParseError {
                reason: "digest is not a byte sequence",
                at,
            });
        };
        let mut out = [0u8; N];
        match base64_decode(b64, &mut out) {
            Some(n) if n == N => Ok(out),
            // Too short, or too long for `out`.
            _ => Err(DigestParseError {
                reason: "digest has the wrong length",
                at,
            }),
        }
    }
}

/// A cursor over the field value, following the parsing algorithms of RFC 8941 §4.2.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn error(&self, reason: &'static str) -> DigestParseError {
        DigestParseError { reason, at: self.i }
    }

    fn skip_sp(&mut self) {
        while self.eat(b' ') {}
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    /// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`
    fn key(&mut self) -> Result<&'a [u8], DigestParseError> {
        let start = self.i;
        match self.peek() {
            Some(b'a'..=b'z' | b'*') => self.i += 1,
            _ => return Err(self.error("expected a key")),
        }
        while let Some(b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*') = self.peek() {
            self.i += 1;
        }
        Ok(&self.s[start..self.i])
    }

    /// `member-value = sf-item / inner-list`
    fn member_value(&mut self) -> Result<Value<'a>, DigestParseError> {
        if self.eat(b'(') {
            self.inner_list()?;
            return Ok(Value::Other);
        }
        let value = self.bare_item()?;
        self.parameters()?;
        Ok(value)
    }

    /// The rest of `inner-list = "(" *SP [ sf-item *( 1*SP sf-item ) *SP ] ")" parameters`.
    fn inner_list(&mut self) -> Result<(), DigestParseError> {
        loop {
            self.skip_sp();
            if self.eat(b')') {
                return self.parameters();
            }
            self.bare_item()?;
            self.parameters()?;
            match self.peek() {
                Some(b' ' | b')') => {}
                _ => return Err(self.error("expected ' ' or ')' in inner list")),
            }
        }
    }

    /// `parameters = *( ";" *SP key [ "=" bare-item ] )`
    fn parameters(&mut self) -> Result<(), DigestParseError> {
        while self.eat(b';') {
            self.skip_sp();
            self.key()?;
            if self.eat(b'=') {
                self.bare_item()?;
            }
        }
        Ok(())
    }

    /// Integer, decimal, string, token, byte sequence or boolean.
    fn bare_item(&mut self) -> Result<Value<'a>, DigestParseError> {
        match self.peek() {
            Some(b':') => {
                self.i += 1;
                let start = self.i;
                while let Some(b) = self.peek() {
                    if b == b':' {
                        let b64 = &self.s[start..self.i];
                        self.i += 1;
                        if !is_base64(b64) {
                            return Err(DigestParseError {
                                reason: "invalid base64",
                                at: start,
                            });
                        }
                        return Ok(Value::Bytes(b64));
                    }
                    self.i += 1;
                }
                Err(self.error("unterminated byte sequence"))
            }
            Some(b'"') => {
                self.i += 1;
                loop {
                    match self.peek() {
                        None => return Err(self.error("unterminated string")),
                        Some(b'"') => {
                            self.i += 1;
                            return Ok(Value::Other);
                        }
                        Some(b'\\') => {
                            self.i += 1;
                            if !matches!(self.peek(), Some(b'"' | b'\\')) {
                                return Err(self.error("invalid escape in string"));
                            }
                            self.i += 1;
                        }
                        Some(0x20..=0x7e) => self.i += 1,
                        Some(_) => return Err(self.error("invalid character in string")),
                    }
                }
            }
            Some(b'?') => {
                self.i += 1;
                if !(self.eat(b'0') || self.eat(b'1')) {
                    return Err(self.error("invalid boolean"));
                }
                Ok(Value::Other)
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b) if b.is_ascii_alphabetic() || b == b'*' => {
                self.i += 1;
                while let Some(b) = self.peek() {
                    if crate::chars::is_tchar(b) || b == b':' || b == b'/' {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                Ok(Value::Other)
            }
            _ => Err(self.error("expected an item")),
        }
    }

    /// `sf-integer = ["-"] 1*15DIGIT`, `sf-decimal = ["-"] 1*12DIGIT "." 1*3DIGIT`
    fn number(&mut self) -> Result<Value<'a>, DigestParseError> {
        self.eat(b'-');
        let int = self.digits();
        if int == 0 {
            return Err(self.error("expected a digit"));
        }
        if self.eat(b'.') {
            let frac = self.digits();
            if int > 12 || frac == 0 || frac > 3 {
                return Err(self.error("invalid decimal"));
            }
        } else if int > 15 {
            return Err(self.error("integer too long"));
        }
        Ok(Value::Other)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }
}

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_value(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Standard base64 (RFC 4648 §4). Padding may be absent (RFC 8941 §4.2.7 says parsers should
/// not fail on that), but where present it must be at the end and complete a 4-character group.
fn is_base64(s: &[u8]) -> bool {
    let data = s.iter().position(|&b| b == b'=').map_or(s, |i| &s[..i]);
    let padding = s.len() - data.len();
    data.iter().all(|&b| base64_value(b).is_some())
        && s[data.len()..].iter().all(|&b| b == b'=')
        && data.len() % 4 != 1
        && (padding == 0 || (padding <= 2 && s.len() % 4 == 0))
}

/// Decodes validated base64 into `out`; `None` if `out` is too small.
fn base64_decode(s: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut n = 0;
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &b in s.iter().take_while(|&&b| b != b'=') {
        acc = (acc << 6) | u32::from(base64_value(b)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            *out.get_mut(n)? = (acc >> bits) as u8;
            n += 1;
        }
    }
    // Leftover bits (non-zero ones included, RFC 8941 §4.2.7) are dropped.
    Some(n)
}

fn base64_encode(data: &[u8], out: &mut String) {
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(
                    BASE64_ALPHABET[(n >> (18 - 6 * i)) as usize & 63],
                ));
            } else {
                out.push('=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SHA-256 and SHA-512 of the empty string and of "hello world", in base64.
    const EMPTY_256: &str = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
    const HELLO_256: &str = "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=";
    const HELLO_512: &str =
        "MJ7MSJwS1utMxA9QyQLytNDtd+5RGnx6m808qG1M2G+YndNbxf9JlnDaNCVbRbDP2DDoH2Bdz33FVC6TrpzXbw==";

    #[test]
    fn parses_sha256_and_sha512() {
        let d = ContentDigest::parse(&format!("sha-256=:{EMPTY_256}:")).unwrap();
        let sha256 = d.sha256.unwrap();
        assert_eq!(sha256[..4], [0xe3, 0xb0, 0xc4, 0x42]);
        assert_eq!(sha256[28..], [0x78, 0x52, 0xb8, 0x55]);
        assert_eq!(d.sha512, None);

        let d =
            ContentDigest::parse(&format!("sha-512=:{HELLO_512}:, sha-256=:{HELLO_256}:")).unwrap();
        assert_eq!(d.sha256.unwrap()[..2], [0xb9, 0x4d]);
        assert_eq!(d.sha512.unwrap()[..2], [0x30, 0x9e]);
    }

    #[test]
    fn ignores_unknown_algorithms_and_parameters() {
        let v = format!(
            "md5=:rL0Y20zC+Fzt72VPzMSk2A==:, sha-256=:{HELLO_256}:;p=1, unixsum=30637, \
             adler=?1, x=(1 2.5 \"s\\\"q\" tok/en:x ?0);a, y;z=-3, *w=:: , crc=\"a\""
        );
        let d = ContentDigest::parse(&v).unwrap();
        assert!(d.sha256.is_some());
        assert!(d.sha512.is_none());
        let d = ContentDigest::parse("md5=:rL0Y20zC+Fzt72VPzMSk2A==:").unwrap();
        assert!(d.is_empty());
    }

    #[test]
    fn empty_and_whitespace() {
        assert!(ContentDigest::parse("").unwrap().is_empty());
        assert!(ContentDigest::parse("   ").unwrap().is_empty());
        let d = ContentDigest::parse(&format!("  sha-256=:{HELLO_256}:\t,\tmd5=:AA==:  "));
        assert!(d.unwrap().sha256.is_some());
    }

    #[test]
    fn accepts_missing_padding_and_last_duplicate_wins() {
        let unpadded = HELLO_256.trim_end_matches('=');
        let d = ContentDigest::parse(&format!("sha-256=:{unpadded}:")).unwrap();
        assert_eq!(
            d,
            ContentDigest::parse(&format!("sha-256=:{HELLO_256}:")).unwrap()
        );
        let d = ContentDigest::parse(&format!("sha-256=:{EMPTY_256}:, sha-256=:{HELLO_256}:"));
        assert_eq!(
            d.unwrap().sha256,
            ContentDigest::parse(&format!("sha-256=:{HELLO_256}:"))
                .unwrap()
                .sha256
        );
    }

    #[test]
    fn rejects_malformed_values() {
        let short = &HELLO_256[..20];
        for bad in [
            "sha-256".to_owned(),                        // boolean, not a byte sequence
            "sha-256=abc".to_owned(),                    // token
            "sha-256=\"abc\"".to_owned(),                // string
            format!("sha-256=:{short}:"),                // wrong length
            format!("sha-256=:{HELLO_512}:"),            // a sha-512 under the sha-256 key
            format!("sha-512=:{HELLO_256}:"),            // and the reverse
            format!("sha-256=:{HELLO_256}"),             // unterminated
            format!("sha-256=:{}!:", &HELLO_256[..43]),  // bad base64 character
            "sha-256=:=abc:".to_owned(),                 // padding first
            "sha-256=:ab=c:".to_owned(),                 // padding inside
            format!("sha-256=:{HELLO_256}:,"),           // trailing comma
            format!("sha-256=:{HELLO_256}: md5=:AA==:"), // missing comma
            format!("SHA-256=:{HELLO_256}:"),            // keys are lowercase
            format!("sha-256 =:{HELLO_256}:"),           // space before '='
            ",".to_owned(),
            "=:AA==:".to_owned(),
            "md5=:A:".to_owned(), // 1 char in the last group: not base64
            "x=\"unterminated".to_owned(), // bad skipped member still fails
            "x=(1 2".to_owned(),
            "x=1234567890123456".to_owned(), // integer too long
            "x=1.2345".to_owned(),           // decimal with 4 fraction digits
            "x=?2".to_owned(),
            "x=\"\\n\"".to_owned(),
        ] {
            assert!(ContentDigest::parse(&bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn formats_what_it_parses() {
        let d =
            ContentDigest::parse(&format!("sha-256=:{HELLO_256}:, sha-512=:{HELLO_512}:")).unwrap();
        assert_eq!(
            d.to_header_value(),
            format!("sha-256=:{HELLO_256}:, sha-512=:{HELLO_512}:")
        );
        assert_eq!(ContentDigest::parse(&d.to_header_value()).unwrap(), d);
        assert_eq!(ContentDigest::default().to_header_value(), "");
    }

    #[test]
    fn base64_round_trips_every_length() {
        let data: Vec<u8> = (0..=255u8).collect();
        for len in 0..70 {
            let mut s = String::new();
            base64_encode(&data[..len], &mut s);
            assert!(is_base64(s.as_bytes()), "{s}");
            let mut out = [0u8; 70];
            assert_eq!(base64_decode(s.as_bytes(), &mut out), Some(len));
            assert_eq!(&out[..len], &data[..len]);
        }
    }
}
