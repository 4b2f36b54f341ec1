//! Running h2spec (`../shared/tools/h2spec` beside the checkout) and reading its report: used by
//! weir's integration tests (`h2spec.rs`, the library) and weir-cli's service tests (the
//! `weir serve` binary).
//!
//! When the binary is missing, [`h2spec_binary`] skips the test or fails it, by the rule of
//! [`crate::tools::require`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// 3.5 #2 as h2spec names it: until weir closed a request line that is not HTTP/1 at all
/// without an answer, the one case that failed over h2c (the parsing test reads a report of it).
pub const H2C_INVALID_PREFACE: &str =
    "3.5. HTTP/2 Connection Preface / 2: Sends invalid connection preface";

/// The h2spec binary: `../shared/tools/h2spec` from the workspace root, or `$H2SPEC`.
pub fn h2spec_binary() -> Option<PathBuf> {
    let path = std::env::var_os("H2SPEC")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tools/h2spec")
        });
    let found = path.is_file();
    let install = format!(
        "not at {}: set H2SPEC, or put shared/tools beside the checkout",
        path.display()
    );
    crate::tools::require("h2spec", found, &install).then_some(path)
}

/// What one h2spec run reported.
#[derive(Debug)]
pub struct H2specRun {
    /// The summary line, `N tests, P passed, S skipped, F failed`.
    pub summary: String,
    pub counts: [u32; 4],
    /// The failed cases, as `section / case`.
    pub failed: Vec<String>,
    pub output: String,
}

/// Runs h2spec `--strict` against `addr` (TLS with `-t -k`) on `path`, with header fields long
/// enough that 4.2 #3's block exceeds `max_frame_size`.
pub fn run_h2spec(
    bin: &Path,
    addr: SocketAddr,
    tls: bool,
    path: &str,
    max_frame_size: u32,
) -> H2specRun {
    // Five fields of this length, Huffman-coded at 7 bits per `x`, exceed the frame size.
    let header_length = max_frame_size / 4 + 1;
    let mut cmd = Command::new(bin);
    cmd.arg("--strict")
        .args(["-h", &addr.ip().to_string()])
        .args(["-p", &addr.port().to_string()])
        .args(["-P", path])
        .args(["--max-header-length", &header_length.to_string()]);
    if tls {
        cmd.args(["-t", "-k"]);
    }
    let out = cmd.output().expect("run h2spec");
    let output = String::from_utf8_lossy(&out.stdout).into_owned();
    parse(output)
}

fn parse(output: String) -> H2specRun {
    let summary = output
        .lines()
        .rev()
        .find(|l| l.ends_with(" failed") && l.contains(" tests, "))
        .unwrap_or_else(|| panic!("no h2spec summary in:\n{output}"))
        .trim()
        .to_owned();
    let mut counts = [0u32; 4];
    for (slot, part) in counts.iter_mut().zip(summary.split(", ")) {
        *slot = part.split(' ').next().unwrap().parse().unwrap();
    }
    // The report's "Failures:" part lists each failed case under its section heading.
    let mut failed = Vec::new();
    let mut section = "";
    let failures = output
        .split_once("\nFailures:")
        .map_or("", |(_, rest)| rest);
    for line in failures.lines() {
        let line = line.trim();
        if let Some(case) = line.strip_prefix("× ") {
            failed.push(format!("{section} / {case}"));
        } else if line.split(' ').next().is_some_and(|n| {
            n.ends_with('.')
                && n.trim_end_matches('.')
                    .split('.')
                    .all(|d| d.parse::<u32>().is_ok())
        }) {
            section = line;
        }
    }
    H2specRun {
        summary,
        counts,
        failed,
        output,
    }
}

/// Every case passed and none was skipped, but `may_fail` may have failed.
pub fn assert_all_pass(run: &H2specRun, what: &str, may_fail: &[&str]) {
    let [tests, passed, skipped, failed] = run.counts;
    let unexpected: Vec<_> = run
        .failed
        .iter()
        .filter(|case| !may_fail.contains(&case.as_str()))
        .collect();
    assert!(
        tests >= 147
            && skipped == 0
            && unexpected.is_empty()
            && failed as usize == run.failed.len()
            && passed + failed == tests,
        "h2spec, {what}: {}; failed: {:#?}\n{}",
        run.summary,
        run.failed,
        run.output
    );
    eprintln!("h2spec, {what}: {}", run.summary);
}

#[test]
fn report_parsing() {
    let output = "\
Hypertext Transfer Protocol Version 2 (HTTP/2)
  3. Starting HTTP/2
    3.5. HTTP/2 Connection Preface
      ✔ 1: Sends client connection preface

Failures: \n
Hypertext Transfer Protocol Version 2 (HTTP/2)
  3. Starting HTTP/2
    3.5. HTTP/2 Connection Preface
      × 2: Sends invalid connection preface
        -> The endpoint MUST terminate the TCP connection.

Finished in 2.1295 seconds
147 tests, 145 passed, 1 skipped, 1 failed
";
    let run = parse(output.to_owned());
    assert_eq!(run.counts, [147, 145, 1, 1]);
    assert_eq!(run.failed, [H2C_INVALID_PREFACE]);
}
