//! What a server reports about one upload, in its response body.
//!
//! Every system answers `POST /upload` with the same line, so the client can check that every
//! byte arrived and the timeline scenario can place the server's instants on the client's
//! timeline (the timestamps are raw `CLOCK_MONOTONIC`, see [`crate::clock`]):
//!
//! `bytes=<n> head=<ns> first=<ns> last=<ns> rss_head=<KiB> rss_first=<KiB> rss_last=<KiB>`
//!
//! A server that can say how the body travelled (weir's `BodyStats`) appends
//! `direct=<n> copied=<n> spliced=<n> peak_ahead=<n>` ([`BodyPath`]).

use crate::{clock, procfs};
use std::fmt::Write;

/// One upload as the server saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UploadTrace {
    /// Body bytes the handler received.
    pub bytes: u64,
    /// When the handler was called: the head had been parsed.
    pub head_ns: u64,
    /// When the handler got its first body byte (0 if the body was empty).
    pub first_ns: u64,
    /// When the handler saw the end of the body.
    pub last_ns: u64,
    /// Server RSS at those three instants, in KiB.
    pub rss_head_kib: u64,
    /// RSS at the first body byte.
    pub rss_first_kib: u64,
    /// RSS at the end of the body.
    pub rss_last_kib: u64,
    /// How the body travelled, where the server can tell.
    pub path: Option<BodyPath>,
}

/// How a body travelled through the server, in bytes (weir's `BodyStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BodyPath {
    /// Read from the socket straight into the handler's buffer.
    pub direct: u64,
    /// Read into the server's buffer, then copied to the handler.
    pub copied: u64,
    /// Moved socket → file by `splice`.
    pub spliced: u64,
    /// Most body bytes held ahead of the handler.
    pub peak_ahead: u64,
}

impl UploadTrace {
    /// Starts a trace: call as soon as the handler has the request head.
    pub fn start() -> Self {
        Self {
            head_ns: clock::monotonic_ns(),
            rss_head_kib: procfs::self_rss_kib(),
            ..Self::default()
        }
    }

    /// Records `n` body bytes received; the first call with `n > 0` stamps the first byte.
    pub fn received(&mut self, n: usize) {
        if n > 0 && self.first_ns == 0 {
            self.first_ns = clock::monotonic_ns();
            self.rss_first_kib = procfs::self_rss_kib();
        }
        self.bytes += n as u64;
    }

    /// Stamps the end of the body.
    pub fn finish(&mut self) {
        self.last_ns = clock::monotonic_ns();
        self.rss_last_kib = procfs::self_rss_kib();
    }

    /// The response body line.
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(128);
        let _ = write!(
            s,
            "bytes={} head={} first={} last={} rss_head={} rss_first={} rss_last={}",
            self.bytes,
            self.head_ns,
            self.first_ns,
            self.last_ns,
            self.rss_head_kib,
            self.rss_first_kib,
            self.rss_last_kib
        );
        if let Some(p) = self.path {
            let _ = write!(
                s,
                " direct={} copied={} spliced={} peak_ahead={}",
                p.direct, p.copied, p.spliced, p.peak_ahead
            );
        }
        s
    }

    /// Parses [`UploadTrace::encode`]'s output.
    pub fn parse(body: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(body).ok()?;
        let mut t = Self::default();
        let mut path = BodyPath::default();
        let mut seen = 0;
        for kv in text.split_whitespace() {
            let (k, v) = kv.split_once('=')?;
            let v: u64 = v.parse().ok()?;
            let optional = match k {
                "direct" => Some(&mut path.direct),
                "copied" => Some(&mut path.copied),
                "spliced" => Some(&mut path.spliced),
                "peak_ahead" => Some(&mut path.peak_ahead),
                _ => None,
            };
            if let Some(f) = optional {
                *f = v;
                t.path = Some(BodyPath::default());
                continue;
            }
            let field = match k {
                "bytes" => &mut t.bytes,
                "head" => &mut t.head_ns,
                "first" => &mut t.first_ns,
                "last" => &mut t.last_ns,
                "rss_head" => &mut t.rss_head_kib,
                "rss_first" => &mut t.rss_first_kib,
                "rss_last" => &mut t.rss_last_kib,
                _ => continue,
            };
            *field = v;
            seen += 1;
        }
        if t.path.is_some() {
            t.path = Some(path);
        }
        (seen == 7).then_some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut t = UploadTrace::start();
        t.received(10);
        t.received(5);
        t.finish();
        assert_eq!(t.bytes, 15);
        assert!(t.head_ns <= t.first_ns && t.first_ns <= t.last_ns);
        assert_eq!(UploadTrace::parse(t.encode().as_bytes()), Some(t));
        t.path = Some(BodyPath {
            direct: 1,
            copied: 2,
            spliced: 3,
            peak_ahead: 4,
        });
        assert_eq!(UploadTrace::parse(t.encode().as_bytes()), Some(t));
        assert_eq!(UploadTrace::parse(b"bytes=1"), None);
    }
}
