//! The rows of `serve-versions` and how each is measured against one binary's servers.
//!
//! Rows are measured in steps ([`Step`]): one step fills the rows that share its work (the
//! large `GET` and its counts read the file the hashed `PUT` stored; one counted stretch of
//! small `GET`s gives both their allocations and their system calls). Each step checks what
//! it got: an upload's stored size, every byte of a `GET`, every small answer's body; a wrong
//! one fails the run.

use super::perf_count::{Counts, Probes};
use super::{Cell, Settings, Sizes};
use crate::client::upload::{Protocol, Uploader};
use crate::scenario::child::{Server, Usage, usage};
use crate::scenario::s3::{PERIOD, Pattern, read_response};
use crate::scenario::services::access_log::{BODY, PATH};
use crate::scenario::services::many::small_gets;
use crate::scenario::transfer;
use crate::server::Endpoint;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The table's rows, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    PutSha,
    PutNoHash,
    PutHttps,
    PutH2,
    Get,
    Small1,
    Small16,
    S3Put,
    S3Get,
    AllocsKeepAlive,
    SyscallsKeepAlive,
    AllocsNewConn,
    SyscallsNewConn,
    AllocsBig,
    SyscallsBig,
}

pub const ROWS: [Row; 15] = [
    Row::PutSha,
    Row::PutNoHash,
    Row::PutHttps,
    Row::PutH2,
    Row::Get,
    Row::Small1,
    Row::Small16,
    Row::S3Put,
    Row::S3Get,
    Row::AllocsKeepAlive,
    Row::SyscallsKeepAlive,
    Row::AllocsNewConn,
    Row::SyscallsNewConn,
    Row::AllocsBig,
    Row::SyscallsBig,
];

impl Row {
    /// Whether the row is counted with `perf stat` (and empty without it).
    pub fn counted(self) -> bool {
        matches!(
            self,
            Row::AllocsKeepAlive
                | Row::SyscallsKeepAlive
                | Row::AllocsNewConn
                | Row::SyscallsNewConn
                | Row::AllocsBig
                | Row::SyscallsBig
        )
    }
}

/// What one step of a round does for one binary.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// `PUT` of the large file over a protocol, stored by which server ([`Servers::local`]),
    /// then removed; after the hashed one, its `GET` and the counted `GET`s first.
    Put(Row, Protocol, usize),
    /// Small `GET`s at 64 connections at a depth.
    Small(Row, usize),
    /// Counted small `GET`s: on one keep-alive connection, then on a new connection each.
    SmallCounts,
    /// `PUT` and `GET` through the S3 store, then the object deleted.
    S3,
}

pub const STEPS: [Step; 8] = [
    Step::Put(Row::PutSha, Protocol::H1, 0),
    Step::Put(Row::PutNoHash, Protocol::H1, 1),
    Step::Put(Row::PutHttps, Protocol::Https, 2),
    Step::Put(Row::PutH2, Protocol::H2Tls, 2),
    Step::Small(Row::Small1, 1),
    Step::Small(Row::Small16, 16),
    Step::SmallCounts,
    Step::S3,
];

/// One binary's servers: `weir serve` plain (SHA-256), `--no-hash`, TLS, on the S3 store;
/// each, or why it was not started.
pub struct Servers {
    pub plain: Result<Server, String>,
    pub no_hash: Result<Server, String>,
    pub tls: Result<Server, String>,
    pub s3: Result<Server, String>,
    /// The directories of the three local ones, in that order.
    pub roots: [PathBuf; 3],
}

impl Servers {
    /// The local server `i` (plain, no-hash, TLS).
    fn local(&self, i: usize) -> &Result<Server, String> {
        [&self.plain, &self.no_hash, &self.tls][i]
    }
}

/// What every step needs.
pub struct Context<'a> {
    pub z: &'a Sizes,
    pub s: &'a Settings,
    pub uploader: &'a Uploader,
    pub pattern: &'a Pattern,
    /// The counting probes, when they work here.
    pub probes: Option<&'a Probes>,
    /// The directory whose filesystem is flushed before every timed operation.
    pub sync_dir: &'a Path,
}

/// The name the large file is stored under.
const BIG: &str = "big.bin";
/// The S3 rows' object.
const S3_KEY: &str = "/files/s3.bin";

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Marks `rows` of binary `i` as not measured, with the reason.
fn missing(cells: &mut [[Cell; 2]], rows: &[Row], i: usize, why: &str) {
    for &row in rows {
        cell(cells, row, i).missing = Some(why.to_string());
    }
}

fn cell(cells: &mut [[Cell; 2]], row: Row, i: usize) -> &mut Cell {
    let at = ROWS.iter().position(|r| *r == row).expect("a row");
    &mut cells[at][i]
}

/// Seconds and server usage of `op` on `server`, after flushing what earlier rows left dirty.
fn timed(
    server: &Server,
    c: &Context<'_>,
    op: impl FnOnce() -> io::Result<f64>,
) -> io::Result<(f64, Usage)> {
    rustix::fs::syncfs(std::fs::File::open(c.sync_dir)?)?;
    usage(server, op)
}

fn remove_big(root: &Path) -> io::Result<()> {
    match std::fs::remove_file(root.join(BIG)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// One `GET` of the small file on `s` (keep-alive), its body checked.
fn small_get(s: &mut std::net::TcpStream) -> io::Result<()> {
    s.write_all(format!("GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())?;
    match read_response(s)? {
        (200, body) if body == BODY => Ok(()),
        (status, body) => Err(io::Error::other(format!(
            "GET {PATH}: {status} {:?}",
            String::from_utf8_lossy(&body)
        ))),
    }
}

/// `n` small `GET`s, each on a new connection closed after it.
fn small_gets_new(addr: SocketAddr, n: usize) -> io::Result<()> {
    for _ in 0..n {
        let head = format!("GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        match transfer::small(addr, &head, b"")? {
            200 => {}
            status => return Err(io::Error::other(format!("GET {PATH}: {status}"))),
        }
    }
    Ok(())
}

/// Puts `counts` (over `n` requests) into the rows `allocs` and `calls` of binary `i`.
fn push_counts(
    cells: &mut [[Cell; 2]],
    (allocs, calls): (Row, Row),
    i: usize,
    c: &Counts,
    n: usize,
) {
    let n_f = n as f64;
    cell(cells, allocs, i)
        .value
        .push(c.allocations as f64 / n_f);
    let syscalls = cell(cells, calls, i);
    syscalls.value.push(c.syscalls as f64 / n_f);
    syscalls.requests += n as u64;
    for (&call, &count) in &c.by_call {
        *syscalls.calls.entry(call).or_default() += count;
    }
}

/// Before the rounds: each server takes a small upload and download once, so that the first
/// round pays for no first connection, no lazily made state, no volume SeaweedFS creates, and
/// a server that does not work fails the run here.
pub fn warm(v: &Servers, c: &Context<'_>) -> io::Result<()> {
    let warm = 1 << 20;
    for (i, protocol) in [
        (0, Protocol::H1),
        (1, Protocol::H1),
        (2, Protocol::Https),
        (2, Protocol::H2Tls),
    ] {
        let Ok(server) = v.local(i) else { continue };
        let endpoint = Endpoint::Tcp(server.addr);
        c.uploader.put_file_over(protocol, &endpoint, BIG, warm)?;
        if i == 0 {
            transfer::get(
                server.addr,
                &format!("/files/{BIG}"),
                c.pattern,
                warm,
                PERIOD,
            )?;
        }
        remove_big(&v.roots[i])?;
    }
    if let Ok(server) = &v.s3 {
        transfer::put(server.addr, S3_KEY, c.pattern, warm)?;
        transfer::get(server.addr, S3_KEY, c.pattern, warm, PERIOD)?;
        delete(server.addr, S3_KEY)?;
    }
    Ok(())
}

fn delete(addr: SocketAddr, path: &str) -> io::Result<()> {
    let head = format!("DELETE {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    match transfer::small(addr, &head, b"")? {
        200 | 204 => Ok(()),
        status => Err(io::Error::other(format!("DELETE {path}: {status}"))),
    }
}

/// Runs `step` against binary `i`'s servers `v` and pushes its figures.
pub fn measure(
    step: Step,
    v: &Servers,
    cells: &mut [[Cell; 2]],
    i: usize,
    c: &Context<'_>,
) -> io::Result<()> {
    let z = c.z;
    match step {
        Step::Put(row, protocol, which) => {
            let server = match v.local(which) {
                Ok(s) => s,
                Err(why) => {
                    let mut rows = vec![row];
                    if row == Row::PutSha {
                        rows.extend([Row::Get, Row::AllocsBig, Row::SyscallsBig]);
                    }
                    missing(cells, &rows, i, why);
                    return Ok(());
                }
            };
            let endpoint = Endpoint::Tcp(server.addr);
            let (secs, used) = timed(server, c, || {
                Ok(c.uploader
                    .put_file_over(protocol, &endpoint, BIG, z.big)?
                    .seconds())
            })?;
            cell(cells, row, i).value.push(secs);
            cell(cells, row, i).cpu.push(used.cpu_s / gib(z.big));
            if row == Row::PutSha {
                let path = format!("/files/{BIG}");
                let get = || transfer::get(server.addr, &path, c.pattern, z.big, PERIOD);
                let (secs, used) = timed(server, c, get)?;
                cell(cells, Row::Get, i).value.push(secs);
                cell(cells, Row::Get, i).cpu.push(used.cpu_s / gib(z.big));
                if let Some(probes) = c.probes {
                    let counts = probes.count(&server.pid(), || {
                        for _ in 0..z.counted_big {
                            get()?;
                        }
                        Ok(())
                    })?;
                    let rows = (Row::AllocsBig, Row::SyscallsBig);
                    push_counts(cells, rows, i, &counts, z.counted_big);
                }
            }
            remove_big(&v.roots[which])
        }
        Step::Small(row, depth) => {
            let server = match &v.plain {
                Ok(s) => s,
                Err(why) => {
                    missing(cells, &[row], i, why);
                    return Ok(());
                }
            };
            let load = (64, depth, c.s.client_threads);
            let (win, used) = small_gets(server, PATH, BODY, load, (z.warmup, z.window))?;
            if win.errors > 0 {
                return Err(io::Error::other(format!(
                    "{} small GETs failed at depth {depth}",
                    win.errors
                )));
            }
            cell(cells, row, i).value.push(win.rps);
            let per = used.cpu_s * 1e6 / win.requests.max(1) as f64;
            cell(cells, row, i).cpu.push(per);
            Ok(())
        }
        Step::SmallCounts => {
            let counted = [
                Row::AllocsKeepAlive,
                Row::SyscallsKeepAlive,
                Row::AllocsNewConn,
                Row::SyscallsNewConn,
            ];
            let server = match &v.plain {
                Ok(s) => s,
                Err(why) => {
                    missing(cells, &counted, i, why);
                    return Ok(());
                }
            };
            let Some(probes) = c.probes else {
                return Ok(()); // the section says why every counted row is empty
            };
            let mut s = transfer::connect(server.addr)?;
            for _ in 0..z.counted {
                small_get(&mut s)?;
            }
            let counts = probes.count(&server.pid(), || {
                for _ in 0..z.counted {
                    small_get(&mut s)?;
                }
                Ok(())
            })?;
            let rows = (Row::AllocsKeepAlive, Row::SyscallsKeepAlive);
            push_counts(cells, rows, i, &counts, z.counted);
            // New connections: fewer (each costs the client a connect, the server an accept).
            let n = (z.counted / 10).max(10);
            small_gets_new(server.addr, n)?;
            let counts = probes.count(&server.pid(), || small_gets_new(server.addr, n))?;
            push_counts(
                cells,
                (Row::AllocsNewConn, Row::SyscallsNewConn),
                i,
                &counts,
                n,
            );
            Ok(())
        }
        Step::S3 => {
            let server = match &v.s3 {
                Ok(s) => s,
                Err(why) => {
                    missing(cells, &[Row::S3Put, Row::S3Get], i, why);
                    return Ok(());
                }
            };
            let (secs, used) = timed(server, c, || {
                transfer::put(server.addr, S3_KEY, c.pattern, z.s3)
            })?;
            cell(cells, Row::S3Put, i).value.push(secs);
            cell(cells, Row::S3Put, i).cpu.push(used.cpu_s / gib(z.s3));
            let (secs, used) = timed(server, c, || {
                transfer::get(server.addr, S3_KEY, c.pattern, z.s3, PERIOD)
            })?;
            cell(cells, Row::S3Get, i).value.push(secs);
            cell(cells, Row::S3Get, i).cpu.push(used.cpu_s / gib(z.s3));
            delete(server.addr, S3_KEY)
        }
    }
}
