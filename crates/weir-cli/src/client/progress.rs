//! Progress and summaries: a bar (bytes, rate, ETA) on stderr when it is a terminal, nothing
//! otherwise; the final summary line is always printed.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// No bar at all: several files move at once (a folder, `tree.rs`), each would draw over the
/// others; their summary lines say what happened.
static HIDDEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Hides every bar from now on.
pub(crate) fn hide_bars() {
    HIDDEN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A progress bar that is hidden when stderr is not a terminal (or bars are hidden).
pub(crate) fn bar(total: u64, verb: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() || HIDDEN.load(std::sync::atomic::Ordering::Relaxed) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template =
        format!("{verb} {{bar:30}} {{bytes}}/{{total_bytes}} {{binary_bytes_per_sec}} ETA {{eta}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// `734003200` → `700.0 MiB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Bytes per second over `elapsed`, as `569 MiB/s`.
pub(crate) fn rate(n: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let per_sec = (n as f64 / secs) as u64;
    format!("{}/s", bytes(per_sec))
}

/// `1.23 s`.
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(700 << 20), "700.0 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(rate(100 << 20, Duration::from_millis(500)), "200.0 MiB/s");
        assert_eq!(secs(Duration::from_millis(1234)), "1.23 s");
    }
}
