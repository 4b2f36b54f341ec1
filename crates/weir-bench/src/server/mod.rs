//! The servers under test. Each runs as a child process of this binary (`weir-bench __serve …`),
//! so that its peak memory, CPU time and heap allocations are its own and nothing else's.
//!
//! Every system serves the same routes with the same work, so that the only difference between
//! rows is the server:
//! - `GET /plaintext`: `Hello, World!` with `Content-Type`, `Server` and `Date`, as TechEmpower;
//! - `POST /post`: reads and drops a small body, answers like `/plaintext`;
//! - `POST /upload`: streams the body into the server's [`Sink`] and answers with an
//!   [`trace::UploadTrace`] (bytes, timestamps, RSS at each point).
//!
//! The "+ axum" systems serve these routes from one axum `Router` ([`axum_app`]), on weir and on
//! hyper. actix-web 4 is a peer row of its own ([`actix_peer`]).
//!
//! The child's life is driven by [`control`]: it prints its bound address on stdout when ready,
//! answers `stats` and `reset-peak` commands on stdin, and exits on `quit` or end of input.

pub mod actix_peer;
pub mod axum_app;
pub mod control;
pub mod h2_settings;
pub mod hyper_peer;
pub mod listen;
pub mod plaintext;
pub mod raw;
pub mod sink;
pub mod spawn;
pub mod trace;
pub mod weir_peer;

use clap::{Args, ValueEnum};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Which server a child runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum System {
    /// epoll responder that parses only request boundaries (plaintext, small POSTs).
    RawResponder,
    /// Blocking thread-per-connection upload receiver with large buffers.
    RawUpload,
    /// hyper 1.x on a multi-threaded tokio runtime.
    Hyper,
    /// weir.
    Weir,
    /// The bench's axum `Router` served by weir (`weir::ServiceHandler`).
    WeirAxum,
    /// The same axum `Router` served by hyper 1.x (hyper-util's `TowerToHyperService`).
    HyperAxum,
    /// actix-web 4 (plain HTTP/1.1 over TCP), the same routes.
    ActixWeb,
}

/// Where an upload's bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Sink {
    /// Read into a large buffer and drop.
    Discard,
    /// Plain `std::fs` writes of 256 KiB on the connection's task or thread.
    File,
    /// socket → pipe → file with `splice(2)`: no user-space copy.
    Splice,
    /// weir only: take the body as the server buffered it (`read_body_chunk`, at most the pause
    /// threshold per piece, no copy) and drop it. The seed's IIS case: the application reads
    /// what the server read ahead, so the threshold bounds every read.
    Chunks,
}

impl fmt::Display for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sink::Discard => "discard",
            Sink::File => "file (write)",
            Sink::Splice => "file (splice)",
            Sink::Chunks => "discard, server's chunks",
        })
    }
}

/// The arguments of `weir-bench __serve`: everything that defines one server under test.
/// The parent builds one of these and passes it on the child's command line.
#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// The server to run.
    #[arg(value_enum)]
    pub system: System,
    /// Where uploads go.
    #[arg(long, value_enum, default_value = "discard")]
    pub sink: Sink,
    /// Listen on this Unix socket path instead of 127.0.0.1:0.
    #[arg(long)]
    pub unix: Option<PathBuf>,
    /// Directory for the file sinks' files.
    #[arg(long, default_value = ".")]
    pub data_dir: PathBuf,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// weir: request body bytes read ahead of the handler.
    #[arg(long)]
    pub pause_threshold: Option<usize>,
    /// hyper: `pipeline_flush(true)` (coalesce pipelined responses into one write).
    #[arg(long)]
    pub pipeline_flush: bool,
    /// weir and hyper: one single-threaded runtime per thread, each accepting from its own
    /// `SO_REUSEPORT` listener (TCP only), instead of one multi-threaded runtime.
    #[arg(long)]
    pub per_core: bool,
    /// Raw upload: read buffer of the discard sink (default: `sink::DISCARD_BUF`).
    #[arg(long)]
    pub read_buf: Option<usize>,
    /// weir and hyper: serve TLS with this certificate (PEM), ALPN `h2` then `http/1.1`.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// hyper: serve plain connections as HTTP/2 by prior knowledge (h2c) instead of HTTP/1.1.
    /// weir needs no switch: it recognises the HTTP/2 preface on every plain listener.
    #[arg(long)]
    pub h2c: bool,
    /// Raw upload, file sink only: SHA-256 of each buffer, inline, before it is written (the
    /// honest baseline for a server that hashes: what one core does doing both).
    #[arg(long)]
    pub sha256: bool,
    /// Raw upload, file sink only: `fsync` the file before answering (the baseline for a
    /// server that makes uploads durable, as `weir serve` does at commit).
    #[arg(long)]
    pub fsync: bool,
    /// Raw upload, file sink only: SHA-256 on a second thread instead of inline (the simplest
    /// way to do what a hashing server does on two cores: each buffer is written, then handed
    /// to a hashing thread while the next is read).
    #[arg(long)]
    pub sha256_thread: bool,
}

impl ServeArgs {
    /// The command-line form of these arguments, after `__serve`.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            value_name(self.system),
            "--sink".into(),
            value_name(self.sink),
            "--data-dir".into(),
            self.data_dir.display().to_string(),
            "--threads".into(),
            self.threads.to_string(),
        ];
        if let Some(p) = &self.unix {
            a.extend(["--unix".into(), p.display().to_string()]);
        }
        if let Some(t) = self.pause_threshold {
            a.extend(["--pause-threshold".into(), t.to_string()]);
        }
        if self.pipeline_flush {
            a.push("--pipeline-flush".into());
        }
        if self.per_core {
            a.push("--per-core".into());
        }
        if let Some(b) = self.read_buf {
            a.extend(["--read-buf".into(), b.to_string()]);
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            a.extend([
                "--tls-cert".into(),
                cert.display().to_string(),
                "--tls-key".into(),
                key.display().to_string(),
            ]);
        }
        if self.h2c {
            a.push("--h2c".into());
        }
        if self.sha256 {
            a.push("--sha256".into());
        }
        if self.fsync {
            a.push("--fsync".into());
        }
        if self.sha256_thread {
            a.push("--sha256-thread".into());
        }
        a
    }
}

fn value_name<T: ValueEnum>(v: T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// Where a server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// Loopback TCP.
    Tcp(SocketAddr),
    /// A Unix domain socket.
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "tcp {a}"),
            Endpoint::Unix(p) => write!(f, "unix {}", p.display()),
        }
    }
}

impl Endpoint {
    /// Parses the form [`Endpoint`]'s `Display` writes.
    pub fn parse(s: &str) -> Option<Self> {
        let (kind, rest) = s.split_once(' ')?;
        match kind {
            "tcp" => rest.parse().ok().map(Endpoint::Tcp),
            "unix" => Some(Endpoint::Unix(rest.into())),
            _ => None,
        }
    }
}

/// Why a server did not start.
#[derive(Debug)]
pub enum StartError {
    /// The system cannot run in this build (weir before its server exists, a sink it lacks).
    /// Scenarios show the reason instead of a figure.
    Unavailable(String),
    /// It should have started and did not.
    Failed(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Unavailable(s) => write!(f, "not available: {s}"),
            StartError::Failed(s) => write!(f, "failed: {s}"),
        }
    }
}

impl From<std::io::Error> for StartError {
    fn from(e: std::io::Error) -> Self {
        StartError::Failed(e.to_string())
    }
}

/// Entry point of `weir-bench __serve`: starts the server, then runs the control loop.
pub fn run_child(args: &ServeArgs) -> ! {
    let started = match args.system {
        System::RawResponder | System::RawUpload if args.tls_cert.is_some() || args.h2c => Err(
            StartError::Unavailable("the raw baselines speak plain HTTP/1.1 only".into()),
        ),
        _ if (args.sha256 || args.fsync || args.sha256_thread)
            && !(args.system == System::RawUpload && args.sink == Sink::File) =>
        {
            Err(StartError::Unavailable(
                "--sha256, --sha256-thread and --fsync are options of the raw receiver's file sink"
                    .into(),
            ))
        }
        System::RawResponder => raw::responder::start(args),
        System::RawUpload => raw::upload::start(args),
        System::Hyper | System::HyperAxum => hyper_peer::start(args),
        System::Weir | System::WeirAxum => weir_peer::start(args),
        System::ActixWeb => actix_peer::start(args),
    };
    control::serve_commands(started)
}
