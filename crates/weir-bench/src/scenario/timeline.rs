//! Seed 002: when does the handler see the request, and what does the server hold meanwhile?
//!
//! One large upload per system (server discards). The server stamps three instants with raw
//! `CLOCK_MONOTONIC` (handler called, i.e. head parsed; first body byte in the handler; last body
//! byte) with its RSS at each, and returns them in the response body; the client stamps its own
//! start (before connecting) and end (response read). Each instant is shown as an offset from the
//! client's start. Files created meanwhile are counted in the server's `TMPDIR`, its working
//! directory and its data directory (each private to it), by inotify and by listing; the seed's
//! failure was a server that spooled the body to temporary files before the handler saw it, so
//! the count must be zero.

use super::{Peer, Settings, order, size_label, unavailable_note};
use crate::client::upload::{Upload, Uploader};
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::server::{Sink, System};
use crate::stats::Samples;
use crate::tempwatch::Watch;
use clap::Args;
use std::io;
use tempfile::TempDir;

/// `weir-bench timeline` options.
#[derive(Args, Clone, Debug, Default)]
pub struct TimelineArgs {
    /// Body size, e.g. `500M` (default: 500 MiB; `--quick`: 200 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
}

/// The instants, as offsets from the client's start, in ms, and RSS in MiB.
#[derive(Default)]
struct Row {
    head_ms: Samples,
    first_ms: Samples,
    first_after_head_ms: Samples,
    last_ms: Samples,
    end_ms: Samples,
    rss_head: Samples,
    rss_first: Samples,
    rss_last: Samples,
    files_inotify: u64,
    files_listed: u64,
}

impl Row {
    fn add(&mut self, up: &Upload) {
        let ms = |ns: u64| ns.saturating_sub(up.start_ns) as f64 / 1e6;
        let t = &up.trace;
        self.head_ms.push(ms(t.head_ns));
        self.first_ms.push(ms(t.first_ns));
        self.first_after_head_ms
            .push(t.first_ns.saturating_sub(t.head_ns) as f64 / 1e6);
        self.last_ms.push(ms(t.last_ns));
        self.end_ms.push(ms(up.end_ns));
        self.rss_head.push(t.rss_head_kib as f64 / 1024.0);
        self.rss_first.push(t.rss_first_kib as f64 / 1024.0);
        self.rss_last.push(t.rss_last_kib as f64 / 1024.0);
    }
}

/// A server with private directories to watch.
struct Watched {
    peer: Peer,
    dirs: [TempDir; 3],
    row: Row,
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &TimelineArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let size = a.size.unwrap_or(s.pick(500 << 20, 200 << 20, 4 << 20)) as u64;
    let rounds = s.rounds(5, 3);
    let systems = [
        ("raw TCP", System::RawUpload),
        ("weir (pause 1 MiB)", System::Weir),
        ("hyper", System::Hyper),
    ];
    let mut peers = Vec::new();
    for (label, system) in systems {
        // [TMPDIR, working directory, data directory]
        let dirs = [TempDir::new()?, TempDir::new()?, TempDir::new()?];
        let mut args = s.serve_args(system, Sink::Discard, dirs[2].path());
        if system == System::Weir {
            args.pause_threshold = Some(1 << 20);
        }
        let peer = Peer::start_in(label, &args, Some((dirs[1].path(), dirs[0].path())))?;
        peers.push(Watched {
            peer,
            dirs,
            row: Row::default(),
        });
    }
    let uploader = Uploader::new();
    for w in &mut peers {
        if let Ok(p) = &w.peer.server {
            uploader.upload(p.endpoint(), size / 8 + 1)?;
        }
    }
    for round in 0..rounds {
        for i in order(peers.len(), round) {
            let w = &mut peers[i];
            let Ok(p) = &w.peer.server else { continue };
            let dirs = w.dirs.each_ref().map(|d| d.path());
            let watch = Watch::start(&dirs)?;
            let up = uploader.upload(p.endpoint(), size)?;
            let (inotify, listed) = watch.finish()?;
            w.row.add(&up);
            w.row.files_inotify += inotify;
            w.row.files_listed += listed;
        }
        eprintln!("timeline: round {}/{rounds} done", round + 1);
    }
    let mut t = Table::new(&[
        "System",
        "Handler called (ms)",
        "First body byte (ms)",
        "First byte − head (ms)",
        "Last body byte (ms)",
        "Client done (ms)",
        "RSS at head / first / last (MiB)",
        "Files created (inotify / listing)",
    ]);
    let mut bars = Vec::new();
    for w in &peers {
        let r = &w.row;
        let label = &w.peer.label;
        if let Err(why) = &w.peer.server {
            t.row(vec![label.clone(), unavailable_note(why)]);
            bars.push(Bar {
                label: label.clone(),
                value: None,
            });
            continue;
        }
        t.row(vec![
            label.clone(),
            r.head_ms.show(2),
            r.first_ms.show(2),
            r.first_after_head_ms.show(3),
            r.last_ms.show(1),
            r.end_ms.show(1),
            format!(
                "{:.1} / {:.1} / {:.1}",
                r.rss_head.median(),
                r.rss_first.median(),
                r.rss_last.median()
            ),
            format!("{} / {}", r.files_inotify, r.files_listed),
        ]);
        for (event, v) in [
            ("handler called", &r.head_ms),
            ("first body byte", &r.first_ms),
            ("last body byte", &r.last_ms),
            ("client done", &r.end_ms),
        ] {
            bars.push(Bar {
                label: format!("{label}: {event}"),
                value: Some((v.median(), v.min(), v.max())),
            });
        }
    }
    let body = format!(
        "One connection uploads {} (`Content-Length`, server discards into a 1 MiB buffer); \
         {rounds} rounds, systems interleaved. Offsets are from the client's start (before \
         `connect`), from raw `CLOCK_MONOTONIC` on both sides. RSS values are medians over the \
         rounds, read by the server from `/proc/self/statm` at each instant. Files created are \
         summed over all rounds, in the server's private `TMPDIR`, working directory and data \
         directory; they must be 0.\n\n{}",
        size_label(size),
        t.markdown()
    );
    let section = Section {
        scenario: "timeline",
        title: "timeline: when the handler sees a streamed upload (seed 002)".into(),
        body,
        charts: vec![Chart {
            name: "timeline".into(),
            title: format!(
                "{} upload: instants from the client's start",
                size_label(size)
            ),
            unit: "ms from client start (median; whisker: min–max)".into(),
            bars,
        }],
    };
    drop(peers); // stop the servers: the report counts their CPU as the bench's own
    report::publish(&s.target, &ctx, &section)
}
