//! Digest fields (RFC 9530): the grammar of `Content-Digest` and `Repr-Digest` values, parsed
//! and formatted. Computing the hashes is the store's business (`weir-store`'s `digest.rs`); this
//! module only knows how a digest travels in a header.
//!
//! A `Content-Digest` value is a Structured Field Dictionary (RFC 9651 §3.2) whose keys are
//! algorithm names and whose values are byte sequences (`:<base64>:`). [`ContentDigest::parse`]
//! parses the whole dictionary strictly (with the `sfv` crate), so a malformed header is an error
//! rather than a digest silently not checked; it keeps `sha-256` and `sha-512` and skips other
//! algorithms (RFC 9530 §2: a recipient ignores algorithms it does not support). A known
//! algorithm whose value is not a byte sequence of the right length is an error.
//!
//! ALLOCATION: parsing builds `sfv`'s dictionary (a map, a key and a buffer per member): once
//! per request that sends the field, never per body read.

use base64::Engine as _;
use sfv::{BareItem, Dictionary, ListEntry, Parser};
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigestParseError {
    reason: String,
}

impl DigestParseError {
    fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for DigestParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid Content-Digest: {}", self.reason)
    }
}

impl std::error::Error for DigestParseError {}

impl ContentDigest {
    /// Parses a `Content-Digest` (or `Repr-Digest`) field value. Several field lines must be
    /// joined with `", "` first (RFC 9110 §5.3). An empty value is an empty dictionary.
    ///
    /// Duplicate keys: the last one wins (RFC 9651 §4.2.2).
    pub fn parse(value: &str) -> Result<ContentDigest, DigestParseError> {
        let mut out = ContentDigest::default();
        if value.trim_matches(' ').is_empty() {
            return Ok(out);
        }
        let members: Dictionary = Parser::new(value)
            .parse()
            .map_err(|e| DigestParseError::new(e.to_string()))?;
        for (key, member) in &members {
            match key.as_str() {
                "sha-256" => out.sha256 = Some(digest(key.as_str(), member)?),
                "sha-512" => out.sha512 = Some(digest(key.as_str(), member)?),
                _ => {}
            }
        }
        Ok(out)
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

/// A known algorithm's member: a byte sequence of exactly `N` bytes.
fn digest<const N: usize>(key: &str, member: &ListEntry) -> Result<[u8; N], DigestParseError> {
    let ListEntry::Item(item) = member else {
        return Err(DigestParseError::new(format!(
            "{key}: an inner list, not a byte sequence"
        )));
    };
    let BareItem::ByteSequence(bytes) = &item.bare_item else {
        return Err(DigestParseError::new(format!("{key}: not a byte sequence")));
    };
    <[u8; N]>::try_from(bytes.as_slice())
        .map_err(|_| DigestParseError::new(format!("{key}: {} bytes, not {N}", bytes.len())))
}

fn push_member(out: &mut String, algorithm: DigestAlgorithm, digest: &[u8]) {
    if !out.is_empty() {
        out.push_str(", ");
    }
    out.push_str(algorithm.key());
    out.push_str("=:");
    base64::engine::general_purpose::STANDARD.encode_string(digest, out);
    out.push(':');
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
    fn is_empty_only_without_a_known_digest() {
        let sha256 = ContentDigest::parse(&format!("sha-256=:{HELLO_256}:")).unwrap();
        let sha512 = ContentDigest::parse(&format!("sha-512=:{HELLO_512}:")).unwrap();
        assert!(ContentDigest::default().is_empty());
        assert!(!sha256.is_empty());
        assert!(!sha512.is_empty());
    }

    #[test]
    fn names_and_errors_read_well() {
        assert_eq!(DigestAlgorithm::Sha256.to_string(), "sha-256");
        assert_eq!(DigestAlgorithm::Sha512.to_string(), "sha-512");
        let e = ContentDigest::parse("sha-256=abc").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid Content-Digest: sha-256: not a byte sequence"
        );
        let e = ContentDigest::parse("sha-256=:AA==:").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid Content-Digest: sha-256: 1 bytes, not 32"
        );
        // The parser's own account of a syntax error, after the field's name.
        let e = ContentDigest::parse("sha-256=:AA==:,").unwrap_err();
        assert!(e.to_string().starts_with("invalid Content-Digest: "), "{e}");
        assert!(
            e.to_string().len() > "invalid Content-Digest: ".len(),
            "{e}"
        );
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
}
