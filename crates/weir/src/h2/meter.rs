//! The frame meter: follows frame boundaries in the bytes the client sends, before `h2` parses
//! them, for what the `h2` crate cannot do.
//!
//! Frame headers are read as they go by (nine bytes; payloads are skipped by length): O(1) per
//! read, no copy, no per-stream state. The meter
//! - counts bytes received, for the adaptive window's bandwidth-delay estimate (h2 exposes no
//!   byte count of what it read);
//! - keeps a budget of control frames (PING, SETTINGS, PRIORITY, RST_STREAM, unknown types):
//!   each costs one token, each HEADERS or non-empty DATA frame earns one back. When the budget
//!   is spent the connection is closed with GOAWAY(ENHANCE_YOUR_CALM). `h2` already bounds the
//!   *memory* of such floods (it stops reading until a PING or SETTINGS is acknowledged); the
//!   budget bounds the *work*, for a client that reads the acknowledgements as fast as it
//!   floods. It is weir's policy, configured per server (`Http2Config::control_frame_budget`),
//!   and needs nothing of h2's state, so it stays in front of h2 rather than in weir-h2.
//!
//! The RFC 9113 error codes h2 0.4 got wrong (control frames of a wrong length, an initial
//! window above 2³¹−1, a client's PUSH_PROMISE, DATA or HEADERS on a stream the client ended or
//! reset) are answered inside h2 itself: crates/weir-h2/WEIR-PATCHES.md.
//!
//! Invariant: a [`Verdict`] is final. After one, the meter reads nothing more.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame header length (RFC 9113 §4.1).
const FRAME_HEADER_LEN: usize = 9;

mod kind {
    pub(super) const DATA: u8 = 0x0;
    pub(super) const HEADERS: u8 = 0x1;
    pub(super) const PRIORITY: u8 = 0x2;
    pub(super) const RST_STREAM: u8 = 0x3;
    pub(super) const SETTINGS: u8 = 0x4;
    pub(super) const PING: u8 = 0x6;
    pub(super) const CONTINUATION: u8 = 0x9;
}

mod flag {
    pub(super) const ACK: u8 = 0x1;
}

/// Why the meter ends the connection; each maps to the GOAWAY error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The control-frame budget is spent: ENHANCE_YOUR_CALM.
    Flood,
}

impl Verdict {
    pub(crate) fn reason(self) -> h2::Reason {
        match self {
            Self::Flood => h2::Reason::ENHANCE_YOUR_CALM,
        }
    }

    fn code(self) -> u32 {
        match self {
            Self::Flood => 1,
        }
    }

    fn from_code(code: u32) -> Option<Self> {
        [Self::Flood].into_iter().find(|v| v.code() == code)
    }
}

/// What the meter tells the connection driver (it runs in the connection's task, inside its
/// I/O; the driver reads this after each poll, so relaxed atomics suffice).
#[derive(Debug, Default)]
pub(crate) struct MeterReport {
    /// Bytes passed on to h2 so far.
    bytes: AtomicU64,
    /// The verdict's code, 0 while there is none.
    verdict: AtomicU32,
}

impl MeterReport {
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn add_bytes(&self, n: usize) {
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn verdict(&self) -> Option<Verdict> {
        Verdict::from_code(self.verdict.load(Ordering::Relaxed))
    }

    /// Records `verdict` unless one is recorded; true if this call recorded it.
    pub(crate) fn set_verdict(&self, verdict: Verdict) -> bool {
        self.verdict
            .compare_exchange(0, verdict.code(), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

/// What the meter makes of one read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fed {
    /// Pass all of it on.
    Pass,
    /// Pass all of it on (h2 answers what it already holds), then end the connection with the
    /// verdict.
    Stop(Verdict),
}

/// Follows frame boundaries in the client's byte stream.
#[derive(Debug)]
pub(crate) struct FrameMeter {
    /// Preface bytes still to skip.
    preface_left: usize,
    header: [u8; FRAME_HEADER_LEN],
    header_len: usize,
    /// Payload bytes of the current frame still to go by.
    payload_left: usize,
    tokens: u32,
    budget: u32,
    stopped: bool,
}

impl FrameMeter {
    pub(crate) fn new(budget: u32) -> Self {
        Self {
            preface_left: PREFACE.len(),
            header: [0; FRAME_HEADER_LEN],
            header_len: 0,
            payload_left: 0,
            tokens: budget.max(1),
            budget: budget.max(1),
            stopped: false,
        }
    }

    /// Feeds bytes as read (the preface first).
    pub(crate) fn feed(&mut self, data: &[u8]) -> Fed {
        debug_assert!(!self.stopped, "fed after a verdict");
        let mut at = 0;
        while at < data.len() {
            let rest = &data[at..];
            if self.preface_left > 0 {
                let n = self.preface_left.min(rest.len());
                self.preface_left -= n;
                at += n;
            } else if self.payload_left > 0 {
                let n = self.payload_left.min(rest.len());
                self.payload_left -= n;
                at += n;
            } else {
                let n = (FRAME_HEADER_LEN - self.header_len).min(rest.len());
                self.header[self.header_len..self.header_len + n].copy_from_slice(&rest[..n]);
                self.header_len += n;
                at += n;
                if self.header_len == FRAME_HEADER_LEN {
                    self.header_len = 0;
                    self.frame_header();
                }
            }
        }
        if self.tokens == 0 {
            return self.stop(Verdict::Flood);
        }
        Fed::Pass
    }

    fn stop(&mut self, verdict: Verdict) -> Fed {
        self.stopped = true;
        Fed::Stop(verdict)
    }

    /// A complete frame header: account for it, and get ready for its payload.
    fn frame_header(&mut self) {
        let h = self.header;
        let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        self.payload_left = len;
        self.account(h[3], h[4], len);
    }

    fn account(&mut self, kind: u8, flags: u8, len: usize) {
        let cost = match kind {
            // DATA with payload, HEADERS: a request's work earns budget back.
            kind::DATA if len > 0 => -1,
            kind::HEADERS => -1,
            kind::PRIORITY | kind::RST_STREAM => 1,
            // SETTINGS, PING: cost unless they acknowledge ours.
            kind::SETTINGS | kind::PING if flags & flag::ACK == 0 => 1,
            // Empty DATA (h2 bounds these itself), acknowledgements, PUSH_PROMISE (an error from
            // a client), GOAWAY, WINDOW_UPDATE (a client reading a large response sends many),
            // CONTINUATION (bounded by h2 with the header list size).
            kind::DATA | kind::SETTINGS..=kind::CONTINUATION => 0,
            // Unknown frame types are ignored by h2, but still read and parsed.
            _ => 1,
        };
        if cost > 0 {
            self.tokens = self.tokens.saturating_sub(1);
        } else if cost < 0 && self.tokens > 0 {
            self.tokens = self.tokens.saturating_add(1).min(self.budget);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_on(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        frame_on(kind, flags, 1, payload)
    }

    fn control(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        frame_on(kind, flags, 0, payload)
    }

    /// Feeds `stream` split at every offset; returns the verdict and the total bytes kept.
    fn feed_split(stream: &[u8], budget: u32) -> Vec<(Option<Verdict>, usize)> {
        (0..=stream.len())
            .map(|split| {
                let mut m = FrameMeter::new(budget);
                let mut kept = 0;
                for part in [&stream[..split], &stream[split..]] {
                    if part.is_empty() {
                        continue;
                    }
                    match m.feed(part) {
                        Fed::Pass => kept += part.len(),
                        Fed::Stop(verdict) => return (Some(verdict), kept + part.len()),
                    }
                }
                (None, kept)
            })
            .collect()
    }

    #[test]
    fn pings_spend_the_budget_and_requests_earn_it_back() {
        let mut m = FrameMeter::new(3);
        assert_eq!(m.feed(PREFACE), Fed::Pass);
        assert_eq!(m.feed(&control(kind::SETTINGS, 0, &[])), Fed::Pass);
        assert_eq!(m.feed(&control(kind::PING, 0, &[0; 8])), Fed::Pass);
        assert_eq!(m.feed(&frame(kind::HEADERS, 0x5, &[0x82])), Fed::Pass);
        assert_eq!(m.feed(&control(kind::PING, 0x1, &[0; 8])), Fed::Pass);
        assert_eq!(m.feed(&control(kind::PING, 0, &[0; 8])), Fed::Pass);
        let ping = control(kind::PING, 0, &[0; 8]);
        assert_eq!(m.feed(&ping), Fed::Stop(Verdict::Flood));
    }

    #[test]
    fn frames_split_at_every_offset_are_followed() {
        let mut stream = PREFACE.to_vec();
        stream.extend(frame(kind::HEADERS, 0x4, &[0x83]));
        stream.extend(frame(kind::DATA, 0, &[7; 100]));
        for _ in 0..6 {
            stream.extend(control(kind::PING, 0, &[0; 8]));
        }
        // The fifth PING's header spends a budget of five (HEADERS and DATA earn nothing back
        // from a full budget); the read that holds it is the last one passed on.
        let fifth_ping_header_end = stream.len() - (FRAME_HEADER_LEN + 8) - 8;
        for (split, (got, kept)) in feed_split(&stream, 5).into_iter().enumerate() {
            assert_eq!(got, Some(Verdict::Flood), "split at {split}");
            let read_end = if split >= fifth_ping_header_end {
                split
            } else {
                stream.len()
            };
            assert_eq!(kept, read_end, "split at {split}");
        }
        for (split, got) in feed_split(&stream, 7).into_iter().enumerate() {
            assert_eq!(got, (None, stream.len()), "split at {split}");
        }
    }

    #[test]
    fn well_formed_control_frames_pass() {
        let mut stream = PREFACE.to_vec();
        for f in [
            control(
                kind::SETTINGS,
                0,
                &[0, 4, 0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0, 0, 9],
            ),
            control(kind::SETTINGS, flag::ACK, &[]),
            control(kind::PING, 0, &[0; 8]),
            control(0x8, 0, &[0, 0, 1, 0]), // WINDOW_UPDATE
            frame(kind::PRIORITY, 0, &[0, 0, 0, 3, 16]),
            frame(kind::HEADERS, 0x4, &[0x82]),
            frame(kind::RST_STREAM, 0, &[0, 0, 0, 8]),
            control(0x7, 0, &[0; 8]), // GOAWAY
        ] {
            stream.extend(f);
        }
        for (split, got) in feed_split(&stream, 100).into_iter().enumerate() {
            assert_eq!(got, (None, stream.len()), "split at {split}");
        }
    }

    #[test]
    fn faulty_frames_are_left_to_h2() {
        // On the wrong stream, or of a wrong length: weir-h2 answers them with the right code.
        let mut stream = PREFACE.to_vec();
        stream.extend(control(kind::PING, 0, &[0; 7]));
        stream.extend(control(kind::SETTINGS, flag::ACK, &[0; 6]));
        stream.extend(frame(kind::PING, 0, &[0; 7]));
        stream.extend(frame(kind::SETTINGS, 0, &[0; 5]));
        stream.extend(control(kind::RST_STREAM, 0, &[0; 3]));
        for (split, got) in feed_split(&stream, 100).into_iter().enumerate() {
            assert_eq!(got, (None, stream.len()), "split at {split}");
        }
    }
}
