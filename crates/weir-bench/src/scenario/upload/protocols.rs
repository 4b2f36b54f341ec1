//! The HTTPS and HTTP/2 rows' own comparisons: each protocol against plain HTTP/1.1 on the same
//! server, and weir against hyper on the same protocol, for throughput and for server CPU per
//! GiB, with the targets that apply.
//!
//! weir's plain HTTP/1.1 row here is the sweep's row at weir's default pause threshold (the
//! configuration the protocol rows run with). Every ratio is the median of the ratios taken
//! round by round, like the main table's.

use super::Row;
use crate::client::upload::Protocol;
use crate::report::table::Table;
use crate::server::{Sink, System};
use crate::stats::Samples;

/// One line of the ratio table: `num ÷ den`.
struct Comparison {
    num: (System, Protocol),
    den: (System, Protocol),
    /// The throughput target, where one applies.
    target: &'static str,
}

const fn cmp(num: (System, Protocol), den: (System, Protocol), target: &'static str) -> Comparison {
    Comparison { num, den, target }
}

const COMPARISONS: [Comparison; 12] = {
    use Protocol::*;
    use System::{Hyper, Weir};
    [
        cmp((Weir, Https), (Weir, H1), "≥ 0.70"),
        cmp((Weir, H2Tls), (Weir, H1), "≥ 0.70"),
        cmp((Weir, H2c), (Weir, H1), "≥ 0.80"),
        cmp((Weir, H2Tls), (Weir, Https), "≥ 0.80"),
        cmp((Hyper, Https), (Hyper, H1), ""),
        cmp((Hyper, H2Tls), (Hyper, H1), ""),
        cmp((Hyper, H2c), (Hyper, H1), ""),
        cmp((Hyper, H2Tls), (Hyper, Https), ""),
        cmp((Weir, H1), (Hyper, H1), "≥ 1.00 (discard)"),
        cmp((Weir, Https), (Hyper, Https), ""),
        cmp((Weir, H2c), (Hyper, H2c), ""),
        cmp((Weir, H2Tls), (Hyper, H2Tls), ""),
    ]
};

const SINKS: [Sink; 2] = super::PROTOCOL_SINKS;

fn system_name(s: System) -> &'static str {
    match s {
        System::Weir => "weir",
        System::Hyper => "hyper",
        System::WeirAxum => "weir + axum",
        System::HyperAxum => "hyper + axum",
        System::ActixWeb => "actix-web",
        System::RawUpload | System::RawResponder => "raw",
    }
}

/// The measured row of `system` over `protocol` into `sink`; for weir's plain HTTP/1.1, the
/// one at the default pause threshold.
fn find(rows: &[Row], (system, protocol): (System, Protocol), sink: Sink) -> Option<&Row> {
    let default_pause = weir::Config::default().pause_threshold;
    rows.iter().find(|r| {
        r.system == system
            && r.protocol == protocol
            && r.sink == sink
            && (system != System::Weir
                || protocol != Protocol::H1
                || r.pause == Some(default_pause))
            && matches!(r.client, super::Client::Bench)
            && r.peer.server.is_ok()
    })
}

fn ratio(num: Option<&Row>, den: Option<&Row>, of: fn(&Row) -> &Samples) -> String {
    match (num, den) {
        (Some(n), Some(d)) => of(n).ratio_to(of(d)).show(2),
        _ => "—".into(),
    }
}

/// The ratio table in Markdown, or `None` when no protocol row ran.
pub(super) fn ratio_table(rows: &[Row]) -> Option<String> {
    if !rows
        .iter()
        .any(|r| r.protocol != Protocol::H1 && r.peer.server.is_ok())
    {
        return None;
    }
    let mut t = Table::new(&[
        "Ratio",
        "GiB/s, discard",
        "GiB/s, file (write)",
        "Server CPU/GiB, discard",
        "Server CPU/GiB, file (write)",
        "Target (GiB/s)",
    ]);
    for c in &COMPARISONS {
        let pairs: Vec<_> = SINKS
            .iter()
            .map(|&sink| (find(rows, c.num, sink), find(rows, c.den, sink)))
            .collect();
        if pairs.iter().all(|(n, d)| n.is_none() || d.is_none()) {
            continue; // a protocol left out of this run
        }
        let mut cells = vec![format!(
            "{} {} ÷ {} {}",
            system_name(c.num.0),
            c.num.1,
            system_name(c.den.0),
            c.den.1
        )];
        cells.extend(pairs.iter().map(|&(n, d)| ratio(n, d, |r| &r.gib_s)));
        cells.extend(pairs.iter().map(|&(n, d)| ratio(n, d, |r| &r.cpu_per_gib)));
        cells.push(if c.target.is_empty() {
            "—".into()
        } else {
            c.target.into()
        });
        t.row(cells);
    }
    Some(t.markdown())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_is_compared_with_plain_http_and_with_hyper() {
        for p in [Protocol::Https, Protocol::H2c, Protocol::H2Tls] {
            for system in [System::Weir, System::Hyper] {
                assert!(
                    COMPARISONS
                        .iter()
                        .any(|c| c.num == (system, p) && c.den == (system, Protocol::H1))
                );
            }
            assert!(
                COMPARISONS
                    .iter()
                    .any(|c| c.num == (System::Weir, p) && c.den == (System::Hyper, p))
            );
        }
    }
}
