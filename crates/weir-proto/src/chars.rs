//! Character classes of RFC 9110 as 256-entry tables: one load per byte on hot paths (response
//! headers are checked on every response, chunk extensions and trailers on every chunked body).
//!
//! The one definition of each class in weir: the parser, the body decoder, the encoder and the
//! digest field grammar (`digest_fields`) all ask here, and other crates use these functions
//! rather than writing the classes again.

/// Builds a 256-entry table from a `const fn(u8) -> bool`, at compile time.
macro_rules! table {
    ($pred:ident) => {{
        let mut t = [false; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = $pred(i as u8);
            i += 1;
        }
        t
    }};
}

/// `tchar` of RFC 9110 §5.6.2: the characters of a token.
const fn tchar(b: u8) -> bool {
    matches!(b,
        b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`'
        | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
}

/// `field-vchar / SP / HTAB` (RFC 9110 §5.5), obs-text included: what a field value may hold.
const fn field_value_char(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// `qdtext` of RFC 9110 §5.6.4: what a quoted string holds unescaped.
const fn qdtext(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5B | 0x5D..=0x7E | 0x80..=0xFF)
}

/// `field-vchar` of RFC 9110 §5.5: `VCHAR / obs-text`, a visible character of a field value.
const fn field_vchar(b: u8) -> bool {
    matches!(b, 0x21..=0x7E | 0x80..=0xFF)
}

/// `etagc` of RFC 9110 §8.8.3: what an entity tag holds between its quotes (visible, not `"`).
const fn etagc(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x7E | 0x80..=0xFF)
}

/// The bytes of a reg-name (RFC 3986 §3.2.2): unreserved, sub-delims and `%` of
/// pct-encoded.
const fn reg_name(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'%'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
        )
}

static TCHAR: [bool; 256] = table!(tchar);
static REG_NAME: [bool; 256] = table!(reg_name);
static FIELD_VALUE: [bool; 256] = table!(field_value_char);
static QDTEXT: [bool; 256] = table!(qdtext);
static FIELD_VCHAR: [bool; 256] = table!(field_vchar);
static ETAGC: [bool; 256] = table!(etagc);

/// Whether `b` is a `tchar` (RFC 9110 §5.6.2).
pub fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}

/// Whether `b` is `qdtext` (RFC 9110 §5.6.4).
pub fn is_qdtext(b: u8) -> bool {
    QDTEXT[usize::from(b)]
}

/// Whether `b` is a `field-vchar` (RFC 9110 §5.5): `VCHAR` or `obs-text`.
pub fn is_field_vchar(b: u8) -> bool {
    FIELD_VCHAR[usize::from(b)]
}

/// Whether every byte of `s` is a `tchar` (RFC 9110 §5.6.2) and `s` is not empty: a token.
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| TCHAR[usize::from(b)])
}

/// Whether `b` is an `etagc` (RFC 9110 §8.8.3): a byte of an entity tag's opaque part.
pub fn is_etagc(b: u8) -> bool {
    ETAGC[usize::from(b)]
}

/// Whether `b` may appear in a `Host` name (reg-name or IPv4 address).
pub fn is_reg_name_byte(b: u8) -> bool {
    REG_NAME[usize::from(b)]
}

/// Whether `s` can be a field value on the wire: no CR, LF, NUL or other control character.
pub fn is_field_value(s: &[u8]) -> bool {
    s.iter().all(|&b| FIELD_VALUE[usize::from(b)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_match_the_grammar() {
        let delimiters = b"\"(),/:;<=>?@[\\]{}";
        for b in 0..=255u8 {
            let visible = b.is_ascii_graphic();
            assert_eq!(is_tchar(b), visible && !delimiters.contains(&b), "{b:#x}");
            assert_eq!(is_field_vchar(b), visible || b >= 0x80, "{b:#x}");
            let quoted = (visible || b >= 0x80 || b == b' ' || b == b'\t') && !b"\"\\".contains(&b);
            assert_eq!(is_qdtext(b), quoted, "{b:#x}");
            assert_eq!(is_etagc(b), (visible || b >= 0x80) && b != b'"', "{b:#x}");
        }
        assert!(is_token(b"Content-Type"));
        assert!(!is_token(b""));
        assert!(!is_token(b"a b"));
        assert!(!is_token(b"x[y]"));
        assert!(is_field_value(b"text/plain; q=\"1\"\t\xff"));
        assert!(!is_field_value(b"a\r\nb"));
        assert!(!is_field_value(b"a\0"));
        assert!(!is_field_value(b"\x7f"));
    }
}
