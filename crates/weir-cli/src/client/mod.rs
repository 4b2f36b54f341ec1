//! `weir put` and `weir get`: a small client for HTTP/1.1 (blocking, in the clear or TLS) and
//! HTTP/2 (over TLS by ALPN, or cleartext by prior knowledge), built to not be the bottleneck.
//!
//! | module | what it is |
//! | --- | --- |
//! | `transport` | `Transport`: TCP or Unix socket, in the clear (`send_file` with `sendfile` where it pays) or under rustls |
//! | `tls` | trusted roots (`--cacert` or the system's), rustls configuration, TLS errors as advice |
//! | `http` | one HTTP/1.1 exchange: head out, head in, body framing |
//! | `h2` | one HTTP/2 exchange over the `h2` crate, on a current-thread runtime |
//! | `conn` | `Connection`: either of the two behind the calls `put`/`get` make |
//! | `url` | `http://` and `https://` URLs |
//! | `post` | one `POST` under a timeout: the service's webhooks |
//! | `put` / `get` | the commands (`put` resumes an interrupted upload: draft-ietf-httpbis-resumable-upload) |
//! | `resume_state` | the state file that lets a later `weir put` resume an upload |
//! | `tree` | folders: `weir put DIR URL/` and `weir get URL/DIR/`, several files in flight |
//! | `progress` | the progress bar and summary formatting |

mod conn;
mod get;
mod h2;
mod http;
pub mod post;
mod progress;
mod put;
mod resume_state;
mod tls;
mod transport;
mod tree;
mod url;

use crate::cli::ClientArgs;
use conn::Connection;
use std::fmt;
use std::path::PathBuf;

pub use get::get;
pub use put::put;

/// A client failure, as one line.
#[derive(Debug)]
pub struct ClientError(String, Failure);

/// What kind of failure: a folder's transfer (`tree.rs`) counts a file left alone because it
/// was already there apart from the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    Other,
    /// The destination exists and `--overwrite` was not given: nothing was replaced.
    Exists,
}

impl ClientError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into(), Failure::Other)
    }

    /// The destination is there already and was not replaced.
    pub(crate) fn exists(message: impl Into<String>) -> Self {
        Self(message.into(), Failure::Exists)
    }

    pub(crate) fn kind(&self) -> Failure {
        self.1
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClientError {}

/// Options of both commands, with the environment applied.
pub(crate) struct Options {
    pub(crate) token: Option<String>,
    pub(crate) unix: Option<PathBuf>,
    pub(crate) cacert: Option<PathBuf>,
    pub(crate) http2: bool,
}

impl Options {
    pub(crate) fn from_args(args: ClientArgs) -> Self {
        Self {
            token: args
                .token
                .or_else(|| std::env::var("WEIR_TOKEN").ok())
                .filter(|t| !t.is_empty()),
            unix: args.unix,
            cacert: args.cacert,
            http2: args.http2,
        }
    }

    /// The request headers every request carries.
    pub(crate) fn auth_header(&self) -> Option<(&'static str, String)> {
        self.token
            .as_ref()
            .map(|t| ("authorization", format!("Bearer {t}")))
    }
}

/// Connects to the server of `url` (or the Unix socket): TLS for `https`, HTTP/2 with
/// `--http2`. Failures name the endpoint and say what went wrong in one line.
pub(crate) fn connect(url: &url::Url, options: &Options) -> Result<Connection, ClientError> {
    let endpoint = match &options.unix {
        Some(p) => format!("unix:{}", p.display()),
        None => url.authority.clone(),
    };
    let tls = if url.https {
        let alpn = if options.http2 {
            tls::ALPN_H2
        } else {
            tls::ALPN_HTTP11
        };
        Some(h2::TlsSetup {
            config: tls::config(options.cacert.as_deref(), alpn)?,
            name: tls::server_name(url.server_name())?,
        })
    } else {
        None
    };
    let cannot_connect =
        |e: std::io::Error| ClientError::new(format!("cannot connect to {endpoint}: {e}"));
    let tls_failed = |e: std::io::Error| {
        let what = match tls::rustls_error(&e) {
            Some(e) => tls::describe(e, url.server_name()),
            None if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                "the server closed the connection during the handshake".to_owned()
            }
            None => e.to_string(),
        };
        ClientError::new(format!("TLS with {endpoint} failed: {what}"))
    };
    if options.http2 {
        use h2::ConnectError;
        let conn = h2::H2Connection::connect(&url.authority, options.unix.as_deref(), tls)
            .map_err(|e| match e {
                ConnectError::Socket(e) => cannot_connect(e),
                ConnectError::Tls(e) => tls_failed(e),
                ConnectError::NotH2 => ClientError::new(format!(
                    "{endpoint} does not speak HTTP/2 over TLS (ALPN did not choose h2)"
                )),
                ConnectError::Handshake(e) => {
                    ClientError::new(format!("HTTP/2 with {endpoint} failed: {e}"))
                }
            })?;
        return Ok(Connection::H2(Box::new(conn)));
    }
    let socket = transport::Socket::connect(&url.authority, options.unix.as_deref())
        .map_err(cannot_connect)?;
    let transport = match tls {
        None => transport::Transport::Plain(socket),
        Some(setup) => {
            let t =
                transport::Transport::tls(socket, setup.config, setup.name).map_err(tls_failed)?;
            if t.alpn_protocol().is_some_and(|p| p != tls::ALPN_HTTP11) {
                return Err(ClientError::new(format!(
                    "{endpoint} chose a protocol other than HTTP/1.1 by ALPN"
                )));
            }
            t
        }
    };
    Ok(Connection::H1(http::Connection::new(transport)))
}

/// Turns an error response into a one-line error with the server's message.
pub(crate) fn status_error(
    conn: &mut Connection,
    method: &str,
    head: &http::ResponseHead,
) -> ClientError {
    let text = conn
        .body(method, head)
        .and_then(|mut body| conn.read_text(&mut body, 64 * 1024))
        .unwrap_or_default();
    let message = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
        .unwrap_or_else(|| text.trim().chars().take(200).collect());
    let mut line = format!("server answered {} {}", head.status, head.reason);
    if !message.is_empty() {
        line.push_str(": ");
        line.push_str(&message);
    }
    ClientError::new(line)
}
