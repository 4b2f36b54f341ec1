//! Store paths: the only way a name from a request reaches the filesystem.
//!
//! "Parse, don't validate": a [`StorePath`] can only be made by [`StorePath::parse`], so every
//! function that takes one knows it is a relative path of plain names, with nothing that could
//! climb out of the root (`..`), mean something else to the OS (`\`, NUL, control characters),
//! show as something it is not (bidirectional controls, zero-width and other invisible format
//! characters: see [`is_invisible_or_bidi`]), or collide with the store's own files (names
//! starting with [`RESERVED_PREFIX`]).
//!
//! These character classes are defined here once; everything else that judges a name (the
//! multipart form's file names, `weir get`'s local file name) goes through [`validate_name`].
//!
//! The input is already percent-decoded by the caller: a `%2F` in a URL is a `/` here, and a
//! `%00` is a NUL that is refused here. Symbolic links are a property of the filesystem, not of
//! the string, so they are checked when the path is resolved (see `local`), not here.

use std::fmt;

/// Names starting with this prefix (compared ASCII case-insensitively, for case-insensitive
/// filesystems) belong to the store itself: temporary upload files, the root lock file, and
/// whatever later features (resumable uploads) need. They can never be addressed, listed or
/// served.
pub const RESERVED_PREFIX: &str = ".weir-";

/// Longest path segment in bytes: `NAME_MAX` on Linux filesystems and most others. A longer
/// name would fail with `ENAMETOOLONG` deep in a syscall; refusing it here makes it a 400.
pub const MAX_SEGMENT_LEN: usize = 255;

/// Longest path in bytes. Well under `PATH_MAX` (4096) so that the root prefix fits too,
/// whatever directory the store is given.
pub const MAX_PATH_LEN: usize = 1024;

/// Why a string is not a valid [`StorePath`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    Empty,
    /// The path starts with `/`.
    Absolute,
    /// The path has an empty segment: `a//b`, or a trailing `/`.
    EmptySegment,
    /// A segment is `.` or `..`.
    DotSegment,
    /// The path contains a backslash, a path separator on Windows.
    Backslash,
    /// The path contains a NUL byte, which would truncate it at the syscall boundary.
    Nul,
    /// The path contains a control character (C0, DEL or C1) other than NUL.
    ControlCharacter,
    /// The path contains an invisible or bidirectional-control character (see
    /// [`is_invisible_or_bidi`]): it would make the name display as something it is not.
    InvisibleCharacter,
    /// A name given to [`validate_name`] contains `/`: it is a path, not one name.
    Separator,
    /// The path contains a character that looks like a path separator or is one after Unicode
    /// compatibility normalization (NFKC), such as U+2215 DIVISION SLASH or U+FF0F FULLWIDTH
    /// SOLIDUS (see [`is_separator_lookalike`]).
    LookalikeSeparator,
    /// A segment starts with [`RESERVED_PREFIX`].
    Reserved,
    /// A segment is longer than [`MAX_SEGMENT_LEN`] bytes.
    SegmentTooLong,
    /// The path is longer than [`MAX_PATH_LEN`] bytes.
    TooLong,
}

impl PathError {
    /// A short, stable description, fit for an error response body.
    pub fn as_str(self) -> &'static str {
        match self {
            PathError::Empty => "empty path",
            PathError::Absolute => "absolute path",
            PathError::EmptySegment => "empty path segment",
            PathError::DotSegment => "'.' or '..' path segment",
            PathError::Backslash => "backslash in path",
            PathError::Nul => "NUL in path",
            PathError::ControlCharacter => "control character in path",
            PathError::InvisibleCharacter => {
                "invisible or bidirectional-control character in path (Unicode format characters \
                 such as U+202E or U+200B, and line or paragraph separators, are refused)"
            }
            PathError::Separator => "'/' in a name",
            PathError::LookalikeSeparator => {
                "a character that looks like '/' or '\\' in path (such as U+2215 or U+FF0F)"
            }
            PathError::Reserved => "reserved name in path",
            PathError::SegmentTooLong => "path segment too long",
            PathError::TooLong => "path too long",
        }
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for PathError {}

/// A validated relative path inside a store: one or more `/`-separated names.
///
/// Invariants: non-empty, at most [`MAX_PATH_LEN`] bytes; every segment is non-empty, at most
/// [`MAX_SEGMENT_LEN`] bytes, not `.` or `..`, does not start with [`RESERVED_PREFIX`]; no
/// backslash, NUL, control character or invisible/bidirectional-control character anywhere.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StorePath(String);

impl StorePath {
    /// Parses a percent-decoded path such as `photos/2024/cat.jpg`.
    pub fn parse(path: &str) -> Result<StorePath, PathError> {
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        if path.starts_with('/') {
            return Err(PathError::Absolute);
        }
        if path.len() > MAX_PATH_LEN {
            return Err(PathError::TooLong);
        }
        for segment in path.split('/') {
            validate_segment(segment)?;
        }
        Ok(StorePath(path.to_owned()))
    }

    /// The path as given, `/`-separated.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The segments, outermost first. Never empty.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The last segment: the file (or directory) name.
    pub fn file_name(&self) -> &str {
        // `rsplit` always yields at least one item.
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The directory segments: every segment but the last.
    pub fn parent_segments(&self) -> impl Iterator<Item = &str> {
        let parent = match self.0.rfind('/') {
            Some(i) => &self.0[..i],
            None => "",
        };
        parent.split('/').filter(|s| !s.is_empty())
    }
}

impl fmt::Display for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for StorePath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Checks one name (a single path segment, no `/`) by the rules of [`StorePath`]. For callers
/// outside the store that must judge a name the same way: `weir get` naming a local file after
/// a URL, for instance.
pub fn validate_name(name: &str) -> Result<(), PathError> {
    if name.contains('/') {
        return Err(PathError::Separator);
    }
    validate_segment(name)
}

/// Checks one name. Also used by listings, to hide names that exist on disk (made by someone
/// else) but could never be addressed through a [`StorePath`].
pub(crate) fn validate_segment(segment: &str) -> Result<(), PathError> {
    if segment.is_empty() {
        return Err(PathError::EmptySegment);
    }
    if segment == "." || segment == ".." || is_dot_segment_lookalike(segment) {
        return Err(PathError::DotSegment);
    }
    if segment.len() > MAX_SEGMENT_LEN {
        return Err(PathError::SegmentTooLong);
    }
    for c in segment.chars() {
        match c {
            '\0' => return Err(PathError::Nul),
            '\\' => return Err(PathError::Backslash),
            // Covers C0 (0x00-0x1F), DEL (0x7F) and C1 (0x80-0x9F): none has a use in a file
            // name, and all of them can fool a terminal or a log reader.
            c if c.is_control() => return Err(PathError::ControlCharacter),
            c if is_invisible_or_bidi(c) => return Err(PathError::InvisibleCharacter),
            c if is_separator_lookalike(c) => return Err(PathError::LookalikeSeparator),
            _ => {}
        }
    }
    if is_reserved(segment) {
        return Err(PathError::Reserved);
    }
    Ok(())
}

/// Whether `c` is a character that changes how a name is displayed without being seen: every
/// Unicode format character (general category `Cf`, Unicode 15.1) and the line and paragraph
/// separators (`Zl`, `Zp`). Among them: the bidirectional embeddings, overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069: `evil\u{202E}txt.exe` displays as `evilexe.txt`), the
/// Arabic letter mark (U+061C), the zero-width space, joiners and directional marks
/// (U+200B–U+200F), the byte order mark (U+FEFF), soft hyphen, word joiner and invisible
/// operators, interlinear annotation controls and tag characters.
///
/// All `Cf` are refused, not only the bidirectional ones: each is invisible, so two names that
/// look the same could name different files. The price: names that need U+200C/U+200D (ZWNJ in
/// Persian words, ZWJ in emoji sequences) are refused too.
pub fn is_invisible_or_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

/// Whether `c` looks like `/` or `\`, or becomes one under Unicode compatibility
/// normalization (NFKC): a name holding one reads as a path (`a∕..∕b`), and a client, proxy or
/// filesystem that normalizes it makes it one.
pub fn is_separator_lookalike(c: char) -> bool {
    matches!(
        c,
        '\u{2044}' // FRACTION SLASH
            | '\u{2215}' // DIVISION SLASH
            | '\u{2216}' // SET MINUS
            | '\u{2571}' // BOX DRAWINGS LIGHT DIAGONAL UPPER RIGHT TO LOWER LEFT
            | '\u{29F5}' // REVERSE SOLIDUS OPERATOR
            | '\u{29F8}' // BIG SOLIDUS
            | '\u{29F9}' // BIG REVERSE SOLIDUS
            | '\u{FE68}' // SMALL REVERSE SOLIDUS (NFKC: `\`)
            | '\u{FF0F}' // FULLWIDTH SOLIDUS (NFKC: `/`)
            | '\u{FF3C}' // FULLWIDTH REVERSE SOLIDUS (NFKC: `\`)
    )
}

/// Whether `segment` is made only of full stops and characters that become full stops under
/// NFKC, one or two of them in all (`．．`, `.．`, `‥`): it reads as `.` or `..`, and is one
/// once normalized. Such characters elsewhere in a name (`ファイル．txt`) are ordinary.
fn is_dot_segment_lookalike(segment: &str) -> bool {
    let mut dots = 0;
    for c in segment.chars() {
        dots += match c {
            '.' | '\u{2024}' | '\u{FE52}' | '\u{FF0E}' => 1, // ONE DOT LEADER, SMALL and FULLWIDTH FULL STOP
            '\u{2025}' => 2,                                 // TWO DOT LEADER
            _ => return false,
        };
    }
    (1..=2).contains(&dots)
}

/// Whether a name belongs to the store itself (see [`RESERVED_PREFIX`]).
pub(crate) fn is_reserved(name: &str) -> bool {
    let prefix = RESERVED_PREFIX.as_bytes();
    name.len() >= prefix.len() && name.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_relative_paths() {
        for ok in [
            "a",
            "a/b/c.txt",
            "photos/2024/cat.jpg",
            ".hidden",
            "..a",
            "a..",
            "...",
            "name with spaces",
            "ünïcødé/файл",
            "weir-upload",
            ".weir",
            "a/.weirdo",
            "%2e%2e",
            "ファイル．txt",
            "．．．",
            "a．",
            "1\u{2024}5",
        ] {
            let p = StorePath::parse(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
            assert_eq!(p.as_str(), ok);
        }
    }

    #[test]
    fn rejects_each_bad_form() {
        use PathError::*;
        let long_segment = "x".repeat(MAX_SEGMENT_LEN + 1);
        let long_path = "a/".repeat(MAX_PATH_LEN / 2) + "a";
        let cases: &[(&str, PathError)] = &[
            ("", Empty),
            ("/", Absolute),
            ("/etc/passwd", Absolute),
            ("//server/share", Absolute),
            ("a//b", EmptySegment),
            ("a/", EmptySegment),
            ("a/b/", EmptySegment),
            (".", DotSegment),
            ("..", DotSegment),
            ("../etc/passwd", DotSegment),
            ("a/../../b", DotSegment),
            ("a/./b", DotSegment),
            ("a/..", DotSegment),
            ("a\\b", Backslash),
            ("..\\..\\windows", Backslash),
            ("\\", Backslash),
            ("a\0b", Nul),
            ("a/b\0", Nul),
            ("a\nb", ControlCharacter),
            ("a\rb", ControlCharacter),
            ("a\tb", ControlCharacter),
            ("\x1b[31mred", ControlCharacter),
            ("a\x7fb", ControlCharacter),
            ("a\u{85}b", ControlCharacter),
            ("\u{FF0E}\u{FF0E}", DotSegment),
            ("a/\u{FF0E}\u{FF0E}/b", DotSegment),
            (".\u{FF0E}", DotSegment),
            ("\u{FF0E}", DotSegment),
            ("\u{2025}", DotSegment),
            ("\u{2024}\u{FE52}", DotSegment),
            ("a\u{2215}..\u{2215}b", LookalikeSeparator),
            ("\u{FF0E}\u{FF0E}\u{FF0F}etc", LookalikeSeparator),
            ("a\u{2044}b", LookalikeSeparator),
            ("a\u{FF3C}b", LookalikeSeparator),
            ("a\u{2216}b", LookalikeSeparator),
            ("evil\u{202E}txt.exe", InvisibleCharacter),
            ("a\u{202A}b", InvisibleCharacter),
            ("a\u{2066}b", InvisibleCharacter),
            ("a\u{2069}", InvisibleCharacter),
            ("\u{200B}", InvisibleCharacter),
            ("a\u{200F}b", InvisibleCharacter),
            ("dir/a\u{2028}b", InvisibleCharacter),
            ("a\u{2029}b", InvisibleCharacter),
            ("\u{FEFF}name", InvisibleCharacter),
            ("a\u{061C}b", InvisibleCharacter),
            ("soft\u{00AD}hyphen", InvisibleCharacter),
            ("tag\u{E0041}", InvisibleCharacter),
            (".weir-upload-1-2.tmp", Reserved),
            ("dir/.weir-upload-1-2.tmp", Reserved),
            (".weir-lock", Reserved),
            (".weir-", Reserved),
            (".WEIR-upload-x.tmp", Reserved),
            (".weir-x/file", Reserved),
            (&long_segment, SegmentTooLong),
            (&long_path, TooLong),
        ];
        for (input, want) in cases {
            assert_eq!(StorePath::parse(input), Err(*want), "{input:?}");
        }
    }

    #[test]
    fn invisible_characters_are_exactly_the_listed_ones() {
        // Neighbours of each range are visible characters and stay accepted.
        for c in [
            '\u{00AC}', '\u{00AE}', '\u{200A}', '\u{2010}', '\u{2027}', '\u{202F}',
        ] {
            assert!(!is_invisible_or_bidi(c), "{c:?}");
            assert!(StorePath::parse(&format!("a{c}b")).is_ok(), "{c:?}");
        }
        let bidi = ('\u{202A}'..='\u{202E}').chain('\u{2066}'..='\u{2069}');
        let zero_width = '\u{200B}'..='\u{200F}';
        for c in bidi
            .chain(zero_width)
            .chain(['\u{2028}', '\u{2029}', '\u{FEFF}', '\u{061C}'])
        {
            assert!(is_invisible_or_bidi(c), "{c:?}");
        }
        assert_eq!(validate_name("a/b"), Err(PathError::Separator));
        assert_eq!(
            validate_name("a\u{202E}"),
            Err(PathError::InvisibleCharacter)
        );
        assert_eq!(validate_name("ok.txt"), Ok(()));
    }

    #[test]
    fn limits_are_inclusive() {
        let segment = "x".repeat(MAX_SEGMENT_LEN);
        assert!(StorePath::parse(&segment).is_ok());
        let mut path = "a/".repeat((MAX_PATH_LEN - 1) / 2);
        while path.len() < MAX_PATH_LEN {
            path.push('b');
        }
        assert_eq!(path.len(), MAX_PATH_LEN);
        assert!(StorePath::parse(&path).is_ok());
    }

    #[test]
    fn splits_parent_and_name() {
        let p = StorePath::parse("a/b/c.txt").unwrap();
        assert_eq!(p.file_name(), "c.txt");
        assert_eq!(p.parent_segments().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(p.segments().count(), 3);
        let p = StorePath::parse("top").unwrap();
        assert_eq!(p.file_name(), "top");
        assert_eq!(p.parent_segments().count(), 0);
    }
}
