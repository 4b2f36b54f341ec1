//! Issue 34 point 6: WebDAV `PUT` and `GET` of one large file and `PROPFIND` (depth 1) of a
//! folder of many entries, through `weir serve` (`/dav/`), dufs (`dufs -A`, the closest Rust
//! peer) and `rclone serve webdav`, each on its own empty directory of the same filesystem.
//!
//! The peers are outside programs, found on the `PATH` (`cargo install dufs --locked`; Debian's
//! `rclone`): one that is missing becomes a row without figures, and the others still run.
//! Every server is a child process started with its defaults (no authentication, loopback), so
//! each row's server CPU time (`utime + stime` from `/proc/<pid>/stat`, 10 ms ticks: a 1 GiB
//! transfer takes seconds) and peak RSS (`VmHWM`, reset through `clear_refs` before each
//! request) are its own.
//!
//! Every round, operation by operation, the servers run interleaved (forward, then backward:
//! [`order`]), so drift in a shared machine's load hits each alike; the table gives medians and
//! min–max, the ratios are medians of round-by-round ratios. Every `GET` compares each byte with
//! the body sent; every `PROPFIND` counts the answer's `response` elements. Before the rounds,
//! each server gets the folder's entries (empty files, by `PUT`, each on its own connection, not
//! measured) and one small file each way (its first connection and files made outside the
//! rounds).

use super::child::{Server, free_port, spawn, usage, weir_serve};
use super::s3::{PERIOD, Pattern};
use super::transfer::{dechunk, get, put, small};
use super::upload::service::weir_binary;
use super::{Settings, order, size_label};
use crate::clock;
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::stats::Samples;
use crate::wire;
use clap::Args;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `weir-bench webdav` options.
#[derive(Args, Clone, Debug, Default)]
pub struct WebdavArgs {
    /// Size of the file put and got (default: 1 GiB; `--quick`: 256 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
    /// Entries of the folder listed (default: 10,000; `--quick`: 2,000).
    #[arg(long)]
    pub entries: Option<usize>,
    /// The `weir` binary (default: `weir` next to this executable).
    #[arg(long)]
    pub weir: Option<PathBuf>,
}

/// The systems, in row order; the first is the one the ratios divide.
const SYSTEMS: [&str; 3] = ["weir serve", "dufs", "rclone serve webdav"];
/// The operations, in column order.
const OPS: [&str; 3] = ["PUT", "GET", "PROPFIND depth 1"];

/// Starts system `i` on `root`, or says why it cannot run here.
fn start(i: usize, weir: &Path, root: &Path) -> io::Result<Result<Server, String>> {
    let port = free_port()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let on_path = |name: &str| weir_testkit::tools::on_path(name).is_some();
    let (cmd, prefix) = match i {
        0 => {
            let mut c = weir_serve(weir, root, addr);
            c.arg("--no-access-log");
            (c, "/dav/")
        }
        1 if !on_path("dufs") => return Ok(Err("no `dufs` (cargo install dufs --locked)".into())),
        1 => {
            let mut c = Command::new("dufs");
            c.arg("-A")
                .args(["-b", "127.0.0.1", "-p", &port.to_string()])
                .arg(root);
            (c, "/")
        }
        _ if !on_path("rclone") => return Ok(Err("no `rclone` (apt-get install rclone)".into())),
        _ => {
            let mut c = Command::new("rclone");
            c.args(["serve", "webdav"])
                .arg(root)
                .args(["--addr", &addr.to_string()])
                .env("RCLONE_CONFIG", "/dev/null");
            (c, "/")
        }
    };
    spawn(cmd, addr, prefix, None).map(Ok)
}

/// The properties rclone's `webdav` backend asks for when it lists a folder.
const PROPFIND_BODY: &str = "<?xml version=\"1.0\"?><d:propfind xmlns:d=\"DAV:\"><d:prop>\
<d:displayname/><d:getlastmodified/><d:getcontentlength/><d:resourcetype/>\
<d:getcontenttype/></d:prop></d:propfind>";

/// `PROPFIND` depth 1 of `path`, read to the end (dechunked when chunked); timed from connect
/// to the last byte. Returns the seconds and the number of `response` elements.
fn propfind(addr: SocketAddr, path: &str) -> io::Result<(f64, usize)> {
    let start = clock::monotonic_ns();
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let head = format!(
        "PROPFIND {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nDepth: 1\r\nContent-Type: application/xml\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{PROPFIND_BODY}",
        PROPFIND_BODY.len()
    );
    s.write_all(head.as_bytes())?;
    // The whole answer is kept (a few MiB for 10,000 entries): counting needs the dechunked body.
    let mut all = Vec::new();
    s.read_to_end(&mut all)?;
    let seconds = (clock::monotonic_ns() - start) as f64 / 1e9;
    let head_len = wire::head_len(&all).ok_or_else(|| io::Error::other("PROPFIND: no head"))?;
    if !all.starts_with(b"HTTP/1.1 207") {
        return Err(io::Error::other(format!(
            "PROPFIND {path}: {:?}",
            String::from_utf8_lossy(&all[..head_len])
        )));
    }
    let body = if wire::is_chunked(&all[..head_len]) {
        dechunk(&all[head_len..])?
    } else {
        all[head_len..].to_vec()
    };
    Ok((seconds, count_responses(&body)))
}

/// How many `response` elements close in `xml`, whatever their namespace prefix
/// (`</D:response>`, `</d:response>`, `</response>`).
fn count_responses(xml: &[u8]) -> usize {
    memchr::memmem::find_iter(xml, b"response>")
        .filter(|&i| {
            let open = xml[..i].iter().rposition(|&c| c == b'<');
            open.is_some_and(|o| {
                xml.get(o + 1) == Some(&b'/')
                    && xml[o + 2..i].iter().all(|&c| c != b'>' && c != b' ')
                    && (o + 2 == i || xml[i - 1] == b':')
            })
        })
        .count()
}

/// One operation's figures for one system: wall seconds, server CPU seconds, peak RSS in MiB.
#[derive(Default)]
struct Cell {
    seconds: Samples,
    cpu: Samples,
    peak_mib: Samples,
}

/// Runs `op` against `server`, measuring its CPU time and peak RSS around it.
fn measured(
    server: &Server,
    cell: &mut Cell,
    op: impl FnOnce() -> io::Result<f64>,
) -> io::Result<()> {
    let (seconds, used) = usage(server, op)?;
    cell.seconds.push(seconds);
    cell.cpu.push(used.cpu_s);
    cell.peak_mib.push(used.peak_mib);
    Ok(())
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &WebdavArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let size = a.size.unwrap_or(s.pick(1 << 30, 256 << 20, 8 << 20)) as u64;
    let entries = a.entries.unwrap_or(s.pick(10_000, 2_000, 100));
    let rounds = s.rounds(5, 2);
    let weir = weir_binary(a.weir.as_deref())?;
    let data = tempfile::tempdir_in(std::env::temp_dir())?;
    let mut servers = Vec::new();
    for i in 0..SYSTEMS.len() {
        let root = data.path().join(format!("root{i}"));
        std::fs::create_dir(&root)?;
        servers.push(start(i, &weir, &root)?);
    }
    let pattern = Pattern::new();
    for server in servers.iter().flatten() {
        let (addr, pre) = (server.addr, server.prefix);
        put(addr, &format!("{pre}warm.bin"), &pattern, 1 << 20)?;
        get(addr, &format!("{pre}warm.bin"), &pattern, 1 << 20, PERIOD)?;
        let mkcol = format!("MKCOL {pre}many/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        if small(addr, &mkcol, b"")? != 201 {
            return Err(io::Error::other(format!("MKCOL {pre}many/ refused")));
        }
        for e in 0..entries {
            let head = format!(
                "PUT {pre}many/entry-{e:05} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
            );
            let status = small(addr, &head, b"")?;
            if !matches!(status, 200 | 201 | 204) {
                return Err(io::Error::other(format!("PUT entry {e}: {status}")));
            }
        }
    }
    eprintln!("webdav: servers ready, {entries} entries each");
    let mut cells: Vec<Vec<Cell>> = (0..SYSTEMS.len())
        .map(|_| (0..OPS.len()).map(|_| Cell::default()).collect())
        .collect();
    for round in 0..rounds {
        for (op, _) in OPS.iter().enumerate() {
            for i in order(SYSTEMS.len(), round) {
                let Ok(server) = &servers[i] else { continue };
                let (addr, pre) = (server.addr, server.prefix);
                let cell = &mut cells[i][op];
                match op {
                    0 => measured(server, cell, || {
                        put(addr, &format!("{pre}big.bin"), &pattern, size)
                    })?,
                    1 => measured(server, cell, || {
                        get(addr, &format!("{pre}big.bin"), &pattern, size, PERIOD)
                    })?,
                    _ => measured(server, cell, || {
                        let (secs, n) = propfind(addr, &format!("{pre}many/"))?;
                        // The folder itself and its entries.
                        if n != entries + 1 {
                            return Err(io::Error::other(format!(
                                "{}: PROPFIND listed {n} responses, expected {}",
                                SYSTEMS[i],
                                entries + 1
                            )));
                        }
                        Ok(secs)
                    })?,
                }
            }
        }
        eprintln!("webdav: round {}/{rounds} done", round + 1);
    }
    let missing: Vec<(usize, String)> = servers
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.as_ref().err().map(|why| (i, why.clone())))
        .collect();
    drop(servers);
    let section = section(size, entries, rounds, &cells, &missing);
    report::publish(&s.target, &ctx, &section)
}

/// The report's section.
fn section(
    size: u64,
    entries: usize,
    rounds: usize,
    cells: &[Vec<Cell>],
    missing: &[(usize, String)],
) -> Section {
    let mut t = Table::new(&[
        "Operation",
        "Server",
        "Time (s)",
        "Server CPU (s)",
        "Peak RSS (MiB)",
    ]);
    for (op, name) in OPS.iter().enumerate() {
        for (i, system) in SYSTEMS.iter().enumerate() {
            let c = &cells[i][op];
            let note = missing.iter().find(|(m, _)| *m == i);
            t.row(match note {
                Some((_, why)) => vec![
                    name.to_string(),
                    system.to_string(),
                    super::unavailable_note(why),
                    "—".into(),
                    "—".into(),
                ],
                None => vec![
                    name.to_string(),
                    system.to_string(),
                    c.seconds.show(3),
                    c.cpu.show(2),
                    c.peak_mib.show(1),
                ],
            });
        }
    }
    let mut ratios = Table::new(&[
        "weir serve ÷ peer (median of round-by-round ratios, min–max; below 1: weir ahead)",
        "Time",
        "Server CPU",
        "Peak RSS",
    ]);
    for (op, name) in OPS.iter().enumerate() {
        for (i, system) in SYSTEMS.iter().enumerate().skip(1) {
            let (w, p) = (&cells[0][op], &cells[i][op]);
            ratios.row(vec![
                format!("{name}: ÷ {system}"),
                w.seconds.ratio_to(&p.seconds).show(2),
                w.cpu.ratio_to(&p.cpu).show(2),
                w.peak_mib.ratio_to(&p.peak_mib).show(2),
            ]);
        }
    }
    let body = format!(
        "Three WebDAV servers on loopback, each on its own empty directory of the same \
         filesystem, with its defaults and no authentication: `weir serve` (`/dav/`, the \
         `weir` binary, SHA-256 on), `dufs -A` and `rclone serve webdav`. Per round, for each \
         operation, the servers run interleaved (forward, then backward); {rounds} rounds. \
         `PUT`: {} from memory with `Content-Length` over one new HTTP/1.1 connection, timed \
         from connect to the answer (each round overwrites the last round's file). `GET`: that \
         file, timed to the last byte, every byte compared with what was sent. `PROPFIND`: \
         depth 1 of a folder of {entries} empty files (put before the rounds), asking for the \
         properties rclone lists with, timed to the last byte, its `response` elements counted \
         ({} expected). Server CPU: the server process's `utime + stime` (`/proc/<pid>/stat`, \
         10 ms ticks) over the request; peak RSS: its `VmHWM`, reset before the request. The \
         machine is shared (2 cores; other tenants compile and test: see the CPU figures \
         above): trust the medians of the round-by-round ratios more than the absolute times.\
         \n\n{}\n{}",
        size_label(size),
        entries + 1,
        t.markdown(),
        ratios.markdown(),
    );
    Section {
        scenario: "webdav",
        title: format!(
            "webdav: PUT and GET of {}, PROPFIND of {entries} entries, against dufs and rclone (issue 34)",
            size_label(size)
        ),
        body,
        charts: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_closing_response_elements_of_any_prefix() {
        let xml = b"<D:multistatus><D:response><D:href>/a</D:href></D:response>\
            <d:response/><response><responsedescription>x</responsedescription></response>\
            </D:multistatus>";
        // `<d:response/>` closes nothing by that name: 2 counted.
        assert_eq!(count_responses(xml), 2);
    }
}
