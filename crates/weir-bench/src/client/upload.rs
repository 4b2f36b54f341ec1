//! The upload client: one connection, one request, the body written from memory in large writes,
//! over HTTP/1.1, HTTPS (HTTP/1.1 over TLS), h2c or HTTP/2 over TLS ([`Protocol`]).
//!
//! curl tops out far below what a loopback socket can carry (docs/archive/BENCHMARKS-history.md,
//! "Figures once quoted in source comments"), so throughput is measured with this instead: the body
//! is a [`CHUNK`]-sized buffer (filled with a non-constant pattern and touched up front) written
//! again and again, so the client spends its time in the kernel copying (and, over TLS,
//! encrypting), not in its own code:
//! - HTTP/1.1: blocking `write`s of the whole buffer, or, with [`BodySend::Splice`], the
//!   buffer's pages spliced into the socket ([`super::spliced`]: no copy in the client, so that
//!   rows faster than the `write` client's own pace can show it);
//! - HTTPS: the same writes through a blocking rustls stream whose send buffer is
//!   [`CLIENT_SEND_BUFFER`](crate::tls::CLIENT_SEND_BUFFER) (1 MiB of records per `writev`, as
//!   `weir put` does, instead of rustls's 64 KiB);
//! - HTTP/2 (h2c and over TLS): see [`super::h2_upload`].
//!
//! Every upload records the client thread's CPU time, so the report can show that the client
//! was not the limit. The HTTP/2 client runs on a current-thread tokio runtime on the calling
//! thread, so that figure covers all of its work too.

use super::h2_upload;
use super::response;
use super::spliced;
use super::stream::Stream;
use crate::clock;
use crate::server::Endpoint;
use crate::server::trace::{BodyPath, UploadTrace};
use crate::tls::{self, BenchCert};
use bytes::Bytes;
use clap::ValueEnum;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

/// Longest a single read or write of the upload may block.
pub const STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Size of each body write (HTTP/1.1) and the buffer every body piece is cut from.
pub const CHUNK: usize = 8 << 20;

/// How the HTTP/1.1 client (over TCP or a Unix socket) puts the body into the socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BodySend {
    /// `write` of the buffer: the kernel copies each byte in.
    #[default]
    Write,
    /// `vmsplice` + `splice` of the buffer's pages: no copy in the client.
    Splice,
}

/// How the client talks to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    /// HTTP/1.1 over plain TCP (or a Unix socket): the sweep's rows.
    #[value(skip)]
    H1,
    /// HTTP/1.1 over TLS (ALPN `http/1.1`).
    Https,
    /// HTTP/2 over plain TCP, by prior knowledge.
    H2c,
    /// HTTP/2 over TLS (ALPN `h2`).
    H2Tls,
}

impl Protocol {
    /// Whether the connection is TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, Protocol::Https | Protocol::H2Tls)
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::H1 => "HTTP/1.1",
            Protocol::Https => "HTTPS (HTTP/1.1)",
            Protocol::H2c => "h2c",
            Protocol::H2Tls => "HTTP/2 over TLS",
        })
    }
}

/// One finished upload.
#[derive(Clone, Debug)]
pub struct Upload {
    /// `CLOCK_MONOTONIC` ns before connecting.
    pub start_ns: u64,
    /// `CLOCK_MONOTONIC` ns after the whole response was read.
    pub end_ns: u64,
    /// CPU time of the client (the calling thread) over the upload, in ns.
    pub client_cpu_ns: u64,
    /// The TLS version and cipher suite negotiated, for TLS connections.
    pub tls: Option<String>,
    /// What the server reported.
    pub trace: UploadTrace,
}

impl Upload {
    /// Wall time of the upload in seconds.
    pub fn seconds(&self) -> f64 {
        (self.end_ns - self.start_ns) as f64 / 1e9
    }
}

/// The bytes every upload sends: `len` of a fixed, non-repeating-looking pattern (not zeros,
/// which a compressing layer or a sparse file could shortcut).
pub fn body_pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + i / 4096) as u8).collect()
}

/// Holds the body buffer across uploads, and the TLS client configurations.
pub struct Uploader {
    /// `Bytes`, so the HTTP/2 client sends slices of it without copying.
    chunk: Bytes,
    tls: Option<TlsClients>,
    send: BodySend,
}

struct TlsClients {
    h1: Arc<ClientConfig>,
    h2: Arc<ClientConfig>,
}

impl Default for Uploader {
    fn default() -> Self {
        Self::new()
    }
}

impl Uploader {
    /// Allocates and fills the body buffer.
    pub fn new() -> Self {
        let chunk = body_pattern(CHUNK);
        Self {
            chunk: Bytes::from(chunk),
            tls: None,
            send: BodySend::Write,
        }
    }

    /// Sends plain HTTP/1.1 bodies the way `send` says (TLS and HTTP/2 bodies are written).
    pub fn with_send(mut self, send: BodySend) -> Self {
        self.send = send;
        self
    }

    /// Trusts `cert` for the TLS protocols.
    pub fn with_tls(mut self, cert: &BenchCert) -> Self {
        self.tls = Some(TlsClients {
            h1: Arc::clone(&cert.client_h1),
            h2: Arc::clone(&cert.client_h2),
        });
        self
    }

    /// POSTs `size` bytes to `/upload` on `endpoint` over HTTP/1.1 and checks the server got
    /// all of them.
    pub fn upload(&self, endpoint: &Endpoint, size: u64) -> io::Result<Upload> {
        self.upload_over(Protocol::H1, endpoint, size)
    }

    /// [`Uploader::upload`] over `protocol`.
    pub fn upload_over(
        &self,
        protocol: Protocol,
        endpoint: &Endpoint,
        size: u64,
    ) -> io::Result<Upload> {
        self.send_to(&Target::PEER, protocol, endpoint, size)
    }

    /// `PUT /files/<path>` of `size` bytes to `weir serve` over `protocol`, the body written as
    /// [`Uploader::upload_over`] writes it; the trace is made of the service's JSON answer (the
    /// size stored and the body counters; no instants).
    pub fn put_file_over(
        &self,
        protocol: Protocol,
        endpoint: &Endpoint,
        path: &str,
        size: u64,
    ) -> io::Result<Upload> {
        let path = format!("/files/{path}");
        self.send_to(&Target::service(&path), protocol, endpoint, size)
    }

    /// One upload of `size` bytes to `target` over `protocol`, checked: the server must report
    /// all of them.
    fn send_to(
        &self,
        target: &Target<'_>,
        protocol: Protocol,
        endpoint: &Endpoint,
        size: u64,
    ) -> io::Result<Upload> {
        // The HTTP/2 client's runtime is built before the clock starts (it costs microseconds,
        // but it is no part of the upload).
        let rt = match protocol {
            Protocol::H2c | Protocol::H2Tls => Some(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?,
            ),
            Protocol::H1 | Protocol::Https => None,
        };
        let start_ns = clock::monotonic_ns();
        let cpu_before = clock::thread_cpu_ns();
        let (trace, tls) = match protocol {
            Protocol::H1 => {
                let mut s = Stream::connect(endpoint)?;
                // A server that stops reading or never answers fails the run instead of
                // hanging it.
                s.set_timeouts(Some(STALL_TIMEOUT))?;
                (
                    exchange_h1(&mut s, target, self.send, &self.chunk, size)?,
                    None,
                )
            }
            Protocol::Https => {
                let (trace, tls) = self.https(target, endpoint, size)?;
                (trace, Some(tls))
            }
            Protocol::H2c | Protocol::H2Tls => {
                let tls = match protocol {
                    Protocol::H2Tls => Some(Arc::clone(&self.tls_clients()?.h2)),
                    _ => None,
                };
                let rt = rt
                    .as_ref()
                    .ok_or_else(|| io::Error::other("no runtime for HTTP/2"))?;
                rt.block_on(h2_upload::upload(
                    tcp_addr(endpoint)?,
                    tls,
                    target,
                    &self.chunk,
                    size,
                ))?
            }
        };
        let end_ns = clock::monotonic_ns();
        let client_cpu_ns = clock::thread_cpu_ns().saturating_sub(cpu_before);
        // The runtime, and the connection task it may still hold, go only now: closing the
        // connection is no part of the upload.
        drop(rt);
        if trace.bytes != size {
            return Err(io::Error::other(format!(
                "server received {} of {size} bytes",
                trace.bytes
            )));
        }
        Ok(Upload {
            start_ns,
            end_ns,
            client_cpu_ns,
            tls,
            trace,
        })
    }

    fn tls_clients(&self) -> io::Result<&TlsClients> {
        self.tls
            .as_ref()
            .ok_or_else(|| io::Error::other("TLS upload without a certificate to trust"))
    }

    /// HTTPS: a blocking rustls stream with a 1 MiB send buffer.
    fn https(
        &self,
        target: &Target<'_>,
        endpoint: &Endpoint,
        size: u64,
    ) -> io::Result<(UploadTrace, String)> {
        let tcp = TcpStream::connect(tcp_addr(endpoint)?)?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(STALL_TIMEOUT))?;
        tcp.set_write_timeout(Some(STALL_TIMEOUT))?;
        let name = ServerName::try_from(tls::SERVER_NAME).map_err(io::Error::other)?;
        let mut conn = rustls::ClientConnection::new(Arc::clone(&self.tls_clients()?.h1), name)
            .map_err(io::Error::other)?;
        conn.set_buffer_limit(Some(tls::CLIENT_SEND_BUFFER));
        let mut s = rustls::StreamOwned::new(conn, tcp);
        let trace = exchange_h1(&mut s, target, BodySend::Write, &self.chunk, size)?;
        let negotiated = negotiated(&s.conn, tls::ALPN_HTTP11)?;
        s.conn.send_close_notify();
        let _ = s.conn.complete_io(&mut s.sock);
        Ok((trace, negotiated))
    }
}

/// The TLS version and cipher suite of a connection, checking that ALPN chose `alpn`.
pub fn negotiated<S>(conn: &rustls::ConnectionCommon<S>, alpn: &[u8]) -> io::Result<String> {
    if conn.alpn_protocol() != Some(alpn) {
        return Err(io::Error::other(format!(
            "server chose ALPN {:?}, not {:?}",
            conn.alpn_protocol().map(String::from_utf8_lossy),
            String::from_utf8_lossy(alpn)
        )));
    }
    let version = conn.protocol_version().map(|v| match v {
        rustls::ProtocolVersion::TLSv1_3 => "TLS 1.3",
        rustls::ProtocolVersion::TLSv1_2 => "TLS 1.2",
        _ => "TLS (older)",
    });
    let suite = conn
        .negotiated_cipher_suite()
        .and_then(|s| s.suite().as_str());
    Ok(format!(
        "{} {}",
        version.unwrap_or("TLS ?"),
        suite.unwrap_or("unknown suite")
    ))
}

fn tcp_addr(endpoint: &Endpoint) -> io::Result<std::net::SocketAddr> {
    match endpoint {
        Endpoint::Tcp(a) => Ok(*a),
        Endpoint::Unix(_) => Err(io::Error::other(
            "the TLS and HTTP/2 uploads are over TCP only",
        )),
    }
}

impl Uploader {
    /// [`Uploader::put_file_over`] HTTP/1.1.
    pub fn put_file(&self, endpoint: &Endpoint, path: &str, size: u64) -> io::Result<Upload> {
        self.put_file_over(Protocol::H1, endpoint, path, size)
    }
}

/// Where an upload goes and how its answer is read: the bench's own servers (`POST /upload`,
/// answered with their trace) or `weir serve` (`PUT /files/<path>` with `Weir-Debug: 1`, so
/// that its JSON answer carries the body counters).
pub struct Target<'a> {
    /// The request method.
    pub method: &'static str,
    /// The request target.
    pub path: &'a str,
    /// The `Host` header (HTTP/1.1; HTTP/2 names `localhost`, the certificate's name).
    pub host: &'static str,
    /// Whether to send `Weir-Debug: 1`.
    pub debug: bool,
    /// Reads the answer: its status and body into the server's trace, or the error.
    pub trace: fn(u16, &[u8]) -> io::Result<UploadTrace>,
}

impl Target<'static> {
    /// The bench's own servers' upload route.
    pub const PEER: Self = Self {
        method: "POST",
        path: "/upload",
        host: "bench",
        debug: false,
        trace: trace_from,
    };
}

impl<'a> Target<'a> {
    /// `weir serve`'s `PUT` of `path` (`/files/…`).
    pub fn service(path: &'a str) -> Self {
        Self {
            method: "PUT",
            path,
            host: "127.0.0.1",
            debug: true,
            trace: trace_from_service,
        }
    }
}

/// The trace of a `weir serve` upload, from its JSON answer: `size`, and `body.direct`,
/// `body.copied`, `body.spliced` as the body path.
fn trace_from_service(status: u16, body: &[u8]) -> io::Result<UploadTrace> {
    let bad = || {
        io::Error::other(format!(
            "weir serve answered {status}: {}",
            String::from_utf8_lossy(body).trim()
        ))
    };
    if status != 200 && status != 201 {
        return Err(bad());
    }
    let j: serde_json::Value = serde_json::from_slice(body).map_err(|_| bad())?;
    let n = |v: &serde_json::Value| v.as_u64().ok_or_else(bad);
    Ok(UploadTrace {
        bytes: n(&j["size"])?,
        path: Some(BodyPath {
            direct: n(&j["body"]["direct"])?,
            copied: n(&j["body"]["copied"])?,
            spliced: n(&j["body"]["spliced"])?,
            peak_ahead: 0,
        }),
        ..UploadTrace::default()
    })
}

/// One HTTP/1.1 upload on a connected stream: the head, the body sent as `send` says, the
/// response, its trace.
fn exchange_h1<S: Read + SendsBody>(
    s: &mut S,
    target: &Target<'_>,
    send: BodySend,
    chunk: &[u8],
    size: u64,
) -> io::Result<UploadTrace> {
    let Target {
        method, path, host, ..
    } = target;
    let debug = if target.debug {
        "Weir-Debug: 1\r\n"
    } else {
        ""
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{debug}Content-Length: {size}\r\n\r\n"
    );
    let (status, body) = exchange(s, send, head.as_bytes(), chunk, size)?;
    (target.trace)(status, &body)
}

/// A stream the body can be sent on: spliced where it is a socket of its own.
trait SendsBody: Write {
    fn send_body(&mut self, send: BodySend, chunk: &[u8], size: u64) -> io::Result<()>;
}

impl SendsBody for Stream {
    fn send_body(&mut self, send: BodySend, chunk: &[u8], size: u64) -> io::Result<()> {
        match send {
            BodySend::Write => write_repeated(self, chunk, size),
            BodySend::Splice => spliced::send(self, chunk, size),
        }
    }
}

/// Over TLS the records are encrypted in the client's memory: always written.
impl SendsBody for rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    fn send_body(&mut self, _: BodySend, chunk: &[u8], size: u64) -> io::Result<()> {
        write_repeated(self, chunk, size)
    }
}

/// Writes `size` bytes of `chunk` repeated, in writes of the whole buffer.
fn write_repeated<S: Write + ?Sized>(s: &mut S, chunk: &[u8], size: u64) -> io::Result<()> {
    let mut left = size;
    while left > 0 {
        let n = (chunk.len() as u64).min(left) as usize;
        s.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    s.flush()
}

/// Writes `head`, then `size` body bytes, and reads one response: its status and body.
fn exchange<S: Read + SendsBody>(
    s: &mut S,
    send: BodySend,
    head: &[u8],
    chunk: &[u8],
    size: u64,
) -> io::Result<(u16, Vec<u8>)> {
    s.write_all(head)?;
    s.send_body(send, chunk, size)?;
    let mut buf = vec![0u8; 4096];
    let mut filled = 0;
    let parsed = loop {
        if let Some(p) =
            response::parse(&buf[..filled]).map_err(|_| io::Error::other("malformed response"))?
        {
            break p;
        }
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = s.read(&mut buf[filled..])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
    };
    buf.truncate(parsed.len);
    buf.drain(..parsed.head_len);
    Ok((parsed.status, buf))
}

/// The server's trace from an upload's response, or the error it answered with.
pub fn trace_from(status: u16, body: &[u8]) -> io::Result<UploadTrace> {
    if status != 200 {
        return Err(io::Error::other(format!(
            "status {status}: {}",
            String::from_utf8_lossy(body)
        )));
    }
    UploadTrace::parse(body).ok_or_else(|| io::Error::other("bad trace"))
}
