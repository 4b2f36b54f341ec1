//! Ceph's s3-tests (`../shared/tools/s3-tests`, or `$WEIR_S3_TESTS`: the suite S3-compatible
//! servers are measured with, pytest + boto3) against `weir serve --s3-api`, in four runs, one
//! per store and transport:
//!
//! | run | store | transport |
//! | --- | --- | --- |
//! | local store over HTTP | the local store | HTTP |
//! | local store over HTTPS | the local store | HTTPS (boto3's `aws-chunked` bodies with CRC trailers) |
//! | S3 store over HTTP | `--store s3://` on SeaweedFS's `weed mini` | HTTP |
//! | S3 store over HTTPS | the same | HTTPS |
//!
//! `four_runs_at_once` starts the four together, each with its own server (and its own `weed`
//! for the S3 store), and fails naming every run that failed. Together rather than one test
//! each because a run mostly waits: on pytest's one thread, on `fsync`, on `weed`; the test
//! harness runs as many tests at once as there are cores, which on CI's two would run the four
//! in two rounds, each as long as its slowest run. Each run prints its time.
//!
//! `s3_tests/list.txt` names each of the 239 tests of the suite's `WEIR-core-tests.txt`:
//! `keep ID` must pass in every run; `local ID -- REASON` must pass on the local store and is
//! left out on the S3 store (why after ` -- `), `s3 ID -- REASON` the other way round; `http ID
//! -- REASON` must pass over HTTP and is left out over HTTPS; `out ID -- REASON` is left out of
//! every run. The list must cover `WEIR-core-tests.txt` exactly, so
//! a test added there is a decision to make here.
//!
//! Needs the suite and its Python packages (`pip install -r requirements.txt pytest-timeout`),
//! and `weed` for the S3 store: skipped with a loud line without them, failed under
//! `WEIR_REQUIRE_TOOLS=1` (`scripts/test` installs them). The suite's folder is only read
//! (`PYTHONDONTWRITEBYTECODE`, no pytest cache). Over HTTPS the suite is told not to verify
//! the test certificate (`ssl_verify = False`): what is under test is weir's S3 API over TLS,
//! not the client's trust store.

#[allow(dead_code)] // only `start_weed` is used here
#[path = "s3_nodes/mod.rs"]
mod s3_nodes;
#[allow(dead_code)] // the local root is not looked at here
#[path = "s3_api/server.rs"]
mod server;

use server::Store;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;
use weir_testkit::cert::TestCert;
use weir_testkit::tools;

/// The kept and left-out tests.
const LIST: &str = include_str!("s3_tests/list.txt");

/// The region weir answers for (`--s3-api-region`), and the suite's `api_name`.
const REGION: &str = "weir-test-1";

/// The suite's three users (`s3tests.conf.SAMPLE`'s keys), as token file lines.
const TOKENS: &str = "\
h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q== read,write,delete name=0555b35654ad1656d804
nopqrstuvwxyzabcdefghijklmnabcdefghijklm read,write,delete name=NOPQRSTUVWXYZABCDEFG
opqrstuvwxyzabcdefghijklmnopqrstuvwxyzab read,write,delete name=HIJKLMNOPQRSTUVWXYZA
";

/// The Python modules the suite imports.
const MODULES: &[&str] = &[
    "pytest",
    "pytest_timeout",
    "boto3",
    "munch",
    "isodate",
    "httplib2",
    "lxml",
    "requests",
    "pytz",
    "yaml",
];

fn suite_dir() -> PathBuf {
    match std::env::var_os("WEIR_S3_TESTS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/tools/s3-tests"
        )),
    }
}

/// One line of `list.txt`.
struct Entry {
    id: &'static str,
    /// Must pass on the local store.
    local: bool,
    /// Must pass on the S3 store.
    s3: bool,
    /// Must pass over HTTPS.
    https: bool,
}

impl Entry {
    fn kept_in(&self, store: Store, tls: bool) -> bool {
        let on_store = match store {
            Store::Local => self.local,
            Store::S3 => self.s3,
        };
        on_store && (self.https || !tls)
    }
}

/// The entries of `list.txt`; every line but `keep` must give a reason.
fn parse_list() -> Vec<Entry> {
    let mut entries = Vec::new();
    for line in LIST.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("list.txt: {line:?} has no test id"));
        let (local, s3, https) = match word {
            "keep" => {
                entries.push(Entry {
                    id: rest.trim(),
                    local: true,
                    s3: true,
                    https: true,
                });
                continue;
            }
            "out" => (false, false, false),
            "local" => (true, false, true),
            "s3" => (false, true, true),
            "http" => (true, true, false),
            _ => {
                panic!("list.txt: {line:?} is not `keep ID`, nor `out|local|s3|http ID -- REASON`")
            }
        };
        let (id, reason) = rest
            .split_once(" -- ")
            .unwrap_or_else(|| panic!("no reason for {rest}"));
        assert!(!reason.trim().is_empty(), "no reason for {id}");
        entries.push(Entry {
            id: id.trim(),
            local,
            s3,
            https,
        });
    }
    entries
}

#[test]
fn the_list_names_each_test_once_with_a_reason_for_each_left_out() {
    let entries = parse_list();
    let all: BTreeSet<&str> = entries.iter().map(|e| e.id).collect();
    assert_eq!(all.len(), entries.len(), "a test is listed twice");
    assert_eq!(all.len(), 239, "WEIR-core-tests.txt has 239 tests");
}

#[test]
fn four_runs_at_once() {
    if !suite_present() {
        return;
    }
    let runs = [
        (Store::Local, false),
        (Store::Local, true),
        (Store::S3, false),
        (Store::S3, true),
    ];
    let failed: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|&(store, tls)| scope.spawn(move || run_suite(store, tls)))
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| match handle.join() {
                Ok(Ok(())) => None,
                Ok(Err(failure)) => Some(failure),
                Err(panic) => Some(match panic.downcast::<String>() {
                    Ok(message) => *message,
                    Err(_) => "a run panicked".to_owned(),
                }),
            })
            .collect()
    });
    assert!(
        failed.is_empty(),
        "{} of 4 s3-tests runs failed:\n{}",
        failed.len(),
        failed.join("\n\n")
    );
}

/// Whether the suite and its packages are there; else skipped or failed.
fn suite_present() -> bool {
    let dir = suite_dir();
    let found = dir.join("WEIR-core-tests.txt").is_file();
    if !tools::require(
        "s3-tests",
        found,
        "../shared/tools/s3-tests, or set WEIR_S3_TESTS",
    ) {
        return false;
    }
    let missing: Vec<&str> = MODULES
        .iter()
        .copied()
        .filter(|m| !tools::python_imports(m))
        .collect();
    let install = "pip install -r ../shared/tools/s3-tests/requirements.txt pytest-timeout";
    tools::require("s3-tests' Python packages", missing.is_empty(), install)
}

/// Runs the tests kept on `store` against a server on it, over HTTPS when `tls`; each must
/// pass. The error names the run and shows pytest's output and the server's log.
fn run_suite(store: Store, tls: bool) -> Result<(), String> {
    let dir = suite_dir();
    let entries = parse_list();
    let suite: BTreeSet<String> = std::fs::read_to_string(dir.join("WEIR-core-tests.txt"))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    let listed: BTreeSet<String> = entries.iter().map(|e| e.id.to_string()).collect();
    assert_eq!(
        listed, suite,
        "list.txt must name exactly WEIR-core-tests.txt's tests"
    );
    let kept: Vec<&str> = entries
        .iter()
        .filter(|e| e.kept_in(store, tls))
        .map(|e| e.id)
        .collect();

    let weed = match store {
        Store::Local => None,
        Store::S3 => match s3_nodes::start_weed() {
            Some(weed) => Some(weed),
            None => return Ok(()),
        },
    };
    let cert = tls.then(TestCert::new);
    // The suite's `api_name` is the location the server answers for its buckets (RGW's
    // zonegroup); weir's is its region, given here (any other than `us-east-1`, for which S3
    // answers no location).
    let server = server::start_with(TOKENS, weed, cert.as_ref(), &["--s3-api-region", REGION]);
    let port = server.endpoint.rsplit(':').next().unwrap();
    let conf = server.dir.path().join("s3tests.conf");
    let sample = std::fs::read_to_string(dir.join("s3tests.conf.SAMPLE")).unwrap();
    let mut conf_text = sample
        .replace("host = localhost", "host = 127.0.0.1")
        .replace("port = 8000", &format!("port = {port}"))
        .replace("yournamehere-{random}-", "weir-{random}-")
        .replace("api_name = default", &format!("api_name = {REGION}"));
    if tls {
        conf_text = conf_text.replace("is_secure = False", "is_secure = True");
    }
    std::fs::write(&conf, conf_text).unwrap();
    let started = Instant::now();
    let output = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            // A guard against a hang, not a measure: test_multipart_get_part compares 16 MiB
            // in 1 KiB chunks, slicing the rest of its string each time (tens of GB copied in
            // Python), which takes over 60 s on a busy 2-core machine.
            "--timeout",
            "240",
            "-q",
            "-rA",
        ])
        .args(&kept)
        .current_dir(&dir)
        .env("S3TEST_CONF", &conf)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL")
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let passed: BTreeSet<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("PASSED "))
        .map(str::trim)
        .collect();
    let not_passed: Vec<&&str> = kept.iter().filter(|id| !passed.contains(**id)).collect();
    let log = std::fs::read_to_string(server.dir.path().join("stderr.log")).unwrap_or_default();
    let run = format!(
        "{} store over {}",
        match store {
            Store::Local => "local",
            Store::S3 => "S3",
        },
        if tls { "HTTPS" } else { "HTTP" }
    );
    if !output.status.success() || !not_passed.is_empty() {
        return Err(format!(
            "{run}: {} of {} kept s3-tests did not pass: {not_passed:#?}\n{}\n{}\n--- server log ---\n{log}",
            not_passed.len(),
            kept.len(),
            stdout,
            String::from_utf8_lossy(&output.stderr),
        ));
    }
    // Measured, not asserted: CI's budget is watched from this line.
    eprintln!(
        "s3-tests, {run}: {} of 239 pass (kept), {} left out, in {:.0?}",
        kept.len(),
        239 - kept.len(),
        took
    );
    Ok(())
}
