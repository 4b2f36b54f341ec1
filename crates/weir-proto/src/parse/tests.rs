//! Every case is fed whole, one byte at a time, and split in two at every offset; all three must
//! agree. That catches parsers that only work when a head arrives in one read.

use super::*;
use crate::Framing;

#[derive(Debug, PartialEq)]
struct Parsed {
    consumed: usize,
    method: Method,
    target: String,
    version: Version,
    headers: Vec<(String, Vec<u8>)>,
    framing: Framing,
    keep_alive: bool,
    expect_continue: bool,
}

fn feed(chunks: &[&[u8]], limits: &Limits) -> Result<Option<Parsed>, ProtoError> {
    let mut parser = HeadParser::new();
    let mut head = RequestHead::new();
    let mut buf = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        if let Some(consumed) = parser.parse(&buf, limits, &mut head)? {
            return Ok(Some(Parsed {
                consumed,
                method: head.method().clone(),
                target: head.target().to_owned(),
                version: head.version(),
                headers: head
                    .headers()
                    .map(|(n, v)| (n.to_owned(), v.to_vec()))
                    .collect(),
                framing: head.framing(),
                keep_alive: head.keep_alive(),
                expect_continue: head.expect_continue(),
            }));
        }
    }
    Ok(None)
}

/// Parses `input` whole, byte by byte, and split at every offset; asserts they agree.
fn parse_with(input: &[u8], limits: &Limits) -> Result<Option<Parsed>, ProtoError> {
    let whole = feed(&[input], limits);
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(
        feed(&bytes, limits),
        whole,
        "byte by byte differs for {input:?}"
    );
    for at in 1..input.len() {
        let (a, b) = input.split_at(at);
        assert_eq!(
            feed(&[a, b], limits),
            whole,
            "split at {at} differs for {input:?}"
        );
    }
    whole
}

fn parse(input: &[u8]) -> Result<Option<Parsed>, ProtoError> {
    parse_with(input, &Limits::default())
}

fn parsed(input: &[u8]) -> Parsed {
    match parse(input) {
        Ok(Some(p)) => p,
        other => panic!(
            "{:?} did not parse: {other:?}",
            String::from_utf8_lossy(input)
        ),
    }
}

fn err(input: &[u8]) -> ProtoError {
    match parse(input) {
        Err(e) => e,
        other => panic!(
            "{:?} was accepted: {other:?}",
            String::from_utf8_lossy(input)
        ),
    }
}

#[test]
fn simple_get() {
    let p = parsed(b"GET /hello?x=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n");
    assert_eq!(p.method, Method::GET);
    assert_eq!(p.target, "/hello?x=1");
    assert_eq!(p.version, Version::HTTP_11);
    assert_eq!(p.headers.len(), 2);
    assert_eq!(p.headers[0], ("Host".into(), b"example.com".to_vec()));
    assert_eq!(p.framing, Framing::Length(0));
    assert!(p.keep_alive);
    assert!(!p.expect_continue);
}

#[test]
fn consumed_stops_at_head_end() {
    let input = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
    let p = parsed(input);
    assert_eq!(p.consumed, input.len() - 5);
    assert_eq!(p.framing, Framing::Length(5));
}

#[test]
fn leading_empty_lines_are_skipped() {
    let p = parsed(b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(p.target, "/");
    assert_eq!(p.consumed, 4 + 27);
}

#[test]
fn incomplete_head_waits() {
    for input in [
        &b"GET / HTTP/1.1\r\nHost: a\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: a\r\n\r",
        b"GE",
        b"\r",
    ] {
        assert_eq!(parse(input), Ok(None), "{input:?}");
    }
}

#[test]
fn header_values_are_trimmed() {
    let p = parsed(b"GET / HTTP/1.1\r\nHost: a\r\nX-A: \t spaced \t\r\nX-B:\r\n\r\n");
    assert_eq!(p.headers[1].1, b"spaced");
    assert_eq!(p.headers[2].1, b"");
}

#[test]
fn keep_alive_rules() {
    assert!(parsed(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").keep_alive);
    assert!(!parsed(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").keep_alive);
    assert!(!parsed(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, Close\r\n\r\n").keep_alive);
    assert!(!parsed(b"GET / HTTP/1.0\r\n\r\n").keep_alive);
    assert!(parsed(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
}

#[test]
fn expect_continue() {
    let p =
        parsed(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n");
    assert!(p.expect_continue);
    let p = parsed(b"PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n");
    assert!(!p.expect_continue, "HTTP/1.0 expectations are ignored");
    assert_eq!(
        err(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n"),
        ProtoError::UnsupportedExpectation
    );
}

#[test]
fn unknown_expectations_ignored_when_not_refused() {
    let lenient = Limits::default().with_refuse_unknown_expectations(false);
    for value in [&b"200-ok"[..], b"", b"100-continue, x"] {
        let mut raw = b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: ".to_vec();
        raw.extend_from_slice(value);
        raw.extend_from_slice(b"\r\nContent-Length: 1\r\n\r\n");
        let p = match parse_with(&raw, &lenient) {
            Ok(Some(p)) => p,
            other => panic!("{value:?} was not accepted: {other:?}"),
        };
        assert!(!p.expect_continue, "{value:?} is not 100-continue");
        assert_eq!(p.framing, Framing::Length(1));
        assert_eq!(
            err(&raw),
            ProtoError::UnsupportedExpectation,
            "refused by default"
        );
    }
    let p = match parse_with(
        b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
        &lenient,
    ) {
        Ok(Some(p)) => p,
        other => panic!("100-continue was not accepted: {other:?}"),
    };
    assert!(p.expect_continue, "100-continue still expects");
}

#[test]
fn chunked_framing() {
    let p = parsed(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(p.framing, Framing::Chunked);
}

#[test]
fn framing_errors() {
    use ProtoError::*;
    let cases: &[(&[u8], ProtoError)] = &[
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", ContentLengthWithTransferEncoding),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", InvalidContentLength),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1,2\r\n\r\n", InvalidContentLength),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", InvalidContentLength),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", InvalidContentLength),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", InvalidContentLength),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", ChunkedNotFinal),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", ChunkedNotFinal),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", ChunkedNotFinal),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", UnknownTransferCoding),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", TransferEncodingInHttp10),
    ];
    for (input, expected) in cases {
        assert_eq!(
            err(input),
            *expected,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn syntax_errors() {
    use ProtoError::*;
    let cases: &[(&[u8], ProtoError)] = &[
        (b"GET / HTTP/1.1\nHost: a\r\n\r\n", BareLineEnding),
        (b"GET / HTTP/1.1\r\nHost: a\n\r\n", BareLineEnding),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\n", BareLineEnding),
        (b"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", BareLineEnding),
        (b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", BareLineEnding),
        (b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", InvalidHeaderName),
        (b"GET / HTTP/1.1\r\n Host: a\r\n\r\n", InvalidHeaderName),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nX[y]: 1\r\n\r\n",
            InvalidHeaderName,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nX\xffy: 1\r\n\r\n",
            InvalidHeaderName,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
            InvalidHeaderValue,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n",
            InvalidHeaderName,
        ),
        (b"GET / HTTP/1.1\r\n\r\n", InvalidHost),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", InvalidHost),
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", InvalidHost),
        (b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", InvalidHost),
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", UnsupportedVersion),
        (b"GET / HTTP/1.x\r\nHost: a\r\n\r\n", InvalidRequestLine),
        // A space in the target: a bad line, not an unsupported version (400, not 505).
        (b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", InvalidRequestLine),
        (b"GET /a HTTP/2.0 x\r\nHost: a\r\n\r\n", InvalidRequestLine),
        // A version that is not HTTP at all: not an HTTP/1 client (closed unanswered).
        (b"GET / FOO/1.1\r\nHost: a\r\n\r\n", NotHttp),
        (b"INVALID CONNECTION PREFACE\r\n\r\n", NotHttp),
        (b"GET / http/1.1\r\nHost: a\r\n\r\n", InvalidRequestLine),
        (b"GET / HTTP/1\r\nHost: a\r\n\r\n", InvalidRequestLine),
        (b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", InvalidRequestLine),
        (b"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", InvalidRequestLine),
        (b"GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", InvalidTarget),
        (b"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", InvalidTarget),
        (
            b"GET http://a/#b HTTP/1.1\r\nHost: a\r\n\r\n",
            InvalidTarget,
        ),
        (b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", InvalidTarget),
        (b"GET foo HTTP/1.1\r\nHost: a\r\n\r\n", InvalidTarget),
        (b"CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", InvalidTarget),
    ];
    for (input, expected) in cases {
        assert_eq!(
            err(input),
            *expected,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn target_forms() {
    assert_eq!(parsed(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n").target, "*");
    assert_eq!(
        parsed(b"CONNECT a.com:443 HTTP/1.1\r\nHost: a.com:443\r\n\r\n").target,
        "a.com:443"
    );
    assert_eq!(
        parsed(b"GET http://a.com/x HTTP/1.1\r\nHost: a.com\r\n\r\n").target,
        "http://a.com/x"
    );
}

#[test]
fn limits_request_line() {
    let limits = Limits {
        max_request_line: 32,
        ..Limits::default()
    };
    let ok = b"GET /0123456789 HTTP/1.1\r\nHost: a\r\n\r\n";
    assert!(parse_with(ok, &limits).unwrap().is_some());
    let long = b"GET /0123456789012345678 HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_eq!(
        parse_with(long, &limits),
        Err(ProtoError::RequestLineTooLong)
    );
    // Detected before the line ends: a client cannot hold a connection with an endless line.
    assert_eq!(
        parse_with(&[b'a'; 40], &limits),
        Err(ProtoError::RequestLineTooLong)
    );
}

#[test]
fn limits_head_and_count() {
    let limits = Limits {
        max_head: 64,
        max_headers: 3,
        ..Limits::default()
    };
    let ok = b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
    assert!(parse_with(ok, &limits).unwrap().is_some());
    let many = b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    assert_eq!(parse_with(many, &limits), Err(ProtoError::TooManyHeaders));
    let big = b"GET / HTTP/1.1\r\nHost: a\r\nA: 0123456789012345678901234567890123456789\r\n\r\n";
    assert_eq!(parse_with(big, &limits), Err(ProtoError::HeadTooLarge));
    let endless = [&b"GET / HTTP/1.1\r\nA: "[..], &[b'x'; 80]].concat();
    assert_eq!(parse_with(&endless, &limits), Err(ProtoError::HeadTooLarge));
    let blank_lines = b"\r\n".repeat(40);
    assert_eq!(
        parse_with(&blank_lines, &limits),
        Err(ProtoError::HeadTooLarge)
    );
}

#[test]
fn head_is_reused_without_growing() {
    let mut parser = HeadParser::new();
    let mut head = RequestHead::new();
    let input = b"GET /a HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\n";
    parser
        .parse(input, &Limits::default(), &mut head)
        .unwrap()
        .unwrap();
    let input2 = b"GET /b HTTP/1.1\r\nHost: b\r\n\r\n";
    parser
        .parse(input2, &Limits::default(), &mut head)
        .unwrap()
        .unwrap();
    assert_eq!(head.target(), "/b");
    assert_eq!(head.header_count(), 1);
    assert_eq!(head.header("x"), None);
}

/// RFC 9110 §7.2: `Host = uri-host [ ":" port ]`; anything else is a MUST-400 (RFC 9112 §3.2).
#[test]
fn host_grammar() {
    for ok in [
        "a",
        "a.example:8080",
        "a:",
        "127.0.0.1:80",
        "[::1]",
        "[::1]:443",
        "[v1.x]",
        "",
    ] {
        let raw = format!("GET / HTTP/1.1\r\nHost: {ok}\r\n\r\n");
        assert!(parse(raw.as_bytes()).is_ok(), "{ok:?} rejected");
    }
    for bad in [
        "a:b", "a:1:2", "user@a", "[::1", "[]", "[::1]x", "[::1]:x", "a]", "a[b", "a/b",
    ] {
        let raw = format!("GET / HTTP/1.1\r\nHost: {bad}\r\n\r\n");
        assert_eq!(err(raw.as_bytes()), ProtoError::InvalidHost, "{bad:?}");
    }
    // CONNECT's authority-form uses the same grammar.
    assert_eq!(
        err(b"CONNECT a:b HTTP/1.1\r\nHost: a\r\n\r\n"),
        ProtoError::InvalidTarget
    );
}

/// Found by fuzzing: the first violation in byte order decides the error, whatever the reads.
/// A bare CR just past the request-line limit was a 400 when it arrived in the same read as
/// the start of the line and a 414 when it came in a later one; same for the head limit.
#[test]
fn first_violation_wins_whatever_the_split() {
    let limits = Limits {
        max_request_line: 16,
        max_head: 40,
        ..Limits::default()
    };
    let line = b"GET /aaaaaaaaaaaaaaaaaaaa\rx HTTP/1.1\r\n\r\n";
    assert_eq!(
        parse_with(line, &limits),
        Err(ProtoError::RequestLineTooLong)
    );
    let head = [&b"GET / HTTP/1.1\r\nX: "[..], &[b'v'; 30], b"\rx\r\n\r\n"].concat();
    assert_eq!(parse_with(&head, &limits), Err(ProtoError::HeadTooLarge));
    // Within the limits the bare CR is what is wrong.
    assert_eq!(
        parse_with(b"GET /a\rb HTTP/1.1\r\n\r\n", &limits),
        Err(ProtoError::BareLineEnding)
    );
    // A bare LF just inside the request-line limit, another just past it: the first decides.
    let line = [&b"GET /"[..], &[b'a'; 10], b"\n\nHost: a\r\n\r\n"].concat();
    assert_eq!(line.iter().position(|&b| b == b'\n'), Some(15));
    assert_eq!(parse_with(&line, &limits), Err(ProtoError::BareLineEnding));
}

/// The CR-LF fast path of `HeadParser::scan` decides nothing the byte-by-byte rules would not:
/// a bare CR first in the buffer, or right after a line's CRLF, is a bare line ending.
#[test]
fn a_bare_cr_anywhere_is_a_bare_line_ending() {
    for input in [
        &b"\rGET / HTTP/1.1\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: a\r\n\rx",
        b"GET / HTTP/1.1\r\nHost: a\r\n\rX: b\r\n\r\n",
    ] {
        assert_eq!(
            parse(input),
            Err(ProtoError::BareLineEnding),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

// ---- Rules pinned by mutation testing (issue 19): each test below kills mutants that every
// other test let live. See docs/archive/RELIABILITY-history.md, "mutation testing of the protocol
// core".

/// `GET /aaa… HTTP/1.1\r\n` padded so that the request line, CRLF included, is `len` bytes.
fn request_line(len: usize) -> Vec<u8> {
    let fixed = "GET / HTTP/1.1\r\n".len();
    format!("GET /{} HTTP/1.1\r\n", "a".repeat(len - fixed)).into_bytes()
}

/// `Limits::max_request_line` counts the request line with its CRLF: a line of exactly the
/// limit is accepted, one byte more is 414, at every split of the input.
#[test]
fn request_line_limit_is_exact() {
    let limits = Limits {
        max_request_line: 32,
        ..Limits::default()
    };
    let at_limit = [request_line(32), b"Host: a\r\n\r\n".to_vec()].concat();
    assert_eq!(
        parse_with(&at_limit, &limits).unwrap().unwrap().consumed,
        43
    );
    let over = [request_line(33), b"Host: a\r\n\r\n".to_vec()].concat();
    assert_eq!(
        parse_with(&over, &limits),
        Err(ProtoError::RequestLineTooLong)
    );
    // Empty lines before the request line are not part of it (they count toward the head).
    let after_blank_lines = [b"\r\n\r\n\r\n".to_vec(), at_limit].concat();
    assert!(parse_with(&after_blank_lines, &limits).unwrap().is_some());
    // 414 comes with the first byte past the limit: `max_request_line` bytes without a line
    // ending wait for the next byte, which decides.
    assert_eq!(parse_with(&[b'a'; 32], &limits), Ok(None));
    assert_eq!(
        parse_with(&[b'a'; 33], &limits),
        Err(ProtoError::RequestLineTooLong)
    );
    // The byte that crosses the limit decides, not an earlier one: 31 bytes without a line
    // ending are still a possible line, so a bare CR after them is what is wrong.
    let bare_cr = [&[b'a'; 31][..], b"\rx HTTP/1.1\r\n\r\n"].concat();
    assert_eq!(
        parse_with(&bare_cr, &limits),
        Err(ProtoError::BareLineEnding)
    );
}

/// `Limits::max_head` counts the head from the request line to the empty line that ends it,
/// CRLFs included: a head of exactly the limit is accepted, one byte more is 431, whatever
/// follows it in the buffer and at every split.
#[test]
fn head_limit_is_exact() {
    let limits = Limits {
        max_head: 48,
        ..Limits::default()
    };
    let head = |value_len: usize| {
        format!(
            "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
            "v".repeat(value_len)
        )
        .into_bytes()
    };
    assert_eq!(head(16).len(), 48);
    assert_eq!(
        parse_with(&head(16), &limits).unwrap().unwrap().consumed,
        48
    );
    let with_body = [head(16), b"POST / HTTP/1.1\r\n".to_vec()].concat();
    assert_eq!(
        parse_with(&with_body, &limits).unwrap().unwrap().consumed,
        48
    );
    assert_eq!(
        parse_with(&head(17), &limits),
        Err(ProtoError::HeadTooLarge)
    );
}

/// RFC 9112 §2.2: empty lines before a request line are ignored, up to `max_head` bytes of
/// them; one CRLF more is 431.
#[test]
fn leading_empty_lines_limit_is_exact() {
    let limits = Limits {
        max_head: 32,
        ..Limits::default()
    };
    let request = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let at_limit = [b"\r\n".repeat(16), request.to_vec()].concat();
    assert_eq!(
        parse_with(&at_limit, &limits).unwrap().unwrap().consumed,
        32 + request.len()
    );
    let over = [b"\r\n".repeat(17), request.to_vec()].concat();
    assert_eq!(parse_with(&over, &limits), Err(ProtoError::HeadTooLarge));
}

/// One `HeadParser` serves every request of a connection: after a head is parsed, the next
/// `parse` starts afresh on the next head, however the previous one arrived (its scan position
/// and request-line end must not leak into the next head's checks).
#[test]
fn head_parser_is_reusable_for_the_next_request() {
    let limits = Limits {
        max_request_line: 32,
        ..Limits::default()
    };
    let first = b"GET /first HTTP/1.1\r\nHost: a\r\nX-Long: 0123456789\r\n\r\n";
    let mut parser = HeadParser::new();
    let mut head = RequestHead::new();
    // The first head arrives in two reads, so the parser has scanned part of it before.
    let split = first.len() - 3;
    assert_eq!(parser.parse(&first[..split], &limits, &mut head), Ok(None));
    assert_eq!(
        parser.parse(first, &limits, &mut head),
        Ok(Some(first.len()))
    );
    // The driver drops the consumed bytes: the next head starts at 0 of a shorter buffer.
    // A bare LF early in it must still be found.
    assert_eq!(
        parser.parse(b"GET /\nHost: a\r\n\r\n", &limits, &mut head),
        Err(ProtoError::BareLineEnding)
    );

    let mut parser = HeadParser::new();
    assert_eq!(parser.parse(&first[..split], &limits, &mut head), Ok(None));
    assert!(parser.parse(first, &limits, &mut head).unwrap().is_some());
    // And its request line is checked against the limit again.
    let long = [request_line(33), b"Host: a\r\n\r\n".to_vec()].concat();
    assert_eq!(
        parser.parse(&long, &limits, &mut head),
        Err(ProtoError::RequestLineTooLong)
    );

    // A reused parser parses a good next head exactly as a new one does.
    let mut parser = HeadParser::new();
    assert_eq!(parser.parse(&first[..split], &limits, &mut head), Ok(None));
    assert!(parser.parse(first, &limits, &mut head).unwrap().is_some());
    let next = b"GET /b HTTP/1.1\r\nHost: b\r\n\r\n";
    assert_eq!(parser.parse(next, &limits, &mut head), Ok(Some(next.len())));
    assert_eq!(head.target(), "/b");

    // `reset` forgets a head that was abandoned half-way.
    let mut parser = HeadParser::new();
    assert_eq!(
        parser.parse(b"GET /abandoned HTTP/1.1\r\nHost", &limits, &mut head),
        Ok(None)
    );
    parser.reset();
    assert_eq!(
        parser.parse(b"GET /\nHost: a\r\n\r\n", &limits, &mut head),
        Err(ProtoError::BareLineEnding)
    );
}

/// RFC 3986 §3.1: `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`; an absolute-form
/// target (RFC 9112 §3.2.2) needs a scheme, `://` and an authority.
#[test]
fn absolute_form_target_grammar() {
    for target in [
        "http://a/",
        "https://a.example:8443/x?y",
        "h://a",
        "Z9+-.://a/",
        "http://a?q",
    ] {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(parsed(raw.as_bytes()).target, target);
    }
    for target in [
        "://a/",
        "1http://a/",
        "+http://a/",
        "ht_tp://a/",
        "ht%70://a/",
        "h!://a/",
        "http:/a/",
        "http:a",
        "http://",
        "http:///x",
        "http://?q",
    ] {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(err(raw.as_bytes()), ProtoError::InvalidTarget, "{target:?}");
    }
}

/// The method and version are the request's own, not the defaults of a fresh head.
#[test]
fn method_and_version_as_sent() {
    let p = parsed(b"POST /x HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(p.method, Method::POST);
    assert_eq!(p.version, Version::HTTP_10);
    let p = parsed(b"DELETE /x HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(p.method, Method::DELETE);
    assert_eq!(p.version, Version::HTTP_11);
}
