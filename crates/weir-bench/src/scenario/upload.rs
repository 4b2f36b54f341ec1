//! Seed 000: one large upload over one HTTP/1.1 connection, swept over weir's pause threshold.
//!
//! Rows: raw TCP into each sink (discard; file with `write`; file with `splice`), weir at each
//! pause threshold into each sink, hyper into each sink. Per round and row: wall time and
//! throughput as the client sees them, and the server's peak RSS (reset before the upload), its
//! RSS growth over the upload and its CPU time. Ratios are to raw TCP into the same sink, taken
//! round by round (file rows, splice included, against raw TCP → file with `write`).
//!
//! New rows (HTTPS, HTTP/2) are one more entry in [`rows`] with the server arguments that select
//! them.

use super::{Peer, Settings, order, size_label, unavailable_note};
use crate::client::upload::Uploader;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::server::sink::empty_dir;
use crate::server::trace::BodyPath;
use crate::server::{ServeArgs, Sink, System};
use crate::stats::Samples;
use clap::Args;
use std::io;
use std::path::Path;

/// `weir-bench upload` options.
#[derive(Args, Clone, Debug)]
pub struct UploadArgs {
    /// Body size, e.g. `700M` (default: 700 MiB; `--quick`: 200 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
    /// weir pause thresholds to sweep.
    #[arg(long, value_delimiter = ',', value_parser = super::parse_size,
          default_value = "64K,256K,1M,4M")]
    pub thresholds: Vec<usize>,
    /// Extra raw → discard rows with these read buffer sizes (to tune the baseline).
    #[arg(long, value_delimiter = ',', value_parser = super::parse_size, hide = true)]
    pub raw_read_bufs: Vec<usize>,
}

struct Row {
    peer: Peer,
    /// Index of the row this one is compared with.
    baseline: usize,
    seconds: Samples,
    gib_s: Samples,
    peak_mib: Samples,
    growth_mib: Samples,
    cpu_s: Samples,
    /// The last round's body path, where the server reports one.
    path: Option<BodyPath>,
}

fn rows(s: &Settings, a: &UploadArgs, dir: &Path) -> io::Result<Vec<Row>> {
    let mut specs: Vec<(String, ServeArgs)> = Vec::new();
    for sink in [Sink::Discard, Sink::File, Sink::Splice] {
        specs.push((
            format!("raw TCP → {sink}"),
            s.serve_args(System::RawUpload, sink, dir),
        ));
    }
    for &b in &a.raw_read_bufs {
        let mut args = s.serve_args(System::RawUpload, Sink::Discard, dir);
        args.read_buf = Some(b);
        let label = format!("raw TCP → discard, {} reads", size_label(b as u64));
        specs.push((label, args));
    }
    for &t in &a.thresholds {
        for sink in [Sink::Discard, Sink::Chunks, Sink::File, Sink::Splice] {
            let mut args = s.serve_args(System::Weir, sink, dir);
            args.pause_threshold = Some(t);
            let label = format!("weir, pause {} → {sink}", size_label(t as u64));
            specs.push((label, args));
        }
    }
    for sink in [Sink::Discard, Sink::File] {
        specs.push((
            format!("hyper → {sink}"),
            s.serve_args(System::Hyper, sink, dir),
        ));
    }
    specs
        .into_iter()
        .map(|(label, args)| {
            Ok(Row {
                // Raw → discard is row 0, raw → file (write) row 1.
                baseline: usize::from(matches!(args.sink, Sink::File | Sink::Splice)),
                peer: Peer::start(label, &args)?,
                seconds: Samples::default(),
                gib_s: Samples::default(),
                peak_mib: Samples::default(),
                growth_mib: Samples::default(),
                cpu_s: Samples::default(),
                path: None,
            })
        })
        .collect()
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &UploadArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let size = a.size.unwrap_or(s.pick(700 << 20, 200 << 20, 4 << 20)) as u64;
    let rounds = s.rounds(5, 3);
    let data = tempfile::tempdir()?;
    let mut rows = rows(s, a, data.path())?;
    let uploader = Uploader::new();
    // One small upload per server first, so that no row pays for first-touch page faults.
    for r in &mut rows {
        if let Ok(p) = &mut r.peer.server {
            uploader.upload(p.endpoint(), size / 8 + 1)?;
        }
    }
    empty_dir(data.path())?;
    let mut peak_note = String::new();
    for round in 0..rounds {
        for i in order(rows.len(), round) {
            let r = &mut rows[i];
            let Ok(p) = &mut r.peer.server else { continue };
            // Without permission to write clear_refs the peak is since the server started,
            // which only overstates it; say so in the report rather than fail.
            if let Err(e) = p.reset_peak() {
                peak_note = format!(
                    " (Could not reset the peak here: {e}; peaks are since each server started.)"
                );
            }
            let before = p.stats()?;
            let up = uploader.upload(p.endpoint(), size)?;
            let after = p.stats()?;
            empty_dir(data.path())?;
            let secs = up.seconds();
            r.seconds.push(secs);
            r.gib_s.push(size as f64 / secs / (1u64 << 30) as f64);
            r.peak_mib.push(after.peak_kib as f64 / 1024.0);
            r.growth_mib
                .push(after.peak_kib.saturating_sub(before.rss_kib) as f64 / 1024.0);
            r.cpu_s.push((after.cpu_ns - before.cpu_ns) as f64 / 1e9);
            r.path = up.trace.path;
        }
        eprintln!("upload: round {}/{rounds} done", round + 1);
    }
    let mut t = Table::new(&[
        "System → sink",
        "Time (s)",
        "GiB/s",
        "× raw (same sink)",
        "Peak RSS (MiB)",
        "RSS growth (MiB)",
        "Server CPU (s)",
        "Body path: direct / copied / spliced (MiB), peak read-ahead (KiB)",
    ]);
    let mut bars = Vec::new();
    for r in &rows {
        match &r.peer.server {
            Ok(_) => {
                let ratio = r.gib_s.ratio_to(&rows[r.baseline].gib_s);
                t.row(vec![
                    r.peer.label.clone(),
                    r.seconds.show(3),
                    r.gib_s.show(2),
                    ratio.show(2),
                    r.peak_mib.show(1),
                    r.growth_mib.show(1),
                    r.cpu_s.show(3),
                    r.path.map_or("—".into(), |p| {
                        let mib = |n: u64| n as f64 / (1u64 << 20) as f64;
                        format!(
                            "{:.1} / {:.1} / {:.1}, {}",
                            mib(p.direct),
                            mib(p.copied),
                            mib(p.spliced),
                            p.peak_ahead >> 10
                        )
                    }),
                ]);
                bars.push(Bar {
                    label: r.peer.label.clone(),
                    value: Some((r.gib_s.median(), r.gib_s.min(), r.gib_s.max())),
                });
            }
            Err(why) => {
                t.row(vec![r.peer.label.clone(), unavailable_note(why)]);
                bars.push(Bar {
                    label: r.peer.label.clone(),
                    value: None,
                });
            }
        }
    }
    let body = format!(
        "One HTTP/1.1 connection uploads {} (`Content-Length`) from memory in {} writes; \
         {rounds} rounds, systems interleaved; servers use {} worker threads. \
         Sinks: discard (reads into a 1 MiB buffer; weir reads the socket straight into it, so \
         its pause threshold does not come into play), discard of the server's chunks (weir's \
         `read_body_chunk`: pieces of at most the pause threshold, the sink on which the \
         threshold matters), file (`std::fs` writes of 256 KiB on the \
         connection's task; raw fills each 256 KiB buffer before writing it), splice \
         (socket → pipe → file: raw with `splice(2)` through a 1 MiB pipe, weir with \
         `Exchange::body_to_file`). Files go to a temporary directory ({}) and are removed after \
         each upload, then `syncfs`, outside the timing (so no row pays for the filesystem work \
         of the one before). Peak RSS is `VmHWM`, reset before each upload; growth \
         is the peak minus the RSS before the upload.{peak_note} Server CPU is user + system time \
         of the server process over the upload.\n\n{}\n\
         Body path (weir only, from its `BodyStats`, last round): bytes read from the socket \
         straight into the handler's buffer, bytes read ahead into weir's buffer and copied \
         out, bytes spliced to the file, and the most body bytes held ahead of the handler.\n\n\
         Ratios are GiB/s over the raw row of the same round: discard and chunk rows against \
         raw → discard, file and splice rows against raw → file (write).\n",
        size_label(size),
        size_label(crate::client::upload::CHUNK as u64),
        s.server_threads,
        data.path().parent().unwrap_or(data.path()).display(),
        t.markdown()
    );
    let section = Section {
        scenario: "upload",
        title: "upload: one large HTTP/1.1 upload, pause-threshold sweep (seed 000)".into(),
        body,
        charts: vec![Chart {
            name: "upload".into(),
            title: format!("{} upload over one loopback connection", size_label(size)),
            unit: "GiB/s (median; whisker: min–max)".into(),
            bars,
        }],
    };
    drop(rows); // stop the servers: the report counts their CPU as the bench's own
    report::publish(&s.target, &ctx, &section)
}

impl Default for UploadArgs {
    fn default() -> Self {
        Self {
            size: None,
            thresholds: vec![64 << 10, 256 << 10, 1 << 20, 4 << 20],
            raw_read_bufs: Vec::new(),
        }
    }
}
