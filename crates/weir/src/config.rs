//! Server configuration: every limit, timeout and buffer size, with its default and the reason.
//!
//! The types are `#[non_exhaustive]`, so that a new setting is not a breaking change: build
//! them from `Default` and either assign the public fields (`config.pause_threshold = n`) or
//! chain the `with_*` setters (`Config::default().with_pause_threshold(n)`); struct literals
//! are refused outside weir.

use std::time::Duration;

/// Size and count limits of the request head and of chunked bodies, enforced while parsing
/// (HTTP/1.1; over HTTP/2 the head's size is bounded by
/// [`Http2Config::max_header_list_size`]). Build it from `Limits::default()`, then assign
/// fields or chain the `with_*` setters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Longest request line (`GET /path HTTP/1.1`) in bytes, CRLF included. Default 8 KiB, the
    /// limit most servers and proxies apply, so URLs that pass them pass weir.
    /// Breach: `414 URI Too Long`.
    pub max_request_line: usize,
    /// Largest request head (request line and every header line) in bytes. Default 32 KiB:
    /// generous for cookies and tokens, small enough that idle connections cost little.
    /// Breach: `431 Request Header Fields Too Large`.
    pub max_head: usize,
    /// Most header fields in one request. Default 100; real clients send 10 to 30.
    /// Breach: `431`. Capped at [`Limits::HEADER_COUNT_CAP`].
    pub max_headers: usize,
    /// Total bytes of chunk extensions (`;name=value` after a chunk size) in one body.
    /// Default 16 KiB: nobody uses extensions, and unbounded ones let a client make the server
    /// parse forever without delivering data. Breach: `400`.
    pub max_chunk_extensions: usize,
    /// Largest trailer section of a chunked body, in bytes. Default 16 KiB.
    /// Breach: `431`.
    pub max_trailers: usize,
    /// Whether an `Expect` other than `100-continue` is answered `417 Expectation Failed`
    /// (true, the default) or ignored (false), over HTTP/1.1 and HTTP/2. RFC 9110 §10.1.1
    /// allows either;
    /// Amazon S3 ignores them, so an S3 front end turns this off.
    pub refuse_unknown_expectations: bool,
}

impl Limits {
    /// The hard upper bound on [`Limits::max_headers`]: the parser keeps its header slots on the
    /// stack, so the count must have a compile-time bound.
    pub const HEADER_COUNT_CAP: usize = 512;

    /// The protocol core's limits (its parser's and body decoder's argument): the fields
    /// copied, so weir's public type and the core's can each change alone.
    pub(crate) fn proto(&self) -> weir_proto::Limits {
        const _: () = assert!(Limits::HEADER_COUNT_CAP == weir_proto::Limits::HEADER_COUNT_CAP);
        weir_proto::Limits::default()
            .with_max_request_line(self.max_request_line)
            .with_max_head(self.max_head)
            .with_max_headers(self.max_headers)
            .with_max_chunk_extensions(self.max_chunk_extensions)
            .with_max_trailers(self.max_trailers)
            .with_refuse_unknown_expectations(self.refuse_unknown_expectations)
    }
}

impl Limits {
    /// Whether an `Expect` value is answered `417` (the protocol core's rule, which the
    /// HTTP/1.1 parser applies too).
    pub(crate) fn refuses_expectation(&self, value: &[u8]) -> bool {
        self.proto().refuses_expectation(value)
    }
}

impl Default for Limits {
    /// The protocol core's defaults (each field says why that value).
    fn default() -> Self {
        let core = weir_proto::Limits::default();
        Self {
            max_request_line: core.max_request_line,
            max_head: core.max_head,
            max_headers: core.max_headers,
            max_chunk_extensions: core.max_chunk_extensions,
            max_trailers: core.max_trailers,
            refuse_unknown_expectations: core.refuse_unknown_expectations,
        }
    }
}

/// A minimum data rate: after `grace`, a transfer must average at least `bytes_per_second`
/// over the time the server spent waiting for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DataRate {
    /// The minimum average rate.
    pub bytes_per_second: u64,
    /// Time before the rate is enforced, so that a slow start (TCP slow start, a client opening
    /// a file) is not punished.
    pub grace: Duration,
}

/// Server configuration. Build it with `Config::default()` and change the fields you need,
/// by assignment or with the `with_*` setters:
///
/// ```
/// let config = weir::Config::default()
///     .with_pause_threshold(4 << 20)
///     .with_max_body_size(Some(10 << 30));
/// let mut same = weir::Config::default();
/// same.pause_threshold = 4 << 20;
/// same.max_body_size = Some(10 << 30);
/// # assert_eq!(config.pause_threshold, same.pause_threshold);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
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
    /// leave in one write (and pipelined responses in one write), files' bodies too (read into
    /// it instead of `sendfile`). Larger bodies are written from the caller's memory with
    /// `writev`, larger files with `sendfile`. Default 16 KiB.
    pub write_coalesce_limit: usize,
    /// Whether HTTP/1.1 connections on Unix sockets receive open files passed by the client
    /// (`SCM_RIGHTS`, Linux only), for [`Exchange::take_passed_fd`](crate::Exchange::take_passed_fd).
    /// Default `false`: a handler that does not take them gains nothing, and head reads then go
    /// through `recvmsg` (the read buffer's free space is zeroed first). Only a descriptor sent
    /// with a head's bytes is kept (body reads stay plain: the kernel closes any that comes
    /// with them); one the handler does not take is closed when its exchange ends; TCP and TLS
    /// never carry one.
    pub accept_passed_fds: bool,
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
    /// Bind TCP listeners with `SO_REUSEPORT` (Linux), as [`Server::serve_per_core`]
    /// needs. Default off: with it, a second server on the same port would share it silently
    /// instead of failing with "address in use".
    ///
    /// [`Server::serve_per_core`]: crate::Server::serve_per_core
    pub reuse_port: bool,
    /// Value of the `Server` header, if any. Default none (it tells attackers what to try).
    pub server_header: Option<String>,
    /// Time allowed for a TLS client's whole `ClientHello` to arrive, from the connection's
    /// accept. Default 5 s. Breach: close, silently. Until it has arrived the connection holds
    /// no handshake slot and no buffer.
    pub tls_client_hello_timeout: Duration,
    /// Time allowed for a TLS handshake once it has a handshake slot
    /// ([`Config::max_tls_handshakes`]); the wait for the slot is the server's and not counted.
    /// Default 10 s. Breach: close, silently (nothing can be answered before the handshake
    /// completes).
    pub tls_handshake_timeout: Duration,
    /// Most TLS handshakes in progress at once, server-wide, counted from a whole
    /// `ClientHello`. Handshakes cost CPU (a signature) and memory; a flood of clients that
    /// send a `ClientHello` and stall costs at most this many slots, each for at most the
    /// handshake timeout, while established connections are served. Default 1,024.
    pub max_tls_handshakes: usize,
    /// HTTP/2: whether it is served, its limits and its flow-control windows.
    pub http2: Http2Config,
    /// Called for each request the server answers itself before any handler runs (a
    /// malformed, oversized or too slow head: 400, 414, 431, 408...), for access logs. Default
    /// `None`: nothing is done (see [`Refused`](crate::Refused)).
    pub on_refused: Option<crate::OnRefused>,
}

/// HTTP/2 settings. HTTP/2 is offered by ALPN on TLS listeners and accepted by prior knowledge
/// (the client starts with the HTTP/2 connection preface) on plain ones, so one port serves
/// HTTP/1.1 and HTTP/2.
///
/// Flow control: a stream's receive window is the pause threshold of its request (capacity is
/// given back to the client only as the handler consumes body bytes), so a handler that stops
/// reading stops its own stream and no other. The connection window is large enough for every
/// stream to fill its window, so one stalled stream cannot starve the others.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Http2Config {
    /// Serve HTTP/2 at all (ALPN `h2` and cleartext prior knowledge). Default true.
    pub enabled: bool,
    /// Most streams a client may have open at once (advertised in SETTINGS), and the most
    /// handlers that run at once for one connection: streams that the client has reset while
    /// their handler still runs count too, so resetting streams does not let a client run
    /// more handlers (the "rapid reset" attack, CVE-2023-44487). Default 100 (the smallest
    /// value RFC 9113 §6.5.2 recommends).
    pub max_concurrent_streams: u32,
    /// Largest frame payload the server accepts (SETTINGS_MAX_FRAME_SIZE), 16 KiB to
    /// 16 MiB − 1. Larger frames cost fewer frame headers, wake-ups and locks per byte of a
    /// large upload: on loopback an h2c upload with 256 KiB frames ran several times faster than
    /// with 16 KiB ones (docs/archive/BENCHMARKS-history.md, "Figures once quoted in source
    /// comments"; the client picks the size, up to this). Default 256 KiB.
    pub max_frame_size: u32,
    /// Largest request header list, decoded (SETTINGS_MAX_HEADER_LIST_SIZE: names, values and
    /// 32 bytes per field). Also bounds what the HPACK decoder and CONTINUATION frames may make
    /// the server hold. Default 32 KiB, the HTTP/1.1 head limit. Breach: the stream is
    /// answered 431 or reset; far beyond it, the connection is closed (ENHANCE_YOUR_CALM).
    pub max_header_list_size: u32,
    /// The receive window a stream starts with (SETTINGS_INITIAL_WINDOW_SIZE), until its
    /// handler first reads the body: then weir opens it to the pause threshold. So requests
    /// whose handlers have not started reading (waiting for a hook, for a handler slot) hold at
    /// most this much each. Default 64 KiB; at most the pause threshold. Not used with
    /// `adaptive_window` (streams then start at its window).
    pub initial_stream_window: u32,
    /// Connection-level receive window: the most a connection's streams together may hold
    /// unread, so the pause threshold's bound holds per connection too, not only per request.
    /// `None` (the default): four times the pause threshold (at most 2 GiB − 1). Streams not
    /// yet read hold only `initial_stream_window` each of it, so a few handlers that wait do not
    /// stop the others; many that wait can (until they read). Beyond its first 65,535 bytes a
    /// connection's window comes from `total_connection_window`, shared by all connections.
    pub connection_window: Option<u32>,
    /// The most all HTTP/2 connections' windows together may hold beyond the 65,535 bytes each
    /// connection's window starts at (which HTTP/2 does not let a server lower), so that all
    /// connections together buffer at most this plus 64 KiB each, however many clients send
    /// and however long their handlers wait. A connection takes its window from this budget
    /// when it starts, as much as is left, more as other connections give theirs back (at its
    /// next turn), and returns it when it ends; a connection that got none still works, one
    /// 64 KiB window per round trip. `None` (the default): 64 connection windows (256 MiB with
    /// the default pause threshold).
    pub total_connection_window: Option<u64>,
    /// Adapt the stream window to the connection's bandwidth-delay product, measured with
    /// PING round trips (as hyper's adaptive window does): when a stream's window is smaller
    /// than what the path can carry in one round trip, the window of the connection's streams
    /// grows (doubling) up to `max_window`. Default **false**: on loopback (one connection,
    /// `examples/upload_protocols.rs`) it did not beat the fixed 1 MiB window
    /// (docs/archive/BENCHMARKS-history.md, "Figures once quoted in source comments") and grew the
    /// read-ahead, because a PING answer queued behind the client's DATA inflates the measured
    /// round trip. Turn it on for long, fast paths (a window per round trip: 1 MiB over 50 ms caps
    /// a stream at 20 MB/s).
    pub adaptive_window: bool,
    /// The largest stream window the adaptive window may grow to. Default 16 MiB. With the
    /// adaptive window on, a stream may read this much ahead of its handler on a long path.
    pub max_window: u32,
    /// Control frames (PING, SETTINGS, PRIORITY, unknown types) a client may send beyond what
    /// its requests earn back (each HEADERS or non-empty DATA frame earns one back). Beyond
    /// it the connection is closed with GOAWAY(ENHANCE_YOUR_CALM): the frames are cheap to
    /// send and each costs the server work (CVE-2019-9512, -9515). Default 10,000.
    pub control_frame_budget: u32,
}

impl Default for Http2Config {
    fn default() -> Self {
        Self {
            enabled: true,
            max_concurrent_streams: 100,
            max_frame_size: 256 * 1024,
            max_header_list_size: 32 * 1024,
            initial_stream_window: 64 * 1024,
            connection_window: None,
            total_connection_window: None,
            adaptive_window: false,
            max_window: 16 * 1024 * 1024,
            control_frame_budget: 10_000,
        }
    }
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
            accept_passed_fds: false,
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
            reuse_port: false,
            server_header: None,
            tls_client_hello_timeout: Duration::from_secs(5),
            tls_handshake_timeout: Duration::from_secs(10),
            max_tls_handshakes: 1024,
            http2: Http2Config::default(),
            on_refused: None,
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

    /// The HTTP/2 receive windows this configuration gives a connection (what a peer that
    /// wants the same settings, such as weir-bench's hyper, should advertise).
    pub fn http2_windows(&self) -> Http2Windows {
        let stream = (self.effective_pause_threshold() as u64).clamp(1, MAX_WINDOW) as u32;
        let initial_stream = if self.http2.adaptive_window {
            stream
        } else {
            self.http2.initial_stream_window.clamp(1, stream)
        };
        Http2Windows {
            initial_stream,
            stream,
            connection: self.http2.connection_window_for(stream),
        }
    }
}

/// The largest flow-control window HTTP/2 allows (RFC 9113 §6.9.1).
const MAX_WINDOW: u64 = (1 << 31) - 1;

/// How many pause thresholds a connection's window holds by default.
const CONNECTION_WINDOW_STREAMS: u64 = 4;

/// How many connection windows all HTTP/2 connections together hold by default.
const TOTAL_CONNECTION_WINDOWS: u64 = 64;

/// The HTTP/2 receive windows of a connection ([`Config::http2_windows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Http2Windows {
    /// SETTINGS_INITIAL_WINDOW_SIZE: a stream's window until its handler reads the body.
    pub initial_stream: u32,
    /// A stream's window once its handler reads: the pause threshold.
    pub stream: u32,
    /// The connection's window.
    pub connection: u32,
}

impl Http2Config {
    /// The connection window for streams of `stream` bytes: as configured, else
    /// [`CONNECTION_WINDOW_STREAMS`] of them.
    pub(crate) fn connection_window_for(&self, stream: u32) -> u32 {
        let derived = u64::from(stream) * CONNECTION_WINDOW_STREAMS;
        let window = self.connection_window.map_or(derived, u64::from);
        window.clamp(65_535, MAX_WINDOW) as u32
    }

    /// The budget all connections' windows share beyond their first 65,535 bytes: as
    /// configured, else [`TOTAL_CONNECTION_WINDOWS`] windows of `connection` bytes.
    pub(crate) fn total_connection_window_for(&self, connection: u32) -> u64 {
        self.total_connection_window
            .unwrap_or(u64::from(connection) * TOTAL_CONNECTION_WINDOWS)
    }
}

impl DataRate {
    /// At least `bytes_per_second` on average, enforced after `grace`.
    pub const fn new(bytes_per_second: u64, grace: Duration) -> Self {
        Self {
            bytes_per_second,
            grace,
        }
    }
}

/// `with_*` setters, one per public field: `Type::default().with_field(value)`.
macro_rules! setters {
    ($ty:ident { $($setter:ident => $field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets [`", stringify!($ty), "::", stringify!($field), "`].")]
                #[must_use]
                pub fn $setter(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

setters!(Limits {
    with_max_request_line => max_request_line: usize,
    with_max_head => max_head: usize,
    with_max_headers => max_headers: usize,
    with_max_chunk_extensions => max_chunk_extensions: usize,
    with_max_trailers => max_trailers: usize,
    with_refuse_unknown_expectations => refuse_unknown_expectations: bool,
});

setters!(Config {
    with_limits => limits: Limits,
    with_pause_threshold => pause_threshold: usize,
    with_max_body_size => max_body_size: Option<u64>,
    with_drain_limit => drain_limit: u64,
    with_read_buffer_size => read_buffer_size: usize,
    with_write_coalesce_limit => write_coalesce_limit: usize,
    with_accept_passed_fds => accept_passed_fds: bool,
    with_head_timeout => head_timeout: Duration,
    with_keep_alive_timeout => keep_alive_timeout: Duration,
    with_min_body_rate => min_body_rate: Option<DataRate>,
    with_min_response_rate => min_response_rate: Option<DataRate>,
    with_max_connections => max_connections: usize,
    with_shutdown_grace => shutdown_grace: Duration,
    with_reuse_port => reuse_port: bool,
    with_server_header => server_header: Option<String>,
    with_tls_client_hello_timeout => tls_client_hello_timeout: Duration,
    with_tls_handshake_timeout => tls_handshake_timeout: Duration,
    with_max_tls_handshakes => max_tls_handshakes: usize,
    with_http2 => http2: Http2Config,
    with_on_refused => on_refused: Option<crate::OnRefused>,
});

setters!(Http2Config {
    with_enabled => enabled: bool,
    with_max_concurrent_streams => max_concurrent_streams: u32,
    with_max_frame_size => max_frame_size: u32,
    with_max_header_list_size => max_header_list_size: u32,
    with_initial_stream_window => initial_stream_window: u32,
    with_connection_window => connection_window: Option<u32>,
    with_total_connection_window => total_connection_window: Option<u64>,
    with_adaptive_window => adaptive_window: bool,
    with_max_window => max_window: u32,
    with_control_frame_budget => control_frame_budget: u32,
});
