//! A minimal blocking HTTP/1.1 exchange over a [`Transport`]: write a request head, read a
//! response head (`httparse`), read a body framed by `Content-Length`, chunked encoding (with
//! weir-proto's decoder) or the end of the connection.
//!
//! One request per connection (the client commands make one each), so there is no
//! keep-alive bookkeeping. Body reads go straight into the caller's buffer when nothing is
//! buffered, like the server's: the kernel's copy is the only one.

use super::transport::Transport;
use std::io::{self, Read, Write};
use std::time::Duration;
use weir_proto::body::BodyDecoder;
use weir_proto::{Framing, Limits};

/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;

/// A request head to send.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    /// Origin-form target, already percent-encoded.
    pub(crate) target: &'a str,
    pub(crate) host: &'a str,
    pub(crate) headers: Vec<(&'static str, String)>,
}

/// A response head.
#[derive(Debug)]
pub(crate) struct ResponseHead {
    pub(crate) status: u16,
    pub(crate) reason: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl ResponseHead {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, joined with `", "` (RFC 9110 §5.3).
    pub(crate) fn joined(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }
}

/// One connection to a server.
pub(crate) struct Connection {
    transport: Transport,
    /// Bytes read but not yet taken (`buf[start..end]`).
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// How long a read may wait when the caller sets no timeout (`None`: forever).
    idle: Option<Duration>,
}

/// How a response body ends.
pub(crate) enum Body {
    Framed(BodyDecoder),
    /// Until the server closes.
    UntilClose {
        done: bool,
    },
}

impl Connection {
    pub(crate) fn new(transport: Transport) -> Self {
        Self {
            transport,
            buf: vec![0; 16 * 1024],
            start: 0,
            end: 0,
            idle: None,
        }
    }

    /// Makes reads and writes that wait longer than `idle` fail (`TimedOut`/`WouldBlock`):
    /// a stalled connection is then an error the caller can retry, not a hang.
    pub(crate) fn set_idle_timeout(&mut self, idle: Option<Duration>) -> io::Result<()> {
        self.idle = idle;
        self.transport.set_write_timeout(idle)?;
        self.transport.set_read_timeout(idle)
    }

    pub(crate) fn transport(&mut self) -> &mut Transport {
        &mut self.transport
    }

    /// Writes the request head.
    pub(crate) fn send_head(&mut self, req: &Request<'_>) -> io::Result<()> {
        self.send_head_passing(req, None)
    }

    /// Writes the request head, with `file`'s descriptor passed along if given
    /// ([`Transport::write_passing`]).
    pub(crate) fn send_head_passing(
        &mut self,
        req: &Request<'_>,
        file: Option<&std::fs::File>,
    ) -> io::Result<()> {
        let mut head = format!(
            "{} {} HTTP/1.1\r\nhost: {}\r\nuser-agent: weir/{}\r\n",
            req.method,
            req.target,
            req.host,
            env!("CARGO_PKG_VERSION")
        );
        for (name, value) in &req.headers {
            if value.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("invalid characters in the {name} header"),
                ));
            }
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        #[cfg(target_os = "linux")]
        if let Some(file) = file {
            return self.transport.write_passing(head.as_bytes(), file);
        }
        #[cfg(not(target_os = "linux"))]
        if file.is_some() {
            return Err(io::ErrorKind::Unsupported.into());
        }
        self.transport.write_all(head.as_bytes())?;
        self.transport.flush()
    }

    /// Reads a response head. With `timeout`, returns `Ok(None)` if nothing arrived in time
    /// (used to wait for `100 Continue` without hanging on servers that never send it).
    pub(crate) fn read_head(
        &mut self,
        timeout: Option<Duration>,
    ) -> io::Result<Option<ResponseHead>> {
        self.transport.set_read_timeout(timeout.or(self.idle))?;
        let result = self.read_head_inner(timeout.is_some());
        self.transport.set_read_timeout(self.idle)?;
        result
    }

    fn read_head_inner(&mut self, may_time_out: bool) -> io::Result<Option<ResponseHead>> {
        loop {
            if self.end > self.start {
                let mut slots = [httparse::EMPTY_HEADER; 64];
                let mut response = httparse::Response::new(&mut slots);
                match response.parse(&self.buf[self.start..self.end]) {
                    Ok(httparse::Status::Complete(len)) => {
                        let head = ResponseHead {
                            status: response.code.unwrap_or(0),
                            reason: response.reason.unwrap_or("").to_owned(),
                            headers: response
                                .headers
                                .iter()
                                .map(|h| {
                                    (
                                        h.name.to_owned(),
                                        String::from_utf8_lossy(h.value).into_owned(),
                                    )
                                })
                                .collect(),
                        };
                        self.start += len;
                        return Ok(Some(head));
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(e) => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("malformed response from the server: {e}"),
                        ));
                    }
                }
            }
            if self.end - self.start >= MAX_HEAD {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "response head too large",
                ));
            }
            match self.fill() {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection without answering",
                    ));
                }
                Ok(_) => {}
                Err(e)
                    if may_time_out
                        && self.end == self.start
                        && matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                {
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// How the body of a response to `method` is delimited (RFC 9112 §6.3).
    pub(crate) fn body(&self, method: &str, head: &ResponseHead) -> io::Result<Body> {
        let no_body = method == "HEAD"
            || head.status == 204
            || head.status == 304
            || (100..200).contains(&head.status);
        if no_body {
            return Ok(Body::Framed(BodyDecoder::Length(0)));
        }
        let chunked = head
            .joined("transfer-encoding")
            .is_some_and(|te| te.to_ascii_lowercase().trim_end().ends_with("chunked"));
        if chunked {
            return Ok(Body::Framed(BodyDecoder::new(
                Framing::Chunked,
                &Limits::default(),
            )));
        }
        match head.header("content-length") {
            Some(len) => {
                let len =
                    weir_proto::framing::parse_content_length(len.as_bytes()).map_err(|_| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            "invalid Content-Length in response",
                        )
                    })?;
                Ok(Body::Framed(BodyDecoder::Length(len)))
            }
            None => Ok(Body::UntilClose { done: false }),
        }
    }

    /// Reads body bytes into `dst`; `Ok(0)` at the end of the body. A connection that ends
    /// before a framed body does is an error, never a short body.
    pub(crate) fn read_body(&mut self, body: &mut Body, dst: &mut [u8]) -> io::Result<usize> {
        if dst.is_empty() {
            return Ok(0);
        }
        match body {
            Body::UntilClose { done: true } => Ok(0),
            Body::UntilClose { done } => {
                if self.end > self.start {
                    let n = (self.end - self.start).min(dst.len());
                    dst[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
                    self.start += n;
                    return Ok(n);
                }
                let n = self.transport.read(dst)?;
                *done = n == 0;
                Ok(n)
            }
            Body::Framed(decoder) => loop {
                if decoder.is_done() {
                    return Ok(0);
                }
                if self.end > self.start {
                    let d = decoder
                        .decode(&self.buf[self.start..self.end])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.as_str()))?;
                    self.start += d.framing;
                    if d.data > 0 {
                        let n = d.data.min(dst.len());
                        // COPY: bytes that arrived with the head or framing.
                        dst[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
                        self.start += n;
                        decoder.consume(n);
                        return Ok(n);
                    }
                    if decoder.is_done() {
                        return Ok(0);
                    }
                }
                let window = decoder.direct_window();
                if self.end == self.start && window > 0 && dst.len() >= self.buf.len() {
                    let want = usize::try_from(window).unwrap_or(usize::MAX).min(dst.len());
                    let n = self.transport.read(&mut dst[..want])?;
                    if n == 0 {
                        return Err(truncated());
                    }
                    decoder.consume(n);
                    return Ok(n);
                }
                if self.fill()? == 0 {
                    return Err(truncated());
                }
            },
        }
    }

    /// Reads more bytes into the buffer (compacting it first).
    fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.transport.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the connection closed before the end of the response",
    )
}
