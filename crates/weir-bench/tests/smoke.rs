//! Smoke test: every scenario runs end to end with tiny sizes and writes every row of its report.
//!
//! This keeps the harness from rotting; it asserts nothing about the figures (no timing
//! assertions, ever: CI runs this in debug mode on a shared 2-core machine).

use std::path::Path;
use std::process::Command;

/// Runs `weir-bench --tiny --report <report> all` and returns the report.
fn run_all(report: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_weir-bench"))
        .args(["--tiny", "--report"])
        .arg(report)
        .arg("all")
        .output()
        .expect("run weir-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "weir-bench failed:\n{stderr}");
    std::fs::read_to_string(report).expect("report written")
}

#[test]
fn every_scenario_reports_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("BENCHMARKS.md");
    let text = run_all(&report);
    let rows = [
        // upload
        "| raw TCP → discard ",
        "| raw TCP → file (write) ",
        "| raw TCP → file (splice) ",
        "| weir, pause 64 KiB → discard ",
        "| weir, pause 64 KiB → discard, server's chunks ",
        "| weir, pause 256 KiB → file (write) ",
        "| weir, pause 1 MiB → discard ",
        "| weir, pause 4 MiB → file (write) ",
        "| weir, pause 4 MiB → file (splice) ",
        "| hyper → discard ",
        "| hyper → file (write) ",
        // timeline
        "| raw TCP ",
        "| weir (pause 1 MiB) ",
        // plaintext
        "| raw responder ",
        "| weir ",
        "| weir, per-core ",
        "| hyper, pipeline_flush ",
        "| hyper, per-core, pipeline_flush ",
        // local
        "| raw responder TCP ",
        "| raw responder Unix ",
        "| weir TCP ",
        "| weir Unix ",
        "| hyper Unix ",
        "| raw TCP ",
        "| raw Unix ",
        "| memcpy (same process) ",
    ];
    for row in rows {
        assert!(text.contains(row), "report lacks row {row:?}:\n{text}");
    }
    for scenario in ["upload", "timeline", "plaintext", "local"] {
        assert_eq!(
            text.matches(&format!("<!-- weir-bench:{scenario}:begin -->"))
                .count(),
            1,
            "section {scenario}"
        );
        assert!(dir.path().join(format!("bench-{scenario}.svg")).exists());
    }
    assert!(text.contains("- Command: `cargo run"));
    // Every system ran: no row fell back to "not available".
    assert!(
        !text.contains("not available"),
        "a system did not start:\n{text}"
    );
    // The timeline counts temporary files; the raw receiver creates none.
    assert!(
        text.lines()
            .any(|l| l.starts_with("| raw TCP ") && l.contains("| 0 / 0 "))
    );
}
