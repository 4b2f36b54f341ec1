//! [`RecordBuf`]: a TLS connection's read buffer. Ciphertext goes into it straight from the
//! socket, each record is decrypted in place where it lies, and its plaintext is handed out from
//! there: no allocation per record, and one copy of the plaintext (buffer → caller).
//!
//! Layout of `buf`: `[.. next)` records already decrypted (within it, `plain` is the part of
//! the last application-data record not yet handed out); `[next .. end)` ciphertext not yet
//! decrypted, whole records then at most one partial record; `[end ..)` room for the next
//! `recv`. Invariants: `plain.end <= next <= end <= buf.len()`; room is made (compacting, growing)
//! only while no plaintext is pending, so a compaction never moves bytes a caller is still owed.

use rustls::crypto::cipher::{InboundOpaqueMessage, MessageDecrypter};
use rustls::{ContentType, ProtocolVersion};
use std::ops::Range;

/// The record header: type, legacy version, length.
pub(super) const HEADER_LEN: usize = 5;

/// The largest record body accepted: RFC 5246 §6.2.3 allows 2^14 + 2048 bytes of ciphertext.
pub(super) const MAX_CIPHERTEXT: usize = 16384 + 2048;

/// TLS 1.3 allows less (RFC 8446 §5.2): a longer record is a `record_overflow`, never a failed
/// authentication.
const MAX_CIPHERTEXT_TLS13: usize = 16384 + 256;

/// The largest whole record.
const MAX_RECORD: usize = HEADER_LEN + MAX_CIPHERTEXT;

/// The buffer starts at this size and doubles each time a `recv` fills its room, up to
/// [`READ_MAX`].
const READ_MIN: usize = 32 * 1024;

/// The buffer is released when a `recv` finds nothing while it is drained, after a `recv` that
/// brought less than this (the client is not streaming: a request's head, a small body, a window
/// update), so idle connections hold none. While a client streams, `recv`s bring whole records
/// (up to 16 KiB each): only the tail of a record arriving alone can bring less, and then the
/// buffer comes back at the size it had, in one allocation. Buffers of [`READ_MIN`] bytes go
/// to a process-wide pool of at most [`POOLED`] and come back from it, so a keep-alive
/// connection's requests allocate nothing here.
const RELEASE_BELOW: usize = 4096;

/// The most released buffers of [`READ_MIN`] bytes kept for reuse.
const POOLED: usize = 64;

/// Released buffers of [`READ_MIN`] bytes (each `len() == READ_MIN`, already initialised).
static IDLE: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

fn idle_buffers() -> std::sync::MutexGuard<'static, Vec<Vec<u8>>> {
    // Push and pop only: a panic elsewhere cannot leave the list invalid.
    IDLE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Keeps a released buffer for reuse while the pool holds fewer than [`POOLED`].
fn keep_idle(idle: &mut Vec<Vec<u8>>, buf: Vec<u8>) {
    if idle.len() < POOLED {
        idle.push(buf);
    }
}

/// The largest buffer: sixteen full records per `recv` (see docs/BENCHMARKS.md on the read-ahead
/// size for TLS uploads).
const READ_MAX: usize = 256 * 1024;

/// A record that cannot be taken.
#[derive(Debug)]
pub(super) enum RecordError {
    /// Longer than any record may be (alert `record_overflow`).
    Overflow,
    /// An unknown content type or a version that is no TLS version (alert `decode_error`).
    Header,
    /// TLS 1.3: an outer content type other than `application_data` (RFC 8446 §5.2; alert
    /// `unexpected_message`). The type is not authenticated there, so it must be checked.
    OuterType,
    /// Authentication failed, or the plaintext is malformed (alert `bad_record_mac` or what
    /// the provider said).
    Decrypt(rustls::Error),
}

/// A decrypted record: its (inner) content type and where its plaintext lies in the buffer.
#[derive(Debug)]
pub(super) struct Opened {
    pub(super) typ: ContentType,
    pub(super) range: Range<usize>,
}

/// See the module docs.
#[derive(Debug)]
pub(super) struct RecordBuf {
    buf: Vec<u8>,
    plain: Range<usize>,
    next: usize,
    end: usize,
    /// The size of the next allocation or growth.
    size: usize,
    /// The last `recv` brought little: release the buffer when a `recv` finds nothing while it
    /// is drained.
    release: bool,
}

impl RecordBuf {
    pub(super) fn new() -> Self {
        Self {
            buf: Vec::new(),
            plain: 0..0,
            next: 0,
            end: 0,
            size: READ_MIN,
            release: false,
        }
    }

    /// Decrypted bytes not yet handed out.
    pub(super) fn plaintext(&self) -> &[u8] {
        &self.buf[self.plain.clone()]
    }

    /// `n` bytes of [`RecordBuf::plaintext`] were handed out.
    pub(super) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.plain.len());
        self.plain.start += n;
    }

    /// Hands out the plaintext at `range` (from [`Opened::range`]) next.
    pub(super) fn set_plaintext(&mut self, range: Range<usize>) {
        debug_assert!(self.plain.is_empty() && range.end <= self.next);
        self.plain = range;
    }

    /// The bytes at `range` (of a record decrypted by [`RecordBuf::open_next`]).
    pub(super) fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// Whether ciphertext is at hand (a whole record or part of one).
    pub(super) fn has_ciphertext(&self) -> bool {
        self.next < self.end
    }

    /// The ciphertext not yet decrypted.
    pub(super) fn ciphertext(&self) -> &[u8] {
        &self.buf[self.next..self.end]
    }

    /// The ciphertext not yet decrypted: rustls's unbuffered handshake reads records from it in
    /// place, then says how much of its front to [`RecordBuf::discard`].
    pub(super) fn ciphertext_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.next..self.end]
    }

    /// Drops `n` bytes from the front of the ciphertext.
    pub(super) fn discard(&mut self, n: usize) {
        debug_assert!(self.next + n <= self.end);
        self.next += n;
    }

    /// Decrypts the next record in place, if a whole one is at hand. The caller counts the
    /// sequence number; the record is taken (its bytes are not offered again) even when
    /// decryption fails, since the connection is then over.
    pub(super) fn open_next(
        &mut self,
        decrypter: &mut dyn MessageDecrypter,
        seq: u64,
        tls13: bool,
    ) -> Result<Option<Opened>, RecordError> {
        let at_hand = &self.buf[self.next..self.end];
        if at_hand.len() < HEADER_LEN {
            return Ok(None);
        }
        let typ = ContentType::from(at_hand[0]);
        let version = ProtocolVersion::from(u16::from_be_bytes([at_hand[1], at_hand[2]]));
        let len = usize::from(u16::from_be_bytes([at_hand[3], at_hand[4]]));
        if matches!(typ, ContentType::Unknown(_)) || at_hand[1] != 3 {
            return Err(RecordError::Header);
        }
        if len
            > if tls13 {
                MAX_CIPHERTEXT_TLS13
            } else {
                MAX_CIPHERTEXT
            }
        {
            return Err(RecordError::Overflow);
        }
        if tls13 && typ != ContentType::ApplicationData {
            return Err(RecordError::OuterType);
        }
        if at_hand.len() < HEADER_LEN + len {
            return Ok(None);
        }
        let body = self.next + HEADER_LEN..self.next + HEADER_LEN + len;
        self.next = body.end;
        let base = self.buf.as_ptr() as usize;
        // In place: the provider decrypts `body` where it lies and returns the plaintext as a
        // part of it (after a TLS 1.2 explicit nonce; without a TLS 1.3 record's inner type and
        // padding).
        let message = InboundOpaqueMessage::new(typ, version, &mut self.buf[body]);
        let plain = decrypter
            .decrypt(message, seq)
            .map_err(RecordError::Decrypt)?;
        let start = plain.payload.as_ptr() as usize - base;
        Ok(Some(Opened {
            typ: plain.typ,
            range: start..start + plain.payload.len(),
        }))
    }

    /// Room to receive ciphertext into, enough for at least the rest of the record in progress.
    /// Only while no plaintext is pending.
    pub(super) fn spare(&mut self) -> &mut [u8] {
        debug_assert!(self.plain.is_empty());
        if self.next == self.end {
            (self.next, self.end) = (0, 0);
        }
        if self.buf.is_empty() && self.size == READ_MIN {
            if let Some(pooled) = idle_buffers().pop() {
                self.buf = pooled;
            }
        }
        if self.buf.len() < self.size {
            // ALLOCATION: the first read, or growth while the client streams (a few per
            // connection, never per record).
            self.buf.resize(self.size, 0);
        }
        if self.next > 0 && self.buf.len() - self.next < MAX_RECORD {
            // COPY: the partial record at the tail (less than one record per buffer's worth
            // of ciphertext) moves to the front, so that the whole record fits.
            self.buf.copy_within(self.next..self.end, 0);
            (self.next, self.end) = (0, self.end - self.next);
        }
        self.plain = 0..0;
        &mut self.buf[self.end..]
    }

    /// `n` bytes were received into [`RecordBuf::spare`].
    pub(super) fn filled(&mut self, n: usize) {
        let room = self.buf.len() - self.end;
        debug_assert!(n <= room);
        self.end += n;
        if n == room && room > 0 {
            self.size = (self.size * 2).min(READ_MAX);
        }
        self.release = n < RELEASE_BELOW;
    }

    /// Drops the ciphertext not yet decrypted (after the peer's `close_notify`, or an error).
    pub(super) fn drop_ciphertext(&mut self) {
        self.end = self.next;
    }

    /// A `recv` found nothing: the buffer is released if it is drained and the client is not
    /// streaming (see [`RELEASE_BELOW`]).
    pub(super) fn nothing_received(&mut self) {
        if self.release && self.plain.is_empty() && self.next == self.end {
            let buf = std::mem::take(&mut self.buf);
            // `release` stays: the client is still not streaming until a `recv` brings more.
            (self.next, self.end, self.plain) = (0, 0, 0..0);
            if buf.len() == READ_MIN {
                keep_idle(&mut idle_buffers(), buf);
            }
        }
    }

    /// The buffer's allocated size (tests).
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::crypto::cipher::{
        AeadKey, Iv, MessageEncrypter, OutboundChunks, OutboundPlainMessage,
    };

    /// A TLS 1.3 (ChaCha20-Poly1305) record encrypter and its decrypter, with one key.
    fn pair() -> (Box<dyn MessageEncrypter>, Box<dyn MessageDecrypter>) {
        let rustls::SupportedCipherSuite::Tls13(suite) =
            rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256
        else {
            unreachable!()
        };
        let key = || AeadKey::from([7u8; 32]);
        let iv = || Iv::from([9u8; 12]);
        (
            suite.aead_alg.encrypter(key(), iv()),
            suite.aead_alg.decrypter(key(), iv()),
        )
    }

    fn seal(enc: &mut dyn MessageEncrypter, typ: ContentType, data: &[u8], seq: u64) -> Vec<u8> {
        let message = OutboundPlainMessage {
            typ,
            version: ProtocolVersion::TLSv1_2,
            payload: OutboundChunks::Single(data),
        };
        enc.encrypt(message, seq).unwrap().encode()
    }

    /// Everything the buffer hands out, fed `wire` in pieces of `piece` bytes (and the rest).
    fn read_all(wire: &[u8], split: usize, dec: &mut dyn MessageDecrypter) -> (Vec<u8>, u64) {
        let mut rb = RecordBuf::new();
        let mut out = Vec::new();
        let mut seq = 0;
        let mut fed = 0;
        let mut pieces = [split, wire.len()].into_iter();
        loop {
            loop {
                let plain = rb.plaintext();
                if !plain.is_empty() {
                    out.extend_from_slice(plain);
                    let n = plain.len();
                    rb.consume(n);
                    continue;
                }
                match rb.open_next(dec, seq, true).unwrap() {
                    Some(opened) => {
                        seq += 1;
                        assert_eq!(opened.typ, ContentType::ApplicationData);
                        rb.set_plaintext(opened.range);
                    }
                    None => break,
                }
            }
            let Some(upto) = pieces.next() else { break };
            let upto = upto.min(wire.len());
            while fed < upto {
                let spare = rb.spare();
                let n = spare.len().min(upto - fed);
                spare[..n].copy_from_slice(&wire[fed..fed + n]);
                rb.filled(n);
                fed += n;
            }
        }
        assert!(!rb.has_ciphertext());
        (out, seq)
    }

    #[test]
    fn records_split_at_every_byte_come_out_whole_and_in_order() {
        let (mut enc, mut dec) = pair();
        // Three records: a full one, a short one, an empty one, then another short one.
        let data: Vec<u8> = (0..16384 + 700 + 30).map(|i| (i % 251) as u8).collect();
        let (a, rest) = data.split_at(16384);
        let (b, c) = rest.split_at(700);
        let mut wire = Vec::new();
        for (seq, part) in [a, b, &[][..], c].into_iter().enumerate() {
            wire.extend(seal(
                &mut *enc,
                ContentType::ApplicationData,
                part,
                seq as u64,
            ));
        }
        for split in 0..=wire.len() {
            let (out, records) = read_all(&wire, split, &mut *dec);
            assert_eq!(records, 4, "split at {split}");
            assert!(out == data, "split at {split}");
        }
    }

    /// `spare`'s promise from the first read on: room for a whole record of the largest size,
    /// so no record needs a second `recv` only because the buffer was too small.
    #[test]
    fn the_first_read_has_room_for_a_whole_record() {
        let mut rb = RecordBuf::new();
        assert!(rb.spare().len() >= MAX_RECORD, "{}", rb.capacity());
        rb.filled(HEADER_LEN);
        assert!(rb.spare().len() >= MAX_RECORD - HEADER_LEN);
    }

    /// A drained buffer of the first size comes from the pool of released ones (so a keep-alive
    /// connection's requests allocate nothing here); one that holds ciphertext keeps it.
    #[test]
    fn the_pool_serves_an_empty_buffer_and_never_replaces_a_filled_one() {
        // The pool is the process's: other tests push and pop beside this one. A few tries,
        // so that one of them popping ours in between cannot fail the test; none of them can
        // make a buffer that holds ciphertext change.
        let took_ours = (0..16).any(|_| {
            let ours = vec![0xEE; READ_MIN];
            let at = ours.as_ptr();
            idle_buffers().push(ours);
            let mut rb = RecordBuf::new();
            rb.spare();
            rb.buf.as_ptr() == at
        });
        assert!(
            took_ours,
            "a fresh buffer came from the allocator, not the pool"
        );

        let mut rb = RecordBuf::new();
        rb.spare()[..3].copy_from_slice(b"\x17\x03\x03");
        rb.filled(3);
        idle_buffers().push(vec![0xEE; READ_MIN]);
        rb.spare();
        assert_eq!(
            &rb.buf[rb.next..rb.end],
            b"\x17\x03\x03",
            "the partial record stays"
        );
    }

    /// The partial record moves to the front only when a whole record would not fit behind
    /// it: a copy no more often than once a buffer's worth of ciphertext.
    #[test]
    fn ciphertext_moves_to_the_front_only_when_a_whole_record_would_not_fit() {
        let (mut enc, mut dec) = pair();
        let first = seal(&mut *enc, ContentType::ApplicationData, b"one", 0);
        let second = seal(&mut *enc, ContentType::ApplicationData, b"two", 1);
        let mut rb = RecordBuf::new();
        let wire = [&first[..], &second[..]].concat();
        rb.spare()[..wire.len()].copy_from_slice(&wire);
        rb.filled(wire.len());
        let opened = rb.open_next(&mut *dec, 0, true).unwrap().unwrap();
        rb.set_plaintext(opened.range);
        assert_eq!(rb.plaintext(), b"one");
        rb.consume(3);
        // The second record waits at `first.len()`, with room for a whole record behind it.
        assert_eq!(rb.next, first.len());
        assert!(rb.capacity() - rb.next >= MAX_RECORD);
        rb.spare();
        assert_eq!(rb.next, first.len(), "moved although a record fits");
        let opened = rb.open_next(&mut *dec, 1, true).unwrap().unwrap();
        rb.set_plaintext(opened.range);
        assert_eq!(rb.plaintext(), b"two");
        // At the edge: room for exactly one record of the largest size stays; one byte less
        // moves.
        for (room, moves) in [(MAX_RECORD, false), (MAX_RECORD - 1, true)] {
            let mut rb = RecordBuf::new();
            rb.spare();
            let len = rb.capacity();
            (rb.next, rb.end) = (len - room, len - room + 5);
            rb.spare();
            assert_eq!(rb.next == 0, moves, "room {room}");
            assert_eq!(rb.end - rb.next, 5);
        }
    }

    /// A `recv` that fills the whole room doubles the next buffer (up to `READ_MAX`); one that
    /// leaves room, or brings nothing, does not.
    #[test]
    fn a_full_read_doubles_the_buffer_and_a_partial_one_does_not() {
        let mut rb = RecordBuf::new();
        let room = rb.spare().len();
        assert_eq!(room, READ_MIN);
        rb.filled(room - 1);
        rb.drop_ciphertext();
        assert_eq!(rb.spare().len(), READ_MIN, "a partial read keeps the size");
        rb.filled(READ_MIN);
        rb.drop_ciphertext();
        assert_eq!(rb.spare().len(), 2 * READ_MIN, "a full read doubles it");
        // A full buffer that then receives nothing (an end of stream) does not grow it.
        rb.filled(2 * READ_MIN);
        rb.filled(0);
        rb.drop_ciphertext();
        assert_eq!(
            rb.spare().len(),
            4 * READ_MIN,
            "doubled once, by the full read"
        );
        for _ in 0..8 {
            let room = rb.spare().len();
            rb.filled(room);
            rb.drop_ciphertext();
        }
        assert_eq!(rb.spare().len(), READ_MAX, "never past the maximum");
        // Filling the rest of a buffer that already holds bytes is a full read too.
        let mut rb = RecordBuf::new();
        rb.spare();
        rb.filled(100);
        let rest = rb.spare().len();
        assert_eq!(rest, READ_MIN - 100);
        rb.filled(rest);
        rb.drop_ciphertext();
        assert_eq!(rb.spare().len(), 2 * READ_MIN);
    }

    /// A buffer that brought less than `RELEASE_BELOW` bytes is released once drained and
    /// nothing more arrives; one that brought that much is kept (the client is streaming).
    #[test]
    fn a_small_read_releases_the_drained_buffer_and_a_large_one_keeps_it() {
        for (n, released) in [(RELEASE_BELOW - 1, true), (RELEASE_BELOW, false)] {
            let mut rb = RecordBuf::new();
            rb.spare();
            rb.filled(n);
            rb.drop_ciphertext();
            rb.nothing_received();
            assert_eq!(rb.capacity() == 0, released, "{n} bytes");
        }
    }

    /// Nothing arriving releases only a drained buffer: ciphertext or plaintext still pending
    /// stays; a released buffer of the first size goes to the pool.
    #[test]
    fn nothing_received_releases_only_a_drained_buffer_into_the_pool() {
        let mut rb = RecordBuf::new();
        rb.spare()[..3].copy_from_slice(b"abc");
        rb.filled(3);
        rb.nothing_received();
        assert_eq!(&rb.buf[rb.next..rb.end], b"abc", "pending ciphertext stays");
        rb.next = rb.end;
        rb.set_plaintext(0..3);
        rb.nothing_received();
        assert_eq!(rb.plaintext(), b"abc", "pending plaintext stays");
        // The pool is the process's (see the test above): a few tries.
        let pooled = (0..16).any(|_| {
            let mut rb = RecordBuf::new();
            rb.spare();
            rb.filled(3);
            rb.drop_ciphertext();
            let at = rb.buf.as_ptr();
            rb.nothing_received();
            assert_eq!(rb.capacity(), 0, "released");
            idle_buffers().iter().any(|b| b.as_ptr() == at)
        });
        assert!(
            pooled,
            "a released buffer of the first size is not in the pool"
        );
    }

    #[test]
    fn the_pool_keeps_at_most_its_bound() {
        let mut idle = Vec::new();
        for _ in 0..POOLED + 1 {
            keep_idle(&mut idle, vec![0; READ_MIN]);
        }
        assert_eq!(idle.len(), POOLED);
    }

    /// After the peer's `close_notify` (or an error) the ciphertext not yet opened is gone:
    /// nothing more is decrypted from it.
    #[test]
    fn dropped_ciphertext_is_never_opened() {
        let (mut enc, mut dec) = pair();
        let wire = [
            seal(&mut *enc, ContentType::ApplicationData, b"one", 0),
            seal(&mut *enc, ContentType::ApplicationData, b"two", 1),
        ]
        .concat();
        let mut rb = RecordBuf::new();
        rb.spare()[..wire.len()].copy_from_slice(&wire);
        rb.filled(wire.len());
        let opened = rb.open_next(&mut *dec, 0, true).unwrap().unwrap();
        rb.set_plaintext(opened.range);
        rb.consume(3);
        assert!(rb.has_ciphertext());
        rb.drop_ciphertext();
        assert!(!rb.has_ciphertext());
        assert!(rb.open_next(&mut *dec, 1, true).unwrap().is_none());
    }

    #[test]
    fn a_long_stream_compacts_without_growing_past_the_maximum() {
        let (mut enc, mut dec) = pair();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
        let mut wire = Vec::new();
        for (seq, part) in data.chunks(16384).enumerate() {
            wire.extend(seal(
                &mut *enc,
                ContentType::ApplicationData,
                part,
                seq as u64,
            ));
        }
        // Fed in uneven pieces (a record and a bit), handed out as it comes.
        let mut rb = RecordBuf::new();
        let (mut out, mut seq, mut fed) = (Vec::new(), 0, 0);
        while fed < wire.len() || rb.has_ciphertext() || !rb.plaintext().is_empty() {
            let plain = rb.plaintext();
            if !plain.is_empty() {
                out.extend_from_slice(plain);
                let n = plain.len();
                rb.consume(n);
            } else if let Some(opened) = rb.open_next(&mut *dec, seq, true).unwrap() {
                seq += 1;
                rb.set_plaintext(opened.range);
            } else {
                let spare = rb.spare();
                let n = spare.len().min(wire.len() - fed).min(20_011);
                spare[..n].copy_from_slice(&wire[fed..fed + n]);
                rb.filled(n);
                fed += n;
                assert!(rb.capacity() <= READ_MAX);
            }
        }
        assert!(out == data);
    }

    #[test]
    fn bad_records_are_refused() {
        let (mut enc, mut dec) = pair();
        let mut wire = seal(&mut *enc, ContentType::ApplicationData, b"hello", 0);
        let last = wire.len() - 1;
        wire[last] ^= 1;
        let mut rb = RecordBuf::new();
        let spare = rb.spare();
        spare[..wire.len()].copy_from_slice(&wire);
        rb.filled(wire.len());
        assert!(matches!(
            rb.open_next(&mut *dec, 0, true),
            Err(RecordError::Decrypt(rustls::Error::DecryptError))
        ));

        let mut rb = RecordBuf::new();
        let header = [23, 3, 3, 0x48, 1]; // 18,433 bytes: one too many
        rb.spare()[..5].copy_from_slice(&header);
        rb.filled(5);
        assert!(matches!(
            rb.open_next(&mut *dec, 0, true),
            Err(RecordError::Overflow)
        ));

        // TLS 1.3's own bound (RFC 8446 §5.2: 2^14 + 256) is `record_overflow` too, at its
        // first length past it and at TLS 1.2's largest; TLS 1.2 waits for the rest there.
        for len in [16_641u16, 18_432] {
            for (tls13, overflow) in [(true, true), (false, false)] {
                let mut rb = RecordBuf::new();
                let [hi, lo] = len.to_be_bytes();
                rb.spare()[..5].copy_from_slice(&[23, 3, 3, hi, lo]);
                rb.filled(5);
                let opened = rb.open_next(&mut *dec, 0, tls13);
                assert_eq!(
                    matches!(opened, Err(RecordError::Overflow)),
                    overflow,
                    "{len} bytes, TLS 1.3: {tls13}: {opened:?}"
                );
            }
        }
        let mut rb = RecordBuf::new();
        let [hi, lo] = 16_640u16.to_be_bytes();
        rb.spare()[..5].copy_from_slice(&[23, 3, 3, hi, lo]);
        rb.filled(5);
        assert!(matches!(rb.open_next(&mut *dec, 0, true), Ok(None)));

        let mut rb = RecordBuf::new();
        rb.spare()[..5].copy_from_slice(&[99, 3, 3, 0, 1]);
        rb.filled(5);
        assert!(matches!(
            rb.open_next(&mut *dec, 0, true),
            Err(RecordError::Header)
        ));

        // TLS 1.3 protects every record as application data; the outer type is not
        // authenticated, so another one is refused before decryption.
        let mut rb = RecordBuf::new();
        rb.spare()[..5].copy_from_slice(&[22, 3, 3, 0, 1]);
        rb.filled(5);
        assert!(matches!(
            rb.open_next(&mut *dec, 0, true),
            Err(RecordError::OuterType)
        ));
    }
}
