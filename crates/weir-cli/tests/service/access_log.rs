//! The access log: one line per request, parsed back field by field (text and JSON, HTTP/1.1
//! and HTTP/2).

use crate::support::*;
use std::collections::HashMap;
use std::path::Path;

/// The access log lines in `file` (other stderr lines, from `tracing`, left out), once there are
/// `n` of them: a line is written after the handler returns, which may be after the client has
/// its answer.
fn lines(file: &Path, prefix: &str, n: usize) -> Vec<String> {
    let read = || -> Vec<String> {
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .map(str::to_owned)
            .collect()
    };
    wait_for("access log lines", || read().len() >= n);
    let all = read();
    assert_eq!(all.len(), n, "{all:#?}");
    all
}

/// `key=value key=value` → map.
fn fields(line: &str) -> HashMap<String, String> {
    line.split(' ')
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .unwrap_or_else(|| panic!("{kv:?} in {line}"));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

fn check_time(time: &str) {
    // 2026-11-30T19:48:30.123Z
    let b = time.as_bytes();
    assert_eq!(b.len(), 24, "{time}");
    assert!(
        b[4] == b'-' && b[10] == b'T' && b[19] == b'.' && b[23] == b'Z',
        "{time}"
    );
}

#[test]
fn text_lines_one_per_request() {
    let s = Server::start(&["--max-upload", "5000"]);
    let body = data(3000, 7);
    assert_eq!(s.request("PUT /files/d/a.bin HTTP/1.1", &body).status, 201);
    assert_eq!(s.request("GET /files/d/a.bin HTTP/1.1", b"").status, 200);
    assert_eq!(s.request("HEAD /files/d/a.bin HTTP/1.1", b"").status, 200);
    assert_eq!(s.request("GET /nowhere?q=a\"b HTTP/1.1", b"").status, 404);
    let big = "PUT /files/big HTTP/1.1\r\ncontent-length: 9000";
    assert_eq!(s.request(big, b"").status, 413);
    let log = s.dir.path().join("server-stderr.log");
    let lines = lines(&log, "time=", 5);
    let f: Vec<_> = lines.iter().map(|l| fields(l)).collect();
    for (f, line) in f.iter().zip(&lines) {
        check_time(&f["time"]);
        assert!(f["client"].starts_with("127.0.0.1:"), "{line}");
        f["duration"].parse::<f64>().unwrap();
    }
    let sha = sha256(&body);
    let expect = [
        (
            "PUT",
            "/files/d/a.bin",
            "201",
            "3000",
            None,
            Some(("3000", sha.as_str())),
        ),
        ("GET", "/files/d/a.bin", "200", "0", Some("3000"), None),
        ("HEAD", "/files/d/a.bin", "200", "0", Some("0"), None),
        ("GET", "/nowhere?q=a\\x22b", "404", "0", None, None),
        ("PUT", "/files/big", "413", "0", None, None),
    ];
    // Each request's line is written once its response has gone out, so the next request (a new
    // connection, maybe on the other worker thread) can log first: match lines by request, not
    // by position.
    for (method, path, status, bytes_in, bytes_out, stored) in expect {
        let f = f
            .iter()
            .find(|f| f["method"] == method && f["path"] == path)
            .unwrap_or_else(|| panic!("no line for {method} {path}: {lines:?}"));
        assert_eq!(f["status"], status, "{f:?}");
        assert_eq!(f["bytes_in"], bytes_in, "{f:?}");
        if let Some(out) = bytes_out {
            assert_eq!(f["bytes_out"], out, "{f:?}");
        }
        match stored {
            Some((size, sum)) => {
                assert_eq!(f["stored"], size, "{f:?}");
                assert_eq!(f["sha256"], sum, "{f:?}");
            }
            None => assert!(
                !f.contains_key("stored") && !f.contains_key("sha256"),
                "{f:?}"
            ),
        }
    }
}

#[test]
fn json_lines_to_a_file_over_both_protocols() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let s = Server::start(&[
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
    ]);
    let file = dir.path().join("up.bin");
    let body = data(100_000, 3);
    std::fs::write(&file, &body).unwrap();
    let (status, _) = curl_status(&[
        "--http2-prior-knowledge",
        "-T",
        file.to_str().unwrap(),
        &s.url("/files/up.bin"),
    ]);
    assert_eq!(status, 201);
    let (status, got) = curl_status(&["--http2-prior-knowledge", &s.url("/files/up.bin")]);
    assert_eq!((status, got.len()), (200, body.len()));
    let (status, _) = curl_status(&["-X", "DELETE", &s.url("/files/up.bin")]);
    assert_eq!(status, 204);
    let lines = lines(&log, "{", 3);
    let v: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for v in &v {
        check_time(v["time"].as_str().unwrap());
        assert!(v["client"].as_str().unwrap().starts_with("127.0.0.1:"));
        assert!(v["duration"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(
        (&v[0]["method"], &v[0]["path"], &v[0]["status"]),
        (&"PUT".into(), &"/files/up.bin".into(), &201.into())
    );
    assert_eq!(v[0]["bytes_in"], 100_000);
    assert_eq!(v[0]["stored"], 100_000);
    assert_eq!(v[0]["sha256"], sha256(&body).as_str());
    assert_eq!(
        (&v[1]["method"], &v[1]["status"]),
        (&"GET".into(), &200.into())
    );
    assert_eq!(v[1]["bytes_out"], 100_000);
    assert!(v[1].get("stored").is_none());
    assert_eq!(
        (&v[2]["method"], &v[2]["status"]),
        (&"DELETE".into(), &204.into())
    );
    let stderr = std::fs::read_to_string(s.dir.path().join("server-stderr.log")).unwrap();
    assert!(
        !stderr.contains("\"method\""),
        "the log went to the file only: {stderr}"
    );
}

/// Stops `s` with SIGTERM (which writes out the pending log lines) and returns its stderr.
fn stop(mut s: Server) -> String {
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(s.child.wait().unwrap().success());
    std::fs::read_to_string(s.dir.path().join("server-stderr.log")).unwrap()
}

#[test]
fn no_access_log_and_lines_flushed_at_shutdown() {
    for (args, lines) in [(&["--no-access-log"][..], 0), (&[][..], 2)] {
        let s = Server::start(args);
        assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
        assert_eq!(s.request("GET /files/x HTTP/1.1", b"").status, 404);
        let text = stop(s);
        assert!(text.contains("shutting down"), "{text}");
        let logged = text.lines().filter(|l| l.starts_with("time=")).count();
        assert_eq!(logged, lines, "{args:?}: {text}");
    }
}

/// Sends `raw` on a new connection and reads until the server closes it.
fn raw_exchange(s: &Server, raw: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    c.write_all(raw).unwrap();
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    got
}

#[test]
fn heads_the_server_refuses_are_logged_and_counted() {
    if !crate::metrics::parser() {
        return;
    }
    let s = Server::start(&["--head-timeout", "1s"]);
    // A bad request line (a space in the method): 400 from the library, before any handler.
    let got = raw_exchange(&s, b"G{T /files/x HTTP/1.1\r\nhost: t\r\n\r\n");
    assert_eq!(parse_response(&got).status, 400);
    // A header line without a colon, after a readable request line.
    let got = raw_exchange(&s, b"PUT /files/bad HTTP/1.1\r\nhost t\r\n\r\n");
    assert_eq!(parse_response(&got).status, 400);
    // A head that never ends: 408.
    let got = raw_exchange(&s, b"GET /files/slow HTTP/1.1\r\nhost: t\r\n");
    assert_eq!(parse_response(&got).status, 408);
    // A request line too long (414) and a head too large (431).
    let long = format!("GET /{} HTTP/1.1\r\nhost: t\r\n\r\n", "a".repeat(20_000));
    assert_eq!(
        parse_response(&raw_exchange(&s, long.as_bytes())).status,
        414
    );
    let big = format!(
        "GET /big HTTP/1.1\r\nhost: t\r\nx: {}\r\n\r\n",
        "b".repeat(200_000)
    );
    assert_eq!(
        parse_response(&raw_exchange(&s, big.as_bytes())).status,
        431
    );
    let log = s.dir.path().join("server-stderr.log");
    let lines = lines(&log, "time=", 5);
    let f: Vec<_> = lines.iter().map(|l| fields(l)).collect();
    let cut = format!("/{}", "a".repeat(1023));
    for (f, (method, path, status)) in f.iter().zip([
        ("-", "-", "400"),
        ("PUT", "/files/bad", "400"),
        ("GET", "/files/slow", "408"),
        ("GET", cut.as_str(), "414"),
        ("GET", "/big", "431"),
    ]) {
        check_time(&f["time"]);
        assert!(f["client"].starts_with("127.0.0.1:"), "{f:?}");
        assert_eq!((f["method"].as_str(), f["path"].as_str()), (method, path));
        assert_eq!(f["status"], status);
        assert_eq!(f["refused"], "true");
        assert_eq!(
            (f["bytes_in"].as_str(), f["bytes_out"].as_str()),
            ("0", "0")
        );
    }
    let scraped = crate::metrics::scrape(&s.url("/metrics"), None);
    assert_eq!(
        scraped["weir_http_requests_total{method=\"other\",status=\"4xx\"}"],
        1.0
    );
    assert_eq!(
        scraped["weir_http_requests_total{method=\"PUT\",status=\"4xx\"}"],
        1.0
    );
    assert_eq!(
        scraped["weir_http_requests_total{method=\"GET\",status=\"4xx\"}"],
        3.0
    );
}

/// HTTP/2 heads refused before any handler ran (h2c, raw frames): a header block h2 finds
/// malformed (a connection-specific field), a request head without `:method`, a `host` that
/// contradicts `:authority` (weir's own check), each reset with PROTOCOL_ERROR, and a header
/// list over SETTINGS_MAX_HEADER_LIST_SIZE, answered 431. Each is logged with `refused=true`
/// (a reset as 400) and counted.
#[test]
fn http2_heads_the_server_refuses_are_logged_and_counted() {
    if !crate::metrics::parser() {
        return;
    }
    use weir_testkit::h2_frames::{FrameClient, PROTOCOL_ERROR};
    let s = Server::start(&[]);
    let mut c = FrameClient::connect(s.addr);
    let mut head = weir_testkit::h2_frames::get("/files/x");
    head.push(("connection", "keep-alive"));
    c.headers(1, &head, true);
    assert_eq!(c.reset_of(1), Ok(PROTOCOL_ERROR));
    c.headers(
        3,
        &[
            (":scheme", "http"),
            (":path", "/files/x"),
            (":authority", "t"),
        ],
        true,
    );
    assert_eq!(c.reset_of(3), Ok(PROTOCOL_ERROR));
    let mut head = weir_testkit::h2_frames::get("/files/host?q");
    head.push(("host", "elsewhere"));
    c.headers(5, &head, true);
    assert_eq!(c.reset_of(5), Ok(PROTOCOL_ERROR));
    // Small fields, 32 octets each of overhead: the list is over 32 KiB, the block is not.
    let names: Vec<String> = (0..1200).map(|i| format!("h{i:04}")).collect();
    let mut head = weir_testkit::h2_frames::get("/files/big");
    head.extend(names.iter().map(|n| (n.as_str(), "v")));
    c.headers(7, &head, true);
    assert_eq!(c.status(7), 431);
    // The connection still serves.
    c.headers(9, &weir_testkit::h2_frames::get("/files/"), true);
    assert_eq!(c.status(9), 200);
    let log = s.dir.path().join("server-stderr.log");
    let lines = lines(&log, "time=", 5);
    let f: Vec<_> = lines.iter().map(|l| fields(l)).collect();
    for (f, (method, path, status)) in f.iter().zip([
        ("-", "-", "400"),
        ("-", "-", "400"),
        ("GET", "/files/host?q", "400"),
        ("-", "-", "431"),
    ]) {
        check_time(&f["time"]);
        assert!(f["client"].starts_with("127.0.0.1:"), "{f:?}");
        assert_eq!((f["method"].as_str(), f["path"].as_str()), (method, path));
        assert_eq!(f["status"], status);
        assert_eq!(f["refused"], "true");
    }
    assert!(!f[4].contains_key("refused"), "{:?}", f[4]);
    let scraped = crate::metrics::scrape(&s.url("/metrics"), None);
    assert_eq!(
        scraped["weir_http_requests_total{method=\"other\",status=\"4xx\"}"],
        3.0
    );
    assert_eq!(
        scraped["weir_http_requests_total{method=\"GET\",status=\"4xx\"}"],
        1.0
    );
}

/// Resets `stream` on close (`SO_LINGER` 0): an RST, as a client killed or cut off sends.
fn reset(stream: std::net::TcpStream) {
    socket2::SockRef::from(&stream)
        .set_linger(Some(std::time::Duration::ZERO))
        .unwrap();
    drop(stream);
}

/// A TCP client that leaves mid-request (its connection reset before the server reads its
/// head) is logged with its address: the socket no longer knows its peer then, and the line
/// said `client=unix` (issue 35). Deterministic: with one connection allowed and taken, the
/// client's connection waits in the backlog until it is reset, and is accepted only then.
#[test]
fn a_tcp_client_that_leaves_mid_request_is_logged_with_its_address() {
    use std::io::{Read, Write};
    let s = Server::start(&["--max-connections", "1"]);
    let mut holder = std::net::TcpStream::connect(s.addr).unwrap();
    holder
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: t\r\n\r\n")
        .unwrap();
    let mut answer = [0u8; 12];
    holder.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
    // Accepted by the kernel, not by weir: the one connection is `holder`'s.
    let mut leaver = std::net::TcpStream::connect(s.addr).unwrap();
    let address = leaver.local_addr().unwrap().to_string();
    leaver
        .write_all(b"PUT /files/cut HTTP/1.1\r\nhost: t\r\ncontent-length: 1000\r\n\r\nabc")
        .unwrap();
    reset(leaver);
    drop(holder);
    let log = s.dir.path().join("server-stderr.log");
    let lines = lines(&log, "time=", 2);
    let put = lines
        .iter()
        .map(|l| fields(l))
        .find(|f| f["method"] == "PUT")
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(put["client"], address, "{put:?}");
    assert_eq!(put["status"], "-", "{put:?}");
    assert!(!s.root.join("cut").exists());
}

/// A download the client abandons is logged and counted with the bytes sent, not the file's
/// size (it was `status=200 bytes_out=<size>`, and the response-bytes metric counted the
/// whole file: issue 35).
#[test]
fn an_abandoned_download_counts_the_bytes_sent() {
    use std::io::{Read, Write};
    const SIZE: usize = 64 << 20;
    let s = Server::start(&[]);
    std::fs::write(s.root.join("big.bin"), data(SIZE, 5)).unwrap();
    let mut c = std::net::TcpStream::connect(s.addr).unwrap();
    c.write_all(b"GET /files/big.bin HTTP/1.1\r\nhost: t\r\n\r\n")
        .unwrap();
    let mut got = vec![0u8; 1 << 20];
    c.read_exact(&mut got).unwrap();
    reset(c);
    let log = s.dir.path().join("server-stderr.log");
    let lines = lines(&log, "time=", 1);
    let f = fields(&lines[0]);
    assert_eq!((f["method"].as_str(), f["status"].as_str()), ("GET", "200"));
    let out: u64 = f["bytes_out"].parse().unwrap();
    assert!(
        (1 << 20) - 1024 <= out && out < SIZE as u64 / 2,
        "bytes_out={out} of a {SIZE}-byte file, 1 MiB read"
    );
    let metrics = s.request("GET /metrics HTTP/1.1", b"").text();
    let counted: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("weir_http_response_body_bytes_total "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(counted, out, "the metric counts what the log says");
}
