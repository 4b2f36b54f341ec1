//! [`OnRefused`]: what an application learns of the requests the server answers itself before
//! any handler runs (a malformed head: 400, 501; a head too large: 414, 431; a head too slow:
//! 408), so that it can log them as it logs the others.
//!
//! Called on the connection's task, once per such answer, with borrowed data: nothing is
//! allocated for it, and nothing at all happens when no callback is set (one `Option` test on
//! an error path). HTTP/2 (`h2/refused.rs`): a request head reset with PROTOCOL_ERROR as
//! malformed is reported as 400 (a reset has no status; the reason says it was one), one over
//! SETTINGS_MAX_HEADER_LIST_SIZE as the 431 it was answered; `method` and `target` only for
//! heads weir's own checks refused (`h2` drops the others before weir sees them). Not reported:
//! a malformed connection preface (not answered), and body faults (a `content-length` the DATA
//! frames contradict) on a stream whose handler already runs: its handler sees the error.

use crate::transport::PeerAddr;
use http::StatusCode;
use std::sync::Arc;

/// A request the server refused before any handler ran.
#[derive(Debug)]
#[non_exhaustive]
pub struct Refused<'a> {
    /// The client.
    pub peer: PeerAddr,
    /// The status answered; 400 for an HTTP/2 stream reset as malformed.
    pub status: StatusCode,
    /// Why (the answer's text, e.g. `request header fields too large`).
    pub reason: &'a str,
    /// The request line's method, when the head got that far (a token of at most 32 bytes).
    pub method: Option<&'a str>,
    /// The request line's target as received, when the head got that far (possibly cut
    /// short: a 414's is as much as was read).
    pub target: Option<&'a [u8]>,
}

/// The callback of [`Config::on_refused`](crate::Config::on_refused).
#[derive(Clone)]
pub struct OnRefused(Arc<dyn Fn(&Refused<'_>) + Send + Sync>);

impl OnRefused {
    /// Calls `f` for every refused request. It runs on the connection's task: it must not
    /// block (write a log line into a buffer, bump a counter).
    pub fn new(f: impl Fn(&Refused<'_>) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    pub(crate) fn call(&self, refused: &Refused<'_>) {
        (self.0)(refused);
    }
}

impl std::fmt::Debug for OnRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnRefused(..)")
    }
}

/// The method and target of the request line at the start of `raw` (bytes of a head that
/// failed), as far as they can be told: the method a token, the target what follows up to the
/// next space or the end of the line (or of what was read).
pub(crate) fn request_line(raw: &[u8]) -> (Option<&str>, Option<&[u8]>) {
    let line = raw.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.splitn(3, |&b| b == b' ');
    let method = parts
        .next()
        .filter(|m| {
            !m.is_empty() && m.len() <= 32 && m.iter().all(|&b| weir_proto::chars::is_tchar(b))
        })
        .and_then(|m| std::str::from_utf8(m).ok());
    let target = method.and(parts.next()).filter(|t| !t.is_empty());
    (method, target)
}

#[cfg(test)]
mod tests {
    use super::request_line;

    #[test]
    fn the_request_line_as_far_as_it_goes() {
        assert_eq!(
            request_line(b"GET /a b\r\n"),
            (Some("GET"), Some(&b"/a"[..]))
        );
        assert_eq!(
            request_line(b"PUT /long-and-cut"),
            (Some("PUT"), Some(&b"/long-and-cut"[..]))
        );
        assert_eq!(request_line(b"G{T / HTTP/1.1\r\n"), (None, None));
        assert_eq!(request_line(b""), (None, None));
        assert_eq!(request_line(b"GET\r\n"), (Some("GET"), None));
    }
}
