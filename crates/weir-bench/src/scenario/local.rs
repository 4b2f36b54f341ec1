//! Seed 004: local requests, small and large, over TCP and Unix sockets.
//!
//! (a) Latency of a 2 KB POST: one connection sending sequentially (p50/p90/p99/max), then
//! `connections` connections at once (p99 against the raw responder's: on an idle VM a single
//! connection's latency is dominated by CPU wake-ups, the same for every server, so the loaded
//! figure is the one that tells servers apart).
//!
//! (b) CPU cost per byte of large POSTs (50, 100, 200 MiB by default): the server's CPU time
//! (user + system, whole process) and the wall time, for each system and size, against a raw
//! receiver on the same transport and a memcpy of the same size in this process. The slope of CPU
//! time over the sizes is the cost per byte; `(slope − raw slope) / memcpy slope` estimates the
//! extra copies per byte a server makes beyond the one every receiver makes (kernel → user).

use super::{Peer, Settings, size_label, unavailable_note};
use crate::client::load::{LoadSpec, run_for};
use crate::client::upload::Uploader;
use crate::memcpy::Memcpy;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::server::{ServeArgs, Sink, System};
use crate::stats::{Samples, linear_fit};
use clap::Args;
use std::io;
use std::path::Path;
use std::time::Duration;

/// `weir-bench local` options.
#[derive(Args, Clone, Debug)]
pub struct LocalArgs {
    /// POST body size for the latency runs.
    #[arg(long, value_parser = super::parse_size, default_value = "2048")]
    pub post_size: usize,
    /// Connections for the loaded latency run.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Large POST sizes (default: 50M,100M,200M; `--quick`: 25M,50M,100M).
    #[arg(long, value_delimiter = ',', value_parser = super::parse_size)]
    pub sizes: Vec<usize>,
    /// Measured window per latency run (default: 5s; `--quick`: 1s).
    #[arg(long, value_parser = super::parse_duration)]
    pub window: Option<Duration>,
}

impl Default for LocalArgs {
    fn default() -> Self {
        Self {
            post_size: 2048,
            connections: 64,
            sizes: Vec::new(),
            window: None,
        }
    }
}

/// Systems and transports compared; the first two of each group are the raw baselines.
fn specs(s: &Settings, system: System, dir: &Path) -> Vec<(String, ServeArgs, bool)> {
    let mut out = Vec::new();
    let base = match system {
        System::RawResponder => "raw responder",
        System::RawUpload => "raw",
        _ => unreachable!("only raw systems are baselines"),
    };
    for (label, sys) in [
        (base, system),
        ("weir", System::Weir),
        ("hyper", System::Hyper),
    ] {
        for unix in [false, true] {
            let mut args = s.serve_args(sys, Sink::Discard, dir);
            if unix {
                args.unix = Some(dir.join(format!("{label}.sock").replace(' ', "-")));
            }
            let transport = if unix { "Unix" } else { "TCP" };
            out.push((format!("{label} {transport}"), args, unix));
        }
    }
    out
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &LocalArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let dir = tempfile::tempdir()?;
    let mut body = latency(s, a, dir.path())?;
    let (cpu_text, chart) = cpu_per_byte(s, a, dir.path())?;
    body.0.push_str(&cpu_text);
    let section = Section {
        scenario: "local",
        title: "local: small-POST latency and CPU per byte of large POSTs (seed 004)".into(),
        body: body.0,
        charts: vec![chart, body.1],
    };
    report::publish(&s.target, &ctx, &section)
}

#[derive(Default)]
struct Latency {
    p50: Samples,
    p90: Samples,
    p99: Samples,
    max: Samples,
    rps: Samples,
}

impl Latency {
    fn add(&mut self, h: &hdrhistogram::Histogram<u64>, rps: f64) {
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        self.p50.push(us(0.5));
        self.p90.push(us(0.9));
        self.p99.push(us(0.99));
        self.max.push(h.max() as f64 / 1e3);
        self.rps.push(rps);
    }
}

fn latency(s: &Settings, a: &LocalArgs, dir: &Path) -> io::Result<(String, Chart)> {
    let window = a.window.unwrap_or(s.pick(
        Duration::from_secs(5),
        Duration::from_secs(1),
        Duration::from_millis(100),
    ));
    let warmup = s.pick(
        Duration::from_secs(1),
        Duration::from_millis(300),
        Duration::from_millis(20),
    );
    let rounds = s.rounds(3, 2);
    let mut request = format!(
        "POST /post HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
        a.post_size
    )
    .into_bytes();
    request.extend((0..a.post_size).map(|i| b'a' + (i % 26) as u8));
    let specs = specs(s, System::RawResponder, dir);
    let mut peers = Vec::new();
    for (label, args, unix) in &specs {
        peers.push((Peer::start(label.clone(), args)?, *unix));
    }
    let conns = [1, a.connections];
    let mut results: Vec<Vec<Latency>> = conns
        .iter()
        .map(|_| peers.iter().map(|_| Latency::default()).collect())
        .collect();
    for round in 0..rounds {
        for (c, &connections) in conns.iter().enumerate() {
            for (i, (peer, _)) in peers.iter().enumerate() {
                let Ok(server) = &peer.server else { continue };
                let spec = LoadSpec {
                    endpoint: server.endpoint().clone(),
                    connections,
                    threads: s.client_threads,
                    depth: 1,
                    request: request.clone(),
                };
                let (r, rps) = run_for(&spec, warmup, window)?;
                if r.errors > 0 {
                    return Err(io::Error::other(format!(
                        "{}: {} errors",
                        peer.label, r.errors
                    )));
                }
                results[c][i].add(&r.latency, rps);
            }
        }
        eprintln!("local latency: round {}/{rounds} done", round + 1);
    }
    let mut text = format!(
        "### (a) {} POST latency\n\n`POST /post` with a {}-byte body; the server reads and drops \
         it and answers `Hello, World!`. {rounds} rounds of a {:.1} s warm-up and a {:.1} s \
         window per system, interleaved; latency from the request's write to the read that \
         completed its response; {} client thread(s), {} server threads. p99 × raw is against \
         the raw responder on the same transport, round by round.\n\n",
        size_label(a.post_size as u64),
        a.post_size,
        warmup.as_secs_f64(),
        window.as_secs_f64(),
        s.client_threads,
        s.server_threads
    );
    let mut bars = Vec::new();
    for (c, &connections) in conns.iter().enumerate() {
        let mut t = Table::new(&[
            "System",
            "Requests/s",
            "p50 (µs)",
            "p90 (µs)",
            "p99 (µs)",
            "max (µs)",
            "p99 × raw",
        ]);
        for (i, (peer, unix)) in peers.iter().enumerate() {
            if let Err(why) = &peer.server {
                t.row(vec![peer.label.clone(), unavailable_note(why)]);
                if connections > 1 {
                    bars.push(Bar {
                        label: peer.label.clone(),
                        value: None,
                    });
                }
                continue;
            }
            let l = &results[c][i];
            let raw = &results[c][usize::from(*unix)];
            t.row(vec![
                peer.label.clone(),
                l.rps.show(0),
                l.p50.show(0),
                l.p90.show(0),
                l.p99.show(0),
                l.max.show(0),
                l.p99.ratio_to(&raw.p99).show(2),
            ]);
            if connections > 1 {
                bars.push(Bar {
                    label: peer.label.clone(),
                    value: Some((l.p99.median(), l.p99.min(), l.p99.max())),
                });
            }
        }
        let what = if connections == 1 {
            "One connection, sequential requests".to_string()
        } else {
            format!("{connections} connections, one request in flight on each")
        };
        text.push_str(&format!("{what}:\n\n{}\n", t.markdown()));
    }
    drop(peers);
    let chart = Chart {
        name: "local-latency".into(),
        title: format!(
            "{} POST, {} connections: p99 latency",
            size_label(a.post_size as u64),
            a.connections
        ),
        unit: "p99 µs (median; whisker: min–max)".into(),
        bars,
    };
    Ok((text, chart))
}

#[derive(Default)]
struct Cost {
    wall_ms: Samples,
    cpu_ms: Samples,
}

fn cpu_per_byte(s: &Settings, a: &LocalArgs, dir: &Path) -> io::Result<(String, Chart)> {
    let sizes: Vec<u64> = if a.sizes.is_empty() {
        s.pick(
            vec![50 << 20, 100 << 20, 200 << 20],
            vec![25 << 20, 50 << 20, 100 << 20],
            vec![1 << 20, 2 << 20, 4 << 20],
        )
    } else {
        a.sizes.iter().map(|&n| n as u64).collect()
    };
    let rounds = s.rounds(5, 3);
    let specs = specs(s, System::RawUpload, dir);
    let mut peers = Vec::new();
    for (label, args, unix) in &specs {
        peers.push((Peer::start(label.clone(), args)?, *unix));
    }
    let uploader = Uploader::new();
    let max = sizes.iter().copied().max().unwrap_or(0) as usize;
    let mut memcpy = Memcpy::new(max);
    // Rows: the peers, then memcpy. Columns: sizes.
    let mut costs: Vec<Vec<Cost>> = (0..=peers.len())
        .map(|_| sizes.iter().map(|_| Cost::default()).collect())
        .collect();
    for (peer, _) in &mut peers {
        if let Ok(p) = &mut peer.server {
            uploader.upload(p.endpoint(), (max / 8 + 1) as u64)?;
        }
    }
    for round in 0..rounds {
        for (z, &size) in sizes.iter().enumerate() {
            for (i, (peer, _)) in peers.iter_mut().enumerate() {
                let Ok(server) = &mut peer.server else {
                    continue;
                };
                let before = server.stats()?;
                let up = uploader.upload(server.endpoint(), size)?;
                let after = server.stats()?;
                costs[i][z].wall_ms.push(up.seconds() * 1e3);
                costs[i][z]
                    .cpu_ms
                    .push((after.cpu_ns - before.cpu_ns) as f64 / 1e6);
            }
            let (wall, cpu) = memcpy.run(size as usize);
            let m = &mut costs[peers.len()][z];
            m.wall_ms.push(wall as f64 / 1e6);
            m.cpu_ms.push(cpu as f64 / 1e6);
        }
        eprintln!("local CPU: round {}/{rounds} done", round + 1);
    }
    let labels: Vec<(String, Option<&String>, bool)> = peers
        .iter()
        .map(|(p, unix)| (p.label.clone(), p.server.as_ref().err(), *unix))
        .chain([("memcpy (same process)".to_string(), None, false)])
        .collect();
    let memcpy_row = peers.len();
    let mut t = Table::new(&[
        "System",
        "Size",
        "Wall (ms)",
        "Server CPU (ms)",
        "CPU ns/byte",
        "CPU × raw",
        "Wall × raw",
    ]);
    for (z, &size) in sizes.iter().enumerate() {
        for (i, (label, unavailable, unix)) in labels.iter().enumerate() {
            if let Some(why) = unavailable {
                t.row(vec![label.clone(), size_label(size), unavailable_note(why)]);
                continue;
            }
            let c = &costs[i][z];
            let raw = &costs[usize::from(*unix)][z];
            let per_byte = Samples(c.cpu_ms.0.iter().map(|ms| ms * 1e6 / size as f64).collect());
            let vs_raw = |x: &Samples, r: &Samples| {
                if i == memcpy_row {
                    "—".to_string()
                } else {
                    x.ratio_to(r).show(2)
                }
            };
            t.row(vec![
                label.clone(),
                size_label(size),
                c.wall_ms.show(1),
                c.cpu_ms.show(1),
                per_byte.show(3),
                vs_raw(&c.cpu_ms, &raw.cpu_ms),
                vs_raw(&c.wall_ms, &raw.wall_ms),
            ]);
        }
    }
    // Slopes over the sizes, from the medians.
    let slope = |i: usize| {
        let pts: Vec<(f64, f64)> = sizes
            .iter()
            .enumerate()
            .map(|(z, &size)| (size as f64, costs[i][z].cpu_ms.median() * 1e6))
            .collect();
        linear_fit(&pts)
    };
    let memcpy_slope = slope(memcpy_row).map(|f| f.0);
    let mut st = Table::new(&[
        "System",
        "CPU slope (ns/byte)",
        "Intercept (ms)",
        "Slope × raw",
        "Extra copies vs raw ≈ (slope − raw) / memcpy",
    ]);
    let mut bars = Vec::new();
    for (i, (label, unavailable, unix)) in labels.iter().enumerate() {
        let fit = if unavailable.is_some() {
            None
        } else {
            slope(i)
        };
        let raw = slope(usize::from(*unix)).map(|f| f.0);
        match fit {
            Some((k, b)) => {
                let (ratio, copies) = match (raw, memcpy_slope) {
                    (Some(r), Some(m)) if i != memcpy_row && r > 0.0 && m > 0.0 => {
                        (format!("{:.2}", k / r), format!("{:+.2}", (k - r) / m))
                    }
                    _ => ("—".into(), "—".into()),
                };
                st.row(vec![
                    label.clone(),
                    format!("{k:.3}"),
                    format!("{:.2}", b / 1e6),
                    ratio,
                    copies,
                ]);
                bars.push(Bar {
                    label: label.clone(),
                    value: Some((k, k, k)),
                });
            }
            None => {
                st.row(vec![
                    label.clone(),
                    unavailable.map_or("—".into(), |w| unavailable_note(w)),
                ]);
                bars.push(Bar {
                    label: label.clone(),
                    value: None,
                });
            }
        }
    }
    let sizes_text: Vec<String> = sizes.iter().map(|&z| size_label(z)).collect();
    let text = format!(
        "\n### (b) CPU time per byte of large POSTs\n\nOne connection per POST of {} (server \
         discards into a 1 MiB buffer), {rounds} rounds, systems interleaved; server CPU is the \
         whole server process's user + system time over the request (`CLOCK_PROCESS_CPUTIME_ID`, \
         read by the server over its control pipe; `/proc/<pid>/stat` has 10 ms ticks, too \
         coarse here). memcpy copies the same number of bytes between two pre-touched buffers \
         in the bench process (its CPU is that thread's). × raw is against the raw receiver on \
         the same transport, round by round.\n\n{}\nSlope of CPU time over the sizes (least \
         squares through the medians): the cost per byte, which the intercept's fixed cost does \
         not distort.\n\n{}",
        sizes_text.join(", "),
        t.markdown(),
        st.markdown()
    );
    let chart = Chart {
        name: "local".into(),
        title: format!(
            "Server CPU per byte of large POSTs ({})",
            sizes_text.join(", ")
        ),
        unit: "CPU ns per byte (slope over sizes)".into(),
        bars,
    };
    Ok((text, chart))
}
