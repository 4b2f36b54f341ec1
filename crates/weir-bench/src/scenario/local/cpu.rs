//! (b) CPU time per byte of large POSTs, against a raw receiver on the same transport and a
//! memcpy of the same size; the slope over the sizes separates the cost per byte from fixed costs.

use super::{LocalArgs, specs};
use crate::client::upload::Uploader;
use crate::memcpy::Memcpy;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::scenario::{Peer, Settings, order, size_label, unavailable_note};
use crate::server::System;
use crate::stats::{Samples, linear_fit};
use std::io;
use std::path::Path;

#[derive(Default)]
struct Cost {
    wall_ms: Samples,
    cpu_ms: Samples,
}

pub fn run(s: &Settings, a: &LocalArgs, dir: &Path) -> io::Result<(String, Chart)> {
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
    let specs = specs(s, System::RawUpload, dir, false);
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
            for i in order(peers.len(), round) {
                let (peer, _) = &mut peers[i];
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
