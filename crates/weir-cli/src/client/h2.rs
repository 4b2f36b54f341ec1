//! One HTTP/2 exchange over the `h2` crate, behind the same blocking calls as the HTTP/1.1
//! client (`http.rs`).
//!
//! `h2` is asynchronous; the client owns a current-thread tokio runtime for the life of the
//! connection and blocks on it for each call. The connection's frames are read and written by a
//! task on that runtime, which runs whenever a call waits (for flow-control capacity, a
//! response, or data), so nothing runs between calls and no thread is added.
//!
//! Over TLS the connection is made with ALPN `h2` only: a server that does not agree is an
//! error (the user asked for HTTP/2), not a silent fall-back. In the clear it is HTTP/2 by prior
//! knowledge (RFC 9113 §3.3).
//!
//! Flow control: uploads send as the server's window allows (`reserve_capacity`, then
//! `poll_capacity`), so at most one stream window plus one 1 MiB piece of the file is in
//! memory; downloads release capacity as each DATA frame is taken, under a 4 MiB window.

use super::http::{Request, ResponseHead};
use bytes::{Buf, Bytes};
use h2::client::{ResponseFuture, SendRequest};
use h2::{RecvStream, SendStream};
use http::{HeaderName, HeaderValue};
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use std::fs::File;
use std::future::{Future, poll_fn};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::runtime::Runtime;

/// The stream and connection windows the client advertises for responses: large enough that
/// a download is not held back by window updates on loopback, small enough to bound memory.
const RECV_WINDOW: u32 = 4 << 20;

/// The largest DATA frame the client accepts. 256 KiB, as the server advertises: measured
/// several times faster than HTTP/2's default of 16 KiB for bulk transfers.
const MAX_FRAME: u32 = 256 << 10;

/// Bytes of the file read per piece of an upload.
const PIECE: usize = 1 << 20;

/// The TLS side of a connection: configuration and the name the certificate must carry.
pub(crate) struct TlsSetup {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) name: ServerName<'static>,
}

/// An HTTP/2 connection carrying one exchange.
pub(crate) struct H2Connection {
    rt: Runtime,
    sender: SendRequest<Bytes>,
    /// `http` or `https`, for `:scheme`.
    scheme: &'static str,
    send: Option<SendStream<Bytes>>,
    response: Option<ResponseFuture>,
    recv: Option<RecvStream>,
    /// Received body bytes not yet read (`chunk` is advanced as they are).
    chunk: Bytes,
}

/// Why a connection could not be made.
pub(crate) enum ConnectError {
    /// The socket could not be connected.
    Socket(io::Error),
    /// The TLS handshake failed.
    Tls(io::Error),
    /// The server did not choose `h2` by ALPN.
    NotH2,
    /// The HTTP/2 preface or SETTINGS exchange failed.
    Handshake(h2::Error),
}

impl H2Connection {
    /// Connects to `authority` (or the Unix socket `unix`), with TLS if `tls` is given, and
    /// completes the HTTP/2 handshake.
    pub(crate) fn connect(
        authority: &str,
        unix: Option<&Path>,
        tls: Option<TlsSetup>,
    ) -> Result<Self, ConnectError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ConnectError::Socket)?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let sender = rt.block_on(async {
            match unix {
                Some(path) => {
                    let socket = tokio::net::UnixStream::connect(path)
                        .await
                        .map_err(ConnectError::Socket)?;
                    start(socket, tls).await
                }
                None => {
                    let socket = tokio::net::TcpStream::connect(authority)
                        .await
                        .map_err(ConnectError::Socket)?;
                    socket.set_nodelay(true).map_err(ConnectError::Socket)?;
                    start(socket, tls).await
                }
            }
        })?;
        Ok(Self {
            rt,
            sender,
            scheme,
            send: None,
            response: None,
            recv: None,
            chunk: Bytes::new(),
        })
    }

    /// Sends the request's HEADERS; `has_body` leaves the stream open for [`Self::send_file`].
    pub(crate) fn send_head(&mut self, req: &Request<'_>, has_body: bool) -> io::Result<()> {
        let uri = format!("{}://{}{}", self.scheme, req.host, req.target);
        let mut request = http::Request::builder()
            .method(req.method)
            .uri(uri)
            .body(())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let headers = request.headers_mut();
        let agent = concat!("weir/", env!("CARGO_PKG_VERSION"));
        headers.insert(http::header::USER_AGENT, HeaderValue::from_static(agent));
        for (name, value) in &req.headers {
            let value = HeaderValue::from_str(value).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("invalid characters in the {name} header"),
                )
            })?;
            headers.append(HeaderName::from_static(name), value);
        }
        let sender = &mut self.sender;
        let (response, send) = self.rt.block_on(async {
            let mut ready = sender.clone().ready().await.map_err(h2_io)?;
            ready.send_request(request, !has_body).map_err(h2_io)
        })?;
        self.response = Some(response);
        self.send = has_body.then_some(send);
        Ok(())
    }

    /// The next response head: a `1xx` if one arrives first, else the final response. With
    /// `timeout`, `Ok(None)` if nothing arrived in time.
    pub(crate) fn read_head(
        &mut self,
        timeout: Option<Duration>,
    ) -> io::Result<Option<ResponseHead>> {
        let Some(response) = self.response.as_mut() else {
            return Err(io::Error::other("no request was sent"));
        };
        // An informational response is looked for first: polling the final response skips
        // (and loses) informational ones.
        let next = poll_fn(|cx| {
            if let Poll::Ready(Some(informational)) = response.poll_informational(cx) {
                return Poll::Ready(informational.map(Next::Informational));
            }
            std::pin::Pin::new(&mut *response)
                .poll(cx)
                .map(|r| r.map(Next::Final))
        });
        let outcome = self.rt.block_on(async {
            match timeout {
                Some(t) => tokio::time::timeout(t, next).await.ok(),
                None => Some(next.await),
            }
        });
        match outcome {
            None => Ok(None),
            Some(Err(e)) => Err(h2_io(e)),
            Some(Ok(Next::Informational(response))) => Ok(Some(head_of(response.into_parts().0))),
            Some(Ok(Next::Final(response))) => {
                let (parts, body) = response.into_parts();
                self.recv = Some(body);
                self.response = None;
                Ok(Some(head_of(parts)))
            }
        }
    }

    /// Sends `len` bytes of `file` from `offset` as the request body, as flow control allows,
    /// and ends the stream; `progress` gets the bytes handed to HTTP/2 so far.
    pub(crate) fn send_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
        progress: &mut dyn FnMut(u64),
    ) -> io::Result<()> {
        self.send_file_then(file, (offset, len), &mut |_| {}, progress, None)
    }

    /// [`Self::send_file`], each piece handed to `seen` once handed to HTTP/2 (the caller
    /// hashes what it sends), then the stream ended with the trailer section `trailer` makes
    /// from what `seen` saw (a HEADERS frame, RFC 9113 §8.1).
    pub(crate) fn send_file_with_trailers(
        &mut self,
        file: &File,
        range: (u64, u64),
        seen: &mut dyn FnMut(&[u8]),
        progress: &mut dyn FnMut(u64),
        trailer: &mut dyn FnMut() -> http::HeaderMap,
    ) -> io::Result<()> {
        self.send_file_then(file, range, seen, progress, Some(trailer))
    }

    fn send_file_then(
        &mut self,
        file: &File,
        (offset, len): (u64, u64),
        seen: &mut dyn FnMut(&[u8]),
        progress: &mut dyn FnMut(u64),
        trailer: Option<&mut dyn FnMut() -> http::HeaderMap>,
    ) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let Some(send) = self.send.as_mut() else {
            // The HEADERS ended the stream: only an empty body is right.
            return if len == 0 {
                Ok(())
            } else {
                Err(io::Error::other("the request was sent without a body"))
            };
        };
        self.rt.block_on(async {
            let mut sent = 0u64;
            while sent < len {
                let want = usize::try_from(len - sent).unwrap_or(PIECE).min(PIECE);
                // COPY: page cache → this buffer; the DATA frames are written from it (each
                // frame a slice of it, no further copy before TLS or the socket). The read
                // blocks this runtime's only thread briefly; the connection task, the only
                // other work here, runs again as soon as this task waits for capacity.
                let mut buf = vec![0u8; want];
                let n = file.read_at(&mut buf, offset + sent)?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the file got shorter while it was being sent",
                    ));
                }
                buf.truncate(n);
                let mut data = Bytes::from(buf);
                // The whole piece, for `seen` once it is handed over (a reference, no copy).
                let piece = data.clone();
                while !data.is_empty() {
                    send.reserve_capacity(data.len());
                    let granted = match poll_fn(|cx| send.poll_capacity(cx)).await {
                        Some(granted) => granted.map_err(h2_io)?,
                        None => return Err(io::Error::other("the server closed the stream")),
                    };
                    let take = granted.min(data.len());
                    if take > 0 {
                        send.send_data(data.split_to(take), false).map_err(h2_io)?;
                    }
                }
                seen(&piece);
                sent += n as u64;
                progress(sent);
            }
            match trailer {
                Some(trailer) => send.send_trailers(trailer()).map_err(h2_io),
                None => send.send_data(Bytes::new(), true).map_err(h2_io),
            }
        })
    }

    /// Reads response body bytes into `dst`; `Ok(0)` at the end of the body.
    pub(crate) fn read_body(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        if dst.is_empty() {
            return Ok(0);
        }
        while self.chunk.is_empty() {
            let Some(recv) = self.recv.as_mut() else {
                return Ok(0);
            };
            match self.rt.block_on(recv.data()) {
                None => return Ok(0),
                Some(Ok(data)) => {
                    // The frame is ours now: let the server send more.
                    let _ = recv.flow_control().release_capacity(data.len());
                    self.chunk = data;
                }
                Some(Err(e)) => return Err(h2_io(e)),
            }
        }
        // COPY: the DATA frame → the caller's buffer (the HTTP/1.1 client reads there
        // directly; one memcpy keeps one interface for both).
        let n = self.chunk.len().min(dst.len());
        dst[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk.advance(n);
        Ok(n)
    }
}

/// TLS (if asked), then the HTTP/2 handshake, with the connection task spawned.
async fn start<S>(socket: S, tls: Option<TlsSetup>) -> Result<SendRequest<Bytes>, ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match tls {
        Some(TlsSetup { config, name }) => {
            let mut stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, socket)
                .await
                .map_err(ConnectError::Tls)?;
            if stream.get_ref().1.alpn_protocol() != Some(super::tls::ALPN_H2) {
                return Err(ConnectError::NotH2);
            }
            stream
                .get_mut()
                .1
                .set_buffer_limit(Some(super::tls::SEND_BUFFER));
            handshake(stream).await
        }
        None => handshake(socket).await,
    }
}

async fn handshake<S>(io: S) -> Result<SendRequest<Bytes>, ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = h2::client::Builder::new()
        .initial_window_size(RECV_WINDOW)
        .initial_connection_window_size(RECV_WINDOW)
        .max_frame_size(MAX_FRAME)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(ConnectError::Handshake)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "HTTP/2 connection ended with an error");
        }
    });
    Ok(sender)
}

/// What came on the stream.
enum Next {
    Informational(http::Response<()>),
    Final(http::Response<RecvStream>),
}

/// A response head as the HTTP/1.1 client reports it.
fn head_of(parts: http::response::Parts) -> ResponseHead {
    ResponseHead {
        status: parts.status.as_u16(),
        reason: parts.status.canonical_reason().unwrap_or("").to_owned(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    }
}

/// An `h2` error as an I/O error with a readable message.
fn h2_io(e: h2::Error) -> io::Error {
    if e.is_io() {
        return e
            .into_io()
            .unwrap_or_else(|| io::Error::other("connection error"));
    }
    let what = match e.reason() {
        Some(reason) if e.is_go_away() => format!("the server closed the connection ({reason})"),
        Some(reason) if e.is_remote() => format!("the server reset the stream ({reason})"),
        _ => format!("HTTP/2 error: {e}"),
    };
    io::Error::other(what)
}
