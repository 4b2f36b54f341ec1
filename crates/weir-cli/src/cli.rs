//! Command-line arguments: `weir serve`, `weir put`, `weir get`.
//!
//! Parsing only; turning arguments into a configuration (environment variables, checks) is done
//! by each command's module, so that this file stays a plain description of the interface.

use crate::size::parse_size;
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

/// weir: move large files over HTTP without buffering, copies or losses.
#[derive(Debug, Parser)]
#[command(name = "weir", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve uploads and downloads from a directory.
    Serve(ServeArgs),
    /// Upload a file: `weir put FILE URL`.
    Put(PutArgs),
    /// Download a file: `weir get URL [FILE]`.
    Get(GetArgs),
}

/// How `weir serve` uses threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Runtime {
    /// tokio's multi-threaded, work-stealing runtime.
    MultiThread,
    /// One current-thread runtime per core behind SO_REUSEPORT listeners.
    PerCore,
}

/// When `weir put` sends the body with sendfile(2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendfileMode {
    /// Where it pays: to a TCP peer on another host.
    Auto,
    /// Whenever the connection is HTTP/1.1 in the clear.
    Always,
    /// Never: always through the 1 MiB buffer.
    Never,
}

impl SendfileMode {
    /// Whether to use sendfile, given whether it pays on this connection.
    pub fn chooses(self, pays: bool) -> bool {
        match self {
            Self::Auto => pays,
            Self::Always => true,
            Self::Never => false,
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TCP address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Also listen on this Unix domain socket.
    #[arg(long)]
    pub unix: Option<PathBuf>,
    /// Directory where files are stored (created if missing).
    #[arg(long, default_value = "./weir-data")]
    pub root: PathBuf,
    /// Largest accepted upload (e.g. 100GiB, 512MiB, 1000000); larger ones get 413.
    #[arg(long, default_value = "100GiB", value_parser = parse_size)]
    pub max_upload: u64,
    /// Most bytes all stored files may take together, counting 4 KiB per file and directory;
    /// uploads past it get 507.
    #[arg(long, value_parser = parse_size)]
    pub max_storage: Option<u64>,
    /// Request body bytes read ahead of the handler before the server stops reading.
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub pause_threshold: u64,
    /// Threading: `multi-thread` (one tokio runtime, connections move between worker threads)
    /// or `per-core` (one single-threaded runtime per core, each with its own SO_REUSEPORT
    /// listener). docs/BENCHMARKS.md compares them.
    #[arg(long, value_enum, default_value_t = Runtime::MultiThread)]
    pub runtime: Runtime,
    /// Do not compute SHA-256 of uploads: bodies move socket → file with splice, never
    /// entering user space (uploads that send Content-Digest are still verified).
    #[arg(long)]
    pub no_hash: bool,
    /// Require `Authorization: Bearer TOKEN` for writes (PUT, POST, DELETE). Prefer the
    /// WEIR_TOKEN environment variable: arguments are visible to other local users.
    #[arg(long)]
    pub token: Option<String>,
    /// Require the token for reads (GET, HEAD) too.
    #[arg(long)]
    pub token_read: bool,
    /// Serve HTTPS on --listen with this certificate chain (PEM, leaf first). HTTP/2 is
    /// offered by ALPN.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// How long an incomplete resumable upload lives after its creation or last append (e.g.
    /// 24h, 30m, 90s);
    /// expired ones are removed in the background and at start.
    #[arg(long, default_value = "24h", value_parser = parse_duration)]
    pub resumable_expiry: std::time::Duration,
    /// Largest body of one resumable upload request (`Upload-Limit: max-append-size`;
    /// default: --max-upload).
    #[arg(long, value_parser = parse_size)]
    pub resumable_max_append: Option<u64>,
    /// Let pages from this origin (e.g. `https://app.example`) use the service from a browser
    /// (CORS); repeatable. Off by default.
    #[arg(long, value_name = "ORIGIN")]
    pub cors_origin: Vec<String>,
    /// Smallest body of a resumable upload request that does not complete it
    /// (`Upload-Limit: min-append-size`).
    #[arg(long, value_parser = parse_size)]
    pub resumable_min_append: Option<u64>,
}

/// A duration: a number with `s`, `m`, `h` or `d`.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a number and a unit (s, m, h, d)"))?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(format!("{text:?}: the unit must be s, m, h or d")),
    };
    n.checked_mul(scale)
        .filter(|&s| s > 0)
        .map(std::time::Duration::from_secs)
        .ok_or_else(|| format!("{text:?}: must be between 1s and u64::MAX seconds"))
}

/// Options shared by the client commands.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// Bearer token for the server (default: the WEIR_TOKEN environment variable).
    #[arg(long)]
    pub token: Option<String>,
    /// Connect to this Unix domain socket instead of the URL's host and port.
    #[arg(long)]
    pub unix: Option<PathBuf>,
    /// For https:// URLs: trust the CA certificates in this PEM file (e.g. a private CA, or a
    /// self-signed server certificate) instead of the system's.
    #[arg(long, value_name = "PEM")]
    pub cacert: Option<PathBuf>,
    /// Speak HTTP/2: over TLS (https://) by ALPN, over cleartext (http://) by prior knowledge.
    #[arg(long)]
    pub http2: bool,
}

#[derive(Debug, Args)]
pub struct PutArgs {
    /// The file to upload.
    pub file: PathBuf,
    /// Where to: `http[s]://HOST:PORT/files/PATH`, or a directory URL ending in `/` to keep
    /// the file's name.
    pub url: String,
    /// Do not send a Content-Digest (skips hashing the file before sending it).
    #[arg(long)]
    pub no_digest: bool,
    /// Always send the body with sendfile(2) (HTTP/1.1 in the clear; under TLS or HTTP/2 the
    /// body is encrypted or framed in user space). By default sendfile is used to a TCP peer on
    /// another host, and a 1 MiB buffer on loopback and Unix sockets, where the buffer measured
    /// steadier (after sendfile the receiver copies from page cache the CPU has not touched, not
    /// from bytes the sender's copy just brought into the cache, and is often slower).
    #[arg(long, conflicts_with = "no_sendfile")]
    pub sendfile: bool,
    /// Never use sendfile(2): always send through the 1 MiB buffer.
    #[arg(long)]
    pub no_sendfile: bool,
    /// Continue the interrupted upload of FILE to URL recorded by an earlier run (fails when
    /// there is none). Without it, such a record is used too when it exists.
    #[arg(long)]
    pub resume: bool,
    /// How many times a dropped connection, a timeout or a 5xx is retried (by resuming the
    /// upload where the server stopped, when it speaks resumable uploads) before giving up.
    #[arg(long, default_value_t = 5)]
    pub retries: u32,
    /// Seconds before the first retry; each next one waits twice as long, at most 8 s (or
    /// this, if larger).
    #[arg(long, default_value_t = 0.5, value_parser = parse_seconds)]
    pub retry_delay: f64,
    /// Seconds without progress (nothing sent, nothing received) after which the connection
    /// counts as dropped (HTTP/1.1).
    #[arg(long, default_value_t = 120.0, value_parser = parse_seconds)]
    pub timeout: f64,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A number of seconds: finite, not negative.
fn parse_seconds(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
        .ok_or_else(|| format!("{text:?}: expected a number of seconds"))
}

impl PutArgs {
    /// When to send the body with sendfile(2), from `--sendfile` / `--no-sendfile`.
    pub fn sendfile_mode(&self) -> SendfileMode {
        match (self.sendfile, self.no_sendfile) {
            (true, _) => SendfileMode::Always,
            (_, true) => SendfileMode::Never,
            _ => SendfileMode::Auto,
        }
    }
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// The file's URL: `http[s]://HOST:PORT/files/PATH`.
    pub url: String,
    /// Where to write it (default: the last segment of the URL's path, in the current
    /// directory). Written to a temporary file first and renamed when complete and verified.
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub client: ClientArgs,
}
