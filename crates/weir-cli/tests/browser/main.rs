//! The browser page (`GET /`, `serve/page.rs`) driven by headless Chromium through Playwright
//! for Python (`page.py` beside this file): uploads through the file picker (opened from the
//! keyboard) and a synthetic drop, a 200 MiB upload that survives `weir serve` being killed and
//! started again mid-way, names with markup, quotes and a right-to-left override, browsing,
//! sorting, downloading, deleting, phone width, the page under a token, and pages of other
//! origins (a form, a `no-cors` `fetch`, `sendBeacon`) and of a DNS-rebound name storing nothing.
//!
//! The Python script runs `weir serve` itself rather than through weir-testkit's
//! `serve_binary`: only the browser's traffic shows the moment to kill the server (the large
//! file's second append leaving the page), and the restart must reuse the same port, which
//! `serve_binary` (port 0) does not offer.
//!
//! Needs `python3` with `playwright` (PyPI) and Chromium (Debian's `chromium`; `WEIR_CHROMIUM`
//! names another): `.ci/run` installs both. Without them the test says so and passes, or fails
//! when `CI` is set.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Chromium's executable and a `python3` that imports playwright, or why not.
fn browser() -> Result<PathBuf, String> {
    let chromium = std::env::var_os("WEIR_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .map(PathBuf::from)
                .into_iter()
                .find(|p| p.exists())
        })
        .ok_or("no Chromium (apt-get install chromium, or set WEIR_CHROMIUM)")?;
    let playwright = Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .status()
        .is_ok_and(|s| s.success());
    if !playwright {
        return Err("python3 cannot import playwright (pip install playwright)".into());
    }
    Ok(chromium)
}

#[test]
fn the_page_uploads_resumes_across_a_restart_browses_and_escapes_names() {
    let chromium = match browser() {
        Ok(path) => path,
        Err(why) => {
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipped: {why}");
            return;
        }
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
