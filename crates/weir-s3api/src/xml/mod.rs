//! S3's XML: the error bodies ([`errors`]), the answers' writers ([`mod@write`]) and the bounded
//! parser of the request bodies clients send ([`parse`]).
//!
//! Writing is by hand, into any `io::Write`, through [`write::Xml`] with one escaping function
//! ([`escape_into`]): S3's answers are flat and fixed in shape, so a writer that emits an entry
//! at a time keeps a 1000-key listing's memory to the output buffer alone, without building a
//! tree or a serde model. Parsing uses quick-xml (the maintained standard), refusing `DOCTYPE`
//! (so no entity can be defined, and none expanded), bounding size and depth.

pub mod errors;
pub mod parse;
pub mod write;

/// S3's XML namespace.
pub const NAMESPACE: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// Appends `text` escaped for XML character data and attribute values: `<>&"'` as entities,
/// control characters other than tab, LF and CR (which XML 1.0 cannot carry at all) as
/// numeric references, as S3 does, so a key with `\u{1}` survives a listing (XML 1.1 readers
/// accept them; XML 1.0 ones refuse, as they refuse S3's). CR is written `&#13;` so that a
/// parser's end-of-line normalization cannot turn it into LF.
pub fn escape_into(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let replacement: &[u8] = match b {
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'&' => b"&amp;",
            b'"' => b"&quot;",
            b'\'' => b"&apos;",
            b'\t' | b'\n' => continue,
            0..=0x1f | 0x7f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(b"&#");
                out.extend_from_slice(b.to_string().as_bytes());
                out.push(b';');
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(replacement);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_controls() {
        let mut out = Vec::new();
        escape_into(&mut out, "a<b>&\"c'\u{1}\r\t\n\u{7f}é");
        assert_eq!(
            out,
            "a&lt;b&gt;&amp;&quot;c&apos;&#1;&#13;\t\n&#127;é".as_bytes()
        );
    }
}
