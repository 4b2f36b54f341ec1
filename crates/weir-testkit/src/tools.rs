//! The one rule for tests that need a tool outside Cargo (Chromium, SeaweedFS's `weed`, h2spec,
//! Python or npm packages): when the tool is missing, the test is **skipped with a line on
//! stderr** (shown by `cargo test` although it captures a passing test's output) that names
//! it and how to install it, so `cargo test --workspace` stays usable without the tools; with [`REQUIRE_TOOLS`]`=1` in the environment (`scripts/test`, and so
//! `.ci/run`, set it) the test **fails** instead: a skipped test is not a passed one.
//!
//! A test asks [`require`] first and returns at once when it answers `false`:
//!
//! ```no_run
//! use weir_testkit::tools;
//! if !tools::require("tuspy", tools::python_imports("tusclient"), "pip install tuspy") {
//!     return;
//! }
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The environment variable that turns a missing tool from a skip into a failure (`1`).
pub const REQUIRE_TOOLS: &str = "WEIR_REQUIRE_TOOLS";

/// Whether a missing tool fails the test: [`REQUIRE_TOOLS`] is set to anything but `0` or empty.
pub fn required() -> bool {
    std::env::var_os(REQUIRE_TOOLS).is_some_and(|v| !v.is_empty() && v != "0")
}

/// `true` when the tool is `found`. Otherwise the test is skipped (`false`, with a line on
/// stderr naming the test, the tool and `install`), or, when [`required`], fails here.
pub fn require(tool: &str, found: bool, install: &str) -> bool {
    if found {
        return true;
    }
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("this test");
    if required() {
        panic!("{test}: {tool} is missing and {REQUIRE_TOOLS}=1 demands it ({install})");
    }
    // Straight to the process's stderr, not through `eprintln!`: the test harness captures
    // that for a passing test, and a skip must be seen.
    let line = format!(
        "\n*** SKIPPED {test}: {tool} is missing ({install}; `scripts/test` installs the \
         tools, and fails instead of skipping) ***\n"
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

/// `program` in a directory of the `PATH`.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Whether `python3` (the one on the `PATH`) runs and imports `module`.
pub fn python_imports(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_found_tool_passes_and_programs_are_found_on_the_path() {
    assert!(require("sh", true, "never asked"));
    assert!(on_path("sh").is_some());
    assert!(on_path("no-such-tool-for-weir").is_none());
}
