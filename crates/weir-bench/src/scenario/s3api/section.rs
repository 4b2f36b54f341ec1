//! The `s3api` scenario's report section: one table of every row (throughput, server CPU per
//! GiB, peak RSS, disk writes, client CPU per GiB), and the targets as round-by-round ratios.

use super::{Op, Row, Server};
use crate::report::Section;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::scenario::size_label;
use crate::stats::Samples;

fn op_label(op: Op, size: u64, parallel: usize) -> String {
    match op {
        Op::Put => "PUT (one request)".into(),
        Op::Multipart(ps) => format!(
            "multipart {} × {}, {parallel} at once",
            size.div_ceil(ps),
            size_label(ps)
        ),
        Op::Get => "GET".into(),
    }
}

/// The row label, as the report prints it.
pub fn label(r: &Row, size: u64, parallel: usize) -> String {
    format!("{}: {}", op_label(r.op, size, parallel), r.server.label())
}

fn find(rows: &[Row], op: Op, server: Server) -> Option<&Row> {
    rows.iter().find(|r| r.op == op && r.server == server)
}

/// The report's section.
pub fn section(size: u64, parallel: usize, rows: &[Row], memory_note: &str) -> Section {
    let rounds = rows.first().map_or(0, |r| r.seconds.0.len());
    let mut t = Table::new(&[
        "Row",
        "Time (s)",
        "GiB/s",
        "Server CPU (s/GiB)",
        "Server peak RSS (MiB)",
        "Server disk writes (× object)",
        "Client CPU (s/GiB)",
        "of which Complete (s)",
    ]);
    let mut bars = Vec::new();
    for r in rows {
        t.row(vec![
            label(r, size, parallel),
            r.seconds.show(3),
            r.gib_s.show(2),
            r.server_cpu_s_per_gib.show(2),
            r.peak_mib.show(1),
            r.disk_writes_per_byte.show(2),
            r.client_cpu_s_per_gib.show(2),
            r.complete_s.show(3),
        ]);
        bars.push(Bar {
            label: label(r, size, parallel),
            value: Some((r.gib_s.median(), r.gib_s.min(), r.gib_s.max())),
        });
    }
    let mut ratios = Table::new(&[
        "Ratio (median of round-by-round ratios, min–max)",
        "Value",
        "Target",
    ]);
    let mut ratio = |what: String,
                     a: Option<&Row>,
                     b: Option<&Row>,
                     pick: fn(&Row) -> &Samples,
                     target: &str| {
        if let (Some(a), Some(b)) = (a, b) {
            ratios.row(vec![what, pick(a).ratio_to(pick(b)).show(3), target.into()]);
        }
    };
    let ops: Vec<Op> = rows
        .iter()
        .filter(|r| r.server == Server::WeirS3)
        .map(|r| r.op)
        .collect();
    for &op in &ops {
        ratio(
            format!(
                "GiB/s, {}: weir S3 API ÷ SeaweedFS S3",
                op_label(op, size, parallel)
            ),
            find(rows, op, Server::WeirS3),
            find(rows, op, Server::Seaweed),
            |r| &r.gib_s,
            "≥ 1.5",
        );
    }
    for &op in &ops {
        let base = if op == Op::Get { Op::Get } else { Op::Put };
        ratio(
            format!(
                "GiB/s, {}: weir S3 API ÷ weir {} /files/",
                op_label(op, size, parallel),
                if base == Op::Get { "GET" } else { "PUT" }
            ),
            find(rows, op, Server::WeirS3),
            find(rows, base, Server::WeirFiles),
            |r| &r.gib_s,
            "≥ 0.9",
        );
    }
    let multipart: Vec<&Row> = rows
        .iter()
        .filter(|r| r.server == Server::WeirS3 && matches!(r.op, Op::Multipart(_)))
        .collect();
    if let [first, .., last] = multipart.as_slice() {
        ratio(
            format!(
                "weir's peak RSS: {} ÷ {}",
                op_label(last.op, size, parallel),
                op_label(first.op, size, parallel)
            ),
            Some(last),
            Some(first),
            |r| &r.peak_mib,
            "≈ 1 (independent of part size)",
        );
    }
    let body = format!(
        "One `weir serve --s3-api` (the `weir` binary, default configuration: local store, \
         SHA-256 on; a token file with one S3 credential, also sent as the bearer token of \
         the `/files/` rows) and one SeaweedFS `weed mini` (weir-testkit's launcher: master, \
         volume, filer and S3 gateway in one process), both on loopback, both storing on the \
         same disk. Object: {}; multipart parts sent on {parallel} connections at once. The \
         client is the bench's own, the same for every server (Signature V4 with \
         `UNSIGNED-PAYLOAD`, blocking HTTP/1.1, bodies from one 2 MiB buffer, downloads \
         compared byte by byte in place); its CPU per GiB is the last column. {rounds} rounds; \
         within each round every group of rows (PUT, each multipart size, GET) is \
         interleaved, forward in even rounds and backward in odd ones; the table shows \
         median (min–max), the ratios are taken round by round. Time: from the first connect \
         to the last answer byte (for multipart: Create, the parts, Complete; the last column is \
         the CompleteMultipartUpload request alone). Server CPU: \
         `utime + stime` of the server process (`/proc/PID/stat`, 10 ms ticks) over the \
         operation, per GiB. Peak RSS: the server's `VmHWM`, reset before each operation. \
         Disk writes: the bytes the server process sent to the storage layer over the \
         operation (`/proc/PID/io`, `write_bytes` less `cancelled_write_bytes`: counted when \
         a page is dirtied, whoever writes it back), per byte of the object; a GET writes \
         nothing. \
         `syncfs` on both data directories before each operation, outside the timing. GETs \
         read the objects the PUT rows stored (from the page cache: the GET rows measure the \
         servers, not the disk). On a shared machine (the CPU pressure above says how busy \
         this one was), trust the round-by-round ratios, not the absolute \
         figures.{memory_note}\n\n{}\n{}",
        size_label(size),
        t.markdown(),
        ratios.markdown(),
    );
    Section {
        scenario: "s3api",
        title: format!(
            "s3api: a {} object through weir's S3 API, SeaweedFS's and weir's /files/ (issue 33)",
            size_label(size)
        ),
        body,
        charts: vec![Chart {
            name: "s3api".into(),
            title: format!("{} through S3", size_label(size)),
            unit: "GiB/s (median; whisker: min–max)".into(),
            bars,
        }],
    }
}
