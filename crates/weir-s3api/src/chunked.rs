//! The `aws-chunked` body decoder: sans-IO, streaming, bounded, zero-copy on the data path.
//!
//! The wire form (S3's "chunked upload"):
//!
//! ```text
//! <hex size>;chunk-signature=<64 hex>\r\n <size bytes> \r\n     signed forms, repeated
//! <hex size>\r\n <size bytes> \r\n                              STREAMING-UNSIGNED-PAYLOAD-TRAILER
//! 0;chunk-signature=<64 hex>\r\n  (or 0\r\n)                     the last chunk
//! x-amz-checksum-crc32:<base64>\r\n                              trailer forms only
//! x-amz-trailer-signature:<64 hex>\r\n                           signed trailer form only
//! \r\n
//! ```
//!
//! # API: push bytes, get ranges
//!
//! [`ChunkedDecoder::decode`] takes whatever bytes arrived and returns how many it consumed and
//! an [`Event`]: [`Event::Data`] is a range *of the input slice* (the caller hands those bytes to
//! storage without a copy), [`Event::NeedMore`] means every byte was framing and was consumed,
//! [`Event::End`] means the body ended and everything checked out (bytes after `consumed` are
//! not the body's). The caller loops, advancing by `consumed`. At the end of the input stream it
//! calls [`ChunkedDecoder::finish`] (`IncompleteBody` if the body did not end).
//!
//! # Bounds
//!
//! Framing lines (chunk headers, trailers) go through one fixed buffer of [`MAX_LINE`] bytes, an
//! array inside the decoder: a longer line is an error, never a reallocation. Chunk data is
//! never buffered: a 64 MiB chunk passes through as ranges of the caller's input. Each data byte
//! is read once, by SHA-256, in the signed forms. Nothing allocates after construction (the
//! signature chain's scope string is allocated once, by `verify`). The only copy the decoder
//! makes is of framing: each chunk-header and trailer line into the line buffer (at most
//! [`MAX_LINE`] bytes a line); data bytes are never copied.
//!
//! # When is a chunk verified?
//!
//! A chunk's signature covers its data, so its verdict comes at the chunk's end, after its bytes
//! were handed out as [`Event::Data`]. **The caller must not commit (make visible) anything
//! before [`Event::End`]**: weir's stores write to a temporary file and publish it only on
//! success, which is exactly that.
//!
//! # Strictness
//!
//! No leniency: a size that is not 1–16 hex digits, a missing or bare-LF line ending, a missing
//! CRLF after data, an unsigned chunk in a signed body or an extension in an unsigned one, a
//! trailer not announced in `x-amz-trailer`, a line longer than [`MAX_LINE`], more or fewer bytes
//! than `x-amz-decoded-content-length`: each is an error, and the decoder stays failed.

use std::ops::Range;

use hmac::Mac;
use sha2::{Digest, Sha256};

use crate::checksum::{ChecksumAlgorithm, ChecksumValue};
use crate::sigv4::{AmzDate, EMPTY_SHA256_HEX, SigningKey, hex32, parse_hex32, signatures_equal};
use crate::{ErrorCode, S3Error};

/// The longest framing line (chunk header or trailer), without its CRLF. The longest legitimate
/// one is a signed chunk header with 16 hex digits (97 bytes).
pub const MAX_LINE: usize = 256;

/// The `Content-Encoding` to store for an `aws-chunked` request: the request's value without
/// `aws-chunked` (S3 stores `aws-chunked,gzip` as `gzip`), `None` if nothing is left.
pub fn stored_content_encoding(request_value: &str) -> Option<String> {
    let kept: Vec<&str> = request_value
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("aws-chunked"))
        .collect();
    (!kept.is_empty()).then(|| kept.join(","))
}

/// The chain of chunk signatures: what each chunk's string to sign needs (key, request time,
/// scope) and the previous signature, starting with the request's own ("seed").
#[derive(Clone)]
pub struct ChunkChain {
    key: SigningKey,
    date: AmzDate,
    scope: String,
    previous: [u8; 32],
}

impl std::fmt::Debug for ChunkChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkChain")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl ChunkChain {
    pub(crate) fn new(key: SigningKey, date: AmzDate, scope: String, seed: [u8; 32]) -> Self {
        ChunkChain {
            key,
            date,
            scope,
            previous: seed,
        }
    }

    /// A chain from its parts: the key, the request's `x-amz-date`, the credential scope
    /// (`date/region/s3/aws4_request`) and the seed signature in hex. For clients (and tests)
    /// that sign chunks; a server gets its chain from [`crate::sigv4::verify`].
    pub fn from_parts(
        key: SigningKey,
        amz_date: &str,
        scope: &str,
        seed_hex: &str,
    ) -> Option<Self> {
        Some(ChunkChain {
            key,
            date: AmzDate::parse(amz_date)?,
            scope: scope.to_owned(),
            previous: parse_hex32(seed_hex.as_bytes())?,
        })
    }

    /// The signature of a chunk whose data has SHA-256 `data_hash`, chained from the previous.
    fn chunk_signature(&self, data_hash: &[u8; 32]) -> [u8; 32] {
        // Fed piece by piece into the HMAC: no string to sign is built.
        let mut mac = self.key.mac();
        mac.update(b"AWS4-HMAC-SHA256-PAYLOAD\n");
        mac.update(&self.date.text);
        mac.update(b"\n");
        mac.update(self.scope.as_bytes());
        mac.update(b"\n");
        mac.update(&hex32(&self.previous));
        mac.update(b"\n");
        mac.update(EMPTY_SHA256_HEX);
        mac.update(b"\n");
        mac.update(&hex32(data_hash));
        mac.finalize().into_bytes().into()
    }

    /// The signature of the trailers, whose canonical form (`name:value\n` each) has SHA-256
    /// `trailer_hash`.
    fn trailer_signature(&self, trailer_hash: &[u8; 32]) -> [u8; 32] {
        let mut mac = self.key.mac();
        mac.update(b"AWS4-HMAC-SHA256-TRAILER\n");
        mac.update(&self.date.text);
        mac.update(b"\n");
        mac.update(self.scope.as_bytes());
        mac.update(b"\n");
        mac.update(&hex32(&self.previous));
        mac.update(b"\n");
        mac.update(&hex32(trailer_hash));
        mac.finalize().into_bytes().into()
    }

    /// Signs the next chunk (client side) and advances the chain; returns the signature in hex.
    pub fn sign_chunk(&mut self, data: &[u8]) -> String {
        let signature = self.chunk_signature(&Sha256::digest(data).into());
        self.previous = signature;
        String::from_utf8_lossy(&hex32(&signature)).into_owned()
    }

    /// Signs the trailers (client side), each `(name, value)` in the order sent; returns the
    /// signature in hex.
    pub fn sign_trailers(&mut self, trailers: &[(&str, &str)]) -> String {
        let mut hash = Sha256::new();
        for (name, value) in trailers {
            hash.update(name.as_bytes());
            hash.update(b":");
            hash.update(value.as_bytes());
            hash.update(b"\n");
        }
        let signature = self.trailer_signature(&hash.finalize().into());
        self.previous = signature;
        String::from_utf8_lossy(&hex32(&signature)).into_owned()
    }

    /// Checks `claimed` against `computed` and advances the chain.
    fn advance(&mut self, claimed: &[u8; 32], computed: [u8; 32]) -> Result<(), S3Error> {
        if !signatures_equal(claimed, &computed) {
            return Err(S3Error::new(
                ErrorCode::SignatureDoesNotMatch,
                "The chunk signature we calculated does not match the signature you provided.",
            ));
        }
        self.previous = computed;
        Ok(())
    }
}

/// Whether chunks carry signatures.
#[derive(Clone, Debug)]
pub(crate) enum Framing {
    Signed(ChunkChain),
    Unsigned,
}

/// What the trailers said, at [`Event::End`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trailers {
    /// The checksum trailer (the one `x-amz-trailer` announced), already parsed. The caller
    /// compares it with the checksum it computed over the data (`checksum::ChecksumValue::check`).
    pub checksum: Option<ChecksumValue>,
}

/// What [`ChunkedDecoder::decode`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Body bytes: this range of the input slice.
    Data(Range<usize>),
    /// All of the input was framing; give more.
    NeedMore,
    /// The body ended, every signature and the length checked.
    End(Trailers),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading a chunk header line.
    ChunkLine,
    /// Inside a chunk's data.
    Data,
    /// After a chunk's data: `\r` then `\n` (the count seen so far).
    DataEnd(u8),
    /// Reading trailer lines (or the final empty line).
    TrailerLine,
    Done,
    Failed,
}

/// The streaming decoder of one `aws-chunked` body (see the module documentation).
pub struct ChunkedDecoder {
    framing: Framing,
    has_trailer: bool,
    expected_trailer: Option<ChecksumAlgorithm>,
    decoded_length: Option<u64>,
    state: State,
    /// The framing line being read; only `line[..line_len]` is meaningful.
    line: [u8; MAX_LINE],
    line_len: usize,
    /// A `\r` ended the input in the middle of a line ending.
    line_cr: bool,
    remaining: u64,
    decoded: u64,
    last_chunk: bool,
    claimed: [u8; 32],
    chunk_hash: Sha256,
    trailer_hash: Sha256,
    trailer_checksum: Option<ChecksumValue>,
    trailer_signature: Option<[u8; 32]>,
}

impl std::fmt::Debug for ChunkedDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkedDecoder")
            .field("state", &self.state)
            .field("decoded", &self.decoded)
            .finish_non_exhaustive()
    }
}

fn malformed(what: &'static str) -> S3Error {
    S3Error::new(ErrorCode::InvalidRequest, what)
}

impl ChunkedDecoder {
    pub(crate) fn new(
        framing: Framing,
        has_trailer: bool,
        expected_trailer: Option<ChecksumAlgorithm>,
        decoded_length: Option<u64>,
    ) -> Self {
        ChunkedDecoder {
            framing,
            has_trailer,
            expected_trailer,
            decoded_length,
            state: State::ChunkLine,
            line: [0; MAX_LINE],
            line_len: 0,
            line_cr: false,
            remaining: 0,
            decoded: 0,
            last_chunk: false,
            claimed: [0; 32],
            chunk_hash: Sha256::new(),
            trailer_hash: Sha256::new(),
            trailer_checksum: None,
            trailer_signature: None,
        }
    }

    /// A decoder of signed chunks (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`, with `trailer`
    /// announced for the `-TRAILER` form). A server gets one from
    /// [`crate::sigv4::Verified::chunked_decoder`].
    pub fn signed(
        chain: ChunkChain,
        trailer: Option<ChecksumAlgorithm>,
        decoded_length: Option<u64>,
    ) -> Self {
        Self::new(
            Framing::Signed(chain),
            trailer.is_some(),
            trailer,
            decoded_length,
        )
    }

    /// A decoder of unsigned chunks with a checksum trailer (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`).
    pub fn unsigned(trailer: ChecksumAlgorithm, decoded_length: Option<u64>) -> Self {
        Self::new(Framing::Unsigned, true, Some(trailer), decoded_length)
    }

    /// The bytes of framing the decoder can hold, whatever the chunk size: [`MAX_LINE`].
    pub fn buffer_capacity(&self) -> usize {
        self.line.len()
    }

    /// Body bytes handed out so far.
    pub fn decoded_len(&self) -> u64 {
        self.decoded
    }

    /// Whether [`Event::End`] was reached.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// At the end of the input: `IncompleteBody` unless the body ended.
    pub fn finish(&self) -> Result<(), S3Error> {
        if self.state == State::Done {
            Ok(())
        } else {
            Err(S3Error::new(
                ErrorCode::IncompleteBody,
                "The aws-chunked body ended early.",
            ))
        }
    }

    /// Decodes from `input`: returns how many bytes were consumed and what they were (see the
    /// module documentation). After an error the decoder stays failed.
    pub fn decode(&mut self, input: &[u8]) -> Result<(usize, Event), S3Error> {
        match self.decode_inner(input) {
            Ok(found) => Ok(found),
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    fn decode_inner(&mut self, input: &[u8]) -> Result<(usize, Event), S3Error> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Failed => {
                    return Err(malformed("The aws-chunked body was already refused."));
                }
                State::Done => return Ok((pos, Event::End(self.trailers()))),
                State::Data => {
                    if pos == input.len() {
                        return Ok((pos, Event::NeedMore));
                    }
                    let available = (input.len() - pos) as u64;
                    // `take` ≤ `input.len()`, so it fits in usize.
                    let take = self.remaining.min(available) as usize;
                    let range = pos..pos + take;
                    if let Framing::Signed(_) = self.framing {
                        // The only pass over the data: SHA-256 reads the caller's bytes in place.
                        self.chunk_hash.update(&input[range.clone()]);
                    }
                    self.remaining -= take as u64;
                    self.decoded += take as u64;
                    if self.remaining == 0 {
                        self.state = State::DataEnd(0);
                    }
                    return Ok((range.end, Event::Data(range)));
                }
                State::DataEnd(seen) => {
                    let Some(&b) = input.get(pos) else {
                        return Ok((pos, Event::NeedMore));
                    };
                    let expected = if seen == 0 { b'\r' } else { b'\n' };
                    if b != expected {
                        return Err(malformed("A chunk's data must be followed by CRLF."));
                    }
                    pos += 1;
                    if seen == 1 {
                        self.end_of_chunk()?;
                        self.state = State::ChunkLine;
                    } else {
                        self.state = State::DataEnd(1);
                    }
                }
                State::ChunkLine | State::TrailerLine => {
                    let (used, complete) = self.read_line(&input[pos..])?;
                    pos += used;
                    if !complete {
                        return Ok((pos, Event::NeedMore));
                    }
                    if self.state == State::ChunkLine {
                        self.chunk_line()?;
                    } else {
                        self.trailer_line()?;
                    }
                    self.line_len = 0;
                }
            }
        }
    }

    /// Appends bytes of `input` to the line buffer up to CRLF; returns the bytes used and whether
    /// the line is complete (its CRLF consumed, not stored). This is the decoder's one copy:
    /// framing bytes, bounded by [`MAX_LINE`].
    fn read_line(&mut self, input: &[u8]) -> Result<(usize, bool), S3Error> {
        for (i, &b) in input.iter().enumerate() {
            if self.line_cr {
                if b != b'\n' {
                    return Err(malformed("A bare CR in aws-chunked framing."));
                }
                self.line_cr = false;
                return Ok((i + 1, true));
            }
            match b {
                b'\r' => self.line_cr = true,
                b'\n' => return Err(malformed("A bare LF in aws-chunked framing.")),
                _ => {
                    if self.line_len == MAX_LINE {
                        return Err(malformed("An aws-chunked framing line is too long."));
                    }
                    self.line[self.line_len] = b;
                    self.line_len += 1;
                }
            }
        }
        Ok((input.len(), false))
    }

    fn chunk_line(&mut self) -> Result<(), S3Error> {
        let line = &self.line[..self.line_len];
        let (size, extension) = match line.iter().position(|&b| b == b';') {
            Some(i) => (&line[..i], Some(&line[i + 1..])),
            None => (line, None),
        };
        if size.is_empty() || size.len() > 16 || !size.iter().all(u8::is_ascii_hexdigit) {
            return Err(malformed("A chunk size must be 1 to 16 hex digits."));
        }
        let size = size.iter().fold(0u64, |acc, &b| {
            let digit = (b as char).to_digit(16).unwrap_or(0);
            acc << 4 | u64::from(digit)
        });
        match (&self.framing, extension) {
            (Framing::Signed(_), Some(ext)) => {
                let sig = ext
                    .strip_prefix(b"chunk-signature=")
                    .and_then(parse_hex32)
                    .ok_or_else(|| malformed("A chunk needs chunk-signature=<64 hex>."))?;
                self.claimed = sig;
            }
            (Framing::Signed(_), None) => {
                return Err(malformed("A chunk of a signed body has no signature."));
            }
            (Framing::Unsigned, Some(_)) => {
                return Err(malformed("A chunk of an unsigned body has an extension."));
            }
            (Framing::Unsigned, None) => {}
        }
        if let Some(limit) = self.decoded_length
            && self
                .decoded
                .checked_add(size)
                .is_none_or(|total| total > limit)
        {
            return Err(S3Error::new(
                ErrorCode::IncompleteBody,
                "The aws-chunked body is longer than x-amz-decoded-content-length.",
            ));
        }
        self.chunk_hash = Sha256::new();
        if size == 0 {
            self.last_chunk = true;
            // The last chunk has no data and no CRLF of its own: its signature now, then the
            // trailers or the final empty line.
            self.end_of_chunk()?;
            self.state = State::TrailerLine;
        } else {
            self.remaining = size;
            self.state = State::Data;
        }
        Ok(())
    }

    /// A chunk's data ended: check its signature (signed forms).
    fn end_of_chunk(&mut self) -> Result<(), S3Error> {
        if let Framing::Signed(chain) = &mut self.framing {
            let hash = std::mem::take(&mut self.chunk_hash).finalize().into();
            let computed = chain.chunk_signature(&hash);
            chain.advance(&self.claimed, computed)?;
        }
        Ok(())
    }

    fn trailer_line(&mut self) -> Result<(), S3Error> {
        if self.line_len == 0 {
            return self.end_of_body();
        }
        if !self.has_trailer {
            return Err(malformed(
                "The last chunk must be followed by an empty line.",
            ));
        }
        let line = &self.line[..self.line_len];
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or_else(|| malformed("A trailer line needs a colon."))?;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let value = std::str::from_utf8(value)
            .map_err(|_| malformed("A trailer value is not text."))?
            .trim_matches(|c| c == ' ' || c == '\t');
        if name.eq_ignore_ascii_case(b"x-amz-trailer-signature") {
            if !matches!(self.framing, Framing::Signed(_)) {
                return Err(malformed("A trailer signature in an unsigned body."));
            }
            let sig = parse_hex32(value.as_bytes())
                .ok_or_else(|| malformed("x-amz-trailer-signature needs 64 hex digits."))?;
            if self.trailer_signature.replace(sig).is_some() {
                return Err(malformed("x-amz-trailer-signature is repeated."));
            }
            return Ok(());
        }
        if self.trailer_signature.is_some() {
            return Err(malformed(
                "x-amz-trailer-signature must be the last trailer.",
            ));
        }
        let algorithm = std::str::from_utf8(name)
            .ok()
            .and_then(ChecksumAlgorithm::from_header_name)
            .filter(|alg| Some(*alg) == self.expected_trailer)
            .ok_or_else(|| malformed("A trailer that x-amz-trailer did not announce."))?;
        if self.trailer_checksum.is_some() {
            return Err(malformed("The checksum trailer is repeated."));
        }
        self.trailer_checksum = Some(ChecksumValue::parse_base64(algorithm, value)?);
        // The canonical trailer, as signed: `name:value\n`, the name as announced (lower case).
        self.trailer_hash.update(algorithm.header_name().as_bytes());
        self.trailer_hash.update(b":");
        self.trailer_hash.update(value.as_bytes());
        self.trailer_hash.update(b"\n");
        Ok(())
    }

    fn end_of_body(&mut self) -> Result<(), S3Error> {
        debug_assert!(self.last_chunk);
        if self.has_trailer {
            if self.trailer_checksum.is_none() {
                return Err(malformed(
                    "The trailer that x-amz-trailer announced is missing.",
                ));
            }
            if let Framing::Signed(chain) = &mut self.framing {
                let claimed = self.trailer_signature.ok_or_else(|| {
                    malformed("The signed trailer form needs x-amz-trailer-signature.")
                })?;
                let hash = std::mem::take(&mut self.trailer_hash).finalize().into();
                let computed = chain.trailer_signature(&hash);
                chain.advance(&claimed, computed)?;
            }
        }
        if let Some(limit) = self.decoded_length
            && self.decoded != limit
        {
            return Err(S3Error::new(
                ErrorCode::IncompleteBody,
                "The aws-chunked body is shorter than x-amz-decoded-content-length.",
            ));
        }
        self.state = State::Done;
        Ok(())
    }

    fn trailers(&self) -> Trailers {
        Trailers {
            checksum: self.trailer_checksum,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example_chain(seed: &str) -> ChunkChain {
        let key = SigningKey::derive(
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "20130524",
            "us-east-1",
            "s3",
        );
        ChunkChain::from_parts(
            key,
            "20130524T000000Z",
            "20130524/us-east-1/s3/aws4_request",
            seed,
        )
        .unwrap()
    }

    #[test]
    fn content_encoding_without_aws_chunked() {
        assert_eq!(stored_content_encoding("aws-chunked"), None);
        assert_eq!(
            stored_content_encoding("aws-chunked, gzip").as_deref(),
            Some("gzip")
        );
        assert_eq!(
            stored_content_encoding("gzip,AWS-CHUNKED,br").as_deref(),
            Some("gzip,br")
        );
    }

    /// AWS's published streaming example (65536 + 1024 bytes of `a`), and the trailer signature
    /// of the AWS Common Runtime's test of the same request (trailers first/second/third).
    #[test]
    fn published_chunk_and_trailer_signatures() {
        let mut chain =
            example_chain("4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
        assert_eq!(
            chain.sign_chunk(&[b'a'; 65536]),
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
        );
        assert_eq!(
            chain.sign_chunk(&[b'a'; 1024]),
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
        );
        assert_eq!(
            chain.sign_chunk(b""),
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
        );
        assert_eq!(
            chain.sign_trailers(&[("first", "1st"), ("second", "2nd"), ("third", "3rd")]),
            "df5735bd9f3295cd9386572292562fefc93ba94e80a0a1ddcbd652c4e0a75e6c"
        );
    }
}
