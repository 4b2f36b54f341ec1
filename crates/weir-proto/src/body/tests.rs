//! Decoders are fed whole, one byte at a time, at every split offset, and with random splits
//! (proptest); payload taken in small and large bites. All ways must agree.

use super::*;
use proptest::prelude::*;

#[derive(Debug, PartialEq)]
struct Outcome {
    payload: Vec<u8>,
    /// Input bytes the body occupied (framing + payload).
    consumed: usize,
    done: bool,
}

/// Runs a decoder over `chunks` as a connection would: buffer bytes, decode, take payload in
/// bites of at most `bite`.
fn run(framing: Framing, chunks: &[&[u8]], bite: usize) -> Result<Outcome, ProtoError> {
    let limits = Limits {
        max_chunk_extensions: 64,
        max_trailers: 64,
        ..Limits::default()
    };
    run_with(framing, chunks, bite, &limits)
}

fn run_with(
    framing: Framing,
    chunks: &[&[u8]],
    bite: usize,
    limits: &Limits,
) -> Result<Outcome, ProtoError> {
    let mut decoder = BodyDecoder::new(framing, limits);
    let mut buf: Vec<u8> = Vec::new();
    let mut payload = Vec::new();
    let mut consumed = 0;
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            if decoder.is_done() {
                break;
            }
            let d = decoder.decode(&buf)?;
            buf.drain(..d.framing);
            consumed += d.framing;
            if d.data == 0 {
                if decoder.is_done() {
                    continue;
                }
                break;
            }
            let n = d.data.min(bite);
            payload.extend_from_slice(&buf[..n]);
            buf.drain(..n);
            decoder.consume(n);
            consumed += n;
        }
    }
    Ok(Outcome {
        payload,
        consumed,
        done: decoder.is_done(),
    })
}

/// All feeding strategies agree; returns the common outcome.
fn decode_all_ways(framing: Framing, input: &[u8]) -> Result<Outcome, ProtoError> {
    let whole = run(framing, &[input], usize::MAX);
    assert_eq!(run(framing, &[input], 1), whole, "one-byte bites differ");
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(run(framing, &bytes, 3), whole, "byte by byte differs");
    for at in 1..input.len() {
        let (a, b) = input.split_at(at);
        assert_eq!(run(framing, &[a, b], 7), whole, "split at {at} differs");
    }
    whole
}

fn chunked(input: &[u8]) -> Result<Outcome, ProtoError> {
    decode_all_ways(Framing::Chunked, input)
}

fn chunked_ok(input: &[u8]) -> Outcome {
    chunked(input).unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(input)))
}

fn chunked_err(input: &[u8]) -> ProtoError {
    match chunked(input) {
        Err(e) => e,
        Ok(o) => panic!("{:?} accepted: {o:?}", String::from_utf8_lossy(input)),
    }
}

#[test]
fn length_body() {
    let o = decode_all_ways(Framing::Length(5), b"helloGET /").unwrap();
    assert_eq!(
        o,
        Outcome {
            payload: b"hello".to_vec(),
            consumed: 5,
            done: true
        }
    );
    let o = decode_all_ways(Framing::Length(0), b"GET /").unwrap();
    assert_eq!(
        o,
        Outcome {
            payload: vec![],
            consumed: 0,
            done: true
        }
    );
    let o = decode_all_ways(Framing::Length(10), b"hello").unwrap();
    assert!(!o.done);
}

#[test]
fn chunked_basic() {
    let o = chunked_ok(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET");
    assert_eq!(o.payload, b"hello world");
    assert_eq!(o.consumed, 26);
    assert!(o.done);
}

#[test]
fn chunked_hex_and_case() {
    let body = [
        &b"1A\r\n"[..],
        &[b'x'; 26],
        b"\r\na\r\n",
        &[b'y'; 10],
        b"\r\n000\r\n\r\n",
    ]
    .concat();
    let o = chunked_ok(&body);
    assert_eq!(o.payload.len(), 36);
    assert!(o.done);
}

#[test]
fn chunked_extensions_and_trailers() {
    let o =
        chunked_ok(b"5;a=b;c=\"q\\\"x\";d ; e = f\r\nhello\r\n0;last\r\nX-Sum: abc\r\nY: \r\n\r\n");
    assert_eq!(o.payload, b"hello");
    assert!(o.done);
}

#[test]
fn chunked_incomplete_is_not_done() {
    let o = chunked_ok(b"5\r\nhel");
    assert_eq!(o.payload, b"hel");
    assert!(!o.done);
    assert!(!chunked_ok(b"0\r\n\r").done);
    assert!(!chunked_ok(b"0\r\nX: 1\r\n").done);
}

#[test]
fn direct_window_follows_chunks() {
    let limits = Limits::default();
    let mut d = BodyDecoder::new(Framing::Chunked, &limits);
    assert_eq!(d.direct_window(), 0);
    let r = d.decode(b"10\r\n").unwrap();
    assert_eq!(
        r,
        Decoded {
            framing: 4,
            data: 0
        }
    );
    assert_eq!(d.direct_window(), 16);
    d.consume(10);
    assert_eq!(d.direct_window(), 6);
    d.consume(6);
    assert_eq!(d.direct_window(), 0);
    assert_eq!(
        d.decode(b"\r\n0\r\n\r\n").unwrap(),
        Decoded {
            framing: 7,
            data: 0
        }
    );
    assert!(d.is_done());
}

#[test]
fn chunked_errors() {
    use ProtoError::*;
    let cases: &[(&[u8], ProtoError)] = &[
        (b"0x5\r\nhello\r\n0\r\n\r\n", InvalidChunkSize),
        (b"+5\r\nhello\r\n0\r\n\r\n", InvalidChunkSize),
        (b"-5\r\nhello\r\n0\r\n\r\n", InvalidChunkSize),
        (b" 5\r\nhello\r\n0\r\n\r\n", InvalidChunkSize),
        (b"5 \r\nhello\r\n0\r\n\r\n", InvalidChunkSize),
        (b"\r\nhello\r\n0\r\n\r\n", InvalidChunkSize),
        (b"g\r\n", InvalidChunkSize),
        (b"10000000000000000\r\n", InvalidChunkSize),
        (b"00000000000000005\r\n", InvalidChunkSize),
        (b"5\nhello\r\n0\r\n\r\n", BareLineEnding),
        (b"5\rhello\r\n0\r\n\r\n", BareLineEnding),
        (b"5\r\nhello\n0\r\n\r\n", BareLineEnding),
        (b"5\r\nhello\r0\r\n\r\n", BareLineEnding),
        (b"5\r\nhello world\r\n0\r\n\r\n", InvalidChunkTerminator),
        (b"0\r\n\n", BareLineEnding),
        (b"0\r\n\rx", BareLineEnding),
        (b"5;\r\nhello\r\n", InvalidChunkExtension),
        (b"5;a=\r\nhello\r\n", InvalidChunkExtension),
        (b"5;a=\"x\r\nhello\r\n", InvalidChunkExtension),
        (b"5;a b\r\nhello\r\n", InvalidChunkExtension),
        (b"5;a=b \r\nhello\r\n", InvalidChunkExtension),
        (b"5;a=b\nhello\r\n", BareLineEnding),
        (b"0\r\nContent-Length: 5\r\n\r\n", ForbiddenTrailer),
        (b"0\r\ntransfer-encoding: chunked\r\n\r\n", ForbiddenTrailer),
        (b"0\r\nHost: evil\r\n\r\n", ForbiddenTrailer),
        (b"0\r\nX : 1\r\n\r\n", InvalidTrailer),
        (b"0\r\n X: 1\r\n\r\n", InvalidTrailer),
        (b"0\r\nX: a\x00b\r\n\r\n", InvalidTrailer),
        (b"0\r\nX: 1\nY: 2\r\n\r\n", BareLineEnding),
    ];
    for (input, expected) in cases {
        assert_eq!(
            chunked_err(input),
            *expected,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn chunked_limits() {
    // The test limits allow 64 bytes of extensions per body, across all chunks.
    let ext = format!("1;{}\r\nx\r\n", "a".repeat(40));
    let two = format!("{ext}{ext}0\r\n\r\n");
    assert_eq!(
        chunked_err(two.as_bytes()),
        ProtoError::ChunkExtensionsTooLarge
    );
    let one = format!("{ext}0\r\n\r\n");
    assert!(chunked_ok(one.as_bytes()).done);
    let trailers = format!("0\r\nX: {}\r\n\r\n", "v".repeat(70));
    assert_eq!(
        chunked_err(trailers.as_bytes()),
        ProtoError::TrailersTooLarge
    );
}

fn encode_chunked(payload: &[u8], sizes: &[usize], ext: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = payload;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].clamp(1, rest.len());
        i += 1;
        out.extend_from_slice(format!("{n:x}").as_bytes());
        if ext && i % 2 == 0 {
            out.extend_from_slice(b";k=v");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(b"\r\n");
        rest = &rest[n..];
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

proptest! {
    #[test]
    fn chunked_round_trip(
        payload in proptest::collection::vec(any::<u8>(), 0..2000),
        sizes in proptest::collection::vec(1usize..300, 1..8),
        cuts in proptest::collection::vec(0usize..4000, 0..6),
        bite in 1usize..500,
        ext in any::<bool>(),
    ) {
        let encoded = encode_chunked(&payload, &sizes, ext);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (encoded.len() + 1)).collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut last = 0;
        for c in cuts {
            pieces.push(&encoded[last..c]);
            last = c;
        }
        pieces.push(&encoded[last..]);
        let o = run_with(Framing::Chunked, &pieces, bite, &Limits::default()).unwrap();
        prop_assert_eq!(o.payload, payload);
        prop_assert_eq!(o.consumed, encoded.len());
        prop_assert!(o.done);
    }

    #[test]
    fn chunked_never_panics(input in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = run(Framing::Chunked, &[&input], 5);
    }
}

#[test]
fn trailer_spans_at_every_split_give_the_trailer_section() {
    let body: &[u8] = b"5\r\nhello\r\n0;x=y\r\nContent-Digest: sha-256=:AAA=:\r\nY: 1\r\n\r\nNEXT";
    let section: &[u8] = b"Content-Digest: sha-256=:AAA=:\r\nY: 1\r\n\r\n";
    let limits = Limits::default();
    for split in 0..=body.len() {
        let mut d = BodyDecoder::new(Framing::Chunked, &limits);
        let mut kept = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        for piece in [&body[..split], &body[split..]] {
            buf.extend_from_slice(piece);
            while !d.is_done() {
                let r = d.decode(&buf).unwrap();
                let span = d.trailer_span();
                assert!(span.end <= r.framing, "split {split}: {span:?} {r:?}");
                kept.extend_from_slice(&buf[span]);
                buf.drain(..r.framing + r.data);
                d.consume(r.data);
                if r.framing + r.data == 0 {
                    break;
                }
            }
        }
        assert!(d.is_done(), "split {split}");
        assert_eq!(kept, section, "split {split}");
        assert_eq!(buf, b"NEXT", "split {split}");
    }
    // No trailer fields: only the final CRLF; a Content-Length body has none.
    let mut d = BodyDecoder::new(Framing::Chunked, &limits);
    let r = d.decode(b"0\r\n\r\n").unwrap();
    assert_eq!(r.framing, 5);
    assert_eq!(d.trailer_span(), 3..5);
    let mut d = BodyDecoder::new(Framing::Length(3), &limits);
    d.decode(b"abc").unwrap();
    assert_eq!(d.trailer_span(), 0..0);
}
