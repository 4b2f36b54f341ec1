//! The TechEmpower plaintext response, as every system sends it.
//!
//! `Hello, World!` with `Content-Type: text/plain`, a `Server` header and a `Date` header. The
//! server name is the same for every system so the responses differ in no byte but the date.

use std::time::{SystemTime, UNIX_EPOCH};

/// The response body.
pub const BODY: &[u8] = b"Hello, World!";
/// The `Content-Type` value.
pub const CONTENT_TYPE: &str = "text/plain";
/// The `Server` value.
pub const SERVER: &str = "bench";

/// The whole plaintext response, pre-encoded, with its `Date` refreshed once a second.
/// Used by the raw responder, which writes it byte for byte.
pub struct Encoded {
    second: u64,
    bytes: Vec<u8>,
}

impl Default for Encoded {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoded {
    /// An encoded response for the current second.
    pub fn new() -> Self {
        let mut e = Self {
            second: u64::MAX,
            bytes: Vec::with_capacity(256),
        };
        e.refresh(SystemTime::now());
        e
    }

    /// Re-encodes if `now` is in a later second than the current bytes.
    pub fn refresh(&mut self, now: SystemTime) {
        let second = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if second == self.second {
            return;
        }
        self.second = second;
        self.bytes.clear();
        self.bytes
            .extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n");
        self.bytes.extend_from_slice(b"Content-Type: ");
        self.bytes.extend_from_slice(CONTENT_TYPE.as_bytes());
        self.bytes.extend_from_slice(b"\r\nServer: ");
        self.bytes.extend_from_slice(SERVER.as_bytes());
        self.bytes.extend_from_slice(b"\r\nDate: ");
        self.bytes
            .extend_from_slice(httpdate::fmt_http_date(now).as_bytes());
        self.bytes.extend_from_slice(b"\r\n\r\n");
        self.bytes.extend_from_slice(BODY);
    }

    /// The response bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
