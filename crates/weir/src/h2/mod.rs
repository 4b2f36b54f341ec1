//! HTTP/2 over the `h2` crate, with the same handler API as HTTP/1.1.
//!
//! - `conn`: the connection driver (one task), a task per stream, the handler bound, shutdown;
//! - `io`: the stream under h2: replay of sniffed bytes, every read through the frame meter;
//! - `meter`: frame boundaries before h2 parses them: byte count and flood budget (RFC 9113's
//!   error codes are weir-h2's: crates/weir-h2/WEIR-PATCHES.md);
//! - `bdp`: the adaptive stream window;
//! - `window_budget`: the connection windows of all connections share one budget;
//! - `stream`: a stream as the exchange's HTTP/2 `Backend` (request head, finishing);
//! - `error`: what an h2 stream error means to a handler;
//! - `validate`: the request-head checks h2 does not make (malformed requests are reset);
//! - `refused`: requests refused before a handler ran, told to `Config::on_refused`;
//! - `body`: request bodies under flow control (a small window until the handler reads, then
//!   the pause threshold);
//! - `response`: responses as HEADERS and DATA frames under the client's window.
//!
//! Which floods `h2` (0.4) already bounds, and what weir adds, is listed in
//! `docs/ARCHITECTURE.md` ("HTTP/2 defences").

mod bdp;
mod body;
mod conn;
mod error;
mod io;
mod meter;
mod refused;
mod response;
mod reuse;
mod stream;
mod validate;
mod window_budget;

pub(crate) use conn::serve_h2;
pub(crate) use meter::PREFACE;
pub(crate) use stream::H2Stream;
pub(crate) use window_budget::WindowBudget;

use crate::transport::Stream;
use tokio::sync::watch;
use tokio::time::Instant;

/// What the first bytes of a cleartext connection say.
pub(crate) enum Sniffed {
    /// The HTTP/2 connection preface: all 24 bytes were read.
    Http2,
    /// Anything else: HTTP/1.1. The bytes read so far (at most 24) must be replayed.
    Http1 {
        read: [u8; PREFACE.len()],
        len: usize,
    },
    /// The client closed, timed out, or the server is shutting down before a byte came.
    Closed,
}

/// Reads just enough of a cleartext connection to tell HTTP/2 prior knowledge (RFC 9113 §3.3)
/// from HTTP/1.1: at most 24 bytes, usually one read (an HTTP/1.1 request differs at its
/// first byte, or at the fourth for `PRI`-less methods starting with `P`).
pub(crate) async fn sniff_preface(
    stream: &mut Stream,
    deadline: Instant,
    shutdown: &mut watch::Receiver<bool>,
    mut passed: Option<&mut Option<std::os::fd::OwnedFd>>,
) -> Sniffed {
    let mut read = [0u8; PREFACE.len()];
    let mut len = 0;
    loop {
        let n = tokio::select! {
            n = tokio::time::timeout_at(deadline, stream.read_keeping_fd(&mut read[len..], passed.as_deref_mut())) => n,
            _ = shutdown.changed(), if len == 0 => return Sniffed::Closed,
        };
        match n {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) if len == 0 => return Sniffed::Closed,
            // A partial head then EOF or silence: HTTP/1.1 answers or closes as it would.
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Sniffed::Http1 { read, len },
            Ok(Ok(n)) => len += n,
        }
        if read[..len] != PREFACE[..len] {
            return Sniffed::Http1 { read, len };
        }
        if len == PREFACE.len() {
            return Sniffed::Http2;
        }
    }
}
