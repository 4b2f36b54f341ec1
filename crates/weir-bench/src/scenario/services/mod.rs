//! Issue 37: `weir serve` against the services people run instead of it (nginx with WebDAV
//! `PUT`, dufs, copyparty, SeaweedFS's filer, rclone serve), each started the way its users
//! start it ([`peers`]), on loopback, on the same work, in the same rounds, interleaved, with
//! the server's CPU and peak RSS beside every throughput ([`crate::scenario::child::usage`]).
//!
//! Rows ([`Row`]), every answer checked (a `PUT`'s status, every byte of a `GET`, a listing's
//! count):
//! - one large `PUT` and one large `GET` of that file (1 GiB), over one new connection each;
//! - many 4 KiB `PUT`s (10,000) over 64 keep-alive connections, into a new folder each round;
//! - many concurrent `GET`s of one file, one connection each (1,000; the file scaled down from
//!   the 100 MiB to 8 MiB so a round fits the run's time: `--fan-size 100M` runs the
//!   issue's);
//! - a folder of 50,000 entries listed whole by 16 clients at once, in each service's own
//!   listing format ([`listing`]);
//! - a 4 KiB file's `GET` at 64 keep-alive connections, closed loop: requests/s and p99.
//!
//! Per round, row by row, the services run in [`order`] (forward, then backward). The large
//! `PUT`, its `GET` and the file's removal run together per service, so that one large file at
//! a time is on the disk. Before every measured operation `syncfs` flushes what the last one
//! left dirty, so no row pays for another's writeback. `weir serve --no-hash` runs the `PUT`
//! rows only (it reads as weir serve does).
//!
//! Then [`access_log`]: the access log's cost at plaintext-sized answers, depth 1 and 16.

pub(in crate::scenario) mod access_log;
mod listing;
pub(in crate::scenario) mod many;
mod peers;
mod section;

use super::child::{Usage, usage};
use super::s3::{PERIOD, Pattern};
use super::transfer::{self, small};
use super::upload::service::weir_binary;
use super::{Settings, order};
use crate::report;
use crate::stats::Samples;
use clap::Args;
use peers::{KINDS, Kind, Service};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `weir-bench services` options.
#[derive(Args, Clone, Debug, Default)]
pub struct ServicesArgs {
    /// Size of the large file put and got (default 1 GiB; `--quick`: 128 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
    /// Small files put per round (default 10,000; `--quick`: 2,000).
    #[arg(long)]
    pub files: Option<usize>,
    /// Concurrent `GET`s of the fan-out row (default 1,000; `--quick`: 200).
    #[arg(long)]
    pub fan_conns: Option<usize>,
    /// Size of the fan-out row's file (default 8 MiB; `--quick`: 4 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub fan_size: Option<usize>,
    /// Entries of the listed folder (default 50,000; `--quick`: 5,000).
    #[arg(long)]
    pub entries: Option<usize>,
    /// The `weir` binary (default: `weir` next to this executable).
    #[arg(long)]
    pub weir: Option<PathBuf>,
    /// Pause the kernel's free page reporting (virtio-balloon) for the run, and restore it after
    /// (`prefault.rs`; the upload scenario's flag). Needs root.
    #[arg(long)]
    pub pause_page_reporting: bool,
}

/// Size of each small file (the many-`PUT`s row and the small `GET`).
const SMALL: usize = 4 << 10;
/// Keep-alive connections of the many-`PUT`s and small-`GET` rows.
const CONNS: usize = 64;
/// Clients listing at once.
const LISTERS: usize = 16;
/// The listed folder.
const MANY: &str = "many/";

/// The rows, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    Put,
    Get,
    SmallPuts,
    FanOut,
    Listing,
    SmallGet,
}

const ROWS: [Row; 6] = [
    Row::Put,
    Row::Get,
    Row::SmallPuts,
    Row::FanOut,
    Row::Listing,
    Row::SmallGet,
];

impl Row {
    /// Whether `kind` runs this row.
    fn runs(self, kind: Kind) -> bool {
        matches!(self, Row::Put | Row::SmallPuts) || kind.reads()
    }
}

/// One row's figures for one service, one sample per round.
#[derive(Default)]
pub struct Cell {
    /// Throughput, in the row's unit.
    pub rate: Samples,
    /// p99 latency, µs (the small `GET` only).
    pub p99_us: Samples,
    /// Server CPU per unit of work, in the row's CPU unit.
    pub cpu: Samples,
    /// Peak RSS, MiB.
    pub peak_mib: Samples,
    /// The rounds a peer failed (1-based) and how: the row measured nothing for it then.
    pub failures: Vec<(usize, String)>,
}

impl Cell {
    fn push(&mut self, rate: f64, cpu_per_unit: f64, used: Usage) {
        self.rate.push(rate);
        self.cpu.push(cpu_per_unit);
        self.peak_mib.push(used.peak_mib);
    }

    /// A round that failed: nothing measured, the rounds kept paired.
    fn failed(&mut self, round: usize, why: String) {
        self.rate.push_missing();
        self.cpu.push_missing();
        self.peak_mib.push_missing();
        self.p99_us.push_missing();
        self.failures.push((round + 1, why));
    }
}

/// A row's outcome for `svc` in `round`: a peer that failed (an error status, a wrong body, a
/// dropped connection: SeaweedFS once answered 500 to 1,000 concurrent `GET`s of 100 MiB) fails
/// its cell for that round, shown in the table, and the run goes on. weir serve failing stops
/// the run: that is a bug to fix, not a figure.
fn noted(
    result: io::Result<()>,
    row: Row,
    svc: &Service,
    cell: &mut Cell,
    round: usize,
) -> io::Result<()> {
    match result {
        Err(e) if !svc.kind.is_weir() => {
            eprintln!("services: {} failed {}: {e}", svc.kind.label(), row.short());
            cell.failed(round, e.to_string());
            Ok(())
        }
        other => other,
    }
}

/// The run's sizes.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub big: u64,
    pub files: usize,
    pub fan_conns: usize,
    pub fan_size: u64,
    pub entries: usize,
    pub warmup: Duration,
    pub window: Duration,
}

fn sizes(s: &Settings, a: &ServicesArgs) -> Sizes {
    let load = many::load_times(s);
    Sizes {
        big: a.size.unwrap_or(s.pick(1 << 30, 128 << 20, 4 << 20)) as u64,
        files: a.files.unwrap_or(s.pick(10_000, 2_000, 200)),
        fan_conns: a.fan_conns.unwrap_or(s.pick(1_000, 200, 20)),
        fan_size: a.fan_size.unwrap_or(s.pick(8 << 20, 4 << 20, 1 << 20)) as u64,
        entries: a.entries.unwrap_or(s.pick(50_000, 5_000, 300)),
        warmup: load.0,
        window: load.1,
    }
}

/// Flushes the dirty pages of the filesystem holding `dir`.
fn sync(dir: &Path) -> io::Result<()> {
    Ok(rustix::fs::syncfs(std::fs::File::open(dir)?)?)
}

/// Removes `name` (a file, or a folder and everything in it) from a service, outside the
/// timing: from its directory, or through the filer (SeaweedFS keeps no plain files).
fn remove(svc: &Service, name: &str) -> io::Result<()> {
    match &svc.root {
        Some(root) => {
            let path = root.join(name.trim_end_matches('/'));
            let r = if name.ends_with('/') {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            match r {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        }
        None => {
            let w = &svc.write;
            let head = format!(
                "DELETE {}{name}?recursive=true HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                w.prefix
            );
            match small(w.addr, &head, b"")? {
                200..=299 | 404 => Ok(()),
                status => Err(io::Error::other(format!("DELETE {name}: {status}"))),
            }
        }
    }
}

/// Puts what the read rows read, outside the timing: a file for the fan-out, a small file, and
/// the listed folder (written to the directory where the service serves one: a folder of
/// 50,000 files made by `PUT` would take most of a run; through the filer for SeaweedFS).
fn prepare(svc: &Service, z: &Sizes, p: &Arc<Pattern>) -> io::Result<()> {
    let (addr, pre) = (svc.write.addr, svc.write.prefix);
    transfer::put(addr, &format!("{pre}warm.bin"), p, 1 << 20)?;
    transfer::get(
        svc.reader().addr,
        &format!("{pre}warm.bin"),
        p,
        1 << 20,
        PERIOD,
    )?;
    if !svc.kind.reads() {
        return Ok(());
    }
    transfer::put(addr, &format!("{pre}fan.bin"), p, z.fan_size)?;
    transfer::put(addr, &format!("{pre}small.bin"), p, SMALL as u64)?;
    match &svc.root {
        Some(root) => {
            let dir = root.join(MANY);
            std::fs::create_dir_all(&dir)?;
            for e in 0..z.entries {
                std::fs::write(dir.join(format!("f-{e:05}")), b"x")?;
            }
        }
        None => {
            many::puts(addr, &format!("{pre}{MANY}"), z.entries, 1, CONNS, p)?;
        }
    }
    Ok(())
}

/// Creates folder `name` first where a service needs it or once needed it: rclone serve webdav
/// creates no parents (404); weir serve's 64 `PUT`s racing to create the same parent once
/// answered one of them 409 "not a directory" (fixed in weir-store, tested by weir-cli's
/// `tests/service/first_uploads.rs`); its folder is still made by `PUT /files/DIR/` so that
/// rounds measured before and after the fix compare alike. The others create parents as they
/// go.
fn make_folder(svc: &Service, name: &str) -> io::Result<()> {
    let w = &svc.write;
    let method = match svc.kind {
        Kind::Rclone => "MKCOL",
        k if k.is_weir() => "PUT",
        _ => return Ok(()),
    };
    let head = format!(
        "{method} {}{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        w.prefix
    );
    match small(w.addr, &head, b"")? {
        200 | 201 => Ok(()),
        status => Err(io::Error::other(format!("{method} {name}: {status}"))),
    }
}

/// Runs one row for one service in round `round` and pushes its figures.
fn measure(
    row: Row,
    svc: &Service,
    cell: &mut Cell,
    round: usize,
    z: &Sizes,
    s: &Settings,
    p: &Arc<Pattern>,
) -> io::Result<()> {
    let (w, r) = (&svc.write, svc.reader());
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    match row {
        Row::Put => {
            let path = format!("{}big.bin", w.prefix);
            let (secs, used) = usage(w, || transfer::put(w.addr, &path, p, z.big))?;
            cell.push(mib(z.big) / secs, used.cpu_s / gib(z.big), used);
        }
        Row::Get => {
            let path = format!("{}big.bin", r.prefix);
            let (secs, used) = usage(r, || transfer::get(r.addr, &path, p, z.big, PERIOD))?;
            cell.push(mib(z.big) / secs, used.cpu_s / gib(z.big), used);
        }
        Row::SmallPuts => {
            let dir = format!("small-{round}/");
            make_folder(svc, &dir)?;
            let base = format!("{}{dir}", w.prefix);
            let (secs, used) = usage(w, || many::puts(w.addr, &base, z.files, SMALL, CONNS, p))?;
            let n = z.files as f64;
            cell.push(n / secs, used.cpu_s * 1e6 / n, used);
        }
        Row::FanOut => {
            let path = format!("{}fan.bin", r.prefix);
            let (secs, used) = usage(r, || {
                many::fan_out(r.addr, &path, z.fan_size, z.fan_conns, p)
            })?;
            let bytes = z.fan_size * z.fan_conns as u64;
            cell.push(mib(bytes) / secs, used.cpu_s / gib(bytes), used);
        }
        Row::Listing => {
            let each = 1;
            let (secs, used) = usage(r, || {
                many::listings(
                    r.addr,
                    r.prefix,
                    MANY,
                    svc.format,
                    (LISTERS, each),
                    z.entries,
                )
            })?;
            let n = (LISTERS * each) as f64;
            cell.push(n / secs, used.cpu_s * 1e3 / n, used);
        }
        Row::SmallGet => {
            let path = format!("{}small.bin", r.prefix);
            let body = p.at(0, SMALL);
            let threads = s.client_threads;
            let (win, used) =
                many::small_gets(r, &path, body, (CONNS, 1, threads), (z.warmup, z.window))?;
            if win.errors > 0 {
                return Err(io::Error::other(format!(
                    "{}: {} small GETs failed (status, body or connection)",
                    svc.kind.label(),
                    win.errors
                )));
            }
            cell.push(win.rps, used.cpu_s * 1e6 / win.requests.max(1) as f64, used);
            cell.p99_us.push(win.p99_us);
        }
    }
    Ok(())
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &ServicesArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let z = sizes(s, a);
    let rounds = s.rounds(3, 1);
    let weir = weir_binary(a.weir.as_deref())?;
    let (_reporting_pause, reporting_note) =
        crate::prefault::pause_page_reporting(a.pause_page_reporting)?;
    let data = tempfile::Builder::new()
        .prefix("services-")
        .tempdir_in(std::env::temp_dir())?;
    let scratch = data.path().join("scratch");
    std::fs::create_dir(&scratch)?;
    let mut services = Vec::new();
    for kind in KINDS {
        let root = data.path().join(format!("{kind:?}").to_lowercase());
        std::fs::create_dir(&root)?;
        services.push(peers::start(kind, &weir, &root, &scratch)?);
    }
    let p = Arc::new(Pattern::new());
    for svc in services.iter().flatten() {
        prepare(svc, &z, &p)?;
    }
    eprintln!(
        "services: ready, {} entries in each listed folder",
        z.entries
    );
    let mut cells: Vec<Vec<Cell>> = ROWS
        .iter()
        .map(|_| KINDS.iter().map(|_| Cell::default()).collect())
        .collect();
    let at = |row: Row| ROWS.iter().position(|r| *r == row).expect("a row");
    for round in 0..rounds {
        let mut run = |row: Row, svc: &Service, i: usize| {
            let cell = &mut cells[at(row)][i];
            let result = measure(row, svc, cell, round, &z, s, &p);
            noted(result, row, svc, cell, round)
        };
        // The large file: PUT, GET, removed, service by service (one on the disk at a time).
        for i in order(services.len(), round) {
            let Ok(svc) = &services[i] else { continue };
            sync(data.path())?;
            run(Row::Put, svc, i)?;
            if Row::Get.runs(svc.kind) {
                run(Row::Get, svc, i)?;
            }
            remove(svc, "big.bin")?;
        }
        for row in [Row::SmallPuts, Row::FanOut, Row::Listing, Row::SmallGet] {
            for i in order(services.len(), round) {
                let Ok(svc) = &services[i] else { continue };
                if !row.runs(svc.kind) {
                    continue;
                }
                sync(data.path())?;
                run(row, svc, i)?;
            }
        }
        for svc in services.iter().flatten() {
            remove(svc, &format!("small-{round}/"))?;
        }
        eprintln!("services: round {}/{rounds} done", round + 1);
    }
    let log_cost = access_log::run(s, &weir, &scratch, rounds, &z)?;
    let missing: Vec<(usize, String)> = services
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.as_ref().err().map(|why| (i, why.clone())))
        .collect();
    drop(services);
    let section = section::section(&z, rounds, &cells, &missing, &log_cost, &reporting_note);
    report::publish(&s.target, &ctx, &section)
}
