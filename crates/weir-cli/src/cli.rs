//! Command-line arguments: `weir serve`, `weir put`, `weir get`.
//!
//! Parsing only; turning arguments into a configuration (environment variables, checks) is done
//! by each command's module, so that this file stays a plain description of the interface.

use crate::serve::LogFormat;
use crate::size::parse_size;
use clap::{Args, Parser, Subcommand};
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
    Serve(Box<ServeArgs>),
    /// Upload a file or a folder: `weir put FILE URL`, `weir put DIR URL/`.
    Put(PutArgs),
    /// Download a file or a folder: `weir get URL [FILE]`, `weir get URL/DIR/ [DIR]`.
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

/// `weir serve`'s options. Each is also read from an environment variable (`WEIR_` and the
/// flag's name in capitals, `-` as `_`) and from the `--config` file (the flag's name as key);
/// a flag beats the environment, which beats the file (`config_file.rs`).
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A TOML file of options: keys are the long flag names (`max-upload = "10GiB"`, `listen =
    /// ["localhost:8080"]`); flags and environment variables override it.
    #[arg(long, env = "WEIR_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on: `HOST:PORT` (a name such as `localhost` is resolved), `IP:PORT`,
    /// or `:PORT` (every IPv4 interface); port 0 is any free port. Repeat for several; HTTPS
    /// when --tls-cert is given and --listen-tls is not. (Environment: comma-separated.)
    #[arg(long, env = "WEIR_LISTEN", value_delimiter = ',', default_value = "127.0.0.1:8080",
          value_parser = parse_listen)]
    pub listen: Vec<String>,
    /// Also serve HTTPS (with --tls-cert) on this address, beside the plain HTTP of --listen.
    /// Repeatable.
    #[arg(long, env = "WEIR_LISTEN_TLS", value_delimiter = ',', value_parser = parse_listen,
          requires = "tls_cert")]
    pub listen_tls: Vec<String>,
    /// Also listen on this Unix domain socket.
    #[arg(long, env = "WEIR_UNIX")]
    pub unix: Option<PathBuf>,
    /// Directory where files are stored (created if missing). With --store s3://..., weir's
    /// local state directory only (its lock); the files go to the bucket.
    #[arg(long, env = "WEIR_ROOT", default_value = "./weir-data")]
    pub root: PathBuf,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Largest accepted upload (e.g. 100GiB, 512MiB, 1000000); larger ones get 413.
    #[arg(long, env = "WEIR_MAX_UPLOAD", default_value = "100GiB", value_parser = parse_size)]
    pub max_upload: u64,
    /// Most bytes all stored files may take together, counting 4 KiB per file and directory;
    /// uploads past it get 507.
    #[arg(long, env = "WEIR_MAX_STORAGE", value_parser = parse_size)]
    pub max_storage: Option<u64>,
    /// Most entries (files and folders) a folder's zip download (`?zip`) may have: its
    /// central directory stays in memory until the end (about 100 bytes plus the path per
    /// entry); larger folders get 413 before any byte (`?tar` has no such bound).
    #[arg(long, env = "WEIR_ZIP_MAX_ENTRIES", default_value_t = 100_000)]
    pub zip_max_entries: u64,
    /// Request body bytes read ahead of the handler before the server stops reading.
    #[arg(long, env = "WEIR_PAUSE_THRESHOLD", default_value = "1MiB", value_parser = parse_size)]
    pub pause_threshold: u64,
    /// Threading: `multi-thread` (one tokio runtime, connections move between worker threads)
    /// or `per-core` (one single-threaded runtime per core, each with its own SO_REUSEPORT
    /// listener: no wake-ups between threads, but the store's blocking calls, such as each
    /// upload's fsyncs, run on that core's one thread and hold its other connections
    /// meanwhile). docs/BENCHMARKS.md compares them.
    #[arg(long, env = "WEIR_RUNTIME", value_enum, default_value_t = Runtime::MultiThread)]
    pub runtime: Runtime,
    /// Do not compute SHA-256 of uploads: bodies move socket → file with splice, never
    /// entering user space (uploads that send Content-Digest are still verified).
    #[arg(long, env = "WEIR_NO_HASH")]
    pub no_hash: bool,
    /// Refuse open files passed over the --unix socket (`SCM_RIGHTS`, from `weir put`): every
    /// upload then streams its bytes through the socket.
    #[arg(long, env = "WEIR_NO_PASSED_FDS")]
    pub no_passed_fds: bool,
    /// Require `Authorization: Bearer TOKEN` for every request on the store (reads too,
    /// unless --public-read). Prefer the WEIR_TOKEN environment variable: arguments are
    /// visible to other local users.
    #[arg(long, env = "WEIR_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Let anyone read (GET, HEAD) even when tokens are configured; writes and deletes still
    /// need one. Without it, a configured token makes reads need one with the read scope.
    #[arg(long, env = "WEIR_PUBLIC_READ", conflicts_with = "token_read")]
    pub public_read: bool,
    /// Deprecated, and the default now: reads need a token whenever one is configured
    /// (--public-read opens them). Accepted, with a warning, so that old configurations start.
    #[arg(long, env = "WEIR_TOKEN_READ", hide = true)]
    pub token_read: bool,
    /// Credentials with scopes: one per line, `TOKEN SCOPES [PREFIX] [name=NAME]` (TOKEN or
    /// `sha256:HEX` of it; SCOPES from read,create,write,delete, `create` being uploads that
    /// may not replace a file; PREFIX a store path it is confined to; NAME who it is, in the
    /// access log and hooks). Used beside --token / WEIR_TOKEN.
    #[arg(long, env = "WEIR_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Serve writes and deletes without any credential on an address other than loopback
    /// (refused at start without this).
    #[arg(long, env = "WEIR_ALLOW_ANONYMOUS_WRITE")]
    pub allow_anonymous_write: bool,
    /// Serve HTTPS on --listen (or on --listen-tls, if given) with this certificate chain
    /// (PEM, leaf first). HTTP/2 is offered by ALPN.
    #[arg(long, env = "WEIR_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, env = "WEIR_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// How long an incomplete resumable upload lives after its creation or last append (e.g.
    /// 24h, 30m, 90s);
    /// expired ones are removed in the background and at start.
    #[arg(long, env = "WEIR_RESUMABLE_EXPIRY", default_value = "24h", value_parser = parse_duration)]
    pub resumable_expiry: std::time::Duration,
    /// Largest body of one resumable upload request (`Upload-Limit: max-append-size`;
    /// default: --max-upload).
    #[arg(long, env = "WEIR_RESUMABLE_MAX_APPEND", value_parser = parse_size)]
    pub resumable_max_append: Option<u64>,
    /// Let pages from this origin (e.g. `https://app.example`) use the service from a browser
    /// (CORS); repeatable. Off by default.
    #[arg(
        long,
        env = "WEIR_CORS_ORIGIN",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    pub cors_origin: Vec<String>,
    /// Accept writes (PUT, POST, PATCH, DELETE) that a browser sends from a page of another
    /// origin not listed with --cors-origin (refused with 403 without this).
    #[arg(long, env = "WEIR_ALLOW_CROSS_SITE_WRITES")]
    pub allow_cross_site_writes: bool,
    /// Also accept requests whose `Host` names this host (any port; no port here), beside
    /// `localhost` and loopback addresses; repeatable, `*` for any. Given, every TCP request is
    /// checked; else only those from this machine to a loopback listener (DNS rebinding).
    #[arg(
        long,
        env = "WEIR_ALLOWED_HOST",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub allowed_host: Vec<String>,
    /// Smallest body of a resumable upload request that does not complete it
    /// (`Upload-Limit: min-append-size`).
    #[arg(long, env = "WEIR_RESUMABLE_MIN_APPEND", value_parser = parse_size)]
    pub resumable_min_append: Option<u64>,
    // ---- connections: timeouts, rates, limits ----
    /// Time allowed to receive a whole request head (e.g. 30s); past it: 408 and close.
    #[arg(long, env = "WEIR_HEAD_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub head_timeout: std::time::Duration,
    /// How long an idle keep-alive connection waits for its next request.
    #[arg(long, env = "WEIR_IDLE_TIMEOUT", default_value = "120s", value_parser = parse_duration)]
    pub idle_timeout: std::time::Duration,
    /// Slowest accepted request body, in bytes per second averaged after a 5 s grace (e.g.
    /// 240, 1KiB); 0 turns the check off. Slower: 408 and close.
    #[arg(long, env = "WEIR_MIN_BODY_RATE", default_value = "240", value_parser = parse_size)]
    pub min_body_rate: u64,
    /// Slowest accepted reading of a response by the client, as --min-body-rate; 0: off.
    #[arg(long, env = "WEIR_MIN_RESPONSE_RATE", default_value = "240", value_parser = parse_size)]
    pub min_response_rate: u64,
    /// Most connections served at once; more wait in the listen backlog.
    #[arg(long, env = "WEIR_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,
    /// On SIGTERM/SIGINT, how long requests in flight may finish before they are cut.
    #[arg(long, env = "WEIR_SHUTDOWN_GRACE", default_value = "30s", value_parser = parse_duration)]
    pub shutdown_grace: std::time::Duration,
    // ---- operating: access log, metrics ----
    /// Append the access log (one line per request) to this file instead of stderr.
    #[arg(
        long,
        env = "WEIR_ACCESS_LOG",
        value_name = "FILE",
        conflicts_with = "no_access_log"
    )]
    pub access_log: Option<PathBuf>,
    /// Write no access log.
    #[arg(long, env = "WEIR_NO_ACCESS_LOG")]
    pub no_access_log: bool,
    /// Access log lines as `text` (`key=value ...`) or `json` (one object per line).
    #[arg(long, env = "WEIR_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Run this program after every stored file and every delete: the event as JSON on its
    /// stdin, and in WEIR_HOOK_EVENT, WEIR_HOOK_PATH, WEIR_HOOK_SIZE, WEIR_HOOK_SHA256.
    #[arg(long, env = "WEIR_HOOK_COMMAND", value_name = "PROGRAM")]
    pub hook_command: Option<PathBuf>,
    /// A hook still running after this long is killed (counted in /metrics).
    #[arg(long, env = "WEIR_HOOK_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub hook_timeout: std::time::Duration,
    /// POST every stored-file and delete event (the JSON --hook-command gets) to this
    /// `http://` or `https://` URL, retried on connection failures, timeouts, 429 and 5xx.
    #[arg(long, env = "WEIR_HOOK_URL", value_name = "URL", value_parser = parse_hook_url)]
    pub hook_url: Option<crate::client::post::PostUrl>,
    /// Attempts per --hook-url event, the first included.
    #[arg(long, env = "WEIR_HOOK_ATTEMPTS", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub hook_attempts: u32,
    /// Pause after a failed --hook-url attempt, doubled after each further one (at most 5m).
    #[arg(long, env = "WEIR_HOOK_BACKOFF", default_value = "1s", value_parser = parse_duration)]
    pub hook_backoff: std::time::Duration,
    /// Run this program before accepting an upload (PUT, form POST, resumable or tus
    /// creation), before any body byte is read: the request as JSON on its stdin; exit status
    /// 0 accepts, any other refuses (403, its first line of output as the reason).
    #[arg(long, env = "WEIR_PRE_UPLOAD_HOOK", value_name = "PROGRAM")]
    pub pre_upload_hook: Option<PathBuf>,
    /// A pre-upload hook still running after this long is killed and the upload refused (503).
    #[arg(long, env = "WEIR_PRE_UPLOAD_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub pre_upload_timeout: std::time::Duration,
    /// Serve `/metrics` (Prometheus) on this address only, without a token; by default it is
    /// served on --listen, behind the token when one is set.
    #[arg(long, env = "WEIR_METRICS_LISTEN", value_name = "ADDR", value_parser = parse_listen)]
    pub metrics_listen: Option<String>,
    /// Serve the S3-compatible API on this address (a listener of its own: HTTPS when
    /// --tls-cert is given): buckets are the store's top-level folders, credentials the token
    /// file's `name=` entries given in clear (docs/OPERATING.md, "S3-compatible API").
    #[arg(long, env = "WEIR_S3_API", value_name = "ADDR", value_parser = parse_listen)]
    pub s3_api: Option<String>,
    /// A base domain of virtual-hosted-style S3 requests (`BUCKET.DOMAIN`); repeat for several.
    /// Without one, every S3 request is path-style (`/BUCKET/KEY`).
    #[arg(
        long,
        env = "WEIR_S3_API_DOMAIN",
        value_delimiter = ',',
        value_name = "DOMAIN"
    )]
    pub s3_api_domain: Vec<String>,
    /// The region the S3 API answers for (GetBucketLocation); signatures of any region are
    /// accepted.
    #[arg(
        long,
        env = "WEIR_S3_API_REGION",
        default_value = "us-east-1",
        value_name = "REGION"
    )]
    pub s3_api_region: String,
    /// Seconds after which a multipart upload of the S3 API that nobody touched (no part
    /// uploaded, not completed or aborted) is removed with its parts (default a day).
    #[arg(
        long,
        env = "WEIR_S3_API_MULTIPART_EXPIRY",
        default_value_t = 86_400,
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub s3_api_multipart_expiry: u64,
    /// Seconds a CompleteMultipartUpload may run before its answer starts: past them weir
    /// answers `200 OK` and sends a space every as many seconds until the result (or S3's
    /// `<Error>` document) follows, as Amazon S3 does, so that a client's read timeout does not
    /// cut the completion of a very large object (default 10; 0: every completion so, at once).
    #[arg(
        long,
        env = "WEIR_S3_API_KEEP_ALIVE",
        default_value_t = 10,
        value_name = "SECONDS"
    )]
    pub s3_api_keep_alive: u64,
}

/// A listening address: `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (→ `0.0.0.0:PORT`). Names are
/// resolved when the listener is bound.
fn parse_listen(text: &str) -> Result<String, String> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?}: expected HOST:PORT or :PORT"))?;
    port.parse::<u16>()
        .map_err(|_| format!("{text:?}: the port must be a number from 0 to 65535"))?;
    let host_ok = !host.contains(char::is_whitespace)
        && (host.starts_with('[') && host.ends_with(']')
            || !host.contains(':') && !host.contains(['/', '[', ']']));
    if !host_ok {
        return Err(format!("{text:?}: expected HOST:PORT or :PORT"));
    }
    Ok(if host.is_empty() {
        format!("0.0.0.0:{port}")
    } else {
        text.to_owned()
    })
}

/// A webhook URL: `http://` or `https://`.
fn parse_hook_url(text: &str) -> Result<crate::client::post::PostUrl, String> {
    crate::client::post::PostUrl::parse(text)
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
#[derive(Clone, Debug, Args)]
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

#[derive(Clone, Debug, Args)]
pub struct PutArgs {
    /// The file to upload, or a folder: its files, with their paths below it, under
    /// URL/FOLDER-NAME/ (each resumable and verified as a single file).
    pub file: PathBuf,
    /// Where to: `http[s]://HOST:PORT/files/PATH`, or a directory URL ending in `/` to keep
    /// the file's name (a folder's URL must end in `/`).
    pub url: String,
    /// For a folder: how many files are uploaded at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
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
    /// Send a plain PUT, without the resumable-upload fields: a dropped connection then starts
    /// the upload again from zero.
    #[arg(long, conflicts_with = "resume")]
    pub no_resumable: bool,
    /// Over a Unix socket, send the file's bytes through the socket instead of passing the
    /// open file for the server to copy (which it may refuse: the bytes are sent then anyway).
    #[arg(long)]
    pub no_pass_file: bool,
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
    /// Replace the file at URL if one is there. Without it the upload is sent with
    /// `If-None-Match: *`, and a file already there is left as it is (the server answers 412,
    /// and `weir put` says so).
    #[arg(long)]
    pub overwrite: bool,
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

#[derive(Clone, Debug, Args)]
pub struct GetArgs {
    /// The file's URL: `http[s]://HOST:PORT/files/PATH`; a folder's ends in `/`: every file
    /// below it (its listing followed page by page), each resumable and verified.
    pub url: String,
    /// For a folder: how many files are downloaded at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// Where to write it (default: the last segment of the URL's path, in the current
    /// directory). Written to `.NAME.weir-get.partial` first and renamed when complete and
    /// verified; a download cut short is resumed from there by the next run.
    pub file: Option<PathBuf>,
    /// Replace FILE if it exists (without this, an existing FILE is an error and nothing is
    /// downloaded).
    #[arg(long)]
    pub overwrite: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Where `weir serve` stores files when not in --root: an S3-compatible bucket. The usual AWS
/// variables are read when neither flag nor `WEIR_` variable is set: `AWS_ENDPOINT_URL_S3` /
/// `AWS_ENDPOINT_URL`, `AWS_REGION` / `AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Store files in an S3-compatible bucket: `s3://BUCKET` or `s3://BUCKET/PREFIX`
    /// (docs/OPERATING.md, "S3-compatible storage"): plain, form, resumable and tus uploads,
    /// downloads, listings, deletes and folders.
    #[arg(long = "store", env = "WEIR_STORE", value_name = "URL")]
    pub url: Option<String>,
    /// The S3 API's URL, e.g. `http://127.0.0.1:8333` (default: AWS's regional endpoint).
    #[arg(long, env = "WEIR_S3_ENDPOINT", value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// The signing region (default `us-east-1`).
    #[arg(long, env = "WEIR_S3_REGION")]
    pub s3_region: Option<String>,
    /// Access key id.
    #[arg(long, env = "WEIR_S3_ACCESS_KEY_ID")]
    pub s3_access_key_id: Option<String>,
    /// Secret access key (prefer the environment: flags show in `ps`).
    #[arg(long, env = "WEIR_S3_SECRET_ACCESS_KEY", hide_env_values = true)]
    pub s3_secret_access_key: Option<String>,
    /// Bytes per multipart part (at least 5MiB, S3's minimum). Memory per upload is at most
    /// this × (--s3-parts-in-flight + 1).
    #[arg(long, env = "WEIR_S3_PART_SIZE", default_value = "8MiB", value_parser = parse_size)]
    pub s3_part_size: u64,
    /// Parts of one upload sent to the store at once.
    #[arg(long, env = "WEIR_S3_PARTS_IN_FLIGHT", default_value_t = 2)]
    pub s3_parts_in_flight: usize,
    /// Seconds to wait for the store's answer to one request (a part's upload included);
    /// past it the upload fails with 502 and is aborted.
    #[arg(long, env = "WEIR_S3_TIMEOUT", default_value_t = 60)]
    pub s3_timeout: u64,
    /// Seconds after which a multipart upload nobody completed or aborted (its node died) is
    /// aborted by the hourly sweep (default a day).
    #[arg(long, env = "WEIR_S3_SWEEP_AFTER", default_value_t = 86_400)]
    pub s3_sweep_after: u64,
    /// Seconds a resumable upload's append holds it after its node's last sign of life (each
    /// part stored renews it); a node that died mid-append blocks the upload this long.
    #[arg(long, env = "WEIR_S3_UPLOAD_LEASE", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub s3_upload_lease: u64,
    /// Virtual-hosted URLs (`BUCKET.ENDPOINT/KEY`) instead of path-style (`ENDPOINT/BUCKET/KEY`,
    /// what SeaweedFS and MinIO serve by default).
    #[arg(long, env = "WEIR_S3_VIRTUAL_HOSTED")]
    pub s3_virtual_hosted: bool,
}
