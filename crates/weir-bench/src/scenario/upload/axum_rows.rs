//! The axum rows' own comparison (issue 14): one axum `Router` served by weir and by hyper, into
//! the same sinks, weir's axum path against its native handler, and both against actix-web 4.
//!
//! Every ratio is the median of the ratios taken round by round, like the main table's, for
//! throughput and for server CPU per GiB, with the targets of issue 14.

use super::Row;
use crate::report::table::Table;
use crate::server::Sink;
use crate::stats::Samples;

/// The label of an axum row into `sink`, as the rows are named.
pub(super) fn label(system: &str, sink: Sink) -> String {
    format!("{system} → {sink}")
}

/// The servers of the axum rows, as labels name them.
pub(super) const WEIR: &str = "weir + axum";
pub(super) const HYPER: &str = "hyper + axum";
/// The actix-web peer (its own routes, no axum), compared with both.
pub(super) const ACTIX: &str = "actix-web";

/// `(numerator, denominator, throughput target)`, as row labels.
fn comparisons() -> Vec<(String, String, &'static str)> {
    let native = |sink| {
        let pause = super::size_label(weir::Config::default().pause_threshold as u64);
        format!("weir, pause {pause} → {sink}")
    };
    vec![
        (
            label(WEIR, Sink::Discard),
            label(HYPER, Sink::Discard),
            "≥ 1.00",
        ),
        (
            label(WEIR, Sink::Splice),
            label(HYPER, Sink::File),
            "≥ 1.15",
        ),
        (label(WEIR, Sink::File), label(HYPER, Sink::File), ""),
        (label(WEIR, Sink::Discard), native(Sink::Discard), ""),
        (label(WEIR, Sink::Splice), native(Sink::Splice), ""),
        (label(WEIR, Sink::File), native(Sink::File), ""),
        (label(WEIR, Sink::Discard), label(ACTIX, Sink::Discard), ""),
        (label(WEIR, Sink::Splice), label(ACTIX, Sink::File), ""),
        (native(Sink::Discard), label(ACTIX, Sink::Discard), ""),
        (label(HYPER, Sink::Discard), label(ACTIX, Sink::Discard), ""),
    ]
}

fn ratio(num: &Row, den: &Row, of: fn(&Row) -> &Samples) -> String {
    of(num).ratio_to(of(den)).show(2)
}

/// The ratio table in Markdown, or `None` when no pair of its rows ran.
pub(super) fn ratio_table(rows: &[Row]) -> Option<String> {
    let find = |label: &str| {
        rows.iter()
            .find(|r| r.peer.label == label && r.peer.server.is_ok())
    };
    let mut t = Table::new(&["axum ratio", "GiB/s", "Server CPU/GiB", "Target (GiB/s)"]);
    let mut any = false;
    for (num, den, target) in comparisons() {
        let (Some(n), Some(d)) = (find(&num), find(&den)) else {
            continue;
        };
        any = true;
        t.row(vec![
            format!("{num} ÷ {den}"),
            ratio(n, d, |r| &r.gib_s),
            ratio(n, d, |r| &r.cpu_per_gib),
            if target.is_empty() { "—" } else { target }.into(),
        ]);
    }
    any.then(|| t.markdown())
}
