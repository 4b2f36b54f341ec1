//! `weir put` and `weir get`: a small blocking HTTP/1.1 client, built to not be the bottleneck.
//!
//! | module | what it is |
//! | --- | --- |
//! | `transport` | [`Transport`](transport::Transport): TCP or Unix socket; `send_file` with `sendfile` |
//! | `http` | one HTTP/1.1 exchange: head out, head in, body framing |
//! | `url` | `http://` URLs |
//! | `put` / `get` | the commands |
//! | `progress` | the progress bar and summary formatting |
//!
//! Layers for later: TLS is one more `Transport` variant; HTTP/2 an alternative to
//! `http::Connection` behind the same request/response calls in `put`/`get`.

mod get;
mod http;
mod progress;
mod put;
mod transport;
mod url;

use crate::cli::ClientArgs;
use std::fmt;
use std::path::PathBuf;

pub use get::get;
pub use put::put;

/// A client failure, as one line.
#[derive(Debug)]
pub struct ClientError(String);

impl ClientError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
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
}

impl Options {
    pub(crate) fn from_args(args: ClientArgs) -> Self {
        Self {
            token: args
                .token
                .or_else(|| std::env::var("WEIR_TOKEN").ok())
                .filter(|t| !t.is_empty()),
            unix: args.unix,
        }
    }

    /// The request headers every request carries.
    pub(crate) fn auth_header(&self) -> Option<(&'static str, String)> {
        self.token
            .as_ref()
            .map(|t| ("authorization", format!("Bearer {t}")))
    }
}

/// Connects to the server of `url` (or the Unix socket), naming the endpoint on failure.
pub(crate) fn connect(url: &url::Url, options: &Options) -> Result<http::Connection, ClientError> {
    let transport = transport::Transport::connect(&url.authority, options.unix.as_deref())
        .map_err(|e| {
            let endpoint = match &options.unix {
                Some(p) => format!("unix:{}", p.display()),
                None => url.authority.clone(),
            };
            ClientError::new(format!("cannot connect to {endpoint}: {e}"))
        })?;
    Ok(http::Connection::new(transport))
}

/// Turns an error response into a one-line error with the server's message.
pub(crate) fn status_error(
    conn: &mut http::Connection,
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
