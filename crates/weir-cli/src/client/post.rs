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
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Why a POST got no answer.
#[derive(Debug)]
pub enum PostError {
    /// The receiver could not be reached (refused, unreachable, name not resolved) or broke
    /// the connection.
    Connect(io::Error),
    /// The attempt (connect, write, waiting for the answer) took longer than the timeout.
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
/// The whole attempt (connecting, the TLS handshake, writing, and reading the answer's head)
/// takes at most `timeout`: a receiver that answers a byte at a time cannot hold a webhook
/// worker longer than that (a timeout per read never fired for it). Only resolving the name is
/// not bounded by it (the system's resolver has timeouts of its own).
pub fn post(
    url: &PostUrl,
    content_type: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<Answer, PostError> {
    let url = &url.0;
    let deadline = Instant::now() + timeout;
    let stream = connect(&url.authority, deadline)?;
    let left = deadline.saturating_duration_since(Instant::now());
    let guard = Deadline::arm(&stream, left).map_err(PostError::Other)?;
    let answer = exchange(url, content_type, body, Socket::Tcp(stream), left);
    // Cut at the deadline: whatever the step reported (a short read, a reset), it timed out.
    // An answer read before the cut stands.
    match answer {
        Err(_) if guard.expired() => Err(PostError::TimedOut),
        answer => answer,
    }
}

/// One request and its answer's head on `socket`, each step also under `timeout`.
fn exchange(
    url: &Url,
    content_type: &str,
    body: &[u8],
    socket: Socket,
    timeout: Duration,
) -> Result<Answer, PostError> {
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

/// Connects to `authority` (`host:port`), each resolved address in turn, all by `deadline`.
fn connect(authority: &str, deadline: Instant) -> Result<TcpStream, PostError> {
    let addrs = authority.to_socket_addrs().map_err(PostError::Connect)?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name resolved to no address");
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(PostError::TimedOut);
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(classify(last))
}

/// Shuts a connection down at a deadline, from a thread of its own: whatever step the
/// attempt is blocked in (a read of one more trickled byte, a write to a full window) then
/// ends at once. Dropped (the attempt over), the thread is woken and joined.
struct Deadline {
    done: Option<SyncSender<()>>,
    expired: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Deadline {
    fn arm(stream: &TcpStream, left: Duration) -> Result<Self, String> {
        let stream = stream
            .try_clone()
            .map_err(|e| format!("cannot watch the connection: {e}"))?;
        let (done, over) = sync_channel::<()>(0);
        let expired = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&expired);
        let thread = std::thread::Builder::new()
            .name("weir-webhook-deadline".into())
            .spawn(move || {
                // Nothing is ever sent: the sender's drop (the attempt over) is the wake-up.
                if let Err(RecvTimeoutError::Timeout) = over.recv_timeout(left) {
                    flag.store(true, Ordering::SeqCst);
                    let _ = stream.shutdown(Shutdown::Both);
                }
            })
            .map_err(|e| format!("cannot watch the connection: {e}"))?;
        Ok(Self {
            done: Some(done),
            expired,
            thread: Some(thread),
        })
    }

    fn expired(&self) -> bool {
        self.expired.load(Ordering::SeqCst)
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
