//! An external HTTP/2 conformance suite against weir: `httpwg` (`httpwg-cli` on crates.io, a
//! Rust port of h2spec's RFC 9113 cases; h2spec itself is not on an allowed registry), over
//! h2c, strict about error codes, against a handler that reads every body to its end (so that
//! faults in a body, such as a `content-length` the DATA frames contradict, are seen). Run it
//! alone, with its report: `cargo test -p weir --test integration h2_conformance -- --nocapture`.
//!
//! The suite is installed on first use with `cargo install --locked` into Cargo's temporary
//! target directory (about a minute, once). Every case must pass except the few listed in
//! [`KNOWN`]: faults inside the `h2` crate that weir cannot see or answer from outside it, each
//! with its reason (docs/ARCHITECTURE.md, "Conformance"). Those may fail (one of them only
//! sometimes: it races h2's close); any other failing case fails this test. The output says
//! which known cases passed this time.

use crate::support::TestServer;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use weir::http::StatusCode;
use weir::{Config, Error, Exchange, Handler};

/// The suite's version: its case list is what [`KNOWN`] refers to.
const HTTPWG_VERSION: &str = "0.2.5";

/// Cases weir fails, and why. All are answered by closing the connection; none serves a
/// request wrongly.
const KNOWN: [(&str, &str); 3] = [
    (
        "RFC 9113 :: 4. http frames :: invalid header block fragment",
        "h2 answers an HPACK decoding error with PROTOCOL_ERROR, not COMPRESSION_ERROR; only \
         an HPACK decoder sees it, and that is inside h2",
    ),
    (
        "RFC 9113 :: 7. error codes :: sends goaway frame with unknown error code",
        "h2 closes an idle connection once the client sends GOAWAY, whatever its code; the \
         case expects a PING answered afterwards, which happens only when the PING wins the \
         race with the close",
    ),
    (
        "RFC 9113 :: 8. expressing http semantics in http2 :: sends headers frame with pseudo \
         header in trailer",
        "h2 drops pseudo-header fields from trailers instead of rejecting them, so weir never \
         sees them",
    ),
];

/// With weir's default 256 KiB frames, this case's own precondition fails (it needs a header
/// block larger than the server's largest frame); it is run at 16 KiB frames instead.
const NEEDS_16K_FRAMES: &str =
    "RFC 9113 :: 4. http frames :: large headers frame exceeding max size";

struct ReadAllThenOk;

impl Handler for ReadAllThenOk {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), Error> {
        let mut buf = [0u8; 16 * 1024];
        while ex.read_body(&mut buf).await? > 0 {}
        // Longer than five bytes: one of the suite's flow-control cases counts on it.
        ex.respond(StatusCode::OK)
            .body("ok: the body was read to its end\n")
            .await
    }
}

/// The `httpwg` binary, installed if it is not there yet.
fn httpwg() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("httpwg-{HTTPWG_VERSION}"));
    let bin = root.join("bin").join("httpwg");
    if !bin.is_file() {
        eprintln!(
            "installing httpwg-cli {HTTPWG_VERSION} into {}",
            root.display()
        );
        let status = Command::new(env!("CARGO"))
            .args(["install", "--locked", "--quiet", "httpwg-cli", "--version"])
            .arg(format!("={HTTPWG_VERSION}"))
            .arg("--root")
            .arg(&root)
            .status()
            .expect("run cargo install");
        assert!(status.success(), "cargo install httpwg-cli failed");
    }
    bin
}

/// What one run of the suite reported.
struct Outcome {
    ran: BTreeSet<String>,
    passed: BTreeSet<String>,
    output: String,
}

impl Outcome {
    fn failed(&self) -> BTreeSet<String> {
        self.ran.difference(&self.passed).cloned().collect()
    }
}

/// Runs every case against a weir server with `config`.
fn run_suite(config: Config) -> Outcome {
    let server = TestServer::start_with(config, ReadAllThenOk, None);
    let out = Command::new(httpwg())
        .args([
            "--verbose",
            "--frame-timeout",
            "2000",
            "--connect-timeout",
            "5000",
        ])
        .arg("--address")
        .arg(server.addr.to_string())
        // One case at a time: no case's timing depends on the others'.
        .env("SEQUENTIAL", "1")
        .output()
        .expect("run httpwg");
    server.stop();
    let text = strip_ansi(&String::from_utf8_lossy(&out.stderr));
    let names = |marker: &str| -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| l.split_once(marker).map(|(_, name)| name.trim().to_owned()))
            .collect()
    };
    Outcome {
        ran: names("Running test: "),
        passed: names("Test passed: "),
        output: text,
    }
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn assert_only_known_failures(run: &Outcome, also_known: &[&str]) {
    assert!(
        run.ran.len() >= 100,
        "the suite ran {} cases, expected its ~107:\n{}",
        run.ran.len(),
        run.output
    );
    let known: BTreeSet<String> = KNOWN
        .iter()
        .map(|(name, _)| *name)
        .chain(also_known.iter().copied())
        .map(str::to_owned)
        .collect();
    let failed = run.failed();
    let new: Vec<_> = failed.difference(&known).collect();
    assert!(
        new.is_empty(),
        "cases weir now fails: {new:#?}\n{}",
        run.output
    );
    let passed_anyway: Vec<_> = known.difference(&failed).collect();
    eprintln!(
        "httpwg: {} of {} cases passed; failed (all known): {failed:#?}; known but passed this \
         time: {passed_anyway:#?}",
        run.passed.len(),
        run.ran.len()
    );
}

#[test]
fn httpwg_suite_passes_but_for_the_known_h2_faults() {
    let run = run_suite(Config::default());
    assert_only_known_failures(&run, &[NEEDS_16K_FRAMES]);
    let mut config = Config::default();
    config.http2.max_frame_size = 16 * 1024;
    let run = run_suite(config);
    assert_only_known_failures(&run, &[]);
}
