//! A streaming `multipart/form-data` parser (RFC 7578, RFC 2046 §5.1), sans I/O.
//!
//! The caller keeps the bytes in its own buffer and calls [`Parser::step`] on what it holds;
//! each step consumes a prefix and may yield one [`Event`]. Part data comes out as slices of the
//! caller's buffer (no copy): everything up to a possible delimiter is handed out at once, and
//! only the last `delimiter − 1` bytes are held back in case a delimiter straddles two reads.
//! Memory is bounded by the caller's buffer; part headers are bounded by [`MAX_PART_HEAD`].
//!
//! ```text
//! Preamble ──"--boundary"──► AfterDelimiter ──"--"──► Done (epilogue ignored)
//!                                 │ ▲
//!                        [WSP] CRLF │ "\r\n--boundary"
//!                                 ▼ │
//!                              Headers ──CRLFCRLF──► Body
//! ```

use memchr::memmem::Finder;

/// Largest header section of one part. Browsers send two or three short headers.
pub(crate) const MAX_PART_HEAD: usize = 8 * 1024;

/// Longest boundary allowed by RFC 2046 §5.1.1.
const MAX_BOUNDARY: usize = 70;

/// What a step found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event<'a> {
    /// A part begins, with these headers.
    Part(PartHead),
    /// Data of the current part (a slice of the input).
    Data(&'a [u8]),
    /// The current part ended.
    PartEnd,
    /// The close delimiter: no more parts.
    End,
}

/// The headers of a part that matter here.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PartHead {
    /// The form field name.
    pub(crate) name: Option<String>,
    /// The file name, for file fields.
    pub(crate) filename: Option<String>,
    /// The part's `Content-Type`, when it is a media type (kept with the stored file).
    pub(crate) content_type: Option<weir_store::MediaType>,
}

/// A malformed body (400).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MultipartError(pub(crate) &'static str);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Preamble { at_start: bool },
    AfterDelimiter,
    Headers,
    Body,
    Done,
}

/// The parser for one body.
pub(crate) struct Parser {
    /// `"\r\n--" + boundary`; the first delimiter may lack the CRLF.
    delimiter: Vec<u8>,
    finder: Finder<'static>,
    state: State,
}

impl Parser {
    /// A parser for `boundary` (from the `Content-Type` parameter).
    pub(crate) fn new(boundary: &str) -> Result<Self, MultipartError> {
        if boundary.is_empty() || boundary.len() > MAX_BOUNDARY {
            return Err(MultipartError("invalid multipart boundary"));
        }
        let mut delimiter = b"\r\n--".to_vec();
        delimiter.extend_from_slice(boundary.as_bytes());
        let finder = Finder::new(&delimiter).into_owned();
        Ok(Self {
            delimiter,
            finder,
            state: State::Preamble { at_start: true },
        })
    }

    /// Whether the close delimiter has been seen.
    pub(crate) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes a prefix of `input` and returns how long it was, with the event it completed;
    /// `None` means more input is needed (after dropping the consumed bytes).
    pub(crate) fn step<'a>(
        &mut self,
        input: &'a [u8],
    ) -> Result<(usize, Option<Event<'a>>), MultipartError> {
        let mut offset = 0;
        loop {
            let rest = &input[offset..];
            let before = self.state;
            let (consumed, event) = match self.state {
                State::Preamble { at_start } => (self.preamble(rest, at_start), None),
                State::AfterDelimiter => self.after_delimiter(rest)?,
                State::Headers => self.headers(rest)?,
                State::Body => self.body(rest),
                // The epilogue is ignored.
                State::Done => (rest.len(), None),
            };
            offset += consumed;
            // A state change without an event (a delimiter's CRLF, the preamble's end) may
            // leave more to parse in the same input.
            if event.is_some() || self.state == before || self.state == State::Done {
                return Ok((offset, event));
            }
        }
    }

    fn preamble(&mut self, input: &[u8], at_start: bool) -> usize {
        let dash_boundary = &self.delimiter[2..];
        if at_start {
            if input.len() < dash_boundary.len() && dash_boundary.starts_with(input) {
                return 0;
            }
            if input.starts_with(dash_boundary) {
                self.state = State::AfterDelimiter;
                return dash_boundary.len();
            }
            self.state = State::Preamble { at_start: false };
        }
        match self.finder.find(input) {
            Some(pos) => {
                self.state = State::AfterDelimiter;
                pos + self.delimiter.len()
            }
            None => input.len().saturating_sub(self.delimiter.len() - 1),
        }
    }

    fn after_delimiter<'a>(
        &mut self,
        input: &'a [u8],
    ) -> Result<(usize, Option<Event<'a>>), MultipartError> {
        if input.starts_with(b"--") {
            self.state = State::Done;
            return Ok((2, Some(Event::End)));
        }
        // Transport padding (RFC 2046 §5.1.1), then CRLF.
        let padding = input
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        let rest = &input[padding..];
        if rest.len() < 2 {
            if padding > 64 {
                return Err(MultipartError("malformed multipart delimiter"));
            }
            return Ok((0, None));
        }
        if !rest.starts_with(b"\r\n") {
            return Err(MultipartError("malformed multipart delimiter"));
        }
        self.state = State::Headers;
        Ok((padding + 2, None))
    }

    fn headers<'a>(
        &mut self,
        input: &'a [u8],
    ) -> Result<(usize, Option<Event<'a>>), MultipartError> {
        let mut slots = [httparse::EMPTY_HEADER; 16];
        match httparse::parse_headers(input, &mut slots) {
            // Whether the head came in one read or in many, the limit is the same: its length.
            Ok(httparse::Status::Complete((len, _))) if len > MAX_PART_HEAD => {
                Err(MultipartError("multipart part headers too large"))
            }
            Ok(httparse::Status::Complete((len, headers))) => {
                let mut head = PartHead::default();
                let mut content_type = None;
                for h in headers {
                    if h.name.eq_ignore_ascii_case("content-disposition") {
                        let value = std::str::from_utf8(h.value)
                            .map_err(|_| MultipartError("Content-Disposition is not UTF-8"))?;
                        head = content_disposition(value)?;
                    } else if h.name.eq_ignore_ascii_case("content-type") {
                        // Not a media type: ignored (the file then goes by its extension).
                        content_type = weir_store::MediaType::parse(h.value);
                    }
                }
                head.content_type = content_type;
                self.state = State::Body;
                Ok((len, Some(Event::Part(head))))
            }
            Ok(httparse::Status::Partial) if input.len() > MAX_PART_HEAD => {
                Err(MultipartError("multipart part headers too large"))
            }
            Ok(httparse::Status::Partial) => Ok((0, None)),
            Err(httparse::Error::TooManyHeaders) => {
                Err(MultipartError("too many multipart part headers"))
            }
            Err(_) => Err(MultipartError("malformed multipart part headers")),
        }
    }

    fn body<'a>(&mut self, input: &'a [u8]) -> (usize, Option<Event<'a>>) {
        match self.finder.find(input) {
            Some(0) => {
                self.state = State::AfterDelimiter;
                (self.delimiter.len(), Some(Event::PartEnd))
            }
            Some(pos) => (pos, Some(Event::Data(&input[..pos]))),
            None => {
                // Everything but a tail that could be the start of a delimiter.
                let safe = input.len().saturating_sub(self.delimiter.len() - 1);
                if safe == 0 {
                    (0, None)
                } else {
                    (safe, Some(Event::Data(&input[..safe])))
                }
            }
        }
    }
}

/// The `boundary` parameter of a `multipart/form-data` media type.
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    let mut parts = split_params(content_type);
    let media_type = parts.next()?.trim();
    if !media_type.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    parts
        .filter_map(|p| param(p))
        .find(|(k, _)| k.eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v)
}

/// `form-data; name="field"; filename="a.txt"` (and `filename*=UTF-8''...`, RFC 5987).
fn content_disposition(value: &str) -> Result<PartHead, MultipartError> {
    let (kind, head) = disposition(value)?;
    if !kind.eq_ignore_ascii_case("form-data") {
        return Err(MultipartError("part is not form-data"));
    }
    Ok(head)
}

/// The file name of a request's `Content-Disposition` (RFC 6266: `inline` or `attachment`,
/// `filename` or `filename*`), read as a part's is; `Ok(None)` without one.
pub(crate) fn request_filename(value: &str) -> Result<Option<String>, MultipartError> {
    let (kind, head) = disposition(value)?;
    if !kind.eq_ignore_ascii_case("inline") && !kind.eq_ignore_ascii_case("attachment") {
        return Err(MultipartError(
            "Content-Disposition must be inline or attachment",
        ));
    }
    Ok(head.filename)
}

/// The disposition type and the parameters that matter here.
fn disposition(value: &str) -> Result<(&str, PartHead), MultipartError> {
    let mut parts = split_params(value);
    let kind = parts.next().unwrap_or("").trim();
    let mut head = PartHead::default();
    let mut extended = None;
    for (key, val) in parts.filter_map(param) {
        if key.eq_ignore_ascii_case("name") {
            head.name = Some(val);
        } else if key.eq_ignore_ascii_case("filename") {
            head.filename = Some(val);
        } else if key.eq_ignore_ascii_case("filename*") {
            extended = Some(val);
        }
    }
    if let Some(ext) = extended {
        // `UTF-8''percent-encoded`; takes precedence over `filename` (RFC 6266 §4.3).
        let (charset, rest) = ext
            .split_once('\'')
            .ok_or(MultipartError("malformed filename*"))?;
        let (_, encoded) = rest
            .split_once('\'')
            .ok_or(MultipartError("malformed filename*"))?;
        if !charset.eq_ignore_ascii_case("utf-8") {
            return Err(MultipartError("filename* charset is not UTF-8"));
        }
        let decoded = super::target::percent_decode(encoded)
            .map_err(|_| MultipartError("malformed filename*"))?;
        head.filename = Some(decoded);
    }
    Ok((kind, head))
}

/// Splits at `;` outside quoted strings. A quoted string ends at the next `"`: there is no
/// quoted-pair escape in form-data parameters (see [`param`]).
fn split_params(value: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(value);
    std::iter::from_fn(move || {
        let s = rest?;
        let mut quoted = false;
        for (i, c) in s.char_indices() {
            match c {
                '"' => quoted = !quoted,
                ';' if !quoted => {
                    rest = Some(&s[i + 1..]);
                    return Some(&s[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(s)
    })
}

/// `key=value` or `key="quoted value"`, unquoted the way browsers quote: the WHATWG HTML
/// standard's form-data encoding writes `"` as `%22`, LF as `%0A` and CR as `%0D`, and leaves
/// every other byte alone, backslashes included (`filename="C:\x\y.txt"` from an old browser
/// sending a full path). So a backslash is a plain character here, never an escape (reading it
/// as RFC 9110's quoted-pair would silently turn that name into `C:xy.txt`; kept, it reaches
/// `StorePath` and is refused with a 400), and exactly those three escapes are decoded (the
/// Fetch standard's "parse a multipart/form-data name").
fn param(p: &str) -> Option<(&str, String)> {
    let (key, value) = p.split_once('=')?;
    let key = key.trim();
    let value = value.trim();
    let value = match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => inner
            .replace("%22", "\"")
            .replace("%0A", "\n")
            .replace("%0D", "\r"),
        None => value.to_owned(),
    };
    Some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (field name, file name, data) of one part.
    type Parsed = (Option<String>, Option<String>, Vec<u8>);

    /// Runs the parser over `body` fed in pieces of `piece` bytes, the way the handler does
    /// (keeping unconsumed bytes), and returns (name, filename, data) per part.
    fn parse_all(boundary: &str, body: &[u8], piece: usize) -> Result<Vec<Parsed>, MultipartError> {
        let mut p = Parser::new(boundary)?;
        let mut parts = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut fed = 0;
        loop {
            loop {
                let (consumed, event) = p.step(&buf)?;
                let mut done = event.is_none();
                match event {
                    Some(Event::Part(h)) => parts.push((h.name, h.filename, Vec::new())),
                    Some(Event::Data(d)) => parts
                        .last_mut()
                        .ok_or(MultipartError("data outside a part"))?
                        .2
                        .extend_from_slice(d),
                    Some(Event::PartEnd) => {}
                    Some(Event::End) => done = false,
                    None => {}
                }
                buf.drain(..consumed);
                if done {
                    break;
                }
            }
            if fed == body.len() {
                break;
            }
            let n = piece.min(body.len() - fed);
            buf.extend_from_slice(&body[fed..fed + n]);
            fed += n;
        }
        if !p.is_done() {
            return Err(MultipartError("truncated"));
        }
        Ok(parts)
    }

    const BODY: &[u8] = b"preamble\r\n--XyZ\r\n\
Content-Disposition: form-data; name=\"note\"\r\n\r\n\
hello\r\n--XyZ\r\n\
Content-Disposition: form-data; name=\"file\"; filename=\"a %22b%22.bin\"\r\n\
Content-Type: application/octet-stream\r\n\r\n\
\r\n--XyNOT a delimiter\r\n-\r\n--XyZ  \r\n\
Content-Disposition: form-data; name=\"f2\"; filename=\"x.txt\"; filename*=UTF-8''%C3%A9.txt\r\n\r\n\
\r\n--XyZ--\r\nepilogue";

    #[test]
    fn parses_at_every_split() {
        let want = vec![
            (Some("note".to_owned()), None, b"hello".to_vec()),
            (
                Some("file".to_owned()),
                Some("a \"b\".bin".to_owned()),
                b"\r\n--XyNOT a delimiter\r\n-".to_vec(),
            ),
            (
                Some("f2".to_owned()),
                Some("é.txt".to_owned()),
                b"".to_vec(),
            ),
        ];
        for piece in 1..=BODY.len() {
            assert_eq!(
                parse_all("XyZ", BODY, piece).unwrap(),
                want,
                "piece {piece}"
            );
        }
    }

    #[test]
    fn body_may_start_with_the_delimiter() {
        let body = b"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f\"\r\n\r\n12345\r\n--b--";
        for piece in 1..=body.len() {
            let parts = parse_all("b", body, piece).unwrap();
            assert_eq!(parts.len(), 1);
            assert_eq!(parts[0].2, b"12345");
        }
    }

    #[test]
    fn errors() {
        assert!(Parser::new("").is_err());
        assert!(Parser::new(&"x".repeat(71)).is_err());
        let truncated = b"--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n123";
        assert!(parse_all("b", truncated, 7).is_err());
        let bad_delim = b"--bX\r\n";
        assert_eq!(
            parse_all("b", bad_delim, 100),
            Err(MultipartError("malformed multipart delimiter"))
        );
        let not_form = b"--b\r\nContent-Disposition: attachment\r\n\r\nx\r\n--b--";
        assert!(parse_all("b", not_form, 100).is_err());
        let mut huge = b"--b\r\nX: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_PART_HEAD + 10));
        assert_eq!(
            parse_all("b", &huge, 1000),
            Err(MultipartError("multipart part headers too large"))
        );
    }

    #[test]
    fn a_requests_disposition_names_its_file() {
        let v = r#"inline; filename="file name.jpg"; filename*=UTF-8''%C3%A9t%C3%A9.jpg"#;
        assert_eq!(request_filename(v).unwrap().as_deref(), Some("été.jpg"));
        let v = r#"attachment; filename="a b.bin""#;
        assert_eq!(request_filename(v).unwrap().as_deref(), Some("a b.bin"));
        assert_eq!(request_filename("inline").unwrap(), None);
        assert!(request_filename(r#"form-data; filename="x""#).is_err());
        assert!(request_filename("inline; filename*=latin1''x").is_err());
    }

    #[test]
    fn backslash_is_a_plain_character_in_file_names() {
        // What a browser sends for a full Windows path: the backslashes as they are.
        let head = content_disposition(r#"form-data; name="f"; filename="C:\x\y.txt""#).unwrap();
        assert_eq!(head.filename.as_deref(), Some(r"C:\x\y.txt"));
        // A trailing backslash does not escape the closing quote; `;` after it splits.
        let head = content_disposition(r#"form-data; filename="a\"; name="n""#).unwrap();
        assert_eq!(head.filename.as_deref(), Some(r"a\"));
        assert_eq!(head.name.as_deref(), Some("n"));
        // Exactly the three escapes browsers write are decoded.
        let head = content_disposition(r#"form-data; filename="q%22%0A%0D%41.txt""#).unwrap();
        assert_eq!(head.filename.as_deref(), Some("q\"\n\r%41.txt"));
    }

    #[test]
    fn part_head_limit_holds_at_any_split() {
        let part = |value_len: usize| {
            let mut body = b"--b\r\nContent-Disposition: form-data; name=\"f\"\r\nX: ".to_vec();
            body.extend(std::iter::repeat_n(b'a', value_len));
            body.extend_from_slice(b"\r\n\r\nx\r\n--b--");
            body
        };
        // The head (after the delimiter line) of `part(n)` is this much longer than `n`.
        let overhead = "Content-Disposition: form-data; name=\"f\"\r\nX: \r\n\r\n".len();
        let fits = part(MAX_PART_HEAD - overhead);
        let over = part(MAX_PART_HEAD - overhead + 1);
        for piece in [1, 100, 4096, MAX_PART_HEAD - 1, MAX_PART_HEAD, 1 << 20] {
            assert_eq!(
                parse_all("b", &fits, piece).unwrap().len(),
                1,
                "piece {piece}"
            );
            assert_eq!(
                parse_all("b", &over, piece),
                Err(MultipartError("multipart part headers too large")),
                "piece {piece}"
            );
        }
    }

    #[test]
    fn boundaries_from_content_type() {
        assert_eq!(
            boundary("multipart/form-data; boundary=abc").as_deref(),
            Some("abc")
        );
        assert_eq!(
            boundary("Multipart/Form-Data;charset=x; BOUNDARY=\"a;b c\"").as_deref(),
            Some("a;b c")
        );
        assert_eq!(boundary("multipart/mixed; boundary=abc"), None);
        assert_eq!(boundary("multipart/form-data"), None);
        assert_eq!(boundary("application/json"), None);
    }
}
