//! (a) Latency of a small POST: one connection sending sequentially, then many connections in a
//! closed loop and paced at a fixed rate, against the raw responder on the same transport.
//!
//! Beside the latency, the server's CPU time per request over the measured window (the whole
//! server process, user + system, read over its control pipe before and after): on a machine
//! shared with other work the tail follows the other tenants, the CPU per request much less.

use super::{LocalArgs, specs};
use crate::client::load::{Load, LoadSpec};
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::scenario::{Peer, Settings, order, size_label, unavailable_note};
use crate::server::System;
use crate::stats::Samples;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Latency {
    p50: Samples,
    p90: Samples,
    p99: Samples,
    max: Samples,
    rps: Samples,
    /// Server CPU per request over the window, µs.
    cpu_us: Samples,
}

impl Latency {
    fn add(&mut self, h: &hdrhistogram::Histogram<u64>, rps: f64, cpu_us: f64) {
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        self.p50.push(us(0.5));
        self.p90.push(us(0.9));
        self.p99.push(us(0.99));
        self.max.push(h.max() as f64 / 1e3);
        self.rps.push(rps);
        self.cpu_us.push(cpu_us);
    }
}

pub fn run(s: &Settings, a: &LocalArgs, dir: &Path) -> io::Result<(String, Chart)> {
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
    let specs = specs(s, System::RawResponder, dir, true);
    let mut peers = Vec::new();
    for (label, args, unix) in &specs {
        peers.push((Peer::start(label.clone(), args)?, *unix));
    }
    // (connections, paced rate): sequential, closed loop, paced.
    let conns: &[(usize, Option<f64>)] = if a.paced_only {
        &[(a.connections, Some(a.rate))]
    } else {
        &[
            (1, None),
            (a.connections, None),
            (a.connections, Some(a.rate)),
        ]
    };
    let mut results: Vec<Vec<Latency>> = conns
        .iter()
        .map(|_| peers.iter().map(|_| Latency::default()).collect())
        .collect();
    for round in 0..rounds {
        for (c, &(connections, rate)) in conns.iter().enumerate() {
            for i in order(peers.len(), round) {
                let (peer, _) = &mut peers[i];
                let Ok(server) = &mut peer.server else {
                    continue;
                };
                let spec = LoadSpec {
                    endpoint: server.endpoint().clone(),
                    connections,
                    threads: s.client_threads,
                    depth: 1,
                    request: request.clone(),
                    rate,
                    expect: None,
                };
                let load = Load::start(&spec)?;
                std::thread::sleep(warmup);
                let (n0, cpu0, t0) = (load.completed(), server.stats()?.cpu_ns, Instant::now());
                load.record(true);
                std::thread::sleep(window);
                let (n1, cpu1, t1) = (load.completed(), server.stats()?.cpu_ns, Instant::now());
                load.record(false);
                let r = load.finish()?;
                if r.errors > 0 {
                    return Err(io::Error::other(format!(
                        "{}: {} errors",
                        peer.label, r.errors
                    )));
                }
                let done = (n1 - n0).max(1) as f64;
                let rps = done / (t1 - t0).as_secs_f64();
                let cpu_us = cpu1.saturating_sub(cpu0) as f64 / 1e3 / done;
                results[c][i].add(&r.latency, rps, cpu_us);
            }
        }
        eprintln!("local latency: round {}/{rounds} done", round + 1);
    }
    let mut text = format!(
        "### (a) {} POST latency\n\n`POST /post` with a {}-byte body; the server reads and drops \
         it and answers `Hello, World!`. {rounds} rounds of a {:.1} s warm-up and a {:.1} s \
         window per system, interleaved; latency from the request's write to the read that \
         completed its response; {} client thread(s), {} server threads. p99 × raw is against \
         the raw responder on the same transport, round by round; server CPU per request is \
         the server process's CPU time (user + system) over the window divided by the requests \
         answered in it, and CPU × raw its ratio to the raw responder's, round by round.\n\n",
        size_label(a.post_size as u64),
        a.post_size,
        warmup.as_secs_f64(),
        window.as_secs_f64(),
        s.client_threads,
        s.server_threads
    );
    let mut bars = Vec::new();
    for (c, &(connections, rate)) in conns.iter().enumerate() {
        let mut t = Table::new(&[
            "System",
            "Requests/s",
            "p50 (µs)",
            "p90 (µs)",
            "p99 (µs)",
            "max (µs)",
            "p99 × raw",
            "server CPU µs/request",
            "CPU × raw",
        ]);
        for (i, (peer, unix)) in peers.iter().enumerate() {
            if let Err(why) = &peer.server {
                t.row(vec![peer.label.clone(), unavailable_note(why)]);
                if rate.is_some() {
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
                l.cpu_us.show(1),
                l.cpu_us.ratio_to(&raw.cpu_us).show(2),
            ]);
            if rate.is_some() {
                bars.push(Bar {
                    label: peer.label.clone(),
                    value: Some((l.p99.median(), l.p99.min(), l.p99.max())),
                });
            }
        }
        let what = match rate {
            _ if connections == 1 => "One connection, sequential requests. On a VM this is \
                 dominated by CPU wake-ups: each side sleeps while the other works, and waking \
                 an idle vCPU costs tens of µs. The raw responder sleeps in `epoll_wait` the \
                 moment it has answered, so here it can be slower than a runtime that stays \
                 awake a little longer; the paced table is the one that compares servers"
                .to_string(),
            None => format!(
                "{connections} connections, closed loop (each sends its next request as soon as \
                 the last is answered): throughput at saturation; the latency here is mostly \
                 queueing in whichever of client and server is the bottleneck"
            ),
            Some(r) => format!(
                "{connections} connections paced at {r:.0} requests/s in all (each connection \
                 on a fixed schedule, staggered), latency from each request's *scheduled* send \
                 time, so stalls are charged in full: latency under load, the figure to compare"
            ),
        };
        text.push_str(&format!("{what}:\n\n{}\n", t.markdown()));
    }
    drop(peers);
    let chart = Chart {
        name: "local-latency".into(),
        title: format!(
            "{} POST, {} connections at {:.0} requests/s: p99 latency",
            size_label(a.post_size as u64),
            a.connections,
            a.rate
        ),
        unit: "p99 µs (median; whisker: min–max)".into(),
        bars,
    };
    Ok((text, chart))
}
