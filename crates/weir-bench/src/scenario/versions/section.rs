//! The `serve-versions` section of the report: one table, each row's figure for the old and
//! the new binary and their ratio taken round by round, a chart of those ratios, and which
//! system calls the counted rows made.

use super::rows::{ROWS, Row};
use super::{Cell, Sizes, VersionsArgs};
use crate::report::Section;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::scenario::services::access_log::BODY;
use crate::scenario::size_label;
use crate::stats::Samples;

/// A table line: a label, which figure of the cell, its decimals, and which way is better.
struct Line {
    label: String,
    cpu: bool,
    prec: usize,
    lower_is_better: bool,
}

impl Row {
    /// What the row does, with its size.
    fn what(self, z: &Sizes) -> String {
        let (big, s3) = (size_label(z.big), size_label(z.s3));
        let small = BODY.len();
        match self {
            Row::PutSha => format!("PUT {big}, HTTP/1.1, SHA-256 (default)"),
            Row::PutNoHash => format!("PUT {big}, HTTP/1.1, --no-hash (splice)"),
            Row::PutHttps => format!("PUT {big}, HTTPS (HTTP/1.1 over TLS)"),
            Row::PutH2 => format!("PUT {big}, HTTP/2 over TLS"),
            Row::Get => format!("GET {big}, HTTP/1.1 (sendfile)"),
            Row::Small1 => format!("GET {small} B, 64 connections, depth 1"),
            Row::Small16 => format!("GET {small} B, 64 connections, depth 16"),
            Row::S3Put => format!("--store s3://: PUT {s3}"),
            Row::S3Get => format!("--store s3://: GET {s3}"),
            Row::AllocsKeepAlive => format!("allocations per GET of {small} B, keep-alive"),
            Row::SyscallsKeepAlive => format!("system calls per GET of {small} B, keep-alive"),
            Row::AllocsNewConn => format!("allocations per GET of {small} B, new connection"),
            Row::SyscallsNewConn => {
                format!("system calls per GET of {small} B, new connection")
            }
            Row::AllocsBig => format!("allocations per GET of {big}, new connection"),
            Row::SyscallsBig => format!("system calls per GET of {big}, new connection"),
        }
    }

    /// The row's table lines: its main figure, then its CPU where it has one.
    fn lines(self, z: &Sizes) -> Vec<Line> {
        let what = self.what(z);
        let line = |unit: &str, cpu, prec, lower_is_better| Line {
            label: format!("{what}: {unit}"),
            cpu,
            prec,
            lower_is_better,
        };
        match self {
            Row::Small1 | Row::Small16 => vec![
                line("requests/s", false, 0, false),
                line("server CPU µs/request", true, 2, true),
            ],
            r if r.counted() => vec![Line {
                label: what,
                cpu: false,
                prec: 2,
                lower_is_better: true,
            }],
            _ => vec![
                line("s", false, 3, true),
                line("server CPU s/GiB", true, 3, true),
            ],
        }
    }
}

fn figure(c: &Cell, cpu: bool) -> &Samples {
    if cpu { &c.cpu } else { &c.value }
}

/// The named system calls per request of a counted row's cell, most frequent first.
fn calls(c: &Cell, total: &Samples) -> String {
    if c.requests == 0 {
        return "—".into();
    }
    let n = c.requests as f64;
    let mut named: Vec<(&str, f64)> = c.calls.iter().map(|(k, v)| (*k, *v as f64 / n)).collect();
    named.sort_by(|a, b| b.1.total_cmp(&a.1));
    let other = total.median() - named.iter().map(|(_, v)| v).sum::<f64>();
    let mut parts: Vec<String> = named
        .iter()
        .filter(|(_, v)| *v >= 0.005)
        .map(|(k, v)| format!("{k} {v:.2}"))
        .collect();
    if other >= 0.005 {
        parts.push(format!("other {other:.2}"));
    }
    parts.join(", ")
}

/// The section.
pub fn section(
    z: &Sizes,
    rounds: usize,
    a: &VersionsArgs,
    cells: &[[Cell; 2]],
    why_no_counts: Option<&str>,
) -> Section {
    let mut t = Table::new(&[
        "Row",
        "old",
        "new",
        "new ÷ old (median of round-by-round ratios, min–max)",
        "better",
    ]);
    let mut bars = Vec::new();
    let mut breakdown = Table::new(&["Row", "old: calls per request", "new: calls per request"]);
    for (r, &row) in ROWS.iter().enumerate() {
        let pair = &cells[r];
        for line in row.lines(z) {
            let show = |c: &Cell| match (&c.missing, why_no_counts) {
                (Some(why), _) => format!("not measured: {why}"),
                (None, Some(why)) if row.counted() => format!("not measured: {why}"),
                _ => figure(c, line.cpu).show(line.prec),
            };
            let ratio = figure(&pair[1], line.cpu).ratio_to(figure(&pair[0], line.cpu));
            t.row(vec![
                line.label.clone(),
                show(&pair[0]),
                show(&pair[1]),
                ratio.show(3),
                if line.lower_is_better {
                    "lower".into()
                } else {
                    "higher".into()
                },
            ]);
            if !row.counted() {
                bars.push(Bar {
                    label: line.label.clone(),
                    value: (!ratio.is_empty()).then(|| (ratio.median(), ratio.min(), ratio.max())),
                });
            }
        }
        if matches!(
            row,
            Row::SyscallsKeepAlive | Row::SyscallsNewConn | Row::SyscallsBig
        ) && why_no_counts.is_none()
        {
            breakdown.row(vec![
                row.what(z),
                calls(&pair[0], &pair[0].value),
                calls(&pair[1], &pair[1].value),
            ]);
        }
    }
    let counted_note = match why_no_counts {
        Some(why) => format!("The counted rows are empty in this run: {why}.\n\n"),
        None => format!(
            "System calls named, per request (summed over the rounds; `other` is the total \
             minus the named ones):\n\n{}\n",
            breakdown.markdown()
        ),
    };
    let body = format!(
        "Two `weir` binaries, `weir serve` of each: old `{}`, new `{}`. Rounds: {rounds}; in each, \
         every row runs the old binary's server and the new one's, forward then backward \
         (old new, new old, …), and the ratio is taken round by round. Every binary runs four \
         servers for the whole run, each with `--no-access-log` (the log's cost is in \
         \"services\") and its defaults otherwise: plain (SHA-256 of every upload beside the \
         write), `--no-hash` (the body spliced socket → pipe → file), TLS (`--tls-cert`, \
         `--tls-key`: a self-signed certificate for `localhost` made for the run; HTTP/2 by ALPN) \
         and `--store s3://{}/versions-old|new` on one SeaweedFS (`weed mini`, on the same \
         CPUs). Large `PUT`s: the bench's upload client from memory in {} writes (HTTPS: \
         rustls, 1 MiB of records per write; HTTP/2: the `h2` crate on one stream), timed from \
         connect to the answer; the file is removed after each row and `syncfs` runs before \
         every timed operation. `GET`s are timed from connect to the last byte, every byte \
         compared. Small `GET`s: {}-byte file, 64 keep-alive connections, closed loop, {} s \
         warm-up then {} s measured (`services`' load generator). Server CPU is \
         `utime + stime` of the server's process from `/proc` (10 ms ticks), per GiB or per \
         request.\n\n\
         Counted rows (`perf stat -p PID`, started disabled and enabled through its control \
         FIFO around the requests only): allocations are calls into the C library's `malloc`, \
         `calloc` and `realloc` (uprobes; both binaries use the system allocator), system calls \
         the `raw_syscalls:sys_enter` tracepoint. Per request over {} `GET`s of the small file \
         on one keep-alive connection (after as many unmeasured), {} on a new connection each \
         (which shows that the probes see a server that allocates), and {} `GET`s of the large \
         file on a new connection each.\n\n{}\n{counted_note}",
        a.old.display(),
        a.new.display(),
        weir_testkit::seaweed::BUCKET,
        size_label(crate::client::upload::CHUNK as u64),
        BODY.len(),
        z.warmup.as_secs_f64(),
        z.window.as_secs_f64(),
        z.counted,
        (z.counted / 10).max(10),
        z.counted_big,
        t.markdown(),
    );
    Section {
        scenario: "serve-versions",
        title: "serve-versions: old and new `weir serve`, interleaved (issue 32)".into(),
        body,
        charts: vec![Chart {
            name: "serve-versions".into(),
            title: "new ÷ old, weir serve".into(),
            unit: "new ÷ old (median of rounds; whisker: min–max)".into(),
            bars,
        }],
    }
}
