//! URL paths under `/files/`: percent-decoded here, then validated by
//! [`weir_store::StorePath`], the only way a name reaches the filesystem.
//!
//! Decoding happens once, before validation, so an encoded `..` (`%2e%2e`), an encoded `/`
//! (`%2f`), backslash (`%5c`) or NUL (`%00`) is judged as what it decodes to. A malformed escape
//! or a path that is not UTF-8 after decoding is rejected. A trailing `/` in the raw path means
//! a directory (listing, multipart upload).

use weir_store::{PathError, StorePath};

/// What a `/files/...` path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// `/files/`: the root directory.
    Root,
    /// `/files/a/b/`: a directory.
    Dir(StorePath),
    /// `/files/a/b`: a file (or, for some routes, a directory named without the slash).
    File(StorePath),
}

/// Why a path is refused (400).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TargetError {
    BadEscape,
    NotUtf8,
    Path(PathError),
}

impl TargetError {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::BadEscape => "malformed percent-escape in path",
            Self::NotUtf8 => "path is not UTF-8",
            Self::Path(e) => e.as_str(),
        }
    }
}

impl Target {
    /// Parses the part of the raw (still percent-encoded) URL path after `/files/`.
    pub(crate) fn parse(raw: &str) -> Result<Target, TargetError> {
        if raw.is_empty() {
            return Ok(Target::Root);
        }
        let (raw, dir) = match raw.strip_suffix('/') {
            Some(stripped) => (stripped, true),
            None => (raw, false),
        };
        let decoded = percent_decode(raw)?;
        let path = StorePath::parse(&decoded).map_err(TargetError::Path)?;
        Ok(if dir {
            Target::Dir(path)
        } else {
            Target::File(path)
        })
    }
}

/// Decodes `%XX` escapes (RFC 3986 §2.1). `+` stays `+` (it means space only in forms).
pub(crate) fn percent_decode(raw: &str) -> Result<String, TargetError> {
    if !raw.contains('%') {
        return Ok(raw.to_owned());
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = bytes.get(i + 1).and_then(|&b| hex(b));
            let lo = bytes.get(i + 2).and_then(|&b| hex(b));
            let (Some(hi), Some(lo)) = (hi, lo) else {
                return Err(TargetError::BadEscape);
            };
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| TargetError::NotUtf8)
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The store path of the file `filename` (which may contain `/`) under `dir` (the root when
/// `None`), validated as any store path.
pub(super) fn file_in(dir: Option<&StorePath>, filename: &str) -> Result<StorePath, &'static str> {
    let joined;
    let full = match dir {
        Some(dir) => {
            joined = format!("{dir}/{filename}");
            &joined
        }
        None => filename,
    };
    StorePath::parse(full).map_err(|e| e.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(s: &str) -> Target {
        Target::File(StorePath::parse(s).unwrap())
    }

    #[test]
    fn parses_files_dirs_and_root() {
        assert_eq!(Target::parse(""), Ok(Target::Root));
        assert_eq!(Target::parse("a/b.txt"), Ok(file("a/b.txt")));
        assert_eq!(
            Target::parse("a/b/"),
            Ok(Target::Dir(StorePath::parse("a/b").unwrap()))
        );
        assert_eq!(Target::parse("with%20space"), Ok(file("with space")));
        assert_eq!(Target::parse("a%2fb"), Ok(file("a/b")));
        assert_eq!(Target::parse("%C3%A9t%C3%A9"), Ok(file("été")));
        assert_eq!(Target::parse("a+b"), Ok(file("a+b")));
    }

    #[test]
    fn rejects_traversal_and_bad_bytes() {
        use PathError::*;
        let cases: &[(&str, TargetError)] = &[
            ("..", TargetError::Path(DotSegment)),
            ("a/../../etc/passwd", TargetError::Path(DotSegment)),
            ("%2e%2e/etc/passwd", TargetError::Path(DotSegment)),
            ("%2E%2E%2Fetc", TargetError::Path(DotSegment)),
            ("..%2f..%2fetc", TargetError::Path(DotSegment)),
            ("%2fetc/passwd", TargetError::Path(Absolute)),
            // Fullwidth full stops (U+FF0E) as a segment, a division slash (U+2215).
            ("%EF%BC%8E%EF%BC%8E/etc", TargetError::Path(DotSegment)),
            (
                "a%E2%88%95..%E2%88%95b",
                TargetError::Path(LookalikeSeparator),
            ),
            ("a%5c..%5cb", TargetError::Path(Backslash)),
            ("a\\b", TargetError::Path(Backslash)),
            ("a%00b", TargetError::Path(Nul)),
            ("a%0ab", TargetError::Path(ControlCharacter)),
            ("a//b", TargetError::Path(EmptySegment)),
            ("a%2f", TargetError::Path(EmptySegment)),
            (".weir-lock", TargetError::Path(Reserved)),
            ("%zz", TargetError::BadEscape),
            ("%4", TargetError::BadEscape),
            ("%ff", TargetError::NotUtf8),
        ];
        for (raw, want) in cases {
            assert_eq!(Target::parse(raw), Err(*want), "{raw:?}");
        }
    }
}
