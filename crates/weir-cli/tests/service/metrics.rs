//! `/metrics`: scraped with a real parser (Python `prometheus_client`'s text parser) before and
//! after known traffic; the deltas asserted. Every test that scrapes asks [`parser`] first.

use crate::support::*;
use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;
use std::process::Command;

/// Whether `python3` has `prometheus_client`, which [`scrape`] parses with: a test that scrapes
/// returns at once on `false` (skipped, or failed under `WEIR_REQUIRE_TOOLS=1`).
pub(crate) fn parser() -> bool {
    let found = weir_testkit::tools::python_imports("prometheus_client.parser");
    weir_testkit::tools::require(
        "prometheus_client (Python)",
        found,
        "pip install prometheus_client",
    )
}

/// Fetches `url` and parses it with `prometheus_client`; returns every sample as
/// `name{label="value",...}` (labels sorted) → value, plus `scrape_bytes` (the body's length).
pub(crate) fn scrape(url: &str, token: Option<&str>) -> HashMap<String, f64> {
    const SCRIPT: &str = r#"
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
req = urllib.request.Request(sys.argv[1])
if len(sys.argv) > 2:
    req.add_header("Authorization", "Bearer " + sys.argv[2])
with urllib.request.urlopen(req) as r:
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
    text = r.read().decode()
print("scrape_bytes\t%d" % len(text))
for family in text_string_to_metric_families(text):
    for s in family.samples:
        labels = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
        print("%s{%s}\t%r" % (s.name, labels, s.value))
"#;
    let mut cmd = Command::new("python3");
    cmd.args(["-c", SCRIPT, url]);
    if let Some(token) = token {
        cmd.arg(token);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "scrape failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            (k.trim_end_matches("{}").to_owned(), v.parse().unwrap())
        })
        .collect()
}

fn delta(before: &HashMap<String, f64>, after: &HashMap<String, f64>, key: &str) -> f64 {
    let get = |m: &HashMap<String, f64>| {
        *m.get(key)
            .unwrap_or_else(|| panic!("no sample {key} in {:#?}", after.keys()))
    };
    get(after) - get(before)
}

const PUT_2XX: &str = "weir_http_requests_total{method=\"PUT\",status=\"2xx\"}";

#[test]
fn deltas_after_known_traffic() {
    if !crate::metrics::parser() {
        return;
    }
    let token = "scrape-me";
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let s = {
        let (child, addr) = spawn(
            &root,
            dir.path(),
            // No minimum body rate: the held upload below waits for scrapes (a Python process
            // each) between its halves, which on a loaded machine took longer than the rate's
            // 5 s grace allows, and it was cut with 408 instead of completing.
            &[
                "--max-upload",
                "5000",
                "--max-storage",
                "1MiB",
                "--min-body-rate",
                "0",
            ],
            &[("WEIR_TOKEN", token)],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        Server {
            child,
            addr,
            dir,
            root,
        }
    };
    let url = s.url("/metrics");
    let (status, _) = curl_status(&[&url]);
    assert_eq!(status, 401, "behind the token");

    let before = scrape(&url, Some(token));
    let auth = format!("authorization: Bearer {token}");
    let body = data(3000, 1);
    let put = format!("PUT /files/a.bin HTTP/1.1\r\n{auth}");
    assert_eq!(s.request(&put, &body).status, 201);
    let get = format!("GET /files/a.bin HTTP/1.1\r\n{auth}");
    assert_eq!(s.request(&get, b"").status, 200);
    assert_eq!(s.request("GET /nope HTTP/1.1", b"").status, 404);
    let big = format!("PUT /files/big HTTP/1.1\r\n{auth}\r\ncontent-length: 9000");
    assert_eq!(s.request(&big, b"").status, 413);
    assert_eq!(s.request("DELETE /files/a.bin HTTP/1.1", b"").status, 401);
    let after = scrape(&url, Some(token));

    let d = |key: &str| delta(&before, &after, key);
    let requests = |method: &str, class: &str| {
        d(&format!(
            "weir_http_requests_total{{method=\"{method}\",status=\"{class}\"}}"
        ))
    };
    assert_eq!(requests("PUT", "2xx"), 1.0);
    assert_eq!(requests("PUT", "4xx"), 1.0);
    // Our GET, and the first scrape (counted once it was answered).
    assert_eq!(requests("GET", "2xx"), 2.0);
    assert_eq!(requests("GET", "4xx"), 1.0, "the 404");
    assert_eq!(requests("DELETE", "4xx"), 1.0);
    assert_eq!(requests("PUT", "5xx"), 0.0);
    assert_eq!(d("weir_http_request_body_bytes_total"), 3000.0);
    let sent = d("weir_http_response_body_bytes_total");
    assert!(sent >= 3000.0 + before["scrape_bytes"], "{sent}");
    assert_eq!(d("weir_upload_size_bytes_count"), 1.0);
    assert_eq!(d("weir_upload_size_bytes_sum"), 3000.0);
    assert_eq!(d("weir_upload_size_bytes_bucket{le=\"1024\"}"), 0.0);
    assert_eq!(d("weir_upload_size_bytes_bucket{le=\"65536\"}"), 1.0);
    assert_eq!(d("weir_upload_duration_seconds_count"), 1.0);
    assert_eq!(d("weir_storage_used_bytes"), 3000.0 + 4096.0);
    assert_eq!(after["weir_storage_quota_bytes"], 1048576.0);
    assert_eq!(
        after["weir_http_requests_in_flight"], 1.0,
        "the scrape itself"
    );
    assert_eq!(after["weir_uploads_in_flight"], 0.0);
    assert_eq!(
        d("weir_connections_accepted_total"),
        6.0,
        "5 requests and the scrape"
    );

    // An upload that waits for the rest of its body is in flight.
    let mut held = TcpStream::connect(s.addr).unwrap();
    write!(
        held,
        "PUT /files/slow HTTP/1.1\r\nhost: t\r\n{auth}\r\ncontent-length: 2000\r\n\r\n"
    )
    .unwrap();
    held.write_all(&[1; 1000]).unwrap();
    wait_for("the upload in flight", || {
        scrape(&url, Some(token))["weir_uploads_in_flight"] == 1.0
    });
    let during = scrape(&url, Some(token));
    assert_eq!(during["weir_http_requests_in_flight"], 2.0);
    assert!(during["weir_connections_open"] >= 1.0);
    held.write_all(&[1; 1000]).unwrap();
    wait_for("the upload done", || {
        let now = scrape(&url, Some(token));
        now["weir_uploads_in_flight"] == 0.0 && now[PUT_2XX] == after[PUT_2XX] + 1.0
    });
}

#[test]
fn on_a_listener_of_its_own() {
    if !crate::metrics::parser() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (child, addr) = spawn(
        &root,
        dir.path(),
        &["--metrics-listen", &listen],
        &[("WEIR_TOKEN", "t")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = Server {
        child,
        addr,
        dir,
        root,
    };
    let (status, _) = curl_status(&[&s.url("/metrics")]);
    assert_eq!(status, 404, "not on the service's listener");
    let before = scrape(&format!("http://{listen}/metrics"), None);
    let get = "GET /files/x HTTP/1.1\r\nauthorization: Bearer t";
    assert_eq!(s.request(get, b"").status, 404);
    let after = scrape(&format!("http://{listen}/metrics"), None);
    assert_eq!(
        delta(
            &before,
            &after,
            "weir_http_requests_total{method=\"GET\",status=\"4xx\"}"
        ),
        1.0,
        "the 404; scrapes are not counted"
    );
    let (status, _) = curl_status(&[&format!("http://{listen}/files/x")]);
    assert_eq!(status, 404, "the metrics listener serves nothing else");
}

#[test]
fn resumable_uploads_open() {
    if !crate::metrics::parser() {
        return;
    }
    let s = Server::start(&[]);
    let url = s.url("/metrics");
    let open = || scrape(&url, None)["weir_resumable_uploads_open"];
    assert_eq!(open(), 0.0);
    // The count is listed at most every 2 s (`open_uploads.rs`): a change shows within that.
    let upload = crate::resumable::create_partial(&s, "r.bin", b"abc", "");
    wait_for("the upload to be counted", || open() == 1.0);
    let cancel = s.request(&format!("DELETE {upload} HTTP/1.1"), b"");
    assert_eq!(cancel.status, 204, "{}", cancel.text());
    wait_for("the cancelled upload to be uncounted", || open() == 0.0);
}

/// The body gauges: an upload whose handler is held (by a pre-upload hook that waits for a
/// file) before reading its body, sent whole with its head, shows as one connection paused
/// with its read-ahead buffered, bounded by the threshold plus one read buffer (the head's
/// read); both gauges are back to 0 once the upload is stored.
#[test]
fn connections_paused_and_body_bytes_buffered_now() {
    if !crate::metrics::parser() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let hook = dir.path().join("hook");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat > /dev/null\nwhile [ ! -e {} ]; do sleep 0.05; done\nexit 0\n",
            go.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("root");
    let threshold = 4096.0;
    let read_buffer = 16384.0; // weir::Config's default read_buffer_size
    let s = Server::start_at(
        dir,
        root,
        &[
            "--pre-upload-hook",
            hook.to_str().unwrap(),
            "--pre-upload-timeout",
            "5m",
            "--pause-threshold",
            "4KiB",
        ],
    );
    let before = scrape(&s.url("/metrics"), None);
    assert_eq!(before["weir_connections_paused"], 0.0);
    assert_eq!(before["weir_body_buffered_bytes"], 0.0);
    let body = data(64 * 1024, 9);
    let mut c = TcpStream::connect(s.addr).unwrap();
    let mut request = format!(
        "PUT /files/held.bin HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    let writer = {
        let mut c = c.try_clone().unwrap();
        std::thread::spawn(move || c.write_all(&request).unwrap())
    };
    wait_for("the held upload to show", || {
        scrape(&s.url("/metrics"), None)["weir_connections_paused"] == 1.0
    });
    let held = scrape(&s.url("/metrics"), None);
    let buffered = held["weir_body_buffered_bytes"];
    assert!(
        (threshold..=threshold + read_buffer).contains(&buffered),
        "{buffered}"
    );
    std::fs::write(&go, b"").unwrap();
    writer.join().unwrap();
    let mut answer = Vec::new();
    std::io::Read::read_to_end(&mut c, &mut answer).unwrap();
    assert_eq!(parse_response(&answer).status, 201);
    let after = scrape(&s.url("/metrics"), None);
    assert_eq!(after["weir_connections_paused"], 0.0);
    assert_eq!(after["weir_body_buffered_bytes"], 0.0);
    assert_eq!(s.request("GET /files/held.bin HTTP/1.1", b"").body, body);
}

/// The body gauges over HTTP/2 (h2c, raw frames) and HTTP/1.1 together: a stream whose
/// handler is held (by the pre-upload hook) holds its whole stream window (the pause
/// threshold) unreleased and pauses its connection; an HTTP/1.1 upload held the same way holds
/// what came with its head. One HTTP/2 stream is then reset and two connections are dropped
/// mid-body: once the handlers end, nothing is left in the gauges (the reset stream's
/// connection still open), and the upload that went on is stored whole.
#[test]
fn body_gauges_over_http2_and_after_dropped_connections() {
    if !crate::metrics::parser() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    use weir_testkit::h2_frames::{DATA, FrameClient, RST_STREAM, WINDOW_UPDATE};
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let hook = dir.path().join("hook");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat > /dev/null\nwhile [ ! -e {} ]; do sleep 0.05; done\nexit 0\n",
            go.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("root");
    const WINDOW: usize = 16 * 1024; // the pause threshold is the HTTP/2 stream window
    let s = Server::start_at(
        dir,
        root,
        &[
            "--pre-upload-hook",
            hook.to_str().unwrap(),
            "--pre-upload-timeout",
            "5m",
            "--pause-threshold",
            "16KiB",
        ],
    );
    let gauges = || {
        let m = scrape(&s.url("/metrics"), None);
        (m["weir_body_buffered_bytes"], m["weir_connections_paused"])
    };
    assert_eq!(gauges(), (0.0, 0.0));
    let body = data(3 * WINDOW, 11);
    let length = body.len().to_string();
    let put = |path: &'static str| {
        vec![
            (":method", "PUT"),
            (":scheme", "http"),
            (":authority", "t"),
            (":path", path),
            ("content-length", length.as_str()),
        ]
    };
    // Two h2c uploads: each sends one stream window and must wait for the server.
    let mut kept = FrameClient::connect(s.addr);
    kept.headers(1, &put("/files/h2-kept.bin"), false);
    kept.send(DATA, 0, 1, &body[..WINDOW]);
    let mut dropped = FrameClient::connect(s.addr);
    dropped.headers(1, &put("/files/h2-dropped.bin"), false);
    dropped.send(DATA, 0, 1, &body[..WINDOW]);
    let mut reset = FrameClient::connect(s.addr);
    reset.headers(1, &put("/files/h2-reset.bin"), false);
    reset.send(DATA, 0, 1, &body[..WINDOW]);
    wait_for("the three HTTP/2 uploads to be paused", || {
        gauges() == (3.0 * WINDOW as f64, 3.0)
    });
    // An HTTP/1.1 upload held the same way, dropped later too.
    let h1 = TcpStream::connect(s.addr).unwrap();
    let head = format!(
        "PUT /files/h1-dropped.bin HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(&body);
    let writer = {
        let mut h1 = h1.try_clone().unwrap();
        // Blocks once the server stops reading; ends with an error when the socket is shut.
        std::thread::spawn(move || {
            let _ = h1.write_all(&request);
        })
    };
    // What came with its head is held (less than the threshold: not paused).
    wait_for("the HTTP/1.1 upload's buffered bytes to show", || {
        let (buffered, paused) = gauges();
        paused == 3.0 && buffered > 3.0 * WINDOW as f64
    });
    // Mid-body: a client resets its stream (its connection stays open to the end), the others
    // go away.
    reset.send(RST_STREAM, 0, 1, &8u32.to_be_bytes()); // CANCEL
    drop(dropped);
    h1.shutdown(std::net::Shutdown::Both).unwrap();
    writer.join().unwrap();
    std::fs::write(&go, b"").unwrap();
    // The kept upload goes on as the server grants window.
    let mut sent = WINDOW;
    let mut granted = 0usize;
    while sent < body.len() {
        let f = kept
            .until(|f| f.kind == WINDOW_UPDATE && f.stream == 1)
            .expect("WINDOW_UPDATE");
        granted += u32::from_be_bytes(f.payload[..4].try_into().unwrap()) as usize;
        while sent < body.len() && granted > 0 {
            let n = granted.min(WINDOW).min(body.len() - sent);
            let end = if sent + n == body.len() { 1 } else { 0 };
            kept.send(DATA, end, 1, &body[sent..sent + n]);
            sent += n;
            granted -= n;
        }
    }
    assert_eq!(kept.status(1), 201);
    wait_for("the gauges to come back to 0", || gauges() == (0.0, 0.0));
    drop(reset);
    assert_eq!(s.request("GET /files/h2-kept.bin HTTP/1.1", b"").body, body);
}

#[test]
fn concurrent_scrapes_share_one_listing_of_the_open_uploads() {
    let serve = InProcessServe::start_resumable(weir_store::LocalOptions::default());
    for i in 0..3 {
        let head = format!("PUT /files/open{i} HTTP/1.1\r\nupload-complete: ?0");
        // The first answer is the `104` that announces the upload.
        let r = request(serve.addr, &head, b"abc");
        assert!(matches!(r.status, 104 | 201), "{}", r.status);
    }
    let before = serve.service.open_upload_scans();
    // Eight scrapers at once, as a monitoring fleet does: one listing of the area among them.
    let start = std::sync::Arc::new(std::sync::Barrier::new(8));
    let addr = serve.addr;
    let scrapers: Vec<_> = (0..8)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                let r = request(addr, "GET /metrics HTTP/1.1", b"");
                assert_eq!(r.status, 200);
                let text = r.text();
                text.lines()
                    .find_map(|l| l.strip_prefix("weir_resumable_uploads_open "))
                    .map(|v| v.trim().to_owned())
            })
        })
        .collect();
    for scraper in scrapers {
        assert_eq!(scraper.join().unwrap().as_deref(), Some("3"));
    }
    let scans = serve.service.open_upload_scans() - before;
    assert!(scans <= 1, "{scans} listings for 8 scrapes");
    serve.stop();
}
