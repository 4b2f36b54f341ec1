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

// ---- Rules pinned by mutation testing (issue 19): each test below kills mutants that every
// other test let live. See docs/archive/RELIABILITY-history.md, "mutation testing of the protocol
// core".

/// A one-chunk body `hello` whose size line carries `ext` after the size.
fn with_ext(ext: &[u8]) -> Vec<u8> {
    [&b"5"[..], ext, b"\r\nhello\r\n0\r\n\r\n"].concat()
}

/// RFC 9110 §5.6.4: `quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )`. A backslash escapes
/// the next byte into the value, but never a control: a CR, LF or NUL after `\` would let an
/// extension end (or split) the size line where another parser sees it continue.
#[test]
fn chunk_extension_quoted_pair_refuses_ctl() {
    for escaped in [b'\t', b' ', b'!', b'"', b'\\', b'~', 0x80, 0xFF] {
        let body = with_ext(&[b';', b'a', b'=', b'"', b'x', b'\\', escaped, b'y', b'"']);
        assert_eq!(chunked_ok(&body).payload, b"hello", "\\{escaped:#04x}");
    }
    use ProtoError::*;
    for (escaped, expected) in [
        (b'\r', InvalidChunkExtension),
        (b'\n', BareLineEnding),
        (0x00, InvalidChunkExtension),
        (0x1F, InvalidChunkExtension),
        (0x7F, InvalidChunkExtension),
    ] {
        let body = with_ext(&[b';', b'a', b'=', b'"', b'x', b'\\', escaped, b'y', b'"']);
        assert_eq!(chunked_err(&body), expected, "\\{escaped:#04x}");
    }
}

/// RFC 9110 §5.6.4: `qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text`; `"` ends the
/// string and `\` starts a quoted-pair. Controls and DEL are refused.
#[test]
fn chunk_extension_quoted_string_admits_qdtext_only() {
    for b in [b'\t', b' ', 0x21, 0x23, 0x5B, 0x5D, 0x7E, 0x80, 0xFF] {
        let body = with_ext(&[b';', b'a', b'=', b'"', b'x', b, b'y', b'"']);
        assert_eq!(chunked_ok(&body).payload, b"hello", "{b:#04x}");
    }
    use ProtoError::*;
    for (b, expected) in [
        (0x00, InvalidChunkExtension),
        (0x1F, InvalidChunkExtension),
        (0x7F, InvalidChunkExtension),
        (b'\r', InvalidChunkExtension),
        (b'\n', BareLineEnding),
    ] {
        let body = with_ext(&[b';', b'a', b'=', b'"', b'x', b, b'y', b'"']);
        assert_eq!(chunked_err(&body), expected, "{b:#04x}");
    }
}

/// RFC 9112 §5.5 (via §7.1.2): a trailer field value is `*( field-vchar / SP / HTAB )`, with
/// `field-vchar = VCHAR / obs-text`; controls and DEL are refused.
#[test]
fn trailer_value_admits_field_vchar_sp_htab_only() {
    for b in [b'\t', b' ', 0x21, 0x7E, 0x80, 0xFF] {
        let body = [&b"0\r\nX: a"[..], &[b], b"b\r\n\r\n"].concat();
        assert!(chunked_ok(&body).done, "{b:#04x}");
    }
    for b in [0x00, 0x1F, 0x7F] {
        let body = [&b"0\r\nX: a"[..], &[b], b"b\r\n\r\n"].concat();
        assert_eq!(chunked_err(&body), ProtoError::InvalidTrailer, "{b:#04x}");
    }
}

/// Every token form and whitespace placement of RFC 9112 §7.1.1's
/// `chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )` that weir admits (BWS
/// before the line's CR is not: nothing needs it and it is a classic smuggling ambiguity).
#[test]
fn chunk_extension_grammar() {
    for ext in [
        &b";a"[..],
        b" ;a",
        b"\t; a",
        b";a;b",
        b";a ;b",
        b";a=b",
        b";a =b",
        b";a= b",
        b";a = \t b",
        b";a=b;c",
        b";a=b ;c",
        b";a=\"\";c=\"d\"",
        b";a=\"q\" ;c",
        b";a=b!#$%&'*+-.^_`|~9",
    ] {
        assert_eq!(
            chunked_ok(&with_ext(ext)).payload,
            b"hello",
            "{:?}",
            String::from_utf8_lossy(ext)
        );
    }
    use ProtoError::*;
    for (ext, expected) in [
        (&b";"[..], InvalidChunkExtension),
        (b"; ", InvalidChunkExtension),
        (b";=b", InvalidChunkExtension),
        (b";a=", InvalidChunkExtension),
        (b";a =", InvalidChunkExtension),
        (b";a ", InvalidChunkExtension),
        (b";a=b ", InvalidChunkExtension),
        (b";a=\"b\" ", InvalidChunkExtension),
        (b";a=\"b\"c", InvalidChunkExtension),
        (b";a=b\"c\"", InvalidChunkExtension),
        (b";a=b=c", InvalidChunkExtension),
        (b";a@b", InvalidChunkExtension),
        (b" x", InvalidChunkSize),
        (b" ", InvalidChunkSize),
        (b";a\n", BareLineEnding),
        (b";a=b\n", BareLineEnding),
        (b";a=\"b\"\n", BareLineEnding),
        (b";a \n", BareLineEnding),
        (b";a=b \n", BareLineEnding),
    ] {
        assert_eq!(
            chunked_err(&with_ext(ext)),
            expected,
            "{:?}",
            String::from_utf8_lossy(ext)
        );
    }
}

/// The extension budget (`Limits::max_chunk_extensions`) counts, over the whole body, every
/// byte from a `;` (or the whitespace before it) to the CR that ends its size line, that CR
/// included. A body at the budget is accepted; one byte more is refused.
#[test]
fn chunk_extension_budget_is_exact() {
    let limits = Limits {
        max_chunk_extensions: 20,
        ..Limits::default()
    };
    let run = |body: &[u8]| run_with(Framing::Chunked, &[body], usize::MAX, &limits);
    // Two-digit sizes: the digits and the CR of a line without extensions are not counted.
    // `;a=bcd` + CR = 7, `;e="f"` + CR = 7, ` ;ghij` + CR = 6 (the space after the size
    // digits is not counted, the `;` is): 20.
    let at_budget =
        b"10;a=bcd\r\n0123456789abcdef\r\n01;e=\"f\"\r\nx\r\n1\r\ny\r\n01 ;ghij\r\nz\r\n0\r\n\r\n";
    let o = run(at_budget).unwrap();
    assert!(o.done);
    assert_eq!(o.payload, b"0123456789abcdefxyz");
    let over =
        b"10;a=bcd\r\n0123456789abcdef\r\n01;e=\"f\"\r\nx\r\n1\r\ny\r\n01 ;ghijk\r\nz\r\n0\r\n\r\n";
    assert_eq!(run(over), Err(ProtoError::ChunkExtensionsTooLarge));
    // The last chunk's extensions count too.
    let last = format!("0;{}\r\n\r\n", "a".repeat(18));
    assert!(run(last.as_bytes()).unwrap().done);
    let last = format!("0;{}\r\n\r\n", "a".repeat(19));
    assert_eq!(
        run(last.as_bytes()),
        Err(ProtoError::ChunkExtensionsTooLarge)
    );
    // A size line that starts with `;` has no size: that is what is wrong, whatever the budget.
    let none = Limits {
        max_chunk_extensions: 0,
        ..Limits::default()
    };
    assert_eq!(
        run_with(Framing::Chunked, &[b";a\r\n"], 1, &none),
        Err(ProtoError::InvalidChunkSize)
    );
    assert!(
        run_with(Framing::Chunked, &[b"5\r\nhello\r\n0\r\n\r\n"], 1, &none)
            .unwrap()
            .done
    );
}

/// The trailer budget (`Limits::max_trailers`) counts the trailer field lines with their CRLFs,
/// and the CR of the empty line that ends the body. At the budget: accepted; one more: refused.
#[test]
fn trailer_budget_is_exact() {
    let limits = Limits {
        max_trailers: 20,
        ..Limits::default()
    };
    let run = |body: &[u8]| run_with(Framing::Chunked, &[body], usize::MAX, &limits);
    // `X: 1234\r\n` (9) + `Y: 12345\r\n` (10) + CR (1) = 20.
    assert!(run(b"0\r\nX: 1234\r\nY: 12345\r\n\r\n").unwrap().done);
    assert_eq!(
        run(b"0\r\nX: 1234\r\nY: 123456\r\n\r\n"),
        Err(ProtoError::TrailersTooLarge)
    );
    // The chunk data before does not count.
    let data = [
        &b"1e\r\n"[..],
        &[b'x'; 30],
        b"\r\n0\r\nX: 1234\r\nY: 12345\r\n\r\n",
    ]
    .concat();
    assert!(run(&data).unwrap().done);
}

/// RFC 9110 §6.5.1: fields that frame, route or authenticate the message are refused as
/// trailers, whatever their case; other names of any length are fine.
#[test]
fn forbidden_trailers_are_refused_whatever_the_case() {
    for name in FORBIDDEN_TRAILERS {
        let name = std::str::from_utf8(name).unwrap();
        for spelled in [name.to_owned(), name.to_ascii_uppercase()] {
            let body = format!("0\r\n{spelled}: x\r\n\r\n");
            let got = run_with(Framing::Chunked, &[body.as_bytes()], 1, &Limits::default());
            assert_eq!(got, Err(ProtoError::ForbiddenTrailer), "{spelled}");
        }
    }
    for name in [
        "x",
        "content-lengthx",
        "hos",
        "proxy-authorization-x",
        "x-proxy-authorizatio",
        &"x".repeat(300),
        &format!("{}content-length", "x".repeat(300)),
    ] {
        let body = format!("0\r\n{name}: x\r\n\r\n");
        let got = run_with(Framing::Chunked, &[body.as_bytes()], 1, &Limits::default());
        assert!(got.unwrap().done, "{name}");
    }
}

/// `remaining_hint` is what the connection uses to decide whether an unread body is small
/// enough to drain: it must say how many `Content-Length` bytes are still unread, and nothing
/// for a chunked body (whose length is unknown, so never assumed small).
#[test]
fn remaining_hint_counts_unread_content_length() {
    let limits = Limits::default();
    let mut d = BodyDecoder::new(Framing::Length(10), &limits);
    assert_eq!(d.remaining_hint(), Some(10));
    let got = d.decode(b"abcd").unwrap();
    assert_eq!(
        got,
        Decoded {
            framing: 0,
            data: 4
        }
    );
    d.consume(3);
    assert_eq!(d.remaining_hint(), Some(7));
    assert_eq!(d.direct_window(), 7);
    assert!(!d.is_done());
    d.consume(7);
    assert_eq!(d.remaining_hint(), Some(0));
    assert!(d.is_done());
    let d = BodyDecoder::new(Framing::Chunked, &limits);
    assert_eq!(d.remaining_hint(), None);
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
