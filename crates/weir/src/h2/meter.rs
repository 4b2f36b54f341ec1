//! The frame meter: follows frame boundaries in the bytes the client sends, before `h2` parses
//! them, for what the `h2` crate does not do.
//!
//! Frame headers are read as they go by (nine bytes; payloads are skipped by length, except a
//! SETTINGS payload, read six bytes at a time): O(1) per read, no copy. The meter
//! - counts bytes received, for the adaptive window's bandwidth-delay estimate;
//! - keeps a budget of control frames (PING, SETTINGS, PRIORITY, RST_STREAM, unknown types):
//!   each costs one token, each HEADERS or non-empty DATA frame earns one back. When the budget
//!   is spent the connection is closed with GOAWAY(ENHANCE_YOUR_CALM). `h2` already bounds the
//!   *memory* of such floods (it stops reading until a PING or SETTINGS is acknowledged); the
//!   budget bounds the *work*, for a client that reads the acknowledgements as fast as it floods;
//! - answers DATA or HEADERS on a stream the client already ended or reset with STREAM_CLOSED,
//!   where `h2` answers PROTOCOL_ERROR (docs/ARCHITECTURE.md, "Conformance"). The offending
//!   frame is held back (h2 never receives all of it, so never answers it) and the connection is
//!   closed with that code. This one stays here because h2 forgets a stream once it is closed
//!   and released, and then cannot tell a stream the client ended from one it never opened
//!   (PROTOCOL_ERROR, RFC 9113 §5.1.1); the meter remembers the last ones, bounded.
//!
//! The error codes h2 got wrong for control frames of a wrong length (FRAME_SIZE_ERROR), an
//! initial window above 2³¹−1 (FLOW_CONTROL_ERROR) and a client's PUSH_PROMISE (PROTOCOL_ERROR)
//! are answered inside h2 itself (crates/weir-h2/WEIR-PATCHES.md).
//!
//! Invariant: a [`Verdict`] is final. After one, the meter reads nothing more, and the bytes it
//! let through end before the offending frame is complete.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame header length (RFC 9113 §4.1).
const FRAME_HEADER_LEN: usize = 9;

/// How many client-opened streams the meter remembers as open. Beyond it, the oldest is
/// forgotten and DATA on streams at or below it is left to `h2` (which closes the connection
/// with PROTOCOL_ERROR instead of STREAM_CLOSED): bounded memory whatever the client opens.
const OPEN_STREAMS_TRACKED: usize = 256;

/// How many streams the client ended (END_STREAM or RST_STREAM) the meter remembers, newest
/// first out of a ring: HEADERS on one of them is STREAM_CLOSED. Older ones are left to h2.
const ENDED_STREAMS_TRACKED: usize = 64;

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
    pub(super) const END_STREAM: u8 = 0x1;
    pub(super) const ACK: u8 = 0x1;
    pub(super) const END_HEADERS: u8 = 0x4;
}

/// Why the meter ends the connection; each maps to the GOAWAY error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The control-frame budget is spent: ENHANCE_YOUR_CALM.
    Flood,
    /// DATA or HEADERS on a stream the client ended or reset: STREAM_CLOSED (a stream error by
    /// RFC 9113 §5.1, answered as a connection error: h2 has no hook to reset the stream
    /// instead).
    StreamClosed,
}

impl Verdict {
    pub(crate) fn reason(self) -> h2::Reason {
        match self {
            Self::Flood => h2::Reason::ENHANCE_YOUR_CALM,
            Self::StreamClosed => h2::Reason::STREAM_CLOSED,
        }
    }

    fn code(self) -> u32 {
        match self {
            Self::Flood => 1,
            Self::StreamClosed => 2,
        }
    }

    fn from_code(code: u32) -> Option<Self> {
        [Self::Flood, Self::StreamClosed]
            .into_iter()
            .find(|v| v.code() == code)
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
    /// Pass the first `keep` bytes on, then end the connection with the verdict. A flood keeps
    /// the whole read (h2 answers what it already holds); a protocol error keeps only what
    /// comes before the offending frame is complete.
    Stop { keep: usize, verdict: Verdict },
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
    /// A header block is open (HEADERS without END_HEADERS): only CONTINUATION may follow,
    /// and anything else is h2's PROTOCOL_ERROR, which the meter leaves to it.
    in_header_block: bool,
    /// The highest stream id the client opened.
    last_opened: u32,
    /// Streams the client opened and has not ended (END_STREAM) or reset.
    open: Vec<u32>,
    /// Streams at or below this id may have been forgotten from `open` (it overflowed).
    forgotten_up_to: u32,
    /// The streams the client ended last (a ring; 0 is never a client stream).
    ended: [u32; ENDED_STREAMS_TRACKED],
    ended_next: usize,
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
            in_header_block: false,
            last_opened: 0,
            // ALLOC: once per connection, bounded by OPEN_STREAMS_TRACKED.
            open: Vec::new(),
            forgotten_up_to: 0,
            ended: [0; ENDED_STREAMS_TRACKED],
            ended_next: 0,
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
                    if let Some(verdict) = self.frame_header() {
                        // The header's last byte is held back: h2 never sees the frame.
                        return self.stop(at - 1, verdict);
                    }
                }
            }
        }
        if self.tokens == 0 {
            return self.stop(data.len(), Verdict::Flood);
        }
        Fed::Pass
    }

    fn stop(&mut self, keep: usize, verdict: Verdict) -> Fed {
        self.stopped = true;
        Fed::Stop { keep, verdict }
    }

    /// A complete frame header: account for it, judge it, and get ready for its payload.
    fn frame_header(&mut self) -> Option<Verdict> {
        let h = self.header;
        let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        self.payload_left = len;
        self.account(kind, flags, len);
        if self.in_header_block {
            // Only CONTINUATION is allowed here; h2 answers anything else correctly.
            if kind == kind::CONTINUATION {
                self.in_header_block = flags & flag::END_HEADERS == 0;
            }
            return None;
        }
        match kind {
            kind::DATA => self.data(stream, flags),
            kind::HEADERS => self.headers(stream, flags),
            kind::RST_STREAM => {
                self.close(stream);
                None
            }
            _ => None,
        }
    }

    fn headers(&mut self, stream: u32, flags: u8) -> Option<Verdict> {
        self.in_header_block = flags & flag::END_HEADERS == 0;
        // Client streams are odd; anything else is h2's PROTOCOL_ERROR.
        if stream % 2 == 0 {
            return None;
        }
        let ends = flags & flag::END_STREAM != 0;
        if stream > self.last_opened {
            self.last_opened = stream;
            if ends {
                self.mark_ended(stream);
            } else {
                self.remember(stream);
            }
            return None;
        }
        if self.open.contains(&stream) {
            // Trailers (without END_STREAM they are h2's PROTOCOL_ERROR).
            if ends {
                self.close(stream);
            }
            return None;
        }
        // A stream the client ended: STREAM_CLOSED. One it never opened (a lower id than one it
        // did) is h2's PROTOCOL_ERROR (§5.1.1), and so is one forgotten from the ring.
        self.ended
            .contains(&stream)
            .then_some(Verdict::StreamClosed)
    }

    fn data(&mut self, stream: u32, flags: u8) -> Option<Verdict> {
        if self.open.contains(&stream) {
            if flags & flag::END_STREAM != 0 {
                self.close(stream);
            }
            return None;
        }
        // Not open: if the client opened it, it has ended or reset it since. Idle streams
        // (above the last opened), stream 0 and even ids are h2's PROTOCOL_ERROR.
        let ended = stream % 2 == 1 && stream <= self.last_opened && stream > self.forgotten_up_to;
        ended.then_some(Verdict::StreamClosed)
    }

    fn remember(&mut self, stream: u32) {
        if self.open.len() == OPEN_STREAMS_TRACKED {
            // Forget the oldest (lowest) stream: DATA on it is then left to h2.
            let (i, &oldest) = self
                .open
                .iter()
                .enumerate()
                .min_by_key(|&(_, &s)| s)
                .expect("the set is full, so not empty");
            self.forgotten_up_to = self.forgotten_up_to.max(oldest);
            self.open.swap_remove(i);
        }
        self.open.push(stream);
    }

    /// The client ended (or reset) `stream`.
    fn close(&mut self, stream: u32) {
        if let Some(i) = self.open.iter().rposition(|&s| s == stream) {
            self.open.swap_remove(i);
            self.mark_ended(stream);
        }
    }

    fn mark_ended(&mut self, stream: u32) {
        self.ended[self.ended_next] = stream;
        self.ended_next = (self.ended_next + 1) % ENDED_STREAMS_TRACKED;
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
                        Fed::Stop { keep, verdict } => return (Some(verdict), kept + keep),
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
        assert_eq!(
            m.feed(&ping),
            Fed::Stop {
                keep: ping.len(),
                verdict: Verdict::Flood
            }
        );
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

    /// `bad` after a valid opening: the verdict at every split, and h2 never gets the whole of
    /// the offending frame.
    fn assert_stopped(opening: &[u8], bad: &[u8], verdict: Verdict) {
        let mut stream = PREFACE.to_vec();
        stream.extend_from_slice(opening);
        let bad_at = stream.len();
        stream.extend_from_slice(bad);
        // What follows the offending frame is never looked at.
        stream.extend(control(kind::PING, 0, &[0; 8]));
        for (split, (got, kept)) in feed_split(&stream, 100).into_iter().enumerate() {
            assert_eq!(got, Some(verdict), "split at {split}");
            assert!(
                kept >= bad_at && kept < bad_at + bad.len(),
                "split at {split}: kept {kept}, frame at {bad_at}..{}",
                bad_at + bad.len()
            );
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
    fn frames_on_the_wrong_stream_are_left_to_h2() {
        // h2 answers these with PROTOCOL_ERROR, which is right: the stream id is checked first.
        let mut stream = PREFACE.to_vec();
        stream.extend(frame(kind::PING, 0, &[0; 7]));
        stream.extend(frame(kind::SETTINGS, 0, &[0; 5]));
        stream.extend(control(kind::RST_STREAM, 0, &[0; 3]));
        for (split, got) in feed_split(&stream, 100).into_iter().enumerate() {
            assert_eq!(got, (None, stream.len()), "split at {split}");
        }
    }

    #[test]
    fn data_on_a_stream_the_client_ended_is_stream_closed() {
        let put = frame(kind::HEADERS, flag::END_HEADERS, &[0x83]);
        let mut opening = put.clone();
        opening.extend(frame(kind::DATA, flag::END_STREAM, b"abc"));
        assert_stopped(
            &opening,
            &frame(kind::DATA, 0, b"more"),
            Verdict::StreamClosed,
        );
        // Ended by HEADERS, by trailers, or reset by the client.
        let get = frame(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, &[0x82]);
        assert_stopped(&get, &frame(kind::DATA, 0, b"x"), Verdict::StreamClosed);
        let mut trailers = put.clone();
        trailers.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            &[0x82],
        ));
        assert_stopped(
            &trailers,
            &frame(kind::DATA, 0, b"x"),
            Verdict::StreamClosed,
        );
        let mut reset = put.clone();
        reset.extend(frame(kind::RST_STREAM, 0, &[0, 0, 0, 8]));
        assert_stopped(&reset, &frame(kind::DATA, 0, b"x"), Verdict::StreamClosed);
    }

    #[test]
    fn headers_on_a_stream_the_client_ended_is_stream_closed() {
        let get = frame(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, &[0x82]);
        let again = frame(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, &[0x82]);
        assert_stopped(&get, &again, Verdict::StreamClosed);
        let put = frame(kind::HEADERS, flag::END_HEADERS, &[0x83]);
        let mut ended = put.clone();
        ended.extend(frame(kind::DATA, flag::END_STREAM, b"abc"));
        assert_stopped(&ended, &again, Verdict::StreamClosed);
        let mut reset = put.clone();
        reset.extend(frame(kind::RST_STREAM, 0, &[0, 0, 0, 8]));
        assert_stopped(&reset, &again, Verdict::StreamClosed);
    }

    #[test]
    fn headers_on_a_stream_never_opened_or_as_trailers_is_left_to_h2() {
        let mut stream = PREFACE.to_vec();
        // Stream 5 opens; stream 3 was never opened (h2: PROTOCOL_ERROR, §5.1.1).
        stream.extend(frame_on(kind::HEADERS, flag::END_HEADERS, 5, &[0x83]));
        stream.extend(frame_on(kind::HEADERS, flag::END_HEADERS, 3, &[0x82]));
        // Trailers end stream 5.
        stream.extend(frame_on(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            5,
            &[0x40],
        ));
        for (split, got) in feed_split(&stream, 100).into_iter().enumerate() {
            assert_eq!(got, (None, stream.len()), "split at {split}");
        }
    }

    #[test]
    fn data_on_open_idle_or_server_streams_is_left_to_h2() {
        let mut stream = PREFACE.to_vec();
        stream.extend(frame_on(kind::HEADERS, flag::END_HEADERS, 1, &[0x83]));
        stream.extend(frame_on(kind::DATA, 0, 1, b"abc"));
        // Streams 3 (idle), 2 (even), 0: h2's PROTOCOL_ERROR.
        stream.extend(frame_on(kind::DATA, 0, 3, b"x"));
        stream.extend(frame_on(kind::DATA, 0, 2, b"x"));
        stream.extend(frame_on(kind::DATA, 0, 0, b"x"));
        stream.extend(frame_on(kind::DATA, flag::END_STREAM, 1, b"end"));
        for (split, got) in feed_split(&stream, 100).into_iter().enumerate() {
            assert_eq!(got, (None, stream.len()), "split at {split}");
        }
    }

    #[test]
    fn a_header_block_in_progress_is_left_to_h2() {
        // DATA where a CONTINUATION is due: h2's PROTOCOL_ERROR is right.
        let mut stream = PREFACE.to_vec();
        stream.extend(frame(kind::HEADERS, flag::END_STREAM, &[0x83]));
        stream.extend(frame(kind::DATA, 0, b"x"));
        let mut m = FrameMeter::new(100);
        assert_eq!(m.feed(&stream), Fed::Pass);
        // After the block ends, frames are judged again: the stream was ended.
        let mut m = FrameMeter::new(100);
        let mut stream = PREFACE.to_vec();
        stream.extend(frame(kind::HEADERS, flag::END_STREAM, &[0x83]));
        stream.extend(frame(kind::CONTINUATION, flag::END_HEADERS, &[0x84]));
        assert_eq!(m.feed(&stream), Fed::Pass);
        let data = frame(kind::DATA, 0, b"x");
        assert_eq!(
            m.feed(&data),
            Fed::Stop {
                keep: 8,
                verdict: Verdict::StreamClosed
            }
        );
    }

    #[test]
    fn the_open_set_is_bounded_and_forgets_the_oldest() {
        let mut m = FrameMeter::new(u32::MAX);
        assert_eq!(m.feed(PREFACE), Fed::Pass);
        let streams = OPEN_STREAMS_TRACKED as u32 + 10;
        for i in 0..streams {
            let f = frame_on(kind::HEADERS, flag::END_HEADERS, 2 * i + 1, &[0x83]);
            assert_eq!(m.feed(&f), Fed::Pass);
        }
        assert_eq!(m.open.len(), OPEN_STREAMS_TRACKED);
        // Stream 1 was forgotten: its DATA goes to h2. The newest is still open.
        assert_eq!(m.feed(&frame_on(kind::DATA, 0, 1, b"x")), Fed::Pass);
        let newest = 2 * (streams - 1) + 1;
        assert_eq!(
            m.feed(&frame_on(kind::DATA, flag::END_STREAM, newest, b"x")),
            Fed::Pass
        );
        let again = frame_on(kind::DATA, 0, newest, b"x");
        assert_eq!(
            m.feed(&again),
            Fed::Stop {
                keep: 8,
                verdict: Verdict::StreamClosed
            }
        );
    }
}
