//! The header fields of resumable uploads (draft-ietf-httpbis-resumable-upload-12):
//! `Upload-Complete` (a Boolean Item), `Upload-Offset` and `Upload-Length` (non-negative
//! Integer Items), parsed by the rules of Structured Field Values (RFC 9651) and strictly:
//! the draft says any other value makes the whole field ignored, which these parsers report
//! as `None`. Parameters on these Items are not accepted (the draft defines none), nor are
//! several field lines (an Item is one value; lines joined by a comma are not one).
//!
//! `Upload-Limit` (a Dictionary) is only ever sent by weir: [`write_limits`] serializes it.
//!
//! ALLOCATION: none for these Items (`sfv` allocates for strings, tokens and byte sequences,
//! which these fields never are, and for parameters, which make them invalid).

use sfv::{BareItem, Item, Parser};

/// Parses one field line as an Item without parameters (RFC 9651 §4.2, with `sfv`): its bare
/// item, or `None`.
fn item(value: &[u8]) -> Option<BareItem> {
    let item: Item = Parser::new(value).parse().ok()?;
    item.params.is_empty().then_some(item.bare_item)
}

/// A Boolean Item: `?1` or `?0`.
pub fn parse_boolean(value: &[u8]) -> Option<bool> {
    item(value)?.as_boolean()
}

/// A non-negative Integer Item: 1 to 15 digits (RFC 9651 §3.3.1), no sign, no decimal point.
pub fn parse_non_negative_integer(value: &[u8]) -> Option<u64> {
    u64::try_from(i64::from(item(value)?.as_integer()?)).ok()
}

/// The limits of `Upload-Limit`, each `None` when not announced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UploadLimits {
    pub max_size: Option<u64>,
    pub min_size: Option<u64>,
    pub max_append_size: Option<u64>,
    pub min_append_size: Option<u64>,
    pub max_age: Option<u64>,
}

/// The largest Integer RFC 9651 can carry: larger limits are announced as this.
const MAX_INTEGER: u64 = 999_999_999_999_999;

/// Serializes `limits` as an `Upload-Limit` Dictionary (`max-size=1, max-age=2`) into `out`.
pub fn write_limits(limits: &UploadLimits, out: &mut String) {
    use std::fmt::Write;
    let members = [
        ("max-size", limits.max_size),
        ("min-size", limits.min_size),
        ("max-append-size", limits.max_append_size),
        ("min-append-size", limits.min_append_size),
        ("max-age", limits.max_age),
    ];
    for (key, value) in members {
        if let Some(v) = value {
            if !out.is_empty() {
                out.push_str(", ");
            }
            let _ = write!(out, "{key}={}", v.min(MAX_INTEGER));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_exactly_question_mark_digit() {
        assert_eq!(parse_boolean(b"?1"), Some(true));
        assert_eq!(parse_boolean(b" ?0 "), Some(false));
        for bad in [
            &b""[..],
            b"?",
            b"?2",
            b"1",
            b"true",
            b"?1;a",
            b"?1, ?0",
            b"?01",
            b"\t?1",
        ] {
            assert_eq!(
                parse_boolean(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn integers_are_one_to_fifteen_digits() {
        assert_eq!(parse_non_negative_integer(b"0"), Some(0));
        assert_eq!(parse_non_negative_integer(b" 123 "), Some(123));
        assert_eq!(
            parse_non_negative_integer(b"999999999999999"),
            Some(MAX_INTEGER)
        );
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b"1.0",
            b"1000000000000000",
            b"1 2",
            b"1,2",
            b"1;x",
            b"0x10",
        ] {
            assert_eq!(
                parse_non_negative_integer(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn limits_serialize_as_a_dictionary() {
        let mut out = String::new();
        write_limits(
            &UploadLimits {
                max_size: Some(10),
                max_append_size: Some(u64::MAX),
                max_age: Some(60),
                ..UploadLimits::default()
            },
            &mut out,
        );
        assert_eq!(
            out,
            "max-size=10, max-append-size=999999999999999, max-age=60"
        );
    }
}
