//! Issue 18 item 7: how the server's cost grows with the number of keep-alive connections, and
//! with the runtime's threads.
//!
//! For each number of connections (1, 64, 1,024, 10,000 by default), every system serves two
//! paced loads, one after the other: small requests (a 2 KiB `POST /post`, `--rate` requests/s
//! in all) and uploads (`POST /upload` of `--upload-size`, `--upload-rate` uploads/s in all).
//! The total rate is the same whatever the number of connections, so what changes from row to
//! row is only how the work is spread: CPU per request (and per GiB) then shows what each
//! connection costs beyond its requests (wake-ups, less batching, cache footprint). Each
//! connection sends on its own fixed schedule (so with 10,000 connections and 10,000
//! requests/s, each sends once a second).
//!
//! Systems: weir's multi-thread runtime with 1 and 2 worker threads, weir per core (one
//! current-thread runtime per thread, 2 threads), and hyper with 2 worker threads as a
//! reference. Server CPU is the whole server process's user + system time over the window
//! (`CLOCK_PROCESS_CPUTIME_ID`, read over the child's control pipe).
//!
//! Not part of `all`: several minutes, and it needs `ulimit -n` above twice the largest
//! connection count (client and server sockets are in two processes, each needs one per
//! connection; the bench raises its soft limit to the hard one, and the server inherits it).

use super::{Peer, Settings, order, parse_duration, parse_size, size_label, unavailable_note};
use crate::client::load::{Load, LoadSpec};
use crate::report::{self, Section, table::Table};
use crate::server::{Sink, System};
use crate::stats::Samples;
use clap::Args;
use std::io;
use std::time::{Duration, Instant};

/// `weir-bench scale` options.
#[derive(Args, Clone, Debug)]
pub struct ScaleArgs {
    /// Keep-alive connection counts.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 64, 1024, 10_000])]
    pub connections: Vec<usize>,
    /// Small requests per second, over all connections.
    #[arg(long, default_value_t = 10_000.0)]
    pub rate: f64,
    /// Body size of the uploads.
    #[arg(long, value_parser = parse_size, default_value = "1M")]
    pub upload_size: usize,
    /// Uploads per second, over all connections.
    #[arg(long, default_value_t = 200.0)]
    pub upload_rate: f64,
    /// Measured window per run (default: 4s; `--quick`: 1s).
    #[arg(long, value_parser = parse_duration)]
    pub window: Option<Duration>,
}

impl Default for ScaleArgs {
    fn default() -> Self {
        Self {
            connections: vec![1, 64, 1024, 10_000],
            rate: 10_000.0,
            upload_size: 1 << 20,
            upload_rate: 200.0,
            window: None,
        }
    }
}

#[derive(Default)]
struct Cell {
    rps: Samples,
    cpu_us: Samples,
    p99_us: Samples,
    rss_kib: Samples,
}

/// Raises the soft limit on open descriptors to the hard one (10,000 connections need more
/// than the usual 1,024); the server children inherit it.
fn raise_nofile() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &ScaleArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    raise_nofile();
    let dir = tempfile::tempdir()?;
    let window = a.window.unwrap_or(s.pick(
        Duration::from_secs(4),
        Duration::from_secs(1),
        Duration::from_millis(200),
    ));
    let rounds = s.rounds(2, 1);
    let systems: [(&str, System, usize, bool); 4] = [
        ("weir, 1 thread", System::Weir, 1, false),
        ("weir, 2 threads", System::Weir, 2, false),
        ("weir per-core, 2 threads", System::Weir, 2, true),
        ("hyper, 2 threads", System::Hyper, 2, false),
    ];
    let mut peers = Vec::new();
    for (label, system, threads, per_core) in systems {
        let mut args = s.serve_args(system, Sink::Discard, dir.path());
        args.threads = threads;
        args.per_core = per_core;
        peers.push(Peer::start(label, &args)?);
    }
    let small = {
        let mut r =
            b"POST /post HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2048\r\n\r\n".to_vec();
        r.extend((0..2048).map(|i| b'a' + (i % 26) as u8));
        r
    };
    let upload = {
        let mut r = format!(
            "POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
            a.upload_size
        )
        .into_bytes();
        r.extend((0..a.upload_size).map(|i| b'a' + (i % 26) as u8));
        r
    };
    // [workload][connections][peer]
    let loads = [(&small, a.rate), (&upload, a.upload_rate)];
    let mut cells: Vec<Vec<Vec<Cell>>> = loads
        .iter()
        .map(|_| {
            a.connections
                .iter()
                .map(|_| peers.iter().map(|_| Cell::default()).collect())
                .collect()
        })
        .collect();
    for round in 0..rounds {
        for (ci, &connections) in a.connections.iter().enumerate() {
            for (w, (request, rate)) in loads.iter().enumerate() {
                for i in order(peers.len(), round) {
                    let peer = &mut peers[i];
                    let Ok(server) = &mut peer.server else {
                        continue;
                    };
                    let spec = LoadSpec {
                        endpoint: server.endpoint().clone(),
                        connections,
                        threads: s.client_threads,
                        depth: 1,
                        request: (*request).clone(),
                        rate: Some(*rate),
                        expect: None,
                    };
                    let load = Load::start(&spec)?;
                    // Long enough for every connection's first request at the smaller counts;
                    // with 10,000 the schedule is staggered over its interval anyway.
                    std::thread::sleep(s.pick(
                        Duration::from_secs(2),
                        Duration::from_millis(500),
                        Duration::from_millis(50),
                    ));
                    let (n0, st0, t0) = (load.completed(), server.stats()?, Instant::now());
                    load.record(true);
                    std::thread::sleep(window);
                    let (n1, st1, t1) = (load.completed(), server.stats()?, Instant::now());
                    load.record(false);
                    let r = load.finish()?;
                    if r.errors > 0 {
                        return Err(io::Error::other(format!(
                            "{} with {connections} connections: {} errors",
                            peer.label, r.errors
                        )));
                    }
                    let done = (n1 - n0).max(1) as f64;
                    let cell = &mut cells[w][ci][i];
                    cell.rps.push(done / (t1 - t0).as_secs_f64());
                    cell.cpu_us
                        .push(st1.cpu_ns.saturating_sub(st0.cpu_ns) as f64 / 1e3 / done);
                    cell.p99_us
                        .push(r.latency.value_at_quantile(0.99) as f64 / 1e3);
                    cell.rss_kib.push(st1.rss_kib as f64);
                }
            }
            eprintln!(
                "scale: round {}/{rounds}, {connections} connections done",
                round + 1
            );
        }
    }
    let mut body = format!(
        "Paced loads at a fixed total rate, spread over more and more keep-alive connections; \
         {rounds} round(s) of a {:.1} s window per cell, systems interleaved. Server CPU is the \
         server process's user + system time over the window; per GiB is per GiB of request \
         body. {} client thread(s).\n\n",
        window.as_secs_f64(),
        s.client_threads
    );
    for (w, (request, rate)) in loads.iter().enumerate() {
        let upload = w == 1;
        let what = if upload {
            format!(
                "Uploads of {} (`POST /upload`, discarded), {rate:.0} uploads/s in all",
                size_label(a.upload_size as u64)
            )
        } else {
            format!("2 KiB `POST /post`, {rate:.0} requests/s in all")
        };
        let mut t = Table::new(&[
            "System",
            "Connections",
            "Requests/s",
            "Server CPU µs/request",
            if upload {
                "Server CPU s/GiB"
            } else {
                "CPU × 64 connections"
            },
            "p99 (µs)",
            "Server RSS (MiB)",
        ]);
        for (i, peer) in peers.iter().enumerate() {
            if let Err(why) = &peer.server {
                t.row(vec![peer.label.clone(), unavailable_note(why)]);
                continue;
            }
            let base = a.connections.iter().position(|&c| c == 64);
            for (ci, &connections) in a.connections.iter().enumerate() {
                let c = &cells[w][ci][i];
                let extra = if upload {
                    let per_gib = (1u64 << 30) as f64 / (request.len() as f64);
                    format!("{:.3}", c.cpu_us.median() * per_gib / 1e6)
                } else {
                    base.map_or("—".into(), |b| {
                        c.cpu_us.ratio_to(&cells[w][b][i].cpu_us).show(2)
                    })
                };
                t.row(vec![
                    peer.label.clone(),
                    connections.to_string(),
                    c.rps.show(0),
                    c.cpu_us.show(1),
                    extra,
                    c.p99_us.show(0),
                    format!("{:.1}", c.rss_kib.median() / 1024.0),
                ]);
            }
        }
        body.push_str(&format!("{what}:\n\n{}\n", t.markdown()));
    }
    drop(peers);
    let section = Section {
        scenario: "scale",
        title: "scale: server CPU per request and per GiB as connections grow (issue 18 item 7)"
            .into(),
        body,
        charts: Vec::new(),
    };
    report::publish(&s.target, &ctx, &section)
}
