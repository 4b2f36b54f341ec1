//! The browser page (`GET /`, `serve/page.rs`) driven by headless Chromium through Playwright
//! for Python (`page.py` beside this file): uploads through the file picker (opened from the
//! keyboard) and a synthetic drop, a 200 MiB upload that survives `weir serve` being killed and
//! started again mid-way, names with markup, quotes and a right-to-left override, browsing,
//! sorting, downloading, deleting, phone width, the page under a token, and pages of other
//! origins (a form, a `no-cors` `fetch`, `sendBeacon`) and of a DNS-rebound name storing nothing.
//! Then issue 35's parts, each on its own server: many small files (one overall line, one
//! listing fetch, each row once), refusals that are not retried (507, 413, 403), the questions
//! before replacing, folders deleted, paging kept across a delete and the filter, the token box
//! and the Delete buttons a token's scopes allow, and the README's screenshot
//! (`WEIR_PAGE_SCREENSHOT`).
//!
//! The Python script runs `weir serve` itself rather than through weir-testkit's
//! `serve_binary`: only the browser's traffic shows the moment to kill the server (the large
//! file's second append leaving the page), and the restart must reuse the same port, which
//! `serve_binary` (port 0) does not offer.
//!
//! Needs `python3` with `playwright` (PyPI) and Chromium (Debian's `chromium`; `WEIR_CHROMIUM`
//! names another): `scripts/test` installs both. Without them the test is skipped with a line,
//! or fails under `WEIR_REQUIRE_TOOLS=1` (weir-testkit's `tools`).

use std::path::{Path, PathBuf};
use std::process::Command;
use weir_testkit::tools;

/// Chromium's executable, if it and a `python3` that imports playwright are there (else skipped
/// or failed by `tools::require`).
fn browser() -> Option<PathBuf> {
    let chromium = std::env::var_os("WEIR_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .map(PathBuf::from)
                .into_iter()
                .find(|p| p.exists())
        });
    let found = chromium.is_some();
    if !tools::require(
        "Chromium",
        found,
        "apt-get install chromium, or set WEIR_CHROMIUM",
    ) {
        return None;
    }
    let found = tools::python_imports("playwright.sync_api");
    if !tools::require("playwright for python3", found, "pip install playwright") {
        return None;
    }
    chromium
}

#[test]
fn the_page_uploads_resumes_across_a_restart_browses_and_escapes_names() {
    let Some(chromium) = browser() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/page.py");
    let out = Command::new("python3")
        .arg(&script)
        .env("WEIR", env!("CARGO_BIN_EXE_weir"))
        .env("WORK", work.path())
        .env("CHROMIUM", &chromium)
        .output()
        .unwrap();
    let server_log =
        std::fs::read_to_string(work.path().join("server-stderr.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "page.py failed\n--- stdout\n{}\n--- stderr\n{}\n--- weir serve\n{server_log}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("all checks passed"));
}
