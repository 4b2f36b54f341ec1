//! Request body framing decoders: `Content-Length` and chunked (RFC 9112 §6, §7.1).
//!
//! The decoders never copy payload. [`BodyDecoder::decode`] looks at buffered bytes and says how
//! many of them are framing (to drop) and how many payload bytes follow (to hand to the handler);
//! the caller takes as many payload bytes as it wants and reports them with
//! [`BodyDecoder::consume`]. When no usable bytes are buffered, [`BodyDecoder::direct_window`]
//! says how many payload bytes may be read from the socket straight into the handler's buffer:
//! the rest of a `Content-Length` body, or of the current chunk.
//!
//! The chunked decoder is a byte-at-a-time state machine over the framing (size lines,
//! extensions, CRLFs, trailers) and skips payload in bulk, so it resumes at any split of the
//! input. It is strict: hex digits only (no `0x`, sign or spaces), no bare CR or LF, extensions
//! checked against the RFC grammar and bounded in total size, trailer fields checked and
//! bounded, and framing fields (`Content-Length`, `Transfer-Encoding`, ...) refused in trailers.
//! The trailer section is not interpreted here: [`BodyDecoder::trailer_span`] says where its
//! bytes were in the last input, for the I/O layer to keep them (bounded by
//! [`Limits::max_trailers`]) and hand them to the handler.

use crate::chars::{is_field_vchar, is_qdtext, is_tchar};
use crate::error::ProtoError;
use crate::framing::Framing;
use crate::limits::Limits;

/// What [`BodyDecoder::decode`] found at the start of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Bytes of framing at the start of the input, already accounted for: drop them.
    pub framing: usize,
    /// Payload bytes available right after the framing (`input[framing..framing + data]`).
    /// Take any number of them and report it with [`BodyDecoder::consume`].
    pub data: usize,
}

/// Separates a request body's payload from its framing.
#[derive(Clone, Debug)]
pub enum BodyDecoder {
    /// A `Content-Length` body with this many payload bytes still to come.
    Length(u64),
    /// A chunked body.
    Chunked(ChunkedDecoder),
}

impl BodyDecoder {
    /// A decoder for a body with the given framing. A body of [`Framing::Unknown`] length (which
    /// HTTP/1.1 never gives a request) has no framing to remove: every byte is payload, and
    /// its end is the end of the stream, which the caller sees.
    pub fn new(framing: Framing, limits: &Limits) -> Self {
        match framing {
            Framing::Length(n) => Self::Length(n),
            Framing::Chunked => Self::Chunked(ChunkedDecoder::new(limits)),
            Framing::Unknown => Self::Length(u64::MAX),
        }
    }

    /// Consumes framing at the start of `input` and reports the payload that follows.
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        match self {
            Self::Length(remaining) => Ok(Decoded {
                framing: 0,
                data: clamp(*remaining, input),
            }),
            Self::Chunked(chunked) => chunked.decode(input),
        }
    }

    /// Records that the caller took `n` payload bytes (from the buffer after a `decode`, or
    /// straight from the socket within the `direct_window`).
    ///
    /// `n` must not exceed what `decode` reported or `direct_window` allowed.
    pub fn consume(&mut self, n: usize) {
        match self {
            Self::Length(remaining) => *remaining -= n as u64,
            Self::Chunked(chunked) => chunked.consume(n),
        }
    }

    /// Payload bytes that may be read from the stream right now without passing through the
    /// decoder: the rest of a `Content-Length` body, or of the current chunk. Zero while the
    /// decoder is in framing.
    pub fn direct_window(&self) -> u64 {
        match self {
            Self::Length(remaining) => *remaining,
            Self::Chunked(chunked) => match chunked.state {
                State::Data { remaining } => remaining,
                _ => 0,
            },
        }
    }

    /// Whether the whole body, framing and trailers included, has been consumed.
    pub fn is_done(&self) -> bool {
        match self {
            Self::Length(remaining) => *remaining == 0,
            Self::Chunked(chunked) => chunked.state == State::Done,
        }
    }

    /// Where the trailer section (field lines and the final CRLF, already checked) lay in the
    /// input of the last [`BodyDecoder::decode`], within its `framing`; empty when that call
    /// consumed no trailer bytes. A trailer section may span several calls: the caller appends
    /// each span to what it keeps.
    pub fn trailer_span(&self) -> std::ops::Range<usize> {
        match self {
            Self::Length(_) => 0..0,
            Self::Chunked(chunked) => chunked.last_trailer_span.clone(),
        }
    }

    /// Payload bytes still expected, when the framing says (`Content-Length`).
    pub fn remaining_hint(&self) -> Option<u64> {
        match self {
            Self::Length(remaining) => Some(*remaining),
            Self::Chunked(_) => None,
        }
    }
}

fn clamp(remaining: u64, input: &[u8]) -> usize {
    remaining.min(input.len() as u64) as usize
}

/// Where the chunked decoder is in the grammar (RFC 9112 §7.1):
///
/// ```text
/// chunked-body = *chunk last-chunk trailer-section CRLF
/// chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
/// chunk-ext    = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size (`digits` so far).
    Size {
        digits: u8,
    },
    /// Whitespace after the size: only `;` may follow.
    SizeBws,
    /// After `;`: whitespace, then an extension name.
    ExtStart,
    ExtName,
    /// Whitespace after an extension name: `=` or `;` may follow.
    ExtAfterName,
    /// After `=`: whitespace, then a token or a quoted string.
    ExtValueStart,
    ExtToken,
    ExtQuoted,
    ExtQuotedEscape,
    /// Right after a value: `;`, CR or whitespace.
    ExtValueEnd,
    /// Whitespace after a value: only `;` may follow.
    ExtAfterValue,
    /// CR seen at the end of a size line.
    SizeLf,
    Data {
        remaining: u64,
    },
    DataCr,
    DataLf,
    /// At the start of a trailer line, or of the final CRLF.
    TrailerStart,
    TrailerName,
    TrailerValue,
    TrailerLf,
    FinalLf,
    Done,
}

/// Decoder for the chunked transfer coding.
#[derive(Clone, Debug)]
pub struct ChunkedDecoder {
    state: State,
    chunk_size: u64,
    ext_bytes: usize,
    max_ext_bytes: usize,
    trailer_bytes: usize,
    max_trailer_bytes: usize,
    /// The current trailer name, lowercased, while it is short enough to be a forbidden one.
    trailer_name: [u8; 20],
    trailer_name_len: u8,
    /// Trailer bytes in the input of the last `decode` (see [`BodyDecoder::trailer_span`]).
    last_trailer_span: std::ops::Range<usize>,
}

/// Trailer fields that must not follow the body: they would change how the message is framed,
/// routed or authenticated after the fact (RFC 9110 §6.5.1).
const FORBIDDEN_TRAILERS: &[&[u8]] = &[
    b"content-length",
    b"transfer-encoding",
    b"host",
    b"connection",
    b"keep-alive",
    b"te",
    b"trailer",
    b"upgrade",
    b"expect",
    b"content-encoding",
    b"content-type",
    b"content-range",
    b"authorization",
    b"proxy-authorization",
    b"cookie",
];

impl ChunkedDecoder {
    /// A decoder at the start of a chunked body.
    pub fn new(limits: &Limits) -> Self {
        Self {
            state: State::Size { digits: 0 },
            chunk_size: 0,
            ext_bytes: 0,
            max_ext_bytes: limits.max_chunk_extensions,
            trailer_bytes: 0,
            max_trailer_bytes: limits.max_trailers,
            trailer_name: [0; 20],
            trailer_name_len: 0,
            last_trailer_span: 0..0,
        }
    }

    fn decode(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        let mut pos = 0;
        let mut trailer_start = None;
        self.last_trailer_span = 0..0;
        while pos < input.len() {
            match self.state {
                State::Data { remaining } => {
                    return Ok(Decoded {
                        framing: pos,
                        data: clamp(remaining, &input[pos..]),
                    });
                }
                State::Done => break,
                state => {
                    if trailer_start.is_none() && is_trailer_state(state) {
                        trailer_start = Some(pos);
                    }
                    self.step(input[pos])?;
                    pos += 1;
                }
            }
        }
        // The trailer section is last in the body: it runs from its first byte to the end of
        // what was consumed (the final CRLF included).
        if let Some(start) = trailer_start {
            self.last_trailer_span = start..pos;
        }
        Ok(Decoded {
            framing: pos,
            data: 0,
        })
    }

    fn consume(&mut self, n: usize) {
        if let State::Data { remaining } = &mut self.state {
            *remaining -= n as u64;
            if *remaining == 0 {
                self.state = State::DataCr;
            }
        } else {
            debug_assert_eq!(n, 0, "consume outside chunk data");
        }
    }

    /// Advances the framing state machine by one byte.
    fn step(&mut self, b: u8) -> Result<(), ProtoError> {
        use State::*;
        if matches!(
            self.state,
            SizeBws
                | ExtStart
                | ExtName
                | ExtAfterName
                | ExtValueStart
                | ExtToken
                | ExtQuoted
                | ExtQuotedEscape
                | ExtValueEnd
                | ExtAfterValue
        ) || (matches!(self.state, Size { digits } if digits > 0) && b == b';')
        {
            self.ext_bytes += 1;
            if self.ext_bytes > self.max_ext_bytes {
                return Err(ProtoError::ChunkExtensionsTooLarge);
            }
        }
        if matches!(
            self.state,
            TrailerStart | TrailerName | TrailerValue | TrailerLf
        ) {
            self.trailer_bytes += 1;
            if self.trailer_bytes > self.max_trailer_bytes {
                return Err(ProtoError::TrailersTooLarge);
            }
        }
        self.state = match (self.state, b) {
            (Size { digits }, b) if b.is_ascii_hexdigit() => {
                // 16 hex digits fill a u64; more (even leading zeros) is an attack or a bug.
                if digits >= 16 {
                    return Err(ProtoError::InvalidChunkSize);
                }
                let digit = (b as char).to_digit(16).unwrap_or(0);
                self.chunk_size = (self.chunk_size << 4) | u64::from(digit);
                Size { digits: digits + 1 }
            }
            (Size { digits: 1.. }, b'\r') => SizeLf,
            (Size { digits: 1.. }, b';') => ExtStart,
            (Size { digits: 1.. }, b' ' | b'\t') => SizeBws,
            (Size { .. }, b'\n') => return Err(ProtoError::BareLineEnding),
            (Size { .. }, _) => return Err(ProtoError::InvalidChunkSize),

            (SizeBws, b' ' | b'\t') => SizeBws,
            (SizeBws, b';') => ExtStart,
            (SizeBws, _) => return Err(ProtoError::InvalidChunkSize),

            (ExtStart, b' ' | b'\t') => ExtStart,
            (ExtStart, b) if is_tchar(b) => ExtName,
            (ExtName, b) if is_tchar(b) => ExtName,
            (ExtName, b'=') | (ExtAfterName, b'=') => ExtValueStart,
            (ExtName, b';') | (ExtAfterName, b';') => ExtStart,
            (ExtName, b'\r') => SizeLf,
            (ExtName, b' ' | b'\t') | (ExtAfterName, b' ' | b'\t') => ExtAfterName,
            (ExtValueStart, b' ' | b'\t') => ExtValueStart,
            (ExtValueStart, b'"') => ExtQuoted,
            (ExtValueStart, b) if is_tchar(b) => ExtToken,
            (ExtToken, b) if is_tchar(b) => ExtToken,
            (ExtToken, b';') | (ExtValueEnd, b';') | (ExtAfterValue, b';') => ExtStart,
            (ExtToken, b'\r') | (ExtValueEnd, b'\r') => SizeLf,
            (ExtToken, b' ' | b'\t') | (ExtValueEnd, b' ' | b'\t') => ExtAfterValue,
            (ExtAfterValue, b' ' | b'\t') => ExtAfterValue,
            (ExtQuoted, b'"') => ExtValueEnd,
            (ExtQuoted, b'\\') => ExtQuotedEscape,
            (ExtQuoted, b) if is_qdtext(b) => ExtQuoted,
            (ExtQuotedEscape, b) if b == b'\t' || b == b' ' || is_field_vchar(b) => ExtQuoted,
            (
                ExtStart | ExtName | ExtAfterName | ExtValueStart | ExtToken | ExtQuoted
                | ExtQuotedEscape | ExtValueEnd | ExtAfterValue,
                b'\n',
            ) => return Err(ProtoError::BareLineEnding),
            (
                ExtStart | ExtName | ExtAfterName | ExtValueStart | ExtToken | ExtQuoted
                | ExtQuotedEscape | ExtValueEnd | ExtAfterValue,
                _,
            ) => return Err(ProtoError::InvalidChunkExtension),

            (SizeLf, b'\n') if self.chunk_size == 0 => TrailerStart,
            (SizeLf, b'\n') => Data {
                remaining: std::mem::take(&mut self.chunk_size),
            },
            (SizeLf, _) => return Err(ProtoError::BareLineEnding),

            (DataCr, b'\r') => DataLf,
            (DataCr, b'\n') => return Err(ProtoError::BareLineEnding),
            (DataCr, _) => return Err(ProtoError::InvalidChunkTerminator),
            (DataLf, b'\n') => Size { digits: 0 },
            (DataLf, _) => return Err(ProtoError::BareLineEnding),

            (TrailerStart, b'\r') => FinalLf,
            (TrailerStart, b) if is_tchar(b) => {
                self.trailer_name_len = 0;
                self.push_trailer_name(b);
                TrailerName
            }
            (TrailerStart, b'\n') => return Err(ProtoError::BareLineEnding),
            (TrailerStart, _) => return Err(ProtoError::InvalidTrailer),
            (TrailerName, b) if is_tchar(b) => {
                self.push_trailer_name(b);
                TrailerName
            }
            (TrailerName, b':') => {
                if self.trailer_name_is_forbidden() {
                    return Err(ProtoError::ForbiddenTrailer);
                }
                TrailerValue
            }
            (TrailerName, _) => return Err(ProtoError::InvalidTrailer),
            (TrailerValue, b'\r') => TrailerLf,
            (TrailerValue, b) if b == b'\t' || b == b' ' || is_field_vchar(b) => TrailerValue,
            (TrailerValue, b'\n') => return Err(ProtoError::BareLineEnding),
            (TrailerValue, _) => return Err(ProtoError::InvalidTrailer),
            (TrailerLf, b'\n') => TrailerStart,
            (TrailerLf, _) => return Err(ProtoError::BareLineEnding),
            (FinalLf, b'\n') => Done,
            (FinalLf, _) => return Err(ProtoError::BareLineEnding),

            (Data { .. } | Done, _) => {
                unreachable!("decode() never steps through data or past the end")
            }
        };
        Ok(())
    }

    fn push_trailer_name(&mut self, b: u8) {
        let len = self.trailer_name_len as usize;
        if len < self.trailer_name.len() {
            self.trailer_name[len] = b.to_ascii_lowercase();
        }
        self.trailer_name_len = self.trailer_name_len.saturating_add(1);
    }

    fn trailer_name_is_forbidden(&self) -> bool {
        let len = self.trailer_name_len as usize;
        len <= self.trailer_name.len() && FORBIDDEN_TRAILERS.contains(&&self.trailer_name[..len])
    }
}

/// States inside the trailer section, its final CRLF included.
fn is_trailer_state(state: State) -> bool {
    matches!(
        state,
        State::TrailerStart
            | State::TrailerName
            | State::TrailerValue
            | State::TrailerLf
            | State::FinalLf
    )
}

#[cfg(test)]
mod tests;
