//! [`BodyState`]: an HTTP/1.1 request body's state, kept in the connection and reset for each
//! request: the protocol-neutral [`BodyPolicy`] and what HTTP/1.1 adds to it (the framing
//! decoder, the size of a direct read, the trailer section as received). The reads that use it
//! are in `body.rs`.

use crate::config::Config;
use crate::exchange::body::BodyPolicy;
use weir_proto::body::BodyDecoder;
use weir_proto::{Framing, RequestHead};

/// The body half of an exchange: the protocol-neutral policy, and what HTTP/1.1 adds (the
/// framing decoder, the trailer section as received). Reset, not reallocated, for each request.
#[derive(Debug)]
pub(crate) struct BodyState {
    pub(crate) decoder: BodyDecoder,
    pub(crate) policy: BodyPolicy,
    /// Reads at least this large go straight into the caller's buffer.
    pub(super) direct_read_min: usize,
    /// The trailer section of a chunked body as received so far (checked and bounded by the
    /// decoder: at most `Limits::max_trailers`). Empty, and unallocated, for bodies without
    /// trailer fields.
    pub(super) trailer_raw: Vec<u8>,
    /// Bytes the last socket read of this body brought: a large one shows a client sending
    /// faster than the body is read (`Conn::tune_low_water`).
    pub(super) last_read: usize,
    /// This connection's share of the server's body gauges; kept across requests (not reset
    /// by `begin`), brought back to 0 when the connection ends.
    pub(crate) gauge: crate::stats::BufferedGauge,
}

impl BodyState {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            decoder: BodyDecoder::Length(0),
            policy: BodyPolicy::new(config),
            direct_read_min: config.read_buffer_size,
            trailer_raw: Vec::new(),
            last_read: 0,
            gauge: crate::stats::BufferedGauge::default(),
        }
    }

    pub(crate) fn begin(&mut self, head: &RequestHead, config: &Config) {
        self.decoder = BodyDecoder::new(head.framing(), &config.limits.proto());
        let declared = match head.framing() {
            Framing::Length(n) => Some(n),
            Framing::Chunked | Framing::Unknown => None,
        };
        self.policy.begin(
            config,
            declared,
            head.expect_continue(),
            self.decoder.is_done(),
        );
        self.trailer_raw.clear();
        self.last_read = 0;
    }
}
