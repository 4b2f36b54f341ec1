//! The HTTP/2 frame client for tests: frames written as bytes (so a test can send any fault),
//! frames read back whole, and the few HPACK pieces a test needs (literal header blocks out,
//! the `:status` of a response in).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

// Frame types and flags (RFC 9113 §6).
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

// Error codes (RFC 9113 §7).
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const STREAM_CLOSED: u32 = 0x5;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// A frame as read off the wire.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The frame type.
    pub kind: u8,
    /// Its flags.
    pub flags: u8,
    /// Its stream identifier, the reserved bit cleared.
    pub stream: u32,
    /// Its payload.
    pub payload: Vec<u8>,
}

impl Frame {
    pub fn error_code(&self) -> u32 {
        let at = if self.kind == GOAWAY { 4 } else { 0 };
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }
}

pub fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// HPACK integer with an `n`-bit prefix (RFC 7541 §5.1).
pub fn hpack_int(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128 + 128) as u8);
        value /= 128;
    }
    out.push(value as u8);
}

/// A header block of literal fields without indexing, new names, no Huffman.
pub fn hpack(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in headers {
        out.push(0x00);
        hpack_int(&mut out, 0, 7, name.len());
        out.extend_from_slice(name.as_bytes());
        hpack_int(&mut out, 0, 7, value.len());
        out.extend_from_slice(value.as_bytes());
    }
    out
}

pub fn get(path: &str) -> Vec<(&str, &str)> {
    vec![
        (":method", "GET"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "localhost"),
    ]
}

/// The `:status` of a response header block, for the forms h2 sends: an indexed static entry,
/// or a literal with the static `:status` name and a (Huffman-coded) three-digit value.
pub fn status_of(block: &[u8]) -> u16 {
    const STATIC: [(u8, u16); 7] = [
        (8, 200),
        (9, 204),
        (10, 206),
        (11, 304),
        (12, 400),
        (13, 404),
        (14, 500),
    ];
    let b = block[0];
    if b & 0x80 != 0 {
        let index = b & 0x7f;
        return STATIC.iter().find(|(i, _)| *i == index).unwrap().1;
    }
    assert!(
        b == 0x08 || b == 0x18 || b == 0x48,
        "unexpected :status form {b:#x}"
    );
    let huffman = block[1] & 0x80 != 0;
    let len = (block[1] & 0x7f) as usize;
    let value = &block[2..2 + len];
    if !huffman {
        return std::str::from_utf8(value).unwrap().parse().unwrap();
    }
    // Digits in the HPACK Huffman code: 0-2 are 5 bits (00000..00010), 3-9 six bits
    // (011001..011111).
    let bits: Vec<u8> = value
        .iter()
        .flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1))
        .collect();
    let mut at = 0;
    let mut status = 0u16;
    for _ in 0..3 {
        let five = bits[at..at + 5].iter().fold(0u8, |a, b| a << 1 | b);
        let digit = if five <= 2 {
            at += 5;
            five
        } else {
            let six = bits[at..at + 6].iter().fold(0u8, |a, b| a << 1 | b);
            at += 6;
            six - 0b011001 + 3
        };
        status = status * 10 + u16::from(digit);
    }
    status
}

/// A raw HTTP/2 client connection: frames as bytes, nothing checked on the way out.
pub struct FrameClient {
    /// The connection.
    pub s: TcpStream,
    /// SETTINGS the server sent first.
    pub settings: Vec<(u16, u32)>,
}

impl FrameClient {
    /// Connects, sends the preface and empty SETTINGS, reads the server's SETTINGS and
    /// acknowledges them, and waits for the acknowledgement of ours.
    pub fn connect(addr: SocketAddr) -> Self {
        Self::over(TcpStream::connect(addr).unwrap())
    }

    /// [`FrameClient::connect`] over a socket whose receive buffer is about `size` bytes: the server's
    /// bytes back up in its send buffer as soon as this client reads slower than it writes.
    pub fn connect_with_receive_buffer(addr: SocketAddr, size: usize) -> Self {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket.set_recv_buffer_size(size).unwrap();
        socket.connect(&addr.into()).unwrap();
        Self::over(socket.into())
    }

    /// The connection preface and SETTINGS exchange over `s`.
    pub fn over(s: TcpStream) -> Self {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut raw = Self {
            s,
            settings: Vec::new(),
        };
        raw.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        raw.send(SETTINGS, 0, 0, &[]);
        let first = raw.read_frame().expect("server SETTINGS");
        assert_eq!((first.kind, first.flags, first.stream), (SETTINGS, 0, 0));
        raw.settings = first
            .payload
            .chunks(6)
            .map(|c| {
                (
                    u16::from_be_bytes([c[0], c[1]]),
                    u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
                )
            })
            .collect();
        raw.send(SETTINGS, ACK, 0, &[]);
        loop {
            let f = raw.read_frame().expect("SETTINGS ACK");
            if f.kind == SETTINGS && f.flags & ACK != 0 {
                return raw;
            }
        }
    }

    pub fn write(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    pub fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        self.write(&frame_bytes(kind, flags, stream, payload));
    }

    pub fn headers(&mut self, stream: u32, fields: &[(&str, &str)], end_stream: bool) {
        let flags = END_HEADERS | if end_stream { END_STREAM } else { 0 };
        self.send(HEADERS, flags, stream, &hpack(fields));
    }

    /// The next frame; `None` at EOF, reset or timeout.
    pub fn read_frame(&mut self) -> Option<Frame> {
        read_frame(&mut self.s)
    }

    /// Reads until a frame matches; `None` if the connection ends first.
    pub fn until(&mut self, want: impl Fn(&Frame) -> bool) -> Option<Frame> {
        loop {
            let f = self.read_frame()?;
            if want(&f) {
                return Some(f);
            }
        }
    }

    /// The error code of the GOAWAY the server sends next (skipping other frames).
    pub fn goaway(&mut self) -> Option<u32> {
        self.until(|f| f.kind == GOAWAY).map(|f| f.error_code())
    }

    /// What happens to `stream`: its RST_STREAM code, or the GOAWAY code (as `Err`).
    pub fn reset_of(&mut self, stream: u32) -> Result<u32, Option<u32>> {
        match self.until(|f| (f.kind == RST_STREAM && f.stream == stream) || f.kind == GOAWAY) {
            Some(f) if f.kind == RST_STREAM => Ok(f.error_code()),
            Some(f) => Err(Some(f.error_code())),
            None => Err(None),
        }
    }

    /// The `:status` of the response on `stream`.
    pub fn status(&mut self, stream: u32) -> u16 {
        let f = self
            .until(|f| f.kind == HEADERS && f.stream == stream)
            .expect("response HEADERS");
        status_of(&f.payload)
    }
}

pub fn read_frame(s: &mut TcpStream) -> Option<Frame> {
    let mut head = [0u8; 9];
    s.read_exact(&mut head).ok()?;
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).ok()?;
    Some(Frame {
        kind: head[3],
        flags: head[4],
        stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
        payload,
    })
}
