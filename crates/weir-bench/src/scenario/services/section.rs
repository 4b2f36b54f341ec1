//! The `services` section of the report: one table of every row's figures, the ratios of
//! weir serve's throughput to each peer's (round by round) with a chart of them, each peer's
//! durability, and the access log's cost.

use super::access_log::{DEPTHS, LogCost};
use super::peers::KINDS;
use super::{Cell, ROWS, Row, Sizes};
use crate::report::Section;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::scenario::{size_label, unavailable_note};

impl Row {
    /// The row's label with its throughput and CPU units.
    fn label(self, z: &Sizes) -> String {
        let big = size_label(z.big);
        match self {
            Row::Put => format!("PUT {big} (MiB/s; CPU s/GiB)"),
            Row::Get => format!("GET {big} (MiB/s; CPU s/GiB)"),
            Row::SmallPuts => format!(
                "{} × 4 KiB PUT, {} connections (files/s; CPU µs/file)",
                z.files,
                super::CONNS
            ),
            Row::FanOut => format!(
                "{} concurrent GETs of {} (MiB/s, all; CPU s/GiB)",
                z.fan_conns,
                size_label(z.fan_size)
            ),
            Row::Listing => format!(
                "listing of {} entries, {} clients (listings/s; CPU ms/listing)",
                z.entries,
                super::LISTERS
            ),
            Row::SmallGet => format!(
                "GET 4 KiB, {} connections (requests/s; CPU µs/request)",
                super::CONNS
            ),
        }
    }

    pub(super) fn short(self) -> &'static str {
        match self {
            Row::Put => "PUT large",
            Row::Get => "GET large",
            Row::SmallPuts => "4 KiB PUTs",
            Row::FanOut => "fan-out GETs",
            Row::Listing => "listing",
            Row::SmallGet => "4 KiB GETs",
        }
    }
}

/// The section.
pub fn section(
    z: &Sizes,
    rounds: usize,
    cells: &[Vec<Cell>],
    missing: &[(usize, String)],
    log: &LogCost,
    reporting_note: &str,
) -> Section {
    let why_missing = |i: usize| missing.iter().find(|(m, _)| *m == i).map(|(_, w)| w);
    let mut t = Table::new(&[
        "Row",
        "Service",
        "Throughput",
        "Server CPU",
        "Peak RSS (MiB)",
        "p99 (µs)",
    ]);
    // One column of ratios per way weir serve runs; the first column's are the chart's.
    let weirs: Vec<usize> = (0..KINDS.len()).filter(|&i| KINDS[i].is_weir()).collect();
    let mut head = vec![
        "weir serve's throughput ÷ the peer's (median of round-by-round ratios, min–max; above 1: weir ahead)",
    ];
    head.extend(weirs.iter().map(|&w| KINDS[w].label()));
    let mut ratios = Table::new(&head);
    let mut bars = Vec::new();
    for (r, &row) in ROWS.iter().enumerate() {
        for (i, &kind) in KINDS.iter().enumerate() {
            if !row.runs(kind) {
                continue;
            }
            let c = &cells[r][i];
            t.row(match why_missing(i) {
                Some(why) => vec![
                    row.label(z),
                    kind.label().into(),
                    unavailable_note(why),
                    "—".into(),
                    "—".into(),
                    "—".into(),
                ],
                None => vec![
                    row.label(z),
                    kind.label().into(),
                    with_failures(c.rate.show(prec(c.rate.median())), c, rounds),
                    c.cpu.show(2),
                    c.peak_mib.show(1),
                    c.p99_us.show(0),
                ],
            });
            if kind.is_weir() {
                continue;
            }
            let weir = cells[r][0].rate.ratio_to(&c.rate);
            let mut line = vec![format!("{}: ÷ {}", row.short(), kind.label())];
            line.extend(weirs.iter().map(|&w| match row.runs(KINDS[w]) {
                true => cells[r][w].rate.ratio_to(&c.rate).show(2),
                false => "—".into(),
            }));
            ratios.row(line);
            bars.push(Bar {
                label: format!("{}: ÷ {}", row.short(), kind.label()),
                value: (!weir.is_empty()).then(|| (weir.median(), weir.min(), weir.max())),
            });
        }
    }
    let mut durability = Table::new(&["Service", "What a stored upload is worth after the answer"]);
    for kind in KINDS {
        durability.row(vec![kind.label().into(), kind.durability().into()]);
    }
    let mut logs = Table::new(&[
        "Depth",
        "requests/s, --access-log FILE",
        "requests/s, --no-access-log",
        "logging ÷ not (round by round)",
    ]);
    for (d, depth) in DEPTHS.iter().enumerate() {
        logs.row(vec![
            depth.to_string(),
            log.logging[d].show(0),
            log.silent[d].show(0),
            log.ratio[d].show(3),
        ]);
    }
    let body = format!(
        "Each service started the way its users start it, on loopback, each on its own empty \
         directory of one filesystem, no authentication: `weir serve` (the `weir` binary, its \
         defaults: SHA-256 on, the access log to stderr, which the bench keeps in a file), \
         `weir serve --no-hash` for the `PUT` rows and `weir serve --runtime per-core` (one \
         single-threaded runtime per core, each accepting on its own `SO_REUSEPORT` listener) \
         for every row; nginx (the Debian package, a generated \
         config: `dav_methods PUT DELETE MKCOL`, `create_full_put_path on`, \
         `client_body_temp_path` beside the root, `sendfile on`, `autoindex on`, one worker \
         per core, run as the current user with `-p PREFIX -c CONF -g 'daemon off;'`, its \
         access log to a file); `dufs -A`; `python3 -m copyparty -v DIR::rw` (no config \
         file, its log to a file); SeaweedFS's filer in `weed mini` (weir-testkit's launcher; \
         `PUT`/`GET` on the filer's port); `rclone serve webdav` for writes and `rclone serve \
         http --dir-cache-time 0s` for reads (the cache off so that it sees what the other \
         process wrote). {rounds} round(s); per round and row the services run interleaved \
         (forward, then backward), `syncfs` before each. The large `PUT` and `GET` run over \
         one new connection each, the `GET` right after the `PUT` (the file in the page cache \
         for every service alike), then the file is removed. The 4 KiB `PUT`s go into a new folder each round, made first by \
         `PUT /files/DIR/` for weir serve (64 `PUT`s racing to create it got one 409 once: see \
         the notes below the section) and by `MKCOL` for rclone (which makes no parents); the \
         others make it as the first `PUT`s arrive. Every `PUT`'s status and every \
         `GET`'s bytes are checked (the 4 KiB `GET` under load: every answer's body); every \
         listing is fetched whole (weir and SeaweedFS page by 10,000) and its entries \
         counted. Server CPU: `utime + stime` of the service's process tree \
         (`/proc/<pid>/stat`, 10 ms ticks, nginx's workers included; rclone: the process that \
         served the row) per unit of work; peak RSS: `VmHWM` of the tree, reset before the \
         row. The fan-out row's file is {} (the issue asks 100 MiB: 1,000 × 100 MiB is 98 GiB \
         a service a round, more than this run's time on 2 cores; `--fan-size 100M` runs it). \
         The machine is shared (2 cores; other tenants compile and test: see the CPU figures \
         above): trust the ratios more than the absolute figures.{reporting_note} A peer that \
         fails a row in a round (an error status, a wrong body, a dropped connection) \
         measured nothing \
         there: its cell says in how many rounds, the failures are listed below the table, \
         and its ratios count only the rounds it answered.\n\n{}\n{}{}\n\
         What each service promises about an upload it answered (read in its source or \
         documentation; weir's: docs/OPERATING.md):\n\n{}\n\
         The access log's cost (issue 37's target: at most 10 % at both depths): `weir \
         serve --access-log FILE` against `--no-access-log`, `GET` of a 13-byte file (weir \
         serve has no `/plaintext`; this is its smallest answer) at {} keep-alive connections, \
         pipelined as the plaintext scenario drives it, the two interleaved, {rounds} round(s) \
         of a {:.1} s window:\n\n{}",
        size_label(z.fan_size),
        t.markdown(),
        failures(cells),
        ratios.markdown(),
        durability.markdown(),
        64,
        z.window.as_secs_f64(),
        logs.markdown(),
    );
    Section {
        scenario: "services",
        title: "services: weir serve against nginx, dufs, copyparty, SeaweedFS and rclone serve \
                (issue 37)"
            .into(),
        body,
        charts: vec![Chart {
            name: "services".into(),
            title: "weir serve against the services people run instead".into(),
            unit: "weir serve's throughput ÷ the peer's, same round (median; whisker: min–max; \
                   above 1: weir ahead)"
                .into(),
            bars,
        }],
    }
}

/// A cell's throughput, and in how many rounds its service failed the row.
fn with_failures(shown: String, c: &Cell, rounds: usize) -> String {
    match c.failures.len() {
        0 => shown,
        n => format!("{shown}; failed in {n} of {rounds} rounds"),
    }
}

/// The peers' failures, one line each (empty when none failed).
fn failures(cells: &[Vec<Cell>]) -> String {
    let mut out = String::new();
    for (r, &row) in ROWS.iter().enumerate() {
        for (i, &kind) in KINDS.iter().enumerate() {
            for (round, why) in &cells[r][i].failures {
                // One line: an error may span several.
                let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
                out.push_str(&format!(
                    "- {}, {}, round {round}: {why}\n",
                    kind.label(),
                    row.short()
                ));
            }
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\nFailed (nothing measured for that service in that round):\n\n{out}")
}

/// Decimals for a throughput: fewer as it grows.
fn prec(v: f64) -> usize {
    if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    }
}

#[cfg(test)]
mod tests {
    use super::super::peers::Kind;
    use super::*;
    use crate::scenario::child::Usage;
    use std::time::Duration;

    #[test]
    fn a_peer_that_failed_a_round_is_shown_and_its_ratio_counts_the_rounds_it_answered() {
        let z = Sizes {
            big: 1 << 20,
            files: 10,
            fan_conns: 10,
            fan_size: 100 << 20,
            entries: 10,
            warmup: Duration::from_secs(1),
            window: Duration::from_secs(1),
        };
        let mut cells: Vec<Vec<Cell>> = ROWS
            .iter()
            .map(|_| KINDS.iter().map(|_| Cell::default()).collect())
            .collect();
        let fan = ROWS.iter().position(|r| *r == Row::FanOut).unwrap();
        let peer = KINDS.iter().position(|k| *k == Kind::Seaweed).unwrap();
        let used = Usage {
            cpu_s: 1.0,
            peak_mib: 10.0,
        };
        cells[fan][0].push(200.0, 1.0, used);
        cells[fan][0].push(300.0, 1.0, used);
        cells[fan][peer].failed(0, "GET: 500\nInternal Server Error".into());
        cells[fan][peer].push(100.0, 1.0, used);
        let body = section(&z, 2, &cells, &[], &LogCost::default(), "").body;
        let line = |start: &str| {
            let line = body.lines().find(|l| l.starts_with(start));
            line.unwrap_or_else(|| panic!("no line {start:?}: {body}"))
        };
        let cell = body
            .lines()
            .find(|l| l.contains("concurrent GETs of 100 MiB") && l.contains("| SeaweedFS"));
        let cell = cell.unwrap_or_else(|| panic!("no fan-out row for SeaweedFS: {body}"));
        assert!(cell.contains("| 100; failed in 1 of 2 rounds "), "{cell}");
        let failed = "- SeaweedFS filer (weed mini), fan-out GETs, round 1: GET: 500 Internal \
                      Server Error\n";
        assert!(body.contains(failed), "{body}");
        // Round 2 alone: 300 ÷ 100.
        let ratio = line("| fan-out GETs: ÷ SeaweedFS filer");
        assert!(ratio.contains("| 3.00 "), "{ratio}");
    }
}
