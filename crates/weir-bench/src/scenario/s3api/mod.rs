//! Issue 33 point 5: one large object through weir's S3 API (`weir serve --s3-api`, local
//! store) against SeaweedFS's S3 gateway (`weed mini` on loopback, weir-testkit's launcher) and
//! against weir's own `PUT /files/` and `GET /files/`, in the same rounds, with the same client
//! (`client.rs`: Signature V4, `UNSIGNED-PAYLOAD`, blocking HTTP/1.1).
//!
//! Every round, each group interleaved (forward in even rounds, backward in odd ones):
//! - PutObject of the body to weir and to SeaweedFS, and `PUT /files/` to weir (baseline);
//! - a multipart upload (Create, the parts on `--parallel` connections at once, Complete), to
//!   weir and to SeaweedFS, once per `--part-sizes` entry (the largest gives 8 parts of a 1 GiB
//!   object; the smaller shows whether peak RSS depends on the part size);
//! - GetObject of the PutObject's object from weir and from SeaweedFS, and `GET /files/` of the
//!   baseline's (every byte compared with the body).
//!
//! Per operation: wall time from the first connect to the last answer byte; the server's CPU
//! time (`utime + stime` of `/proc/PID/stat`, every thread, before and after: 10 ms ticks,
//! fine for operations of a second or more); its peak RSS (`VmHWM`, reset through
//! `clear_refs` before the operation); what it made the disk write (`/proc/PID/io`), per byte
//! stored; the client's own CPU time (this process), to show the
//! client is not the bottleneck. Before each operation `syncfs` flushes the previous one's
//! dirty pages, so that no row pays for another's writeback. Uploads are checked: weir's
//! SHA-256 (`/files/`) and ETag (`"sha256-…"`, S3) against the body's, multipart objects'
//! length by HeadObject; downloads byte by byte. Objects are deleted after every round.
//!
//! Without `weed` the scenario is skipped with a loud message (weir-testkit's `tools`),
//! unless `WEIR_REQUIRE_TOOLS=1`: then it fails.

mod client;
mod section;
mod sigv4;

use super::upload::service::weir_binary;
use super::{Peer, Settings, order};
use crate::clock;
use crate::procfs;
use crate::report;
use crate::scenario::s3::Pattern;
use crate::stats::Samples;
use clap::Args;
use client::{FilesTarget, S3Target};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use weir_testkit::seaweed::{self, Seaweed};

/// `weir-bench s3api` options.
#[derive(Args, Clone, Debug, Default)]
pub struct S3ApiArgs {
    /// Object size (default: 1 GiB; `--quick`: 256 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
    /// Multipart part sizes, one pair of rows each (default: 128M,16M; `--quick`: 32M,8M).
    #[arg(long, value_delimiter = ',', value_parser = super::parse_size)]
    pub part_sizes: Vec<usize>,
    /// Parts in flight (connections) per multipart upload (default 8).
    #[arg(long, default_value_t = 8)]
    pub parallel: usize,
    /// The `weir` binary (default: `weir` next to this executable).
    #[arg(long)]
    pub weir: Option<PathBuf>,
    /// Pause the kernel's free page reporting (virtio-balloon) for the run, and restore it after
    /// (`prefault.rs`; the upload scenario's flag). Needs root.
    #[arg(long)]
    pub pause_page_reporting: bool,
}

/// The credential both S3 servers know, and `/files/`'s bearer token (the same secret).
const ACCESS_KEY: &str = seaweed::ACCESS_KEY;
const SECRET: &str = seaweed::SECRET_KEY;
/// The bucket: `weed mini` creates it; for weir it is the root's top-level folder.
const BUCKET: &str = seaweed::BUCKET;

/// The server an operation runs against.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Server {
    WeirS3,
    Seaweed,
    WeirFiles,
}

impl Server {
    pub fn label(self) -> &'static str {
        match self {
            Server::WeirS3 => "weir S3 API",
            Server::Seaweed => "SeaweedFS S3",
            Server::WeirFiles => "weir /files/ (baseline)",
        }
    }
}

/// What an operation does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put,
    /// Multipart with parts of this size.
    Multipart(u64),
    Get,
}

/// One row: an operation on a server, and its samples (one per round).
pub struct Row {
    pub op: Op,
    pub server: Server,
    pub seconds: Samples,
    pub gib_s: Samples,
    pub server_cpu_s_per_gib: Samples,
    pub peak_mib: Samples,
    pub client_cpu_s_per_gib: Samples,
    /// What the server made the disk write (`procfs::written_bytes`), per byte of the object.
    pub disk_writes_per_byte: Samples,
    /// Multipart rows: the seconds of CompleteMultipartUpload alone (part of `seconds`).
    pub complete_s: Samples,
}

impl Row {
    fn new(op: Op, server: Server) -> Self {
        Self {
            op,
            server,
            seconds: Samples::default(),
            gib_s: Samples::default(),
            server_cpu_s_per_gib: Samples::default(),
            peak_mib: Samples::default(),
            client_cpu_s_per_gib: Samples::default(),
            disk_writes_per_byte: Samples::default(),
            complete_s: Samples::default(),
        }
    }
}

/// The rows, grouped by operation: each group runs interleaved within a round.
fn groups(part_sizes: &[u64]) -> Vec<Vec<Row>> {
    use Server::*;
    let mut g = vec![vec![
        Row::new(Op::Put, WeirS3),
        Row::new(Op::Put, Seaweed),
        Row::new(Op::Put, WeirFiles),
    ]];
    for &ps in part_sizes {
        g.push(vec![
            Row::new(Op::Multipart(ps), WeirS3),
            Row::new(Op::Multipart(ps), Seaweed),
        ]);
    }
    g.push(vec![
        Row::new(Op::Get, WeirS3),
        Row::new(Op::Get, Seaweed),
        Row::new(Op::Get, WeirFiles),
    ]);
    g
}

/// The key an operation stores or reads: GETs read what the PUTs of the round stored.
fn key(op: Op, server: Server) -> String {
    match (op, server) {
        (_, Server::WeirFiles) => "files.bin".into(),
        (Op::Put | Op::Get, _) => "put.bin".into(),
        (Op::Multipart(ps), _) => format!("multipart-{ps}.bin"),
    }
}

/// A free loopback port for `--s3-api` (weir prints the S3 address after the line the
/// launcher reads; a port chosen here is known beforehand).
fn free_port() -> io::Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}

/// The processes measured: weir serve's and weed's pids.
struct Pids {
    weir: String,
    weed: String,
}

/// Runs one operation and pushes its figures into `row`.
#[allow(clippy::too_many_arguments)]
fn measure(
    row: &mut Row,
    pids: &Pids,
    weir_s3: &S3Target,
    weed_s3: &S3Target,
    files: &FilesTarget,
    sync_dirs: &[&Path],
    p: &Pattern,
    size: u64,
    parallel: usize,
    expected: &str,
) -> io::Result<()> {
    for d in sync_dirs {
        rustix::fs::syncfs(std::fs::File::open(d)?)?;
    }
    let pid = match row.server {
        Server::Seaweed => &pids.weed,
        _ => &pids.weir,
    };
    let s3 = match row.server {
        Server::Seaweed => weed_s3,
        _ => weir_s3,
    };
    let key = key(row.op, row.server);
    procfs::reset_peak(pid)?;
    let cpu0 = procfs::process_cpu_ns(pid)?;
    let written0 = procfs::written_bytes(pid)?;
    let client0 = clock::process_cpu_ns();
    let t0 = clock::monotonic_ns();
    let etag = match (row.op, row.server) {
        (Op::Put, Server::WeirFiles) => Some(files.put(&key, p, size)?),
        (Op::Put, _) => Some(s3.put_object(&key, p, size)?),
        (Op::Multipart(ps), _) => {
            row.complete_s
                .push(s3.multipart(&key, p, size, ps, parallel)?);
            None
        }
        (Op::Get, Server::WeirFiles) => {
            files.get(&key, p, size)?;
            None
        }
        (Op::Get, _) => {
            s3.get_object(&key, p, size)?;
            None
        }
    };
    let seconds = (clock::monotonic_ns() - t0) as f64 / 1e9;
    let client_ns = clock::process_cpu_ns() - client0;
    let cpu_ns = procfs::process_cpu_ns(pid)? - cpu0;
    let written = procfs::written_bytes(pid)?.saturating_sub(written0);
    let peak_kib = procfs::memory(pid)?.peak_kib;
    // Checks, outside the timing.
    match (row.op, row.server, etag) {
        (Op::Put, Server::WeirFiles, Some(sha)) if sha != expected => {
            return Err(io::Error::other(format!(
                "PUT /files/ stored SHA-256 {sha}"
            )));
        }
        (Op::Put, Server::WeirS3, Some(etag)) if !etag_is_sha256(&etag, expected) => {
            return Err(io::Error::other(format!("PutObject to weir: ETag {etag}")));
        }
        (Op::Multipart(_), _, _) if s3.length(&key)? != Some(size) => {
            return Err(io::Error::other(format!(
                "{}: multipart object of the wrong length",
                row.server.label()
            )));
        }
        _ => {}
    }
    let gib = size as f64 / (1u64 << 30) as f64;
    row.seconds.push(seconds);
    row.gib_s.push(gib / seconds);
    row.server_cpu_s_per_gib.push(cpu_ns as f64 / 1e9 / gib);
    row.peak_mib.push(peak_kib as f64 / 1024.0);
    row.client_cpu_s_per_gib.push(client_ns as f64 / 1e9 / gib);
    row.disk_writes_per_byte.push(written as f64 / size as f64);
    Ok(())
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &S3ApiArgs) -> io::Result<()> {
    let Some(weed) = Seaweed::start() else {
        eprintln!("s3api: SKIPPED (no `weed`)");
        return Ok(());
    };
    let ctx = report::Context::capture();
    let size = a.size.unwrap_or(s.pick(1 << 30, 256 << 20, 24 << 20)) as u64;
    let part_sizes: Vec<u64> = if a.part_sizes.is_empty() {
        s.pick(
            vec![128 << 20, 16 << 20],
            vec![32 << 20, 8 << 20],
            vec![12 << 20, 6 << 20],
        )
    } else {
        a.part_sizes.iter().map(|&n| n as u64).collect()
    };
    let rounds = s.rounds(3, 2);
    let weir = weir_binary(a.weir.as_deref())?;
    // Full runs only touch free memory: a quick run's objects are small, and its seconds count.
    let (_reporting_pause, memory_note) =
        crate::prefault::prepare(a.pause_page_reporting, s.pick(true, false, false))?;
    let data = tempfile::tempdir()?;
    let root = data.path().join("root");
    std::fs::create_dir_all(root.join(BUCKET))?;
    let tokens = data.path().join("tokens");
    std::fs::write(
        &tokens,
        format!("{SECRET} read,write,delete name={ACCESS_KEY}\n"),
    )?;
    let s3_addr = free_port()?;
    let (tokens_arg, s3_arg) = (tokens.display().to_string(), s3_addr.to_string());
    let mut peer = Peer::start_weir_serve(
        "weir serve",
        &weir,
        &root,
        &[
            "--token-file",
            &tokens_arg,
            "--s3-api",
            &s3_arg,
            "--no-access-log",
        ],
    )?;
    let server = peer
        .server
        .as_mut()
        .map_err(|why| io::Error::other(why.clone()))?;
    let crate::server::Endpoint::Tcp(files_addr) = *server.endpoint() else {
        return Err(io::Error::other("weir serve listens on TCP"));
    };
    let pids = Pids {
        weir: server.pid().to_string(),
        weed: weed.pid().to_string(),
    };
    let weir_s3 = S3Target {
        addr: s3_addr,
        access_key: ACCESS_KEY.into(),
        secret: SECRET.into(),
        bucket: BUCKET.into(),
    };
    let weed_s3 = weir_s3.clone_with(weed.s3_addr);
    let files = FilesTarget {
        addr: files_addr,
        token: SECRET.into(),
        bucket: BUCKET.into(),
    };
    let p = Pattern::new();
    let expected = p.sha256(size);
    // A small object through each path first, outside the rounds: SeaweedFS creates its
    // volumes, both servers take their first connections.
    let warm = part_sizes.iter().copied().min().unwrap_or(size).min(size);
    wait_for_bucket(&weed_s3, &p, warm)?;
    weir_s3.put_object("warm.bin", &p, warm)?;
    weir_s3.get_object("warm.bin", &p, warm)?;
    weed_s3.get_object("warm.bin", &p, warm)?;
    files.put("warm-files.bin", &p, warm)?;
    for (t, k) in [
        (&weir_s3, "warm.bin"),
        (&weed_s3, "warm.bin"),
        (&weir_s3, "warm-files.bin"),
    ] {
        t.delete(k)?;
    }
    let sync_dirs = [root.as_path(), weed.dir()];
    let mut groups = groups(&part_sizes);
    for round in 0..rounds {
        for g in &mut groups {
            for i in order(g.len(), round).collect::<Vec<_>>() {
                measure(
                    &mut g[i], &pids, &weir_s3, &weed_s3, &files, &sync_dirs, &p, size, a.parallel,
                    &expected,
                )?;
            }
        }
        for g in &groups {
            for r in g.iter().filter(|r| r.op != Op::Get) {
                let s3 = if r.server == Server::Seaweed {
                    &weed_s3
                } else {
                    &weir_s3
                };
                s3.delete(&key(r.op, r.server))?;
            }
        }
        eprintln!("s3api: round {}/{rounds} done", round + 1);
    }
    drop(peer); // stop the servers: the report counts their CPU as the bench's own
    drop(weed);
    let rows: Vec<Row> = groups.into_iter().flatten().collect();
    let section = section::section(size, a.parallel, &rows, &memory_note);
    report::publish(&s.target, &ctx, &section)
}

impl S3Target {
    /// The same credential and bucket at another address.
    fn clone_with(&self, addr: SocketAddr) -> S3Target {
        S3Target {
            addr,
            access_key: self.access_key.clone(),
            secret: self.secret.clone(),
            bucket: self.bucket.clone(),
        }
    }
}

/// `weed mini` opens its S3 port before its filer knows the bucket: PUTs the warm-up object
/// until it is taken (at most 30 s).
fn wait_for_bucket(weed: &S3Target, p: &Pattern, size: u64) -> io::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match weed.put_object("warm.bin", p, size) {
            Ok(_) => return Ok(()),
            Err(e) if std::time::Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
}

/// Whether `etag` is weir's for a body of SHA-256 `sha256` (hex): `"sha256-<base64>"`.
fn etag_is_sha256(etag: &str, sha256: &str) -> bool {
    use base64::Engine;
    etag.strip_prefix("\"sha256-")
        .and_then(|rest| rest.strip_suffix('"'))
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .is_some_and(|digest| {
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            hex == sha256
        })
}
