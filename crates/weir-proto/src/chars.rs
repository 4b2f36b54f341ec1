//! Character classes of RFC 9110 as 256-entry tables: one load per byte on hot paths (response
//! headers are checked on every response).

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

const fn tchar(b: u8) -> bool {
    matches!(b,
        b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`'
        | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
}

/// `field-vchar / SP / HTAB` (RFC 9110 §5.5), obs-text included: what a field value may hold.
const fn field_value_char(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
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

/// Whether every byte of `s` is a `tchar` (RFC 9110 §5.6.2) and `s` is not empty: a token.
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| TCHAR[usize::from(b)])
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
        for b in 0..=255u8 {
            assert_eq!(TCHAR[usize::from(b)], crate::framing::is_tchar(b), "{b:#x}");
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
