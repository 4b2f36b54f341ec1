//! Ceph's s3-tests (`../shared/tools/s3-tests`, or `$WEIR_S3_TESTS`: the suite S3-compatible
//! servers are measured with, pytest + boto3) against `weir serve --s3-api` over HTTP on the
//! local store. `s3_tests/list.txt` names each of the 239 tests of the suite's
//! `WEIR-core-tests.txt`: `keep` ones must all pass, `out` ones are left out with the reason on
//! their line. The list must cover `WEIR-core-tests.txt` exactly, so a test added there is a
//! decision to make here.
//!
//! Needs the suite and its Python packages (`pip install -r requirements.txt pytest-timeout`):
//! skipped with a loud line without them, failed under `WEIR_REQUIRE_TOOLS=1` (`scripts/test`
//! installs them). The suite's folder is only read (`PYTHONDONTWRITEBYTECODE`, no pytest cache).

#[allow(dead_code)] // the local root is not looked at here
#[path = "s3_api/server.rs"]
mod server;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use weir_testkit::tools;

/// The kept and left-out tests.
const LIST: &str = include_str!("s3_tests/list.txt");

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

/// `(kept, left out)` node ids of `list.txt`; every `out` line must give a reason.
fn parse_list() -> (Vec<&'static str>, Vec<&'static str>) {
    let (mut kept, mut out) = (Vec::new(), Vec::new());
    for line in LIST.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once(' ') {
            Some(("keep", id)) => kept.push(id.trim()),
            Some(("out", rest)) => {
                let (id, reason) = rest
                    .split_once(" -- ")
                    .unwrap_or_else(|| panic!("no reason for {rest}"));
                assert!(!reason.trim().is_empty(), "no reason for {id}");
                out.push(id.trim());
            }
            _ => panic!("list.txt: {line:?} is neither `keep ID` nor `out ID -- REASON`"),
        }
    }
    (kept, out)
}

#[test]
fn the_list_names_each_test_once_with_a_reason_for_each_left_out() {
    let (kept, out) = parse_list();
    let all: BTreeSet<&str> = kept.iter().chain(&out).copied().collect();
    assert_eq!(all.len(), kept.len() + out.len(), "a test is listed twice");
    assert_eq!(all.len(), 239, "WEIR-core-tests.txt has 239 tests");
}

#[test]
fn ceph_s3_tests_kept_list_passes() {
    let dir = suite_dir();
    let found = dir.join("WEIR-core-tests.txt").is_file();
    if !tools::require(
        "s3-tests",
        found,
        "../shared/tools/s3-tests, or set WEIR_S3_TESTS",
    ) {
        return;
    }
    let missing: Vec<&str> = MODULES
        .iter()
        .copied()
        .filter(|m| !tools::python_imports(m))
        .collect();
    let install = "pip install -r ../shared/tools/s3-tests/requirements.txt pytest-timeout";
    if !tools::require("s3-tests' Python packages", missing.is_empty(), install) {
        return;
    }
    let (kept, out) = parse_list();
    let suite: BTreeSet<String> = std::fs::read_to_string(dir.join("WEIR-core-tests.txt"))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    let listed: BTreeSet<String> = kept.iter().chain(&out).map(|s| s.to_string()).collect();
    assert_eq!(
        listed, suite,
        "list.txt must name exactly WEIR-core-tests.txt's tests"
    );

    let server = server::start(TOKENS, None, None);
    let port = server.endpoint.rsplit(':').next().unwrap();
    let conf = server.dir.path().join("s3tests.conf");
    let sample = std::fs::read_to_string(dir.join("s3tests.conf.SAMPLE")).unwrap();
    let conf_text = sample
        .replace("host = localhost", "host = 127.0.0.1")
        .replace("port = 8000", &format!("port = {port}"))
        .replace("yournamehere-{random}-", "weir-{random}-");
    std::fs::write(&conf, conf_text).unwrap();
    let output = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--timeout",
            "60",
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
    let stdout = String::from_utf8_lossy(&output.stdout);
    let passed: BTreeSet<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("PASSED "))
        .map(str::trim)
        .collect();
    let not_passed: Vec<&&str> = kept.iter().filter(|id| !passed.contains(**id)).collect();
    let log = std::fs::read_to_string(server.dir.path().join("stderr.log")).unwrap_or_default();
    assert!(
        output.status.success() && not_passed.is_empty(),
        "{} of {} kept s3-tests did not pass: {not_passed:#?}\n{}\n{}\n--- server log ---\n{log}",
        not_passed.len(),
        kept.len(),
        stdout,
        String::from_utf8_lossy(&output.stderr),
    );
    eprintln!(
        "s3-tests: {} of 239 pass (kept), {} left out",
        kept.len(),
        out.len()
    );
}
