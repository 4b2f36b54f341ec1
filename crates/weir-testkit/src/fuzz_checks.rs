//! The properties the fuzz targets check (`fuzz/fuzz_targets/`), shared with the corpus replay
//! test (`crates/weir-testkit/tests/fuzz_corpus.rs`), so CI replays every corpus input through
//! exactly the same assertions as the fuzzer.
//!
//! Each check panics on a violated property; a returned error from the code under test is a
//! normal outcome (the input was bad), never a failure.

use weir_proto::body::BodyDecoder;
use weir_proto::framing::parse_content_length;
use weir_proto::parse::HeadParser;
use weir_proto::range::{RangeAnswer, evaluate};
use weir_proto::{Framing, Limits, ProtoError, RequestHead};

/// What parsing one head produced, comparable across ways of feeding it.
#[derive(Debug, PartialEq)]
struct HeadOutcome {
    consumed: usize,
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    framing: Framing,
    keep_alive: bool,
    expect_continue: bool,
}

/// Feeds `pieces` one after another into one parser, as reads from a socket would arrive.
fn feed_head(pieces: &[&[u8]], limits: &Limits) -> Result<Option<HeadOutcome>, ProtoError> {
    let mut parser = HeadParser::new();
    let mut head = RequestHead::new();
    let mut buf = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        if let Some(consumed) = parser.parse(&buf, limits, &mut head)? {
            assert!(consumed <= buf.len(), "consumed past the input");
            check_head_invariants(&head);
            return Ok(Some(HeadOutcome {
                consumed,
                method: head.method().as_str().to_owned(),
                target: head.target().to_owned(),
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

/// What `RequestHead` promises about an accepted head (see its module docs), and what the
/// framing rules promise (RFC 9112 §6.3).
fn check_head_invariants(head: &RequestHead) {
    let target = head.target();
    assert!(!target.is_empty(), "empty target accepted");
    assert!(
        target.bytes().all(|b| b.is_ascii_graphic()) && !target.contains('#'),
        "target {target:?}"
    );
    let mut hosts = 0;
    let mut content_length = false;
    let mut transfer_encoding = false;
    for (name, value) in head.headers() {
        assert!(!name.is_empty(), "empty header name");
        assert!(
            weir_proto::chars::is_token(name.as_bytes()),
            "header name {name:?} is not a token"
        );
        assert!(
            !value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0),
            "CR, LF or NUL in the value of {name}"
        );
        assert!(
            value.first() != Some(&b' ') && value.last() != Some(&b' '),
            "untrimmed value of {name}"
        );
        hosts += usize::from(name.eq_ignore_ascii_case("host"));
        content_length |= name.eq_ignore_ascii_case("content-length");
        transfer_encoding |= name.eq_ignore_ascii_case("transfer-encoding");
    }
    assert!(hosts <= 1, "{hosts} Host fields accepted");
    if head.version() == http::Version::HTTP_11 {
        assert_eq!(hosts, 1, "HTTP/1.1 head without Host accepted");
    }
    assert!(
        !(content_length && transfer_encoding),
        "Content-Length with Transfer-Encoding accepted"
    );
    match head.framing() {
        Framing::Chunked => assert!(transfer_encoding),
        Framing::Length(n) if n > 0 => assert!(content_length),
        Framing::Length(_) => {}
        Framing::Unknown => panic!("an HTTP/1.1 head framed as unknown length"),
    }
}

/// The head parser: no panic; the same outcome whole, byte by byte and split anywhere; what it
/// accepts satisfies the head invariants and parses again alone to the same head.
pub fn head_parser(data: &[u8]) {
    let tight = Limits::default()
        .with_max_request_line(64)
        .with_max_head(256)
        .with_max_headers(8);
    for limits in [Limits::default(), tight] {
        let whole = feed_head(&[data], &limits);
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(feed_head(&bytes, &limits), whole, "byte by byte differs");
        for at in split_points(data) {
            let (a, b) = data.split_at(at);
            assert_eq!(feed_head(&[a, b], &limits), whole, "split at {at} differs");
        }
        if let Ok(Some(outcome)) = &whole {
            let again = feed_head(&[&data[..outcome.consumed]], &limits);
            assert_eq!(again.as_ref().ok().and_then(Option::as_ref), Some(outcome));
        }
    }
}

/// A few split offsets that depend on the input, so the fuzzer can steer them.
fn split_points(data: &[u8]) -> Vec<usize> {
    let len = data.len();
    if len < 2 {
        return Vec::new();
    }
    let mut points = vec![1, len / 3, len / 2, len - 1];
    points.push(usize::from(data[0]) * 256 % len);
    points.push(usize::from(data[len - 1]) % len);
    points.retain(|&p| p > 0 && p < len);
    points.sort_unstable();
    points.dedup();
    points
}

/// What decoding one chunked body produced.
#[derive(Debug, PartialEq)]
struct BodyOutcome {
    payload: Vec<u8>,
    consumed: usize,
    done: bool,
}

/// Decodes `pieces` as a connection would: buffer, decode, take payload in bites of at most
/// `bite`, checking the decoder's reports against the buffer on the way.
fn feed_body(pieces: &[&[u8]], bite: usize, limits: &Limits) -> Result<BodyOutcome, ProtoError> {
    let mut decoder = BodyDecoder::new(Framing::Chunked, limits);
    let mut buf: Vec<u8> = Vec::new();
    let mut out = BodyOutcome {
        payload: Vec::new(),
        consumed: 0,
        done: false,
    };
    for piece in pieces {
        buf.extend_from_slice(piece);
        while !decoder.is_done() {
            let d = decoder.decode(&buf)?;
            assert!(d.framing + d.data <= buf.len(), "decoded past the input");
            buf.drain(..d.framing);
            out.consumed += d.framing;
            if d.data == 0 {
                if decoder.is_done() {
                    continue;
                }
                break;
            }
            assert!(
                d.data as u64 <= decoder.direct_window(),
                "more data than the chunk holds"
            );
            let n = d.data.min(bite);
            out.payload.extend_from_slice(&buf[..n]);
            buf.drain(..n);
            decoder.consume(n);
            out.consumed += n;
        }
    }
    out.done = decoder.is_done();
    Ok(out)
}

/// The chunked decoder: no panic; the same payload, consumption and verdict whatever the
/// splits and bite sizes; a finished body is a prefix property (the bytes it consumed decode
/// to the same body on their own).
pub fn chunked(data: &[u8]) {
    let tight = Limits::default()
        .with_max_chunk_extensions(64)
        .with_max_trailers(64);
    for limits in [Limits::default(), tight] {
        let whole = feed_body(&[data], usize::MAX, &limits);
        if let Ok(o) = &whole {
            assert!(o.consumed <= data.len());
            assert!(o.payload.len() <= o.consumed);
        }
        assert_eq!(
            feed_body(&[data], 1, &limits),
            whole,
            "one-byte bites differ"
        );
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(feed_body(&bytes, 7, &limits), whole, "byte by byte differs");
        for at in split_points(data) {
            let (a, b) = data.split_at(at);
            assert_eq!(
                feed_body(&[a, b], 3, &limits),
                whole,
                "split at {at} differs"
            );
        }
        if let Ok(o) = &whole {
            if o.done {
                let alone = feed_body(&[&data[..o.consumed]], usize::MAX, &limits);
                assert_eq!(
                    alone.as_ref(),
                    Ok(o),
                    "the body's own bytes decode differently"
                );
            }
        }
    }
}

/// `parse_content_length` against a reference: 1 to 19 ASCII digits after trimming SP/HTAB,
/// and the value `str::parse` gives them.
pub fn content_length(data: &[u8]) {
    let got = parse_content_length(data);
    let mut trimmed = data;
    while let [b' ' | b'\t', rest @ ..] = trimmed {
        trimmed = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = trimmed {
        trimmed = rest;
    }
    let expected =
        if !trimmed.is_empty() && trimmed.len() <= 19 && trimmed.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(trimmed)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or(ProtoError::InvalidContentLength)
        } else {
            Err(ProtoError::InvalidContentLength)
        };
    assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(data));
}

/// `weir_proto::range::evaluate` over a `Range` header: the input's first 8 bytes are the
/// representation size, the rest the header. No panic; a partial answer is non-empty and inside the representation; the answer depends
/// only on the header and the size.
pub fn range(data: &[u8]) {
    let (size, header) = match data.split_first_chunk::<8>() {
        Some((size, header)) => (u64::from_le_bytes(*size), header),
        None => (data.len() as u64, data),
    };
    // Small sizes reach the edge cases (empty file, one byte); large ones the overflow ones.
    for size in [size, size % 4096, 0, 1] {
        let answer = evaluate(header, size);
        if let RangeAnswer::Partial { start, len } = answer {
            assert!(len >= 1, "empty partial answer for {header:?} of {size}");
            let end = start.checked_add(len).expect("range end overflows");
            assert!(end <= size, "{start}+{len} past {size} for {header:?}");
        }
        if size == 0 {
            assert!(
                !matches!(answer, RangeAnswer::Partial { .. }),
                "a range of an empty file"
            );
        }
        assert_eq!(evaluate(header, size), answer);
    }
}
