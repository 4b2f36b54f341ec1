//! Seed 003: plaintext requests per second, pipelined and not, and heap allocations per request.
//!
//! Systems: the raw responder (an epoll loop per thread), weir (on a multi-threaded runtime, and
//! per-core: a current-thread runtime per thread behind `SO_REUSEPORT`), hyper with and without
//! `pipeline_flush`, hyper per-core with `pipeline_flush` (as TechEmpower runs it), and one axum
//! `Router` served by weir and by hyper (issue 14, [`crate::server::axum_app`]), and actix-web 4
//! ([`crate::server::actix_peer`]). For each
//! depth (requests in flight per connection) and round, each system gets the same load:
//! `connections` keep-alive connections from [`crate::client::load`], a warm-up, then a measured
//! window. Over the window: requests/s, latency percentiles, the server's CPU time per request, and
//! its heap allocations per request (the server's own counting allocator, queried over the control
//! pipe just before and just after the window: a real count, not an estimate).
//!
//! `--duration 60s` runs the sustained mode instead: each system alone for that long, requests/s
//! per interval, and every interval below 0.9 × the run's median flagged (the seed's server
//! degraded over a few minutes; docs/archive/BENCHMARKS-history.md, "Figures once quoted in source
//! comments").
//!
//! `--wrk` cross-checks the load generator: the same servers measured with wrk, figures side by
//! side (wrk is optional; it is not installed in CI).

mod sustained;
mod wrk_check;

use super::{Peer, Settings, order, parse_duration, unavailable_note};
use crate::client::load::{Load, LoadSpec};
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::server::{ServeArgs, Sink, System};
use crate::stats::Samples;
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
    /// Only the systems whose label contains one of these (e.g. `--systems "axum,actix"`), plus
    /// the raw responder (the × raw baseline). Default: every system.
    #[arg(long, value_delimiter = ',')]
    pub systems: Vec<String>,
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
            systems: Vec::new(),
        }
    }
}

/// The request every client sends, as wrk sends it.
pub const REQUEST: &[u8] = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/// Labels of the axum rows, compared with each other in their own table.
const WEIR_AXUM: &str = "weir + axum";
const HYPER_AXUM: &str = "hyper + axum";
/// hyper's `pipeline_flush`, which `axum::serve` does not set: the fairer peer when pipelined.
const HYPER_AXUM_FLUSH: &str = "hyper + axum, pipeline_flush";
/// actix-web 4 (its own routes), compared with the axum rows and weir's native one.
const ACTIX: &str = "actix-web";
/// The × raw baseline, always run.
const RAW: &str = "raw responder";

fn peers(s: &Settings, a: &PlaintextArgs, dir: &Path) -> io::Result<Vec<Peer>> {
    let args = |system, per_core, pipeline_flush| {
        let mut a = s.serve_args(system, Sink::Discard, dir);
        a.per_core = per_core;
        a.pipeline_flush = pipeline_flush;
        a
    };
    let specs: [(&str, ServeArgs); 10] = [
        (RAW, args(System::RawResponder, false, false)),
        ("weir", args(System::Weir, false, false)),
        ("weir, per-core", args(System::Weir, true, false)),
        ("hyper", args(System::Hyper, false, false)),
        ("hyper, pipeline_flush", args(System::Hyper, false, true)),
        (
            "hyper, per-core, pipeline_flush",
            args(System::Hyper, true, true),
        ),
        (WEIR_AXUM, args(System::WeirAxum, false, false)),
        (HYPER_AXUM, args(System::HyperAxum, false, false)),
        (HYPER_AXUM_FLUSH, args(System::HyperAxum, false, true)),
        (ACTIX, args(System::ActixWeb, false, false)),
    ];
    specs
        .into_iter()
        .filter(|(label, _)| {
            a.systems.is_empty()
                || *label == RAW
                || a.systems.iter().any(|only| label.contains(only.as_str()))
        })
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

/// weir + axum against hyper + axum per depth, or `None` when either did not run.
fn axum_table(peers: &[Peer], cells: &[Vec<Cell>], depths: &[usize]) -> Option<String> {
    let find = |label: &str| {
        peers
            .iter()
            .position(|p| p.label == label && p.server.is_ok())
    };
    let (w, h) = (find(WEIR_AXUM)?, find(HYPER_AXUM)?);
    let native = [find("weir"), find("hyper")];
    let flush = find(HYPER_AXUM_FLUSH);
    let actix = find(ACTIX);
    let mut t = Table::new(&[
        "Depth",
        "Requests/s: weir + axum ÷ hyper + axum",
        "÷ hyper + axum, pipeline_flush",
        "Server CPU/req: weir + axum ÷ hyper + axum",
        "Requests/s: weir + axum ÷ actix-web",
        "weir (native) ÷ actix-web",
        "Allocations/req: weir + axum",
        "hyper + axum",
        "weir (native)",
        "hyper (native)",
        "actix-web",
    ]);
    for (d, &depth) in depths.iter().enumerate() {
        let row = &cells[d];
        let allocs = |i: Option<usize>| i.map_or("—".into(), |i| row[i].allocs_per_req.show(2));
        t.row(vec![
            depth.to_string(),
            row[w].rps.ratio_to(&row[h].rps).show(2),
            flush.map_or("—".into(), |f| row[w].rps.ratio_to(&row[f].rps).show(2)),
            row[w]
                .cpu_us_per_req
                .ratio_to(&row[h].cpu_us_per_req)
                .show(2),
            actix.map_or("—".into(), |x| row[w].rps.ratio_to(&row[x].rps).show(2)),
            match (native[0], actix) {
                (Some(n), Some(x)) => row[n].rps.ratio_to(&row[x].rps).show(2),
                _ => "—".into(),
            },
            allocs(Some(w)),
            allocs(Some(h)),
            allocs(native[0]),
            allocs(native[1]),
            allocs(actix),
        ]);
    }
    Some(t.markdown())
}

/// Runs the scenario (or the sustained mode) and publishes its section.
pub fn run(s: &Settings, a: &PlaintextArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let dir = tempfile::tempdir()?;
    let mut peers = peers(s, a, dir.path())?;
    if let Some(d) = a.duration {
        let section = sustained::run(s, a, &mut peers, d)?;
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
            for i in order(peers.len(), round) {
                let peer = &mut peers[i];
                let Ok(server) = &mut peer.server else {
                    continue;
                };
                let spec = LoadSpec {
                    endpoint: server.endpoint().clone(),
                    connections: a.connections,
                    threads: s.client_threads,
                    depth,
                    request: REQUEST.to_vec(),
                    rate: None,
                    expect: None,
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
            // The ratio, not requests/s: depth 1 and depth 16 differ by an order of magnitude.
            let ratio = c.rps.ratio_to(&cells[d][0].rps);
            bars.push(Bar {
                label,
                value: Some((ratio.median(), ratio.min(), ratio.max())),
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
    if let Some(t) = axum_table(&peers, &cells, &a.depths) {
        body.push_str(&format!(
            "\nOne axum `Router` (`src/server/axum_app.rs`) served by weir \
             (`weir::ServiceHandler`) and by hyper (`http1::Builder` with hyper-util's \
             `TowerToHyperService`, as `axum::serve` wraps a router; and with `pipeline_flush`, \
             which `axum::serve` leaves off): requests/s and server CPU \
             per request as medians of round-by-round ratios (target: requests/s ≥ 1.00 at every \
             depth), and allocations per request of each (target: weir + axum below hyper + \
             axum), beside the native rows':\n\n{t}"
        ));
    }
    if a.wrk {
        body.push_str(&wrk_check::run(s, a, &mut peers, window)?);
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
            unit: "requests/s × raw responder's, same round (median; whisker: min–max)".into(),
            bars,
        }],
    };
    drop(peers); // stop the servers: the report counts their CPU as the bench's own
    report::publish(&s.target, &ctx, &section)
}
