//! Seed 003: plaintext requests per second, pipelined and not, and heap allocations per request.
//!
//! Systems: the raw responder (an epoll loop per thread), weir (on a multi-threaded runtime, and
//! per-core: a current-thread runtime per thread behind `SO_REUSEPORT`), hyper with and without
//! `pipeline_flush`, and hyper per-core with `pipeline_flush` (as TechEmpower runs it). For each depth
//! (requests in flight per connection) and round, each system gets the same load: `connections`
//! keep-alive connections from [`crate::client::load`], a warm-up, then a measured window. Over
//! the window: requests/s, latency percentiles, the server's CPU time per request, and its heap
//! allocations per request (the server's own counting allocator, queried over the control pipe
//! just before and just after the window: a real count, not an estimate).
//!
//! `--duration 60s` runs the sustained mode instead: each system alone for that long, requests/s
//! per interval, and every interval below 0.9 × the run's median flagged (the seed's server
//! degraded from 311k to 61k requests/s over three minutes).
//!
//! `--wrk` cross-checks the load generator: the same servers measured with wrk, figures side by
//! side (wrk is optional; it is not installed in CI).

use super::{Peer, Settings, parse_duration, unavailable_note};
use crate::client::load::{Load, LoadSpec};
use crate::client::wrk;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::server::{ServeArgs, Sink, System};
use crate::stats::Samples;
use crate::{clock, procfs};
use clap::Args;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// `weir-bench plaintext` options.
#[derive(Args, Clone, Debug)]
pub struct PlaintextArgs {
    /// Keep-alive connections.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Pipelining depths to run.
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    pub depths: Vec<usize>,
    /// Measured window per run (default: 10s; `--quick`: 1s).
    #[arg(long, value_parser = parse_duration)]
    pub window: Option<Duration>,
    /// Sustained mode: run each system this long, reporting each interval.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Sustained mode: interval length.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub interval: Duration,
    /// Also measure with wrk (if installed) and report both figures.
    #[arg(long)]
    pub wrk: bool,
}

impl Default for PlaintextArgs {
    fn default() -> Self {
        Self {
            connections: 64,
            depths: vec![1, 16],
            window: None,
            duration: None,
            interval: Duration::from_secs(5),
            wrk: false,
        }
    }
}

/// The request every client sends, as wrk sends it.
pub const REQUEST: &[u8] = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

fn peers(s: &Settings, dir: &Path) -> io::Result<Vec<Peer>> {
    let args = |system, per_core, pipeline_flush| {
        let mut a = s.serve_args(system, Sink::Discard, dir);
        a.per_core = per_core;
        a.pipeline_flush = pipeline_flush;
        a
    };
    let specs: [(&str, ServeArgs); 6] = [
        ("raw responder", args(System::RawResponder, false, false)),
        ("weir", args(System::Weir, false, false)),
        ("weir, per-core", args(System::Weir, true, false)),
        ("hyper", args(System::Hyper, false, false)),
        ("hyper, pipeline_flush", args(System::Hyper, false, true)),
        (
            "hyper, per-core, pipeline_flush",
            args(System::Hyper, true, true),
        ),
    ];
    specs
        .into_iter()
        .map(|(label, args)| Peer::start(label, &args))
        .collect()
}

#[derive(Default)]
struct Cell {
    rps: Samples,
    p50_us: Samples,
    p99_us: Samples,
    allocs_per_req: Samples,
    cpu_us_per_req: Samples,
    errors: u64,
}

/// Runs the scenario (or the sustained mode) and publishes its section.
pub fn run(s: &Settings, a: &PlaintextArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let dir = tempfile::tempdir()?;
    let mut peers = peers(s, dir.path())?;
    if let Some(d) = a.duration {
        let section = sustained(s, a, &mut peers, d)?;
        drop(peers); // stop the servers: the report counts their CPU as the bench's own
        return report::publish(&s.target, &ctx, &section);
    }
    let window = a.window.unwrap_or(s.pick(
        Duration::from_secs(10),
        Duration::from_secs(1),
        Duration::from_millis(100),
    ));
    let warmup = s.pick(
        Duration::from_secs(2),
        Duration::from_millis(500),
        Duration::from_millis(30),
    );
    let rounds = s.rounds(3, 2);
    let mut cells: Vec<Vec<Cell>> = a
        .depths
        .iter()
        .map(|_| peers.iter().map(|_| Cell::default()).collect())
        .collect();
    for round in 0..rounds {
        for (d, &depth) in a.depths.iter().enumerate() {
            for (i, peer) in peers.iter_mut().enumerate() {
                let Ok(server) = &mut peer.server else {
                    continue;
                };
                let spec = LoadSpec {
                    endpoint: server.endpoint().clone(),
                    connections: a.connections,
                    threads: s.client_threads,
                    depth,
                    request: REQUEST.to_vec(),
                };
                let load = Load::start(&spec)?;
                std::thread::sleep(warmup);
                let before = server.stats()?;
                let (n0, t0) = (load.completed(), Instant::now());
                load.record(true);
                std::thread::sleep(window);
                let (n1, t1) = (load.completed(), Instant::now());
                let after = server.stats()?;
                load.record(false);
                let result = load.finish()?;
                let n = (n1 - n0).max(1) as f64;
                let c = &mut cells[d][i];
                c.rps.push(n / (t1 - t0).as_secs_f64());
                c.p50_us
                    .push(result.latency.value_at_quantile(0.5) as f64 / 1e3);
                c.p99_us
                    .push(result.latency.value_at_quantile(0.99) as f64 / 1e3);
                c.allocs_per_req
                    .push((after.allocations - before.allocations) as f64 / n);
                c.cpu_us_per_req
                    .push((after.cpu_ns - before.cpu_ns) as f64 / 1e3 / n);
                c.errors += result.errors;
            }
        }
        eprintln!("plaintext: round {}/{rounds} done", round + 1);
    }
    let mut t = Table::new(&[
        "System",
        "Depth",
        "Requests/s",
        "× raw",
        "p50 (µs)",
        "p99 (µs)",
        "Server CPU (µs/req)",
        "Allocations/req",
        "Errors",
    ]);
    let mut bars = Vec::new();
    for (d, &depth) in a.depths.iter().enumerate() {
        for (i, peer) in peers.iter().enumerate() {
            let c = &cells[d][i];
            let label = format!("{}, depth {depth}", peer.label);
            if let Err(why) = &peer.server {
                t.row(vec![
                    peer.label.clone(),
                    depth.to_string(),
                    unavailable_note(why),
                ]);
                bars.push(Bar { label, value: None });
                continue;
            }
            t.row(vec![
                peer.label.clone(),
                depth.to_string(),
                c.rps.show(0),
                c.rps.ratio_to(&cells[d][0].rps).show(2),
                c.p50_us.show(0),
                c.p99_us.show(0),
                c.cpu_us_per_req.show(2),
                c.allocs_per_req.show(2),
                c.errors.to_string(),
            ]);
            bars.push(Bar {
                label,
                value: Some((c.rps.median(), c.rps.min(), c.rps.max())),
            });
        }
    }
    let mut body = format!(
        "`GET /plaintext` (`Hello, World!`, `Content-Type`, `Server`, `Date`), {} keep-alive \
         connections over {} client thread(s), each connection sending `depth` requests at a \
         time and waiting for all their responses (wrk's pipelining); servers use {} worker \
         threads; {rounds} rounds of a {:.1} s warm-up and a {:.1} s measured window, systems \
         interleaved. Latency runs from a batch's write to the read that completed each \
         response. Allocations/req is the server process's heap allocation count over the \
         window (counting global allocator, queried before and after) divided by the responses \
         received in it. × raw is requests/s over the raw responder's in the same round.\n\n{}",
        a.connections,
        s.client_threads,
        s.server_threads,
        warmup.as_secs_f64(),
        window.as_secs_f64(),
        t.markdown()
    );
    if a.wrk {
        body.push_str(&wrk_cross_check(s, a, &mut peers, window)?);
    } else {
        body.push_str(
            "\nwrk cross-check: not run (add `--wrk`, with `wrk` installed, to measure the same \
             servers with wrk as well).\n",
        );
    }
    let section = Section {
        scenario: "plaintext",
        title: "plaintext: requests/s and allocations per request (seed 003)".into(),
        body,
        charts: vec![Chart {
            name: "plaintext".into(),
            title: format!("plaintext, {} connections", a.connections),
            unit: "requests/s (median; whisker: min–max)".into(),
            bars,
        }],
    };
    drop(peers); // stop the servers: the report counts their CPU as the bench's own
    report::publish(&s.target, &ctx, &section)
}

fn wrk_cross_check(
    s: &Settings,
    a: &PlaintextArgs,
    peers: &mut [Peer],
    window: Duration,
) -> io::Result<String> {
    let mut t = Table::new(&[
        "System",
        "Depth",
        "weir-bench client (req/s)",
        "wrk (req/s)",
        "wrk / ours",
    ]);
    let mut commands = Vec::new();
    for &depth in &a.depths {
        for peer in peers.iter_mut() {
            let Ok(server) = &mut peer.server else {
                continue;
            };
            let spec = LoadSpec {
                endpoint: server.endpoint().clone(),
                connections: a.connections,
                threads: s.client_threads,
                depth,
                request: REQUEST.to_vec(),
            };
            let (_, ours) =
                crate::client::load::run_for(&spec, Duration::from_millis(300), window)?;
            let run = wrk::run(
                server.endpoint(),
                a.connections,
                s.client_threads,
                depth,
                window,
            )?;
            if !commands.contains(&run.command) {
                commands.push(run.command.clone());
            }
            t.row(vec![
                peer.label.clone(),
                depth.to_string(),
                format!("{ours:.0}"),
                format!("{:.0}", run.requests_per_sec),
                format!("{:.2}", run.requests_per_sec / ours),
            ]);
        }
    }
    Ok(format!(
        "\nwrk cross-check: one run each, back to back with one run of this crate's client, \
         same servers, same connections and threads. Command: {}, with `pipeline.lua` \
         (`DEPTH` = the depth):\n\n```lua\n{}```\n\n{}",
        commands
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", "),
        wrk::SCRIPT,
        t.markdown()
    ))
}

fn sustained(
    s: &Settings,
    a: &PlaintextArgs,
    peers: &mut [Peer],
    duration: Duration,
) -> io::Result<Section> {
    let mut t = Table::new(&[
        "System",
        "Depth",
        "Median requests/s",
        "Lowest interval",
        "Intervals < 0.9 × median",
        "Allocations/req",
        "Every interval: requests/s (other processes' CPU)",
    ]);
    for &depth in &a.depths {
        for peer in peers.iter_mut() {
            let Ok(server) = &mut peer.server else {
                if let Err(why) = &peer.server {
                    t.row(vec![
                        peer.label.clone(),
                        depth.to_string(),
                        unavailable_note(why),
                    ]);
                }
                continue;
            };
            let spec = LoadSpec {
                endpoint: server.endpoint().clone(),
                connections: a.connections,
                threads: s.client_threads,
                depth,
                request: REQUEST.to_vec(),
            };
            let load = Load::start(&spec)?;
            let before = server.stats()?;
            let start = Instant::now();
            let mut rates = Samples::default();
            // Per interval, also the CPU that other processes took (the machine's busy time
            // minus this bench's client and server): a dip that comes with a jump there is
            // another tenant, one without it is the server.
            let mut others = Vec::new();
            let sample = |server: &mut crate::server::spawn::ServerProc| -> io::Result<_> {
                let cpu =
                    server.stats()?.cpu_ns as f64 / 1e9 + clock::process_cpu_ns() as f64 / 1e9;
                Ok((
                    load.completed(),
                    Instant::now(),
                    cpu,
                    procfs::machine_busy_seconds(),
                ))
            };
            let mut last = sample(server)?;
            while start.elapsed() < duration {
                std::thread::sleep(a.interval.min(duration.saturating_sub(start.elapsed())));
                let now = sample(server)?;
                let secs = (now.1 - last.1).as_secs_f64();
                let rate = (now.0 - last.0) as f64 / secs;
                let other = match (last.3, now.3) {
                    (Some(a), Some(b)) => {
                        let pct = ((b - a) - (now.2 - last.2)).max(0.0) / secs * 100.0;
                        format!("{pct:.0}%")
                    }
                    _ => "?".into(),
                };
                eprintln!(
                    "{} depth {depth}: {:>5.1} s  {rate:>10.0} req/s  other processes' CPU {other}",
                    peer.label,
                    start.elapsed().as_secs_f64()
                );
                rates.push(rate);
                others.push(other);
                last = now;
            }
            let after = server.stats()?;
            let total = load.completed();
            load.finish()?;
            let median = rates.median();
            let low = rates.0.iter().filter(|r| **r < 0.9 * median).count();
            t.row(vec![
                peer.label.clone(),
                depth.to_string(),
                format!("{median:.0}"),
                format!("{:.0} ({:.2} × median)", rates.min(), rates.min() / median),
                if low == 0 {
                    "none".into()
                } else {
                    format!("**{low}** of {}", rates.0.len())
                },
                format!(
                    "{:.2}",
                    (after.allocations - before.allocations) as f64 / total.max(1) as f64
                ),
                rates
                    .0
                    .iter()
                    .zip(&others)
                    .map(|(r, p)| format!("{r:.0} ({p})"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ]);
        }
    }
    let body = format!(
        "Sustained mode: each system alone for {:.0} s ({} connections, {} client thread(s), \
         {} server threads), requests/s sampled every {:.0} s; an interval below 0.9 × the \
         run's median is flagged. Beside each interval: the CPU time other processes took in it, in % of one \
         CPU (the machine's busy time from `/proc/stat`, steal included, minus this bench's \
         client and server; softirq work for the bench's own traffic that is charged to no \
         process lands here too, so it is not 0 on an idle machine): a dip that comes with a \
         jump there points at another tenant, one without it at the server. \
         Allocations/req here cover the whole run, connection set-up included.\n\n{}",
        duration.as_secs_f64(),
        a.connections,
        s.client_threads,
        s.server_threads,
        a.interval.as_secs_f64(),
        t.markdown()
    );
    Ok(Section {
        scenario: "plaintext-sustained",
        title: "plaintext, sustained: throughput over time (seed 003)".into(),
        body,
        charts: Vec::new(),
    })
}
