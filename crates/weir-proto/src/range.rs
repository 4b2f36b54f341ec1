//! The `Range` request header (RFC 9110 §14.2), evaluated against a representation's size.
//!
//! `weir serve` answers downloads with it (`weir-cli`'s `serve/download.rs`); it lives here,
//! with the protocol, so the fuzz target and the corpus replay use it as an ordinary API.
//!
//! Choices, as the RFC allows:
//! - only the `bytes` unit; anything else, or a syntactically invalid header, is ignored
//!   (the whole file, `200`);
//! - **a request for several ranges is answered with the whole file (`200`)**, never
//!   `multipart/byteranges`: clients that ask for several ranges (download accelerators) cope,
//!   and the service stays a `sendfile` of one contiguous piece;
//! - one satisfiable range is `206` with `Content-Range`; one unsatisfiable range (its first
//!   byte at or past the end, a suffix of zero bytes, any range of an empty file) is `416` with
//!   `Content-Range: bytes */SIZE`.

/// What to send for a `Range` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeAnswer {
    /// The whole representation (no usable range).
    Full,
    /// `len` bytes from `start` (`len >= 1`).
    Partial {
        /// The first byte.
        start: u64,
        /// How many bytes, at least one.
        len: u64,
    },
    /// 416.
    Unsatisfiable,
}

/// Evaluates a `Range` header value against a representation of `size` bytes.
pub fn evaluate(header: &[u8], size: u64) -> RangeAnswer {
    let Some(spec) = parse(header) else {
        return RangeAnswer::Full;
    };
    match spec {
        Spec::FromTo(first, last) => {
            if first >= size {
                return RangeAnswer::Unsatisfiable;
            }
            let last = last.map_or(size - 1, |l| l.min(size - 1));
            RangeAnswer::Partial {
                start: first,
                len: last - first + 1,
            }
        }
        Spec::Suffix(n) => {
            if n == 0 || size == 0 {
                return RangeAnswer::Unsatisfiable;
            }
            let len = n.min(size);
            RangeAnswer::Partial {
                start: size - len,
                len,
            }
        }
    }
}

/// One range spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spec {
    /// `first-last` or `first-`.
    FromTo(u64, Option<u64>),
    /// `-n`: the last `n` bytes.
    Suffix(u64),
}

/// Parses `bytes=<one range>`; `None` for another unit, bad syntax or several ranges.
fn parse(header: &[u8]) -> Option<Spec> {
    let header = std::str::from_utf8(header).ok()?.trim();
    let (unit, set) = header.split_once('=')?;
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return None;
    }
    // Empty list elements (`bytes=0-1,`) are allowed by the list syntax and ignored.
    let mut specs = set.split(',').map(str::trim).filter(|s| !s.is_empty());
    let one = specs.next()?;
    if specs.next().is_some() {
        return None;
    }
    let (first, last) = one.split_once('-')?;
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        return Some(Spec::Suffix(number(last)?));
    }
    let first = number(first)?;
    if last.is_empty() {
        return Some(Spec::FromTo(first, None));
    }
    let last = number(last)?;
    // `last < first` is invalid syntax (RFC 9110 §14.1.1): ignore the header.
    (last >= first).then_some(Spec::FromTo(first, Some(last)))
}

/// Digits only; values past `u64::MAX` saturate (they are past any file's end anyway).
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.parse().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::RangeAnswer::{Full, Partial, Unsatisfiable};
    use super::*;

    fn eval(h: &str, size: u64) -> RangeAnswer {
        evaluate(h.as_bytes(), size)
    }

    #[test]
    fn single_ranges() {
        assert_eq!(eval("bytes=0-0", 1000), Partial { start: 0, len: 1 });
        assert_eq!(eval("bytes=999-999", 1000), Partial { start: 999, len: 1 });
        assert_eq!(
            eval("bytes=0-", 1000),
            Partial {
                start: 0,
                len: 1000
            }
        );
        assert_eq!(
            eval("bytes=500-", 1000),
            Partial {
                start: 500,
                len: 500
            }
        );
        assert_eq!(
            eval("bytes=-500", 1000),
            Partial {
                start: 500,
                len: 500
            }
        );
        assert_eq!(
            eval("bytes=-5000", 1000),
            Partial {
                start: 0,
                len: 1000
            }
        );
        assert_eq!(eval("bytes=10-20", 1000), Partial { start: 10, len: 11 });
        assert_eq!(
            eval("bytes=10-99999", 1000),
            Partial {
                start: 10,
                len: 990
            }
        );
        assert_eq!(eval(" Bytes = 1 - 2 ", 1000), Partial { start: 1, len: 2 });
        assert_eq!(
            eval("bytes=0-99999999999999999999999", 10),
            Partial { start: 0, len: 10 }
        );
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(eval("bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(eval("bytes=1000-2000", 1000), Unsatisfiable);
        assert_eq!(eval("bytes=-0", 1000), Unsatisfiable);
        assert_eq!(eval("bytes=0-", 0), Unsatisfiable);
        assert_eq!(eval("bytes=-1", 0), Unsatisfiable);
        assert_eq!(eval("bytes=99999999999999999999999-", 10), Unsatisfiable);
    }

    #[test]
    fn ignored() {
        for h in [
            "",
            "bytes",
            "bytes=",
            "items=0-1",
            "bytes=a-b",
            "bytes=5-4",
            "bytes=-",
            "bytes=1",
            "bytes=0-1,5-6",
            "bytes=0-1, -1",
            "bytes=+1-2",
            "bytes=0x1-2",
            "bytes=--1",
        ] {
            assert_eq!(eval(h, 1000), Full, "{h:?}");
        }
        assert_eq!(eval("bytes=0-1,", 1000), Partial { start: 0, len: 2 });
        assert_eq!(evaluate(b"bytes=\xff-1", 1000), Full);
    }
}
