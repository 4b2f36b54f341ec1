//! [`Connection`]: one request and its response over HTTP/1.1 (`http.rs`, on a blocking
//! [`Transport`](super::transport::Transport), in the clear or TLS) or HTTP/2 (`h2.rs`),
//! behind the calls `put` and `get` make. A `match` per call; the work is in the two modules.

use super::h2::H2Connection;
use super::http::{self, Request, ResponseHead};
use crate::cli::SendfileMode;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Write};
use std::time::Duration;
use weir_proto::digest_fields::ContentDigest;

/// A connection carrying one exchange.
pub(crate) enum Connection {
    H1(http::Connection),
    H2(Box<H2Connection>),
}

/// How a response body is read.
pub(crate) enum Body {
    H1(http::Body),
    /// HTTP/2 frames its own bodies; the connection holds the stream.
    H2,
}

impl Connection {
    /// Sends the request head; `has_body` says that [`Connection::send_file`] follows (HTTP/2
    /// ends the stream with the head otherwise).
    pub(crate) fn send_head(&mut self, req: &Request<'_>, has_body: bool) -> io::Result<()> {
        match self {
            Self::H1(c) => c.send_head(req),
            Self::H2(c) => c.send_head(req, has_body),
        }
    }

    /// Whether this connection can pass an open file with a request head: HTTP/1.1 on a Unix
    /// socket in the clear, on Linux.
    pub(crate) fn can_pass_file(&mut self) -> bool {
        match self {
            #[cfg(target_os = "linux")]
            Self::H1(c) => c.transport().can_pass_file(),
            _ => false,
        }
    }

    /// Sends the request head with `file`'s descriptor passed along (see
    /// [`Connection::can_pass_file`]).
    pub(crate) fn send_head_passing(&mut self, req: &Request<'_>, file: &File) -> io::Result<()> {
        match self {
            Self::H1(c) => c.send_head_passing(req, Some(file)),
            Self::H2(_) => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    /// Reads a response head (`1xx` included). With `timeout`, `Ok(None)` if nothing arrived
    /// in time.
    pub(crate) fn read_head(
        &mut self,
        timeout: Option<Duration>,
    ) -> io::Result<Option<ResponseHead>> {
        match self {
            Self::H1(c) => c.read_head(timeout),
            Self::H2(c) => c.read_head(timeout),
        }
    }

    /// Bounds every wait for the peer (HTTP/1.1; HTTP/2 waits as before).
    pub(crate) fn set_idle_timeout(&mut self, idle: Option<Duration>) -> io::Result<()> {
        match self {
            Self::H1(c) => c.set_idle_timeout(idle),
            Self::H2(_) => Ok(()),
        }
    }

    /// Sends `len` bytes of `file` from `offset` as the request body; `sendfile` says when to
    /// use `sendfile(2)` where the transport allows it (HTTP/1.1 in the clear).
    pub(crate) fn send_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
        sendfile: SendfileMode,
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<()> {
        match self {
            Self::H1(c) => {
                let transport = c.transport();
                if sendfile.chooses(transport.sendfile_pays()) {
                    transport.send_file(file, offset, len, progress)
                } else {
                    transport.copy_file(file, offset, len, progress)
                }
            }
            Self::H2(c) => c.send_file(file, offset, len, progress),
        }
    }

    /// Whether this is an HTTP/2 connection (a request body then needs no chunked framing to
    /// carry trailers).
    pub(crate) fn is_h2(&self) -> bool {
        matches!(self, Self::H2(_))
    }

    /// Sends `len` bytes of `file` from `offset` as the request body, hashing each buffer
    /// with `hasher` once it is sent, then ends it with the trailer field `trailer`
    /// (`content-digest` or `repr-digest`) carrying the SHA-256 `hasher` then holds, which is
    /// returned. HTTP/1.1: the request was sent chunked (the caller's head says so); HTTP/2:
    /// a trailing HEADERS frame. Always through a buffer: the hash needs the bytes in user
    /// space, and reading them there once serves both the hash and the send.
    pub(crate) fn send_file_digest(
        &mut self,
        file: &File,
        (offset, len): (u64, u64),
        (trailer, hasher): (&'static str, &mut Sha256),
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<[u8; 32]> {
        let field = |sha256: [u8; 32]| {
            let digest = ContentDigest {
                sha256: Some(sha256),
                sha512: None,
            };
            digest.to_header_value()
        };
        match self {
            Self::H1(c) => {
                let transport = c.transport();
                let seen = &mut |b: &[u8]| hasher.update(b);
                transport.copy_file_chunked(file, (offset, len), seen, progress)?;
                let sha256: [u8; 32] = hasher.clone().finalize().into();
                // The last chunk and the trailer section: one small write.
                let end = format!("0\r\n{trailer}: {}\r\n\r\n", field(sha256));
                transport.write_all(end.as_bytes())?;
                transport.flush()?;
                Ok(sha256)
            }
            Self::H2(c) => {
                let hasher = std::cell::RefCell::new(hasher);
                let mut sha256 = [0u8; 32];
                let seen = &mut |b: &[u8]| hasher.borrow_mut().update(b);
                let make = &mut || {
                    sha256 = hasher.borrow().clone().finalize().into();
                    let mut map = ::http::HeaderMap::new();
                    if let Ok(value) = ::http::HeaderValue::from_str(&field(sha256)) {
                        map.insert(::http::HeaderName::from_static(trailer), value);
                    }
                    map
                };
                c.send_file_with_trailers(file, (offset, len), seen, progress, make)?;
                Ok(sha256)
            }
        }
    }

    /// How the body of a response to `method` is delimited.
    pub(crate) fn body(&self, method: &str, head: &ResponseHead) -> io::Result<Body> {
        match self {
            Self::H1(c) => c.body(method, head).map(Body::H1),
            Self::H2(_) => Ok(Body::H2),
        }
    }

    /// Reads body bytes into `dst`; `Ok(0)` at the end of the body. A body cut short is an
    /// error, never a short body.
    pub(crate) fn read_body(&mut self, body: &mut Body, dst: &mut [u8]) -> io::Result<usize> {
        match (self, body) {
            (Self::H1(c), Body::H1(body)) => c.read_body(body, dst),
            (Self::H2(c), Body::H2) => c.read_body(dst),
            _ => Err(io::Error::other("body read on the wrong protocol")),
        }
    }

    /// Reads the rest of a (small) body into a string, at most `limit` bytes.
    pub(crate) fn read_text(&mut self, body: &mut Body, limit: usize) -> io::Result<String> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = self.read_body(body, &mut chunk)?;
            if n == 0 || out.len() >= limit {
                break;
            }
            out.extend_from_slice(&chunk[..n]);
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}
