//! One `POST` of a small body to an `http://` or `https://` URL, every step under a timeout:
//! the service's webhooks (`serve/webhooks.rs`) on the client's own transport (TCP, rustls
//! with the system's roots, the HTTP/1.1 exchange of `http.rs`), so that weir needs no second
//! HTTP client.
//!
//! One request per connection (webhooks are rare next to uploads; a pool would be state to
//! keep sound across a receiver's restarts for no measurable gain). The answer's status is all
//! that is read: its body is not.

use super::http::{Connection, Request};
use super::transport::{Socket, Transport};
use super::url::Url;
use super::{ClientError, tls};
use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Why a POST got no answer.
#[derive(Debug)]
pub enum PostError {
    /// The receiver could not be reached (refused, unreachable, name not resolved) or broke
    /// the connection.
    Connect(io::Error),
    /// A step (connect, write, waiting for the answer) took longer than the timeout.
    TimedOut,
    /// TLS or a malformed answer.
    Other(String),
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connect(e) => write!(f, "{e}"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Other(m) => f.write_str(m),
        }
    }
}

fn classify(e: io::Error) -> PostError {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => PostError::TimedOut,
        _ => PostError::Connect(e),
    }
}

/// What a POST was answered.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The `Retry-After` field's value, if the answer has one (trimmed, not yet parsed).
    pub retry_after: Option<String>,
}

/// A URL a webhook may be sent to.
#[derive(Clone, Debug)]
pub struct PostUrl(Url);

impl PostUrl {
    /// Checks `text` is an `http://` or `https://` URL (resolved and connected to only when
    /// used).
    pub fn parse(text: &str) -> Result<Self, String> {
        Url::parse(text).map(Self).map_err(|e| e.to_string())
    }
}

/// The TLS configuration of webhooks: the system's roots, read once.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, PostError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| tls::config(None, tls::ALPN_HTTP11).map_err(|e: ClientError| e.to_string()))
        .clone()
        .map_err(PostError::Other)
}

/// POSTs `body` (`content_type`) to `url`; the answer's status code and `Retry-After`.
/// Connecting, each write and the wait for the answer's head each take at most `timeout`.
pub fn post(
    url: &PostUrl,
    content_type: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<Answer, PostError> {
    let url = &url.0;
    let socket = connect(&url.authority, timeout)?;
    let transport = if url.https {
        let name =
            tls::server_name(url.server_name()).map_err(|e| PostError::Other(e.to_string()))?;
        socket.set_timeouts(Some(timeout)).map_err(classify)?;
        Transport::tls(socket, tls_config()?, name).map_err(|e| match tls::rustls_error(&e) {
            Some(r) => PostError::Other(tls::describe(r, url.server_name())),
            None => classify(e),
        })?
    } else {
        Transport::Plain(socket)
    };
    let mut conn = Connection::new(transport);
    conn.set_idle_timeout(Some(timeout)).map_err(classify)?;
    let request = Request {
        method: "POST",
        target: &url.target,
        host: &url.host,
        headers: vec![
            ("content-type", content_type.to_owned()),
            ("content-length", body.len().to_string()),
            ("connection", "close".to_owned()),
        ],
    };
    conn.send_head(&request).map_err(classify)?;
    conn.transport().write_all(body).map_err(classify)?;
    conn.transport().flush().map_err(classify)?;
    match conn.read_head(None) {
        Ok(Some(head)) => Ok(Answer {
            status: head.status,
            retry_after: head.header("retry-after").map(|v| v.trim().to_owned()),
        }),
        Ok(None) => Err(PostError::TimedOut),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(PostError::Other(e.to_string())),
        Err(e) => Err(classify(e)),
    }
}

/// Connects to `authority` (`host:port`), each resolved address in turn, each under `timeout`.
fn connect(authority: &str, timeout: Duration) -> Result<Socket, PostError> {
    let addrs = authority.to_socket_addrs().map_err(PostError::Connect)?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name resolved to no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(Socket::Tcp(stream));
            }
            Err(e) => last = e,
        }
    }
    Err(classify(last))
}
