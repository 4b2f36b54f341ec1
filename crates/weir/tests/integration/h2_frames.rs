//! HTTP/2 conformance (RFC 9113) and flood defences, checked with raw frames over h2c.
//!
//! The external suite (`h2_conformance.rs`) checks the RFC case by case; these are weir's own
//! checks, with the exact code expected for each fault: the preface and SETTINGS exchange, flow-control and
//! stream-state violations, malformed requests (pseudo-headers, connection-specific headers,
//! content-length), frame size and SETTINGS errors, and the known floods (rapid reset,
//! CONTINUATION, PING, SETTINGS, HPACK bomb).

use crate::h2_support::*;
use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;
use weir::Config;
use weir_testkit::h2_frames::*;

#[test]
fn preface_settings_and_a_request() {
    let server = TlsTestServer::start(Config::default());
    let mut c = FrameClient::connect(server.addr);
    // SETTINGS advertise the configured limits (ids: 3 streams, 4 window, 5 frame, 6 header
    // list); the stream window is the initial one (opened to the pause threshold on read).
    let setting = |id| c.settings.iter().find(|(i, _)| *i == id).map(|(_, v)| *v);
    assert_eq!(setting(3), Some(100));
    assert_eq!(setting(4), Some(64 * 1024));
    assert_eq!(setting(5), Some(256 * 1024));
    assert_eq!(setting(6), Some(32 * 1024));
    c.headers(1, &get("/hello"), true);
    assert_eq!(c.status(1), 200);
    let data = c.until(|f| f.kind == DATA && f.stream == 1).unwrap();
    assert_eq!(data.payload, b"Hello, World!");
    // PING is answered with the same payload.
    c.send(PING, 0, 0, b"12345678");
    let pong = c.until(|f| f.kind == PING).unwrap();
    assert_eq!(
        (pong.flags, pong.payload.as_slice()),
        (ACK, &b"12345678"[..])
    );
}

#[test]
fn malformed_requests_are_reset_with_protocol_error() {
    let server = TlsTestServer::start(Config::default());
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        (
            "missing :path, with :authority",
            vec![(":method", "GET"), (":scheme", "http"), (":authority", "h")],
        ),
        // RFC 9113 §8.3.1; h2 lets this one through (weir resets it).
        (
            "missing :path and :authority",
            vec![(":method", "GET"), (":scheme", "http")],
        ),
        ("empty :path", {
            let mut h = get("/");
            h[2] = (":path", "");
            h
        }),
        ("unknown pseudo-header", {
            let mut h = get("/");
            h.push((":foo", "bar"));
            h
        }),
        ("pseudo-header after a field", {
            let mut h = vec![(":method", "GET"), ("x-a", "1")];
            h.extend_from_slice(&get("/")[1..]);
            h
        }),
        ("duplicate :method", {
            let mut h = get("/");
            h.push((":method", "POST"));
            h
        }),
        ("uppercase field name", {
            let mut h = get("/");
            h.push(("X-Upper", "1"));
            h
        }),
        ("connection-specific field", {
            let mut h = get("/");
            h.push(("connection", "keep-alive"));
            h
        }),
        ("te other than trailers", {
            let mut h = get("/");
            h.push(("te", "gzip"));
            h
        }),
    ];
    // Each on a connection of its own: a stream error (RST_STREAM) is expected, and a
    // connection error (GOAWAY) of the same type is the permitted escalation.
    let mut wrong = Vec::new();
    for (what, fields) in &cases {
        let mut c = FrameClient::connect(server.addr);
        c.headers(1, fields, true);
        let got = c.reset_of(1);
        if !matches!(got, Ok(PROTOCOL_ERROR) | Err(Some(PROTOCOL_ERROR))) {
            wrong.push(format!("{what}: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let mut c = FrameClient::connect(server.addr);
    let mut stream = 1;
    // Content-length that the DATA does not match.
    let mut fields = get("/sha");
    fields[0] = (":method", "PUT");
    fields.push(("content-length", "10"));
    c.headers(stream, &fields, false);
    c.send(DATA, END_STREAM, stream, b"12345");
    assert_eq!(
        c.reset_of(stream),
        Ok(PROTOCOL_ERROR),
        "content-length mismatch"
    );
    // The connection still serves well-formed requests.
    stream += 2;
    c.headers(stream, &get("/hello"), true);
    assert_eq!(c.status(stream), 200);
}

#[test]
fn stream_state_violations() {
    let server = TlsTestServer::start(Config::default());
    // DATA on an idle stream: connection error PROTOCOL_ERROR.
    let mut c = FrameClient::connect(server.addr);
    c.send(DATA, 0, 1, b"x");
    assert_eq!(c.goaway(), Some(PROTOCOL_ERROR));
    // HEADERS on a stream closed by END_STREAM in both directions: STREAM_CLOSED.
    let mut c = FrameClient::connect(server.addr);
    c.headers(1, &get("/hello"), true);
    c.until(|f| f.kind == DATA && f.flags & END_STREAM != 0)
        .unwrap();
    c.headers(1, &get("/hello"), true);
    // A connection error STREAM_CLOSED (RFC 9113 §5.1, closed after END_STREAM; upstream h2
    // says PROTOCOL_ERROR, weir-h2 is patched).
    assert_eq!(
        c.reset_of(1),
        Err(Some(STREAM_CLOSED)),
        "HEADERS on a closed stream"
    );
    // A stream id lower than one already used: PROTOCOL_ERROR.
    let mut c = FrameClient::connect(server.addr);
    c.headers(5, &get("/hello"), true);
    c.until(|f| f.kind == HEADERS && f.stream == 5).unwrap();
    c.headers(3, &get("/hello"), true);
    assert_eq!(c.goaway(), Some(PROTOCOL_ERROR));
    // An even (server-initiated) stream id from the client: PROTOCOL_ERROR.
    let mut c = FrameClient::connect(server.addr);
    c.headers(2, &get("/hello"), true);
    assert_eq!(c.goaway(), Some(PROTOCOL_ERROR));
    // DATA after END_STREAM on a half-closed stream: STREAM_CLOSED.
    let mut c = FrameClient::connect(server.addr);
    let mut fields = get("/hold?g=3");
    fields[0] = (":method", "PUT");
    c.headers(1, &fields, false);
    c.send(DATA, END_STREAM, 1, b"abc");
    c.send(DATA, 0, 1, b"more");
    // RFC 9113 §5.1 (half-closed (remote)) asks for a stream error STREAM_CLOSED, and the
    // connection lives on (upstream h2 closes it with PROTOCOL_ERROR; weir-h2 is patched).
    assert_eq!(c.reset_of(1), Ok(STREAM_CLOSED), "DATA after END_STREAM");
    c.headers(3, &get("/hello"), true);
    assert_eq!(c.status(3), 200);
    hold_release(3).notify_waiters();
}

/// The faults patched in weir-h2 (crates/weir-h2/WEIR-PATCHES.md), each answered as RFC 9113 asks.
#[test]
fn faults_fixed_in_the_vendored_h2() {
    let server = TlsTestServer::start(Config::default());
    // HPACK decoding errors are connection errors COMPRESSION_ERROR (§4.3): an indexed field
    // with index 0 (RFC 7541 §6.1), and a block that ends inside a field.
    let mut c = FrameClient::connect(server.addr);
    c.send(HEADERS, END_HEADERS | END_STREAM, 1, &[0x80]);
    assert_eq!(c.goaway(), Some(COMPRESSION_ERROR), "index 0");
    let mut c = FrameClient::connect(server.addr);
    let mut block = hpack(&get("/hello"));
    block.extend_from_slice(&[0x00, 0x05, b'x']);
    c.send(HEADERS, END_HEADERS | END_STREAM, 1, &block);
    assert_eq!(c.goaway(), Some(COMPRESSION_ERROR), "truncated block");
    // The other decoding errors of RFC 7541 (h2spec's "hpack" group): each block is a valid
    // request's fields with the faulty bytes before or after them.
    let cases: [(&str, &[u8], &[u8]); 7] = [
        (
            "indexed field, index past both tables (§2.3.3)",
            &[],
            &[0xc5],
        ),
        (
            "literal with a name index past both tables (§2.3.3)",
            &[],
            &[0x7f, 0x06, 0x01, b'x'],
        ),
        ("table size update after a field (§4.2)", &[], &[0x20]),
        (
            "Huffman padding longer than 7 bits (§5.2)",
            &[],
            &[0x00, 0x01, b'x', 0x81, 0xff],
        ),
        (
            "Huffman padding that is not EOS's prefix (§5.2)",
            &[],
            &[0x00, 0x01, b'x', 0x81, 0x00],
        ),
        (
            "Huffman string holding EOS (§5.2)",
            &[],
            &[0x00, 0x01, b'x', 0x84, 0xff, 0xff, 0xff, 0xff],
        ),
        (
            "table size update above SETTINGS_HEADER_TABLE_SIZE (§6.3)",
            &[0x3f, 0xe2, 0x1f],
            &[],
        ),
    ];
    let mut wrong = Vec::new();
    for (what, before, after) in cases {
        let block = [before, &hpack(&get("/hello")), after].concat();
        let mut c = FrameClient::connect(server.addr);
        c.send(HEADERS, END_HEADERS | END_STREAM, 1, &block);
        let got = c.goaway();
        if got != Some(COMPRESSION_ERROR) {
            wrong.push(format!("{what}: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Two table size updates at the start of a block are allowed (§4.2): served.
    let mut c = FrameClient::connect(server.addr);
    let mut block = vec![0x20, 0x3f, 0xe1, 0x1f];
    block.extend_from_slice(&hpack(&get("/hello")));
    c.send(HEADERS, END_HEADERS | END_STREAM, 1, &block);
    assert_eq!(c.status(1), 200, "two table size updates first");

    // A pseudo-header field in trailers makes the request malformed (§8.1): the stream is
    // reset, and the connection serves on.
    let mut c = FrameClient::connect(server.addr);
    let mut fields = get("/sha");
    fields[0] = (":method", "PUT");
    c.headers(1, &fields, false);
    c.send(DATA, 0, 1, b"abc");
    c.headers(1, &[(":path", "/elsewhere")], true);
    assert_eq!(
        c.reset_of(1),
        Ok(PROTOCOL_ERROR),
        "pseudo-header in trailers"
    );
    c.headers(3, &get("/hello"), true);
    assert_eq!(c.status(3), 200);

    // The client's GOAWAY (with an error code unknown to the server, which must trigger no
    // special behaviour, §7) only says it opens no more streams: a PING sent after it, once the
    // server has had time to act on the GOAWAY alone, is still answered.
    let mut c = FrameClient::connect(server.addr);
    let mut goaway = 0u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&0xbad_c0deu32.to_be_bytes());
    c.send(GOAWAY, 0, 0, &goaway);
    std::thread::sleep(Duration::from_millis(200));
    c.send(PING, 0, 0, b"after-ga");
    let pong = c
        .until(|f| f.kind == PING)
        .expect("PING answered after the client's GOAWAY");
    assert_eq!(
        (pong.flags, pong.payload.as_slice()),
        (ACK, &b"after-ga"[..])
    );
}

/// A handler that answers before reading the body does not change how the rest of the
/// request is judged: frames the client sent before it saw the response get the code they get
/// on a stream whose handler still reads (RFC 9113 §8.1.1, §8.1, §6.9.1), not h2's silence
/// after an early RST_STREAM(NO_ERROR). Each fault is sent only once the whole response has
/// arrived, the order in which h2 used to ignore it.
#[test]
fn faults_after_an_early_response_are_judged_as_before_it() {
    let server = TlsTestServer::start(Config::default());
    // GET /hello answers without reading a body; this one has a body (no END_STREAM).
    let answered_early = |fields: &[(&str, &str)]| {
        let mut c = FrameClient::connect(server.addr);
        c.headers(1, fields, false);
        assert_eq!(c.status(1), 200);
        c.until(|f| f.kind == DATA && f.stream == 1 && f.flags & END_STREAM != 0)
            .expect("the whole response");
        c
    };
    let mut declared = get("/hello");
    declared.push(("content-length", "1"));
    let mut wrong = Vec::new();

    let mut c = answered_early(&declared);
    c.send(DATA, END_STREAM, 1, b"test");
    let got = c.reset_of(1);
    if got != Ok(PROTOCOL_ERROR) {
        wrong.push(format!("DATA beyond content-length (§8.1.1): {got:?}"));
    }

    let mut c = answered_early(&get("/hello"));
    c.send(DATA, 0, 1, b"test");
    c.headers(1, &[("x-test", "ok")], false);
    let got = c.reset_of(1);
    if got != Ok(PROTOCOL_ERROR) {
        wrong.push(format!("trailers without END_STREAM (§8.1): {got:?}"));
    }

    let mut c = answered_early(&get("/hello"));
    c.headers(1, &[(":path", "/elsewhere")], true);
    let got = c.reset_of(1);
    if got != Ok(PROTOCOL_ERROR) {
        wrong.push(format!("pseudo-header in trailers (§8.1): {got:?}"));
    }

    let mut c = answered_early(&get("/hello"));
    c.send(WINDOW_UPDATE, 0, 1, &0x7fff_ffffu32.to_be_bytes());
    c.send(WINDOW_UPDATE, 0, 1, &0x7fff_ffffu32.to_be_bytes());
    let got = c.reset_of(1);
    if got != Ok(FLOW_CONTROL_ERROR) {
        wrong.push(format!("stream window above 2^31-1 (§6.9.1): {got:?}"));
    }
    assert!(wrong.is_empty(), "{wrong:#?}");

    // A well-formed rest of the body ends the stream without a reset, and the connection
    // serves on.
    let mut c = answered_early(&declared);
    c.send(DATA, END_STREAM, 1, b"x");
    c.headers(3, &get("/hello"), true);
    let next = c
        .until(|f| f.stream != 0 && f.kind != DATA)
        .expect("the next frame");
    assert_eq!((next.kind, next.stream), (HEADERS, 3), "{next:?}");
    // A client that sends nothing more is told to stop, with NO_ERROR.
    let mut c = answered_early(&get("/hello"));
    assert_eq!(c.reset_of(1), Ok(0));
}

#[test]
fn flow_control_and_frame_size_violations() {
    let server = TlsTestServer::start(Config::default());
    // More DATA than the stream window (1 MiB) on a stream whose handler does not read.
    let mut c = FrameClient::connect(server.addr);
    let mut fields = get("/hold?g=3");
    fields[0] = (":method", "PUT");
    c.headers(1, &fields, false);
    let piece = vec![0u8; 16 * 1024];
    for _ in 0..64 {
        c.send(DATA, 0, 1, &piece);
    }
    c.send(DATA, 0, 1, b"x");
    assert!(
        matches!(
            c.reset_of(1),
            Ok(FLOW_CONTROL_ERROR) | Err(Some(FLOW_CONTROL_ERROR))
        ),
        "window overrun"
    );
    hold_release(3).notify_waiters();
    // WINDOW_UPDATE with a zero increment on the connection: PROTOCOL_ERROR.
    let mut c = FrameClient::connect(server.addr);
    c.send(WINDOW_UPDATE, 0, 0, &0u32.to_be_bytes());
    assert_eq!(c.goaway(), Some(PROTOCOL_ERROR));
    // A window grown past 2^31-1: FLOW_CONTROL_ERROR.
    let mut c = FrameClient::connect(server.addr);
    c.send(WINDOW_UPDATE, 0, 0, &0x7fff_ffffu32.to_be_bytes());
    assert_eq!(c.goaway(), Some(FLOW_CONTROL_ERROR));
    // A frame larger than SETTINGS_MAX_FRAME_SIZE (256 KiB): FRAME_SIZE_ERROR.
    let mut c = FrameClient::connect(server.addr);
    c.headers(1, &fields, false);
    c.send(DATA, 0, 1, &vec![0u8; 256 * 1024 + 1]);
    assert_eq!(c.goaway(), Some(FRAME_SIZE_ERROR));
    hold_release(3).notify_waiters();
    // A HEADERS frame larger than that: a connection error FRAME_SIZE_ERROR too (§4.2: a field
    // block can change the connection's HPACK state). The suite's case for it cannot run at
    // 256 KiB frames (it needs a header block larger than the largest frame).
    let mut c = FrameClient::connect(server.addr);
    let mut fields = get("/hello");
    let big = "a".repeat(256 * 1024);
    fields.push(("x-big", &big));
    let block = hpack(&fields);
    assert!(block.len() > 256 * 1024);
    c.send(HEADERS, END_HEADERS | END_STREAM, 1, &block);
    assert_eq!(c.goaway(), Some(FRAME_SIZE_ERROR), "oversized HEADERS");
    // SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1: FLOW_CONTROL_ERROR (RFC 9113 §6.5.2; upstream
    // h2 answers PROTOCOL_ERROR: weir-h2's patch gives the right code).
    let mut c = FrameClient::connect(server.addr);
    c.send(SETTINGS, 0, 0, &[0, 4, 0x80, 0, 0, 0]);
    assert_eq!(c.goaway(), Some(FLOW_CONTROL_ERROR));
    assert!(c.read_frame().is_none(), "closed after GOAWAY");
    // Frames of a length their type does not allow: FRAME_SIZE_ERROR by RFC 9113 §6.5
    // (SETTINGS: multiples of 6, an ACK empty), §6.7 (PING ≠ 8), §6.9 (WINDOW_UPDATE ≠ 4),
    // §6.4 (RST_STREAM ≠ 4), §6.8 with §4.2 (GOAWAY < 8). Upstream h2 answers PROTOCOL_ERROR
    // (docs/ARCHITECTURE.md, "Conformance"); weir-h2 is patched.
    for (kind, flags, stream, payload) in [
        (SETTINGS, 0, 0, &[0u8, 4, 0, 0, 0][..]),
        (SETTINGS, ACK, 0, &[0u8; 6][..]),
        (PING, 0, 0, &[0u8; 7][..]),
        (WINDOW_UPDATE, 0, 0, &[0, 0, 1][..]),
        (WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1, 0][..]),
        (RST_STREAM, 0, 1, &[0, 0, 0][..]),
        (GOAWAY, 0, 0, &[0u8; 7][..]),
    ] {
        let mut c = FrameClient::connect(server.addr);
        if stream != 0 {
            c.headers(stream, &get("/hello"), false);
        }
        c.send(kind, flags, stream, payload);
        assert_eq!(
            c.goaway(),
            Some(FRAME_SIZE_ERROR),
            "frame type {kind}, flags {flags}, length {}",
            payload.len()
        );
        assert!(c.read_frame().is_none(), "closed after GOAWAY");
    }
    // PRIORITY ≠ 5: a *stream* error FRAME_SIZE_ERROR (§6.3); the connection lives on.
    let mut c = FrameClient::connect(server.addr);
    c.headers(1, &get("/hello"), false);
    c.send(PRIORITY, 0, 1, &[0, 0, 0, 0]);
    assert_eq!(c.reset_of(1), Ok(FRAME_SIZE_ERROR));
    c.headers(3, &get("/hello"), true);
    assert_eq!(c.status(3), 200);
    // SETTINGS_ENABLE_PUSH other than 0 or 1: PROTOCOL_ERROR.
    let mut c = FrameClient::connect(server.addr);
    c.send(SETTINGS, 0, 0, &[0, 2, 0, 0, 0, 2]);
    assert_eq!(c.goaway(), Some(PROTOCOL_ERROR));
}

/// What a flood got from the server.
struct Flooded {
    /// The GOAWAY's error code, if one was read.
    code: Option<u32>,
    /// How many of the frames were written before the connection ended.
    written: usize,
    /// Acknowledgements (PING or SETTINGS) read before the GOAWAY: the frames the server
    /// processed.
    acks: usize,
}

/// Writes `frames` from another thread while this one reads, so that the server's GOAWAY is
/// read even if the server closes while the flood is still being written.
fn flood(c: FrameClient, frames: Vec<Vec<u8>>) -> Flooded {
    flood_reading_after(c, frames, Duration::ZERO)
}

/// [`flood`], with this thread starting to read only after `pause`.
fn flood_reading_after(c: FrameClient, frames: Vec<Vec<u8>>, pause: Duration) -> Flooded {
    let mut writer = c.s.try_clone().unwrap();
    let total = frames.len();
    let sender = std::thread::spawn(move || {
        let mut written = 0;
        for f in frames {
            if writer.write_all(&f).is_err() {
                break;
            }
            written += 1;
        }
        written
    });
    std::thread::sleep(pause);
    let mut reader = c.s;
    let mut code = None;
    let mut acks = 0;
    while let Some(f) = read_frame(&mut reader) {
        if f.kind == GOAWAY {
            code = Some(f.error_code());
            break;
        }
        if matches!(f.kind, PING | SETTINGS) && f.flags & ACK != 0 {
            acks += 1;
        }
    }
    if code.is_some() {
        // After its GOAWAY the server must stop serving the flood: the connection ends (EOF or
        // reset), it does not sit open. A read timeout here means it kept the connection.
        let mut sink = [0u8; 64 * 1024];
        loop {
            match reader.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    assert!(
                        !matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ),
                        "the server kept the connection open after GOAWAY"
                    );
                    break;
                }
            }
        }
    }
    let _ = reader.shutdown(std::net::Shutdown::Both);
    let written = sender.join().unwrap();
    assert!(written <= total);
    Flooded {
        code,
        written,
        acks,
    }
}

#[test]
fn ping_and_settings_floods_end_with_enhance_your_calm() {
    let mut config = Config::default();
    config.http2.control_frame_budget = 500;
    let server = TlsTestServer::start(config);
    let pings = (0..20_000u64)
        .map(|i| frame_bytes(PING, 0, 0, &i.to_be_bytes()))
        .collect();
    let f = flood(FrameClient::connect(server.addr), pings);
    // (How many of the 20,000 PINGs the client managed to write before the close depends on
    // the kernel's socket buffers, so it is not asserted; the close is, in `flood`.)
    assert_eq!(f.code, Some(ENHANCE_YOUR_CALM));
    // The server stops reading when the budget is spent: it answers the 500 PINGs of the
    // budget and at most the rest of the read that spent it (h2 reads 8 KiB at a time: under
    // 500 PINGs), however many the client wrote.
    assert!(f.acks < 1_500, "{} PINGs answered", f.acks);
    let settings = (0..20_000)
        .map(|_| frame_bytes(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]))
        .collect();
    let f = flood(FrameClient::connect(server.addr), settings);
    assert_eq!(f.code, Some(ENHANCE_YOUR_CALM));
    assert!(f.acks < 1_500, "{} SETTINGS acknowledged", f.acks);
    // Requests earn budget back: 2,000 requests with a PING each are fine. They go in batches
    // of 50, each answered in full before the next is sent. A stream counts against the 100
    // concurrent streams the server advertises until its END_STREAM arrives, and responses come
    // in any order (each has a task of its own): a client that sends the next batch as soon as
    // the last stream of a batch is answered can have more than 100 open, and the server
    // refuses the excess with RST_STREAM(REFUSED_STREAM), as RFC 9113 §5.1.2 allows.
    let mut c = FrameClient::connect(server.addr);
    let mut acks = 0u64;
    for batch in 0..40u32 {
        let streams = (batch * 50..batch * 50 + 50).map(|i| 2 * i + 1);
        for id in streams.clone() {
            c.send(PING, 0, 0, &u64::from(id / 2).to_be_bytes());
            c.headers(id, &get("/hello"), true);
        }
        let mut open: Vec<u32> = streams.collect();
        while !open.is_empty() {
            let f = c
                .read_frame()
                .unwrap_or_else(|| panic!("connection ended with streams {open:?} unanswered"));
            match f.kind {
                DATA if f.flags & END_STREAM != 0 => open.retain(|&id| id != f.stream),
                PING if f.flags & ACK != 0 => {
                    assert_eq!(f.payload, acks.to_be_bytes(), "PING ACKs in order");
                    acks += 1;
                }
                RST_STREAM => panic!("stream {} reset ({:#x})", f.stream, f.error_code()),
                GOAWAY => panic!("GOAWAY ({:#x})", f.error_code()),
                _ => {}
            }
        }
    }
    // Each PING was answered before the response to the request sent after it.
    assert_eq!(acks, 2000);
    c.headers(4001, &get("/hello"), true);
    assert_eq!(c.status(4001), 200);
}

/// The GOAWAY that ends a flood is not lost behind response bytes the client has not read yet.
/// Closing a socket with unread bytes (the rest of the flood) resets the connection, and a
/// reset drops what the server had queued but not yet sent (the rest of the response, then the
/// GOAWAY); the server must keep reading until the client has its bytes and closes.
#[test]
fn goaway_after_a_flood_arrives_behind_unread_data() {
    let mut config = Config::default();
    config.http2.control_frame_budget = 500;
    let server = TlsTestServer::start(config);
    // A small receive buffer: what the server writes waits in its own send buffer, which a
    // reset empties. Windows as large as allowed: a 32 MiB response keeps that buffer full.
    let mut c = FrameClient::connect_with_receive_buffer(server.addr, 4096);
    c.send(SETTINGS, 0, 0, &[0, 4, 0x7f, 0xff, 0xff, 0xff]);
    c.send(
        WINDOW_UPDATE,
        0,
        0,
        &(0x7fff_ffff - 65_535u32).to_be_bytes(),
    );
    c.headers(1, &get("/big?len=33554432"), true);
    c.until(|f| f.kind == DATA && f.stream == 1)
        .expect("response DATA");
    let pings = (0..20_000u64)
        .map(|i| frame_bytes(PING, 0, 0, &i.to_be_bytes()))
        .collect();
    // The client reads nothing for a while: the response fills the socket buffers, and the
    // GOAWAY is queued behind it. (The pause does not decide the outcome against a correct
    // server; without it, the test is less likely to catch one that closes at once.)
    let f = flood_reading_after(c, pings, Duration::from_millis(300));
    assert_eq!(f.code, Some(ENHANCE_YOUR_CALM));
}

#[test]
fn continuation_flood_is_cut_off() {
    let server = TlsTestServer::start(Config::default());
    let c = FrameClient::connect(server.addr);
    let mut frames = vec![frame_bytes(HEADERS, 0, 1, &hpack(&get("/hello")))];
    // Endless CONTINUATION without END_HEADERS, each carrying a 16 KiB header field.
    let big = "v".repeat(16 * 1024);
    for i in 0..2000 {
        let name = format!("x-flood-{i}");
        frames.push(frame_bytes(CONTINUATION, 0, 1, &hpack(&[(&name, &big)])));
    }
    let Flooded { code, written, .. } = flood(c, frames);
    assert!(
        matches!(
            code,
            Some(ENHANCE_YOUR_CALM | COMPRESSION_ERROR | PROTOCOL_ERROR)
        ) || code.is_none(),
        "{code:?}"
    );
    // Cut off long before 32 MiB of headers were taken.
    assert!(written < 2000, "all {written} frames accepted");
}

#[test]
fn hpack_bomb_is_refused() {
    let server = TlsTestServer::start(Config::default());
    let mut c = FrameClient::connect(server.addr);
    // One 4 KiB field stored in the dynamic table (literal with incremental indexing)...
    let mut block = hpack(&get("/hello"));
    block.push(0x40);
    hpack_int(&mut block, 0, 7, 6);
    block.extend_from_slice(b"x-bomb");
    hpack_int(&mut block, 0, 7, 4000);
    block.extend_from_slice(&[b'b'; 4000]);
    // ... then referenced 200 times with one byte each (index 62: the newest entry): 800 KB
    // decoded from a 5 KB block.
    block.extend(std::iter::repeat_n(0xbe, 200));
    c.send(HEADERS, END_HEADERS | END_STREAM, 1, &block);
    let outcome = c.until(|f| {
        (f.kind == HEADERS || f.kind == RST_STREAM) && f.stream == 1 || f.kind == GOAWAY
    });
    match outcome {
        Some(f) if f.kind == HEADERS => assert_eq!(status_of(&f.payload), 431),
        Some(f) if f.kind == RST_STREAM => {}
        Some(f) => assert_eq!(f.error_code(), ENHANCE_YOUR_CALM),
        None => {}
    }
}

#[test]
fn rapid_reset_cannot_exceed_the_handler_bound() {
    let mut config = Config::default();
    config.http2.max_concurrent_streams = 8;
    let server = TlsTestServer::start(config);
    let c = FrameClient::connect(server.addr);
    let mut frames = Vec::new();
    for i in 0..500u32 {
        let stream = 2 * i + 1;
        frames.push(frame_bytes(
            HEADERS,
            END_HEADERS | END_STREAM,
            stream,
            &hpack(&get("/hold?g=1")),
        ));
        frames.push(frame_bytes(RST_STREAM, 0, stream, &8u32.to_be_bytes()));
    }
    let f = flood(c, frames);
    // h2's limit on streams reset while waiting to be accepted closes the connection.
    assert_eq!(f.code, Some(ENHANCE_YOUR_CALM));
    // Never more handlers at once than the advertised stream limit (often none ran at all:
    // h2 saw the resets before the streams were accepted).
    let max = MAX_HOLDING[1].load(Ordering::SeqCst);
    assert!(max <= 8, "{max} handlers ran at once");
    hold_release(1).notify_waiters();
}

/// A client that opens a stream and never grants flow-control credit: the wait for send
/// capacity is bounded by the response rate on the piece waited for, not on the whole write
/// (a 64 MiB body at 1 MiB/s waited 64 s for a window that never opened).
#[test]
fn stalled_window_under_one_large_write_is_reset() {
    let config = Config::default().with_min_response_rate(Some(weir::DataRate::new(
        1 << 20,
        Duration::from_millis(200),
    )));
    let server = TlsTestServer::start(config);
    let mut c = FrameClient::connect(server.addr);
    c.headers(1, &get("/big?len=67108864"), true);
    // The first 64 KiB window goes out; no WINDOW_UPDATE ever follows.
    assert_eq!(
        c.reset_of(1),
        Ok(0x8),
        "no RST_STREAM(CANCEL) for the stalled stream"
    );
}
