//! A response body a tower service streams (server-sent events, a progress feed): each frame
//! reaches the client (curl) while the body waits for its next one, over HTTP/1.1 (chunked),
//! h2c, and TLS with HTTP/1.1 and HTTP/2, though the frames are small enough for weir to
//! coalesce; a body streamed with the length the app states keeps it (tower-http's
//! `ServeDir`).

use crate::h2_support::*;
use axum::routing::get;
use bytes::Bytes;
use http_body::Frame;
use std::convert::Infallible;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::sync::Semaphore;
use weir::{Config, ServiceHandler};

/// Opened by the test once the client has the first frame; the body's second frame waits on it.
static GATE: Semaphore = Semaphore::const_new(0);

/// How long a client waits for a frame before the test fails (a frame held back in a buffer
/// would never come: the body waits for the gate, which waits for the frame).
const PATIENCE: Duration = Duration::from_secs(10);

/// `event 1`, then (once the gate opens) `event 2`, then the end: the frames of an event stream.
struct Gated {
    sent: u8,
    wait: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl http_body::Body for Gated {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        match this.sent {
            0 => {}
            1 => {
                let wait = this.wait.get_or_insert_with(|| {
                    Box::pin(async { GATE.acquire().await.unwrap().forget() })
                });
                ready!(wait.as_mut().poll(cx));
            }
            _ => return Poll::Ready(None),
        }
        this.sent += 1;
        let event = format!("data: event {}\n\n", this.sent);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(event)))))
    }
}

fn events() -> axum::body::Body {
    axum::body::Body::new(Gated {
        sent: 0,
        wait: None,
    })
}

/// curl's `-N` output for `url`, a line at a time, as it comes.
fn stream_lines(flags: &[&str], url: &str) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--no-buffer",
            "--max-time",
            "60",
        ])
        .args(flags)
        .arg(url)
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl is installed");
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

#[test]
fn each_frame_of_a_streamed_response_leaves_while_the_body_waits() {
    assert_curl_has_http2();
    let server = TlsTestServer::start_with(
        Config::default(),
        ServiceHandler::new(axum::Router::new().route("/events", get(|| async { events() }))),
    );
    for (name, base, flags) in protocols(&server) {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (mut curl, lines) = stream_lines(&flags, &format!("{base}/events"));
        let next_event = || loop {
            let line = lines
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|e| panic!("{name}: the next event, while the body waits: {e}"));
            if !line.is_empty() {
                return line;
            }
        };
        assert_eq!(next_event(), "data: event 1", "{name}");
        GATE.add_permits(1);
        assert_eq!(next_event(), "data: event 2", "{name}");
        assert!(curl.wait().unwrap().success(), "{name}: the response ended");
    }
}

/// Three frames of 1,000 bytes, with no size hint (a stream: a file read in pieces, a proxied
/// body).
struct Pieces(u8);

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.0 == 3 {
            return Poll::Ready(None);
        }
        self.0 += 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![
            b'a' + self.0;
            1000
        ])))))
    }
}

/// A streamed body whose length the app states in `Content-Length` (a download read in
/// pieces) keeps it, as on hyper: the client knows the size and sees no chunked framing. A
/// body that ends short of the length it stated is not taken for complete.
#[test]
fn a_streamed_body_keeps_the_content_length_the_app_states() {
    use axum::http::header::CONTENT_LENGTH;
    assert_curl_has_http2();
    let app = axum::Router::new()
        .route(
            "/sized",
            get(|| async { ([(CONTENT_LENGTH, "3000")], axum::body::Body::new(Pieces(0))) }),
        )
        .route(
            "/short",
            get(|| async { ([(CONTENT_LENGTH, "4000")], axum::body::Body::new(Pieces(0))) }),
        );
    let server = TlsTestServer::start_with(Config::default(), ServiceHandler::new(app));
    for flags in [["--http1.1"], ["--http2-prior-knowledge"]] {
        let out = Command::new("curl")
            .args(["--silent", "--show-error", "--include"])
            .args(flags)
            .arg(server.url("/sized"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{flags:?}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap().to_ascii_lowercase();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains("\r\ncontent-length: 3000"),
            "{flags:?}: {head}"
        );
        assert!(!head.contains("transfer-encoding"), "{flags:?}: {head}");
        assert_eq!(body.len(), 3000, "{flags:?}");

        let short = Command::new("curl")
            .args(["--silent", "--output", "/dev/null"])
            .args(flags)
            .arg(server.url("/short"))
            .status()
            .unwrap();
        assert!(
            !short.success(),
            "{flags:?}: a short body is not a whole one"
        );
    }
}

/// tower-http's `ServeDir`, the usual way an axum app serves files, streams a file in pieces
/// with the length it states: the client gets the file whole with its `Content-Length`, a
/// range as `206` with its own, and a `HEAD` the length alone, over HTTP/1.1 and h2c.
#[test]
fn tower_https_serve_dir_sends_files_with_their_length() {
    assert_curl_has_http2();
    let dir = tempfile::tempdir().unwrap();
    let file = crate::support::pattern(5 << 20, 9);
    std::fs::write(dir.path().join("big.bin"), &file).unwrap();
    let app = axum::Router::new().fallback_service(tower_http::services::ServeDir::new(dir.path()));
    let server = TlsTestServer::start_with(Config::default(), ServiceHandler::new(app));
    let url = server.url("/big.bin");
    for flags in [["--http1.1"], ["--http2-prior-knowledge"]] {
        let get = |extra: &[&str]| {
            let out = Command::new("curl")
                .args(["--silent", "--show-error", "--include"])
                .args(flags)
                .args(extra)
                .arg(&url)
                .output()
                .unwrap();
            assert!(out.status.success(), "{flags:?} {extra:?}: {out:?}");
            let at = out
                .stdout
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .unwrap();
            let head = String::from_utf8(out.stdout[..at].to_vec()).unwrap();
            (head.to_ascii_lowercase(), out.stdout[at + 4..].to_vec())
        };
        let (head, body) = get(&[]);
        assert!(
            head.contains(&format!("\r\ncontent-length: {}", 5 << 20)),
            "{flags:?}: {head}"
        );
        assert!(!head.contains("transfer-encoding"), "{flags:?}: {head}");
        assert!(body == file, "{flags:?}: the file, whole");

        let (head, body) = get(&["--range", "1000-1999"]);
        assert!(head.contains(" 206"), "{flags:?}: {head}");
        assert!(
            head.contains("\r\ncontent-length: 1000"),
            "{flags:?}: {head}"
        );
        assert!(body == file[1000..2000], "{flags:?}: the range");

        let (head, body) = get(&["--head"]);
        assert!(
            head.contains(&format!("\r\ncontent-length: {}", 5 << 20)),
            "{flags:?}: {head}"
        );
        assert!(body.is_empty(), "{flags:?}");
    }
}

/// A `HEAD` answer gives the length of the body a `GET` would get only when it is known: axum
/// states it for a body of exact size and empties the body; for a streamed one it states none,
/// and weir does not make one up from the emptied body (it once sent `content-length: 0`).
/// Pipelined after them, a `GET` is answered whole on the same connection.
#[test]
fn a_head_answer_states_only_a_length_it_knows() {
    let app = axum::Router::new()
        .route(
            "/stream",
            get(|| async { axum::body::Body::new(Pieces(0)) }),
        )
        .route("/full", get(|| async { "full body" }))
        .route("/empty", get(|| async { "" }));
    let server = TlsTestServer::start_with(Config::default(), ServiceHandler::new(app));
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(PATIENCE)).unwrap();
    std::io::Write::write_all(
        &mut tcp,
        b"HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n\
          HEAD /full HTTP/1.1\r\nHost: x\r\n\r\n\
          HEAD /empty HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /full HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut all = String::new();
    std::io::Read::read_to_string(&mut tcp, &mut all).unwrap();
    let all = all.to_ascii_lowercase();
    let answers: Vec<&str> = all.split("http/1.1 ").skip(1).collect();
    assert_eq!(answers.len(), 4, "{all}");
    assert!(!answers[0].contains("content-length"), "{}", answers[0]);
    assert!(
        answers[1].contains("\r\ncontent-length: 9\r\n"),
        "{}",
        answers[1]
    );
    assert!(
        answers[2].contains("\r\ncontent-length: 0\r\n"),
        "{}",
        answers[2]
    );
    assert!(answers[3].ends_with("\r\n\r\nfull body"), "{}", answers[3]);
}
