//! Server configuration: every limit, timeout and buffer size, with its default and the reason.

use std::time::Duration;
pub use weir_proto::Limits;

/// A minimum data rate: after `grace`, a transfer must average at least `bytes_per_second`
/// over the time the server spent waiting for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataRate {
    /// The minimum average rate.
    pub bytes_per_second: u64,
    /// Time before the rate is enforced, so that a slow start (TCP slow start, a client opening
    /// a file) is not punished.
    pub grace: Duration,
}

/// Server configuration. Build it with `Config::default()` and change the fields you need.
#[derive(Clone, Debug)]
pub struct Config {
    /// Size and count limits of the request head and chunk framing (414, 431, 400).
    pub limits: Limits,
    /// The most request-body bytes the server reads from the socket ahead of the handler.
    /// When this many are buffered and the handler has not taken them, the server stops reading
    /// the socket and TCP flow control pushes back on the client. It also caps the size of one
    /// [`Exchange::read_body_chunk`](crate::Exchange::read_body_chunk). Default 1 MiB: large
    /// enough that a single loopback connection is not limited by it (the IIS default of 64 KiB
    /// was), small enough that 1,000 slow uploads cost at most 1 GiB. A handler can change it
    /// for its request. Reads into a caller's large buffer bypass it (nothing is buffered).
    pub pause_threshold: usize,
    /// Largest request body accepted, unless the handler changes it for its request.
    /// Default 30 MiB (the ASP.NET Core default): a server that accepts uploads says so
    /// explicitly, per route. Breach: `413` and close. `None`: no limit.
    pub max_body_size: Option<u64>,
    /// When a handler responds without reading the whole body, up to this many body bytes are
    /// read and discarded to keep the connection; a longer rest closes it. Default 256 KiB.
    pub drain_limit: u64,
    /// Initial size of a connection's read buffer; it grows for large heads and shrinks back
    /// after a large body. Default 16 KiB: a typical head fits many times over.
    pub read_buffer_size: usize,
    /// Response bodies up to this size are copied into the write buffer so that head and body
    /// leave in one write (and pipelined responses in one write). Larger bodies are written
    /// from the caller's memory with `writev`. Default 16 KiB.
    pub write_coalesce_limit: usize,
    /// Time allowed to receive a whole request head, from its first byte (or from the
    /// connection's accept for the first request). Default 30 s. Breach: `408` and close.
    pub head_timeout: Duration,
    /// Time an idle keep-alive connection is kept open waiting for the next request.
    /// Default 120 s. Breach: close, silently.
    pub keep_alive_timeout: Duration,
    /// Minimum request body data rate while the handler is reading. Default 240 bytes/s after
    /// a 5 s grace (Kestrel's values). Breach: `408` (if not responded yet) and close.
    /// `None` disables it.
    pub min_body_rate: Option<DataRate>,
    /// Minimum response data rate, against clients that stop reading. Measured over the
    /// exchange's writes: they may wait on the client for the grace, or for what the bytes the
    /// client has accepted earned at this rate if that is longer; a client that stops reading
    /// is cut once that runs out, however large the pending write. Default 240 bytes/s after a
    /// 5 s grace. Breach: close. `None` disables it.
    pub min_response_rate: Option<DataRate>,
    /// Most connections served at once. At the bound the server stops accepting (new clients
    /// wait in the listen backlog) and keeps serving the others. Default 10,000; the process's
    /// file descriptor limit applies too.
    pub max_connections: usize,
    /// How long a graceful shutdown waits for in-flight requests before closing them.
    /// Default 30 s.
    pub shutdown_grace: Duration,
    /// Value of the `Server` header, if any. Default none (it tells attackers what to try).
    pub server_header: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            pause_threshold: 1024 * 1024,
            max_body_size: Some(30 * 1024 * 1024),
            drain_limit: 256 * 1024,
            read_buffer_size: 16 * 1024,
            write_coalesce_limit: 16 * 1024,
            head_timeout: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(120),
            min_body_rate: Some(DataRate {
                bytes_per_second: 240,
                grace: Duration::from_secs(5),
            }),
            min_response_rate: Some(DataRate {
                bytes_per_second: 240,
                grace: Duration::from_secs(5),
            }),
            max_connections: 10_000,
            shutdown_grace: Duration::from_secs(30),
            server_header: None,
        }
    }
}

impl Config {
    /// The smallest pause threshold the server uses: below this a chunk-size line could not be
    /// read at all.
    pub const MIN_PAUSE_THRESHOLD: usize = 4 * 1024;

    pub(crate) fn effective_pause_threshold(&self) -> usize {
        self.pause_threshold.max(Self::MIN_PAUSE_THRESHOLD)
    }
}
