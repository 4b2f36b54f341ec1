//! Sustained plaintext: each system alone for a long run, requests/s per interval, and every
//! interval below 0.9 × the run's median flagged (the seed's server degraded over a few
//! minutes as its garbage collector fell behind; docs/archive/BENCHMARKS-history.md, "Figures once
//! quoted in source comments").

use super::{PlaintextArgs, REQUEST};
use crate::client::load::{Load, LoadSpec};
use crate::report::Section;
use crate::report::table::Table;
use crate::scenario::{Peer, Settings, unavailable_note};
use crate::stats::Samples;
use crate::{clock, procfs};
use std::io;
use std::time::{Duration, Instant};

/// Runs every system for `duration`; returns the section.
pub fn run(
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
                rate: None,
                expect: None,
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
