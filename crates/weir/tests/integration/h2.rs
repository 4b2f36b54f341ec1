//! HTTP/2 with the same handler API: h2c by prior knowledge on the HTTP/1.1 port (curl and the
//! h2 client), 256 MiB uploads byte-exact, many concurrent streams on one connection, a stalled
//! stream holding back only its own window, responses of every kind, limits, and shutdown.

use crate::h2_support::*;
use crate::support::*;
use bytes::Bytes;
use http::{Method, StatusCode};
use std::sync::atomic::Ordering;
use std::time::Duration;
use weir::Config;

fn upload_config() -> Config {
    Config::default().with_max_body_size(None)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn curl_h2c_prior_knowledge_upload_is_byte_exact() {
    assert_curl_has_http2();
    let server = TlsTestServer::start(upload_config());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("upload.bin");
    let data = pattern(256 << 20, 31);
    std::fs::write(&path, &data).unwrap();
    let expected = sha256_hex(&data);
    let path = path.to_str().unwrap();
    let out = curl(&[
        "--http2-prior-knowledge",
        "-T",
        path,
        "--write-out",
        "v=%{http_version}",
        &server.url("/file"),
    ]);
    assert!(out.starts_with(&expected), "{out}");
    assert!(out.ends_with("v=2"), "{out}");
    let out = curl(&[
        "--http2-prior-knowledge",
        "--data-binary",
        &format!("@{path}"),
        &server.url("/chunks"),
    ]);
    assert!(out.starts_with(&expected), "{out}");
    // The same port still serves HTTP/1.1.
    let out = curl(&["--http1.1", &server.url("/version")]);
    assert!(out.starts_with("HTTP/1.1 GET /version"), "{out}");
}

#[test]
fn h2_client_upload_256_mib_each_read_path() {
    let mut config = upload_config();
    // With a fixed window the read-ahead bound is exact (the adaptive window may grow it).
    config.http2.adaptive_window = false;
    let server = TlsTestServer::start(config);
    rt().block_on(async {
        let mut client = h2c(server.addr).await;
        let data = Bytes::from(pattern(256 << 20, 41));
        let expected = sha256_hex(&data);
        for path in ["/sha?buf=1048576", "/chunks", "/file"] {
            let resp = h2_request(&mut client, Method::PUT, path, &[], data.clone())
                .await
                .unwrap();
            assert_eq!(resp.status, StatusCode::OK, "{path}");
            assert!(
                resp.text().starts_with(&expected),
                "{path}: {}",
                resp.text()
            );
        }
        // Read-ahead never exceeded the stream window (the pause threshold, 1 MiB).
        let peak = server.handle.stats().peak_body_buffered();
        assert!(peak <= 1 << 20, "peak read-ahead {peak}");
    });
}

#[test]
fn adaptive_window_uploads_are_byte_exact() {
    let mut config = upload_config();
    config.http2.adaptive_window = true;
    config.http2.max_window = 4 << 20;
    let server = TlsTestServer::start(config);
    rt().block_on(async {
        let mut client = h2c(server.addr).await;
        let data = Bytes::from(pattern(64 << 20, 43));
        let resp = h2_request(&mut client, Method::PUT, "/sha", &[], data.clone())
            .await
            .unwrap();
        assert!(
            resp.text().starts_with(&sha256_hex(&data)),
            "{}",
            resp.text()
        );
        // Whatever the estimate did, the read-ahead stayed within the largest window.
        let peak = server.handle.stats().peak_body_buffered();
        assert!(peak <= 4 << 20, "peak read-ahead {peak}");
    });
}

#[test]
fn many_concurrent_streams_on_one_connection() {
    let server = TlsTestServer::start(upload_config());
    rt().block_on(async {
        let client = h2c(server.addr).await;
        let mut tasks = Vec::new();
        for i in 0..200u64 {
            let mut client = client.clone();
            tasks.push(tokio::spawn(async move {
                let data = Bytes::from(pattern(1000 + (i as usize) * 997, i));
                let resp = h2_request(&mut client, Method::POST, "/echo", &[], data.clone())
                    .await
                    .unwrap();
                assert_eq!(resp.status, StatusCode::OK);
                assert_eq!(resp.body, data, "stream {i}");
                let resp = h2_request(&mut client, Method::GET, "/hello", &[], Bytes::new())
                    .await
                    .unwrap();
                assert_eq!(resp.text(), "Hello, World!");
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[test]
fn a_stalled_stream_holds_back_only_its_own_window() {
    a_stalled_stream_holds_back_only_its_own_window_on(&TlsTestServer::start(upload_config()), 0);
}

/// The same, through the tower adapter: an axum handler that never reads its body.
#[cfg(feature = "tower")]
#[test]
fn a_stalled_stream_holds_back_only_its_own_window_on_the_tower_path() {
    let dir = tempfile::tempdir().unwrap();
    let app = weir::ServiceHandler::new(crate::tower_app::app(dir.path().to_owned()));
    a_stalled_stream_holds_back_only_its_own_window_on(
        &TlsTestServer::start_with(upload_config(), app),
        2,
    );
}

/// Stream A (`/hold?g=GROUP`, a handler that does not read) is held at its initial window while
/// other streams of the same connection upload far more, then completes when released.
fn a_stalled_stream_holds_back_only_its_own_window_on(server: &TlsTestServer, group: usize) {
    rt().block_on(async {
        let mut client = h2c(server.addr).await;
        // Stream A: its handler does not read. Send as much as flow control lets through.
        let request = http::Request::builder()
            .method(Method::PUT)
            .uri(format!("http://localhost/hold?g={group}"))
            .body(())
            .unwrap();
        let (response_a, mut send_a) = client.send_request(request, false).unwrap();
        let mut sent_a = 0usize;
        send_a.reserve_capacity(8 << 20);
        loop {
            let cap = tokio::time::timeout(
                Duration::from_millis(500),
                std::future::poll_fn(|cx| send_a.poll_capacity(cx)),
            )
            .await;
            match cap {
                Ok(Some(Ok(n))) if n > 0 => {
                    send_a.send_data(Bytes::from(vec![b'a'; n]), false).unwrap();
                    sent_a += n;
                    send_a.reserve_capacity(8 << 20);
                }
                Ok(Some(Ok(_))) => {}
                // No more capacity granted: A is held at its window.
                Err(_) => break,
                Ok(other) => panic!("stream A failed: {other:?}"),
            }
        }
        // The client may send exactly the initial stream window (64 KiB): a handler that has
        // not read never opened it to the pause threshold.
        let initial = upload_config().http2_windows().initial_stream as usize;
        assert_eq!(sent_a, initial, "A sent {sent_a}");
        assert_eq!(HOLDING[group].load(Ordering::SeqCst), 1);

        // Meanwhile other streams upload far more than A's window and complete.
        for i in 0..4 {
            let data = Bytes::from(pattern(8 << 20, 100 + i));
            let resp = h2_request(&mut client, Method::PUT, "/sha", &[], data.clone())
                .await
                .unwrap();
            assert!(
                resp.text().starts_with(&sha256_hex(&data)),
                "{} {}",
                resp.status,
                resp.text()
            );
        }
        // A is still held, and still has sent no more than its window.
        assert_eq!(HOLDING[group].load(Ordering::SeqCst), 1);
        assert_eq!(send_a.capacity(), 0);

        // Released, A completes.
        hold_release(group).notify_waiters();
        let resp = response_a.await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    });
}

#[test]
fn responses_of_every_kind() {
    let server = TlsTestServer::start(Config::default());
    rt().block_on(async {
        let mut c = h2c(server.addr).await;
        let get = |path: &'static str| (Method::GET, path);
        let c2 = c.clone();
        let req = |(method, path): (Method, &'static str)| {
            let mut c = c2.clone();
            async move {
                h2_request(&mut c, method, path, &[], Bytes::new())
                    .await
                    .unwrap()
            }
        };
        let r = req(get("/hello")).await;
        assert_eq!(r.text(), "Hello, World!");
        assert_eq!(r.headers["content-length"], "13");
        assert!(r.headers.contains_key("date"));
        let r = req((Method::HEAD, "/hello")).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.headers["content-length"], "13");
        assert!(r.body.is_empty());
        let r = req(get("/stream?n=5")).await;
        assert!(r.text().starts_with("part 0\npart 1\n"));
        assert_eq!(r.body.len(), 5 * 7 + 100_000);
        assert!(!r.headers.contains_key("content-length"));
        let r = req(get("/sendfile?len=2500000")).await;
        assert_eq!(r.body, pattern(2_500_000, 9));
        let r = req(get("/sendfile-in-body?len=2500000")).await;
        let mut expected = b"head".to_vec();
        expected.extend_from_slice(&pattern(2_500_000, 9)[3..]);
        expected.extend_from_slice(b"tail");
        assert!(r.body == expected, "a file inside a streamed body");
        let r = req(get("/big?len=5000000")).await;
        assert_eq!(r.body, pattern(5_000_000, 7));
        let r = req(get("/no-content")).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let r = req(get("/not-modified")).await;
        assert_eq!(r.status, StatusCode::NOT_MODIFIED);
        let r = req(get("/forget")).await;
        assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
        let r = req(get("/fail")).await;
        assert_eq!(r.status, StatusCode::IM_A_TEAPOT);
        assert!(r.text().starts_with("418"), "{}", r.text());
        let r = req(get("/nope")).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        // An invalid header makes the handler's send fail: 500, nothing of it sent.
        let r = req(get("/bad-header")).await;
        assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!r.headers.contains_key("x-evil"));

        // 103 Early Hints, then the response.
        let request = http::Request::get("http://localhost/hints")
            .body(())
            .unwrap();
        let (response, _) = c.send_request(request, true).unwrap();
        let response = response.await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    });
}

#[test]
fn body_limits_and_expect_continue() {
    let server = TlsTestServer::start(Config::default());
    rt().block_on(async {
        let mut c = h2c(server.addr).await;
        // Declared length above the limit: 413 before any body byte is needed.
        let r = h2_request(
            &mut c,
            Method::PUT,
            "/sha?max=1000",
            &[("content-length", "5000")],
            Bytes::from(vec![1u8; 5000]),
        )
        .await
        .unwrap();
        assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
        // Undeclared length beyond the limit: 413 when the limit is crossed.
        let r = h2_request(
            &mut c,
            Method::PUT,
            "/sha?max=100000",
            &[],
            Bytes::from(vec![1u8; 300_000]),
        )
        .await
        .unwrap();
        assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
        // The connection is still good.
        let r = h2_request(&mut c, Method::GET, "/hello", &[], Bytes::new())
            .await
            .unwrap();
        assert_eq!(r.text(), "Hello, World!");

        // Expect: 100-continue: the server says 100 on the first read; the client may then
        // send. (The h2 client treats the 100 as informational and waits for the final.)
        sha_expecting(&mut c, "100-continue", pattern(100_000, 3)).await;
        // A response without reading the body: the rest of the upload is refused politely.
        let r = h2_request(
            &mut c,
            Method::PUT,
            "/unauthorized",
            &[],
            Bytes::from(vec![0u8; 4 << 20]),
        )
        .await
        .unwrap();
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        let r = h2_request(&mut c, Method::GET, "/hello", &[], Bytes::new())
            .await
            .unwrap();
        assert_eq!(r.text(), "Hello, World!");
    });
}

#[test]
fn unknown_expectations_are_answered_417_or_ignored_as_over_http1() {
    let refusing = TlsTestServer::start(Config::default());
    let mut config = Config::default();
    config.limits.refuse_unknown_expectations = false;
    let ignoring = TlsTestServer::start(config);
    rt().block_on(async {
        for (server, answer) in [
            (&refusing, StatusCode::EXPECTATION_FAILED),
            (&ignoring, StatusCode::OK),
        ] {
            let mut c = h2c(server.addr).await;
            for body in [Bytes::new(), Bytes::from(vec![7u8; 100_000])] {
                let r = h2_request(&mut c, Method::PUT, "/sha", &[("expect", "teapot")], body)
                    .await
                    .unwrap();
                assert_eq!(r.status, answer);
            }
            // 100-continue is no unknown expectation, and the connection is still good.
            sha_expecting(&mut c, "100-Continue", pattern(1000, 5)).await;
        }
    });
}

/// `PUT /sha` of `data` with `Expect: expect`, which must be served: the body's SHA-256 back.
async fn sha_expecting(c: &mut h2::client::SendRequest<Bytes>, expect: &str, data: Vec<u8>) {
    let data = Bytes::from(data);
    let r = h2_request(c, Method::PUT, "/sha", &[("expect", expect)], data.clone())
        .await
        .unwrap();
    assert!(r.text().starts_with(&sha256_hex(&data)), "{expect:?}");
}

#[test]
fn a_client_reset_is_a_disconnect_for_the_handler() {
    let server = TlsTestServer::start(Config::default());
    rt().block_on(async {
        let mut c = h2c(server.addr).await;
        let request = http::Request::put("http://localhost/observe?id=7001")
            .body(())
            .unwrap();
        let (_response, mut send) = c.send_request(request, false).unwrap();
        send.send_data(Bytes::from(vec![0u8; 10_000]), false)
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        send.send_reset(h2::Reason::CANCEL);
        let outcome = tokio::task::spawn_blocking(|| observed(7001))
            .await
            .unwrap();
        assert_eq!(outcome, "disconnect");
    });
}

#[test]
fn shutdown_sends_goaway_and_lets_streams_finish() {
    let server = TlsTestServer::start(upload_config());
    rt().block_on(async {
        let mut c = h2c(server.addr).await;
        let request = http::Request::put("http://localhost/sha").body(()).unwrap();
        let (response, mut send) = c.send_request(request, false).unwrap();
        send.send_data(Bytes::from(vec![7u8; 1000]), false).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        server.handle.shutdown();
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The in-flight stream still completes.
        send.send_data(Bytes::from(vec![7u8; 1000]), true).unwrap();
        let resp = response.await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let mut body = resp.into_body();
        let mut text = Vec::new();
        while let Some(chunk) = body.data().await {
            text.extend_from_slice(&chunk.unwrap());
        }
        assert!(String::from_utf8_lossy(&text).starts_with(&sha256_hex(&[7u8; 2000])));
        // New streams are refused after the GOAWAY.
        let request = http::Request::get("http://localhost/hello")
            .body(())
            .unwrap();
        let refused = match c.ready().await {
            Err(_) => true,
            Ok(mut ready) => match ready.send_request(request, true) {
                Err(_) => true,
                Ok((response, _)) => response.await.is_err(),
            },
        };
        assert!(refused);
    });
    server.stop();
}

/// The cleartext port takes HTTP/1.1 and HTTP/2 by prior knowledge. A request line that is not
/// HTTP/1 at all (h2spec 3.5 #2's invalid preface) is closed without an answer, as RFC 9113 §3.4
/// asks of an invalid preface; one that is only a bad HTTP/1 line still gets 400.
#[test]
fn a_line_that_is_not_http1_is_closed_unanswered() {
    use std::io::{Read, Write};
    let server = TlsTestServer::start(Config::default());
    let answer = |request: &[u8]| {
        let mut s = std::net::TcpStream::connect(server.addr).unwrap();
        // Only to detect a hang: the server must close either way.
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(request).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        String::from_utf8_lossy(&got).into_owned()
    };
    assert_eq!(answer(b"INVALID CONNECTION PREFACE\r\n\r\n"), "");
    assert_eq!(answer(b"GET /hello FOO/1.1\r\nHost: a\r\n\r\n"), "");
    let bad = answer(b"GET /hello http/1.1\r\nHost: a\r\n\r\n");
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
    server.stop();
}

/// A handler that lowers its pause threshold to 4 KiB, reads 16 KiB, says so, and waits for a
/// release before reading the rest.
struct ReadsSomeThenWaits {
    read: std::sync::Arc<tokio::sync::Notify>,
    release: std::sync::Arc<tokio::sync::Notify>,
}

impl weir::Handler for ReadsSomeThenWaits {
    async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
        ex.set_pause_threshold(4096);
        let mut buf = vec![0u8; 16 * 1024];
        let mut got = 0;
        while got < buf.len() {
            let n = ex.read_body(&mut buf[got..]).await?;
            assert!(n > 0);
            got += n;
        }
        let release = self.release.notified();
        self.read.notify_one();
        release.await;
        let total = got + read_the_rest(ex, &mut buf).await?;
        ex.respond(StatusCode::OK).body(format!("{total}\n")).await
    }
}

/// Reads the body to its end through `buf`; returns how many bytes that was.
async fn read_the_rest(ex: &mut weir::Exchange<'_>, buf: &mut [u8]) -> Result<usize, weir::Error> {
    let mut total = 0;
    loop {
        let n = ex.read_body(buf).await?;
        if n == 0 {
            return Ok(total);
        }
        total += n;
    }
}

/// `Stats::body_buffered_now` over HTTP/2 counts what the stream holds, not the window it keeps
/// back: with a 64 KiB stream window and a handler whose pause threshold is 4 KiB, the client
/// sends the whole window; once the handler has taken 16 KiB (whose window is kept back, the
/// threshold being below the window), 48 KiB are held and the connection is paused (its stream
/// window is spent). After the handler ends, both gauges are 0.
#[test]
fn body_gauges_over_h2_count_held_bytes_not_withheld_window() {
    const WINDOW: usize = 64 * 1024;
    let read = std::sync::Arc::new(tokio::sync::Notify::new());
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let server = TlsTestServer::start_with(
        upload_config().with_pause_threshold(WINDOW),
        ReadsSomeThenWaits {
            read: read.clone(),
            release: release.clone(),
        },
    );
    let stats = server.handle.stats();
    rt().block_on(async {
        let mut client = h2c(server.addr).await;
        let request = http::Request::builder()
            .method(Method::PUT)
            .uri("http://localhost/x")
            .body(())
            .unwrap();
        let (response, mut send) = client.send_request(request, false).unwrap();
        let body = Bytes::from(pattern(WINDOW * 2, 7));
        let sender = tokio::spawn(async move { send_all(&mut send, body).await });
        read.notified().await;
        let want = (WINDOW - 16 * 1024, 1);
        let mut seen = (0, 0);
        for _ in 0..2000 {
            seen = (stats.body_buffered_now(), stats.connections_paused());
            if seen == want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(seen, want);
        release.notify_one();
        let resp = response.await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        sender.await.unwrap().unwrap();
        let mut seen = (1, 1);
        for _ in 0..2000 {
            seen = (stats.body_buffered_now(), stats.connections_paused());
            if seen == (0, 0) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(seen, (0, 0));
    });
}

/// Waits for a release (a permit of its own) before it reads anything, then reads the whole body and answers its
/// length.
struct WaitsThenReads(std::sync::Arc<tokio::sync::Semaphore>);

impl weir::Handler for WaitsThenReads {
    async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
        // Each permit lets one handler go, once.
        self.0.acquire().await.unwrap().forget();
        let total = read_the_rest(ex, &mut vec![0u8; 64 * 1024]).await?;
        ex.respond(StatusCode::OK).body(format!("{total}\n")).await
    }
}

/// 50 uploads of 1 MiB on one connection whose handlers have not started reading (a pre-upload
/// hook, say) hold at most the initial stream window each, and the connection at most its
/// window: here 50 × 64 KiB. Each stream's window opened to the pause threshold at once, they
/// held 50 MiB (the attack review: 5 connections × 100 streams took a server from 6 to 535 MiB).
/// Once released, every body arrives whole.
#[test]
fn streams_not_yet_read_hold_only_their_initial_window() {
    const STREAMS: usize = 50;
    const BODY: usize = 1 << 20;
    let go = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let config = upload_config();
    let windows = config.http2_windows();
    let server = TlsTestServer::start_with(config, WaitsThenReads(go.clone()));
    let stats = server.handle.stats();
    let bound = (STREAMS * windows.initial_stream as usize).min(windows.connection as usize);
    assert!(bound < STREAMS * BODY / 8, "{windows:?}");
    rt().block_on(async {
        let uploads = waiting_uploads(h2c(server.addr).await, STREAMS, BODY).await;
        // Every stream can send its initial window: wait for that much, then give the client
        // time to send whatever more it is allowed.
        let (held, later) = held_once_full(stats, bound).await;
        assert_eq!(held, bound, "held before the handlers read");
        assert!(later <= bound, "{later} bytes held, more than {bound}");
        go.add_permits(STREAMS);
        assert_uploads_arrive_whole(uploads, BODY).await;
    });
}

/// Uploads in flight: each one's response, and the task sending its body.
type Uploads = Vec<(
    h2::client::ResponseFuture,
    tokio::task::JoinHandle<Result<(), h2::Error>>,
)>;

/// Starts `streams` uploads of `body` bytes each on `client`, sending as the windows allow.
async fn waiting_uploads(
    mut client: h2::client::SendRequest<Bytes>,
    streams: usize,
    body: usize,
) -> Uploads {
    let mut uploads = Vec::new();
    for i in 0..streams {
        let request = http::Request::builder()
            .method(Method::PUT)
            .uri(format!("http://localhost/u{i}"))
            .body(())
            .unwrap();
        client = client.ready().await.unwrap();
        let (response, mut send) = client.send_request(request, false).unwrap();
        let data = Bytes::from(pattern(body, i as u64));
        let sender = tokio::spawn(async move { send_all(&mut send, data).await });
        uploads.push((response, sender));
    }
    uploads
}

/// Every upload is answered with its whole length (`WaitsThenReads`).
async fn assert_uploads_arrive_whole(uploads: Uploads, body: usize) {
    for (response, sender) in uploads {
        let resp = response.await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let mut reply = resp.into_body();
        let got = reply.data().await.unwrap().unwrap();
        assert_eq!(&got[..], format!("{body}\n").as_bytes());
        sender.await.unwrap().unwrap();
    }
}

/// Waits (up to 20 s) until the server holds `want` body bytes, then lets the clients send
/// whatever more they are allowed for half a second: returns what was held then.
async fn held_once_full(stats: &weir::Stats, want: usize) -> (usize, usize) {
    let mut held = 0;
    for _ in 0..4000 {
        held = stats.body_buffered_now();
        if held >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    (held, stats.body_buffered_now())
}

/// The connection windows of all connections share one budget
/// (`Http2Config::total_connection_window`): 4 connections whose 8 streams of 1 MiB each wait
/// for their handlers hold the budget (6 MiB) plus HTTP/2's first 64 KiB per connection, not
/// 4 connection windows (16 MiB: the review's 5 connections took a server to 535 MiB, 10 without
/// a hook to 380 MiB). Once released, every body arrives whole; once those connections have
/// ended, their windows are back in the budget and a new connection gets its whole window.
#[test]
fn all_connections_together_hold_at_most_the_shared_window_budget() {
    const CONNECTIONS: usize = 4;
    const STREAMS: usize = 8;
    const BODY: usize = 1 << 20;
    const BUDGET: usize = 6 << 20;
    let go = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let config = upload_config().with_http2(
        weir::Http2Config::default()
            .with_initial_stream_window(1 << 20)
            .with_total_connection_window(Some(BUDGET as u64)),
    );
    let windows = config.http2_windows();
    // Each connection's streams could fill its whole window: the budget is what limits.
    assert!(STREAMS * windows.initial_stream as usize > windows.connection as usize);
    assert!(
        CONNECTIONS * windows.connection as usize > BUDGET + (8 << 20),
        "{windows:?}"
    );
    let server = TlsTestServer::start_with(config, WaitsThenReads(go.clone()));
    let stats = server.handle.stats();
    rt().block_on(async {
        let mut uploads = Vec::new();
        for _ in 0..CONNECTIONS {
            uploads.push(waiting_uploads(h2c(server.addr).await, STREAMS, BODY).await);
        }
        let bound = BUDGET + CONNECTIONS * 65_535;
        let (held, later) = held_once_full(stats, bound).await;
        assert_eq!(
            held, bound,
            "held by {CONNECTIONS} connections before the handlers read"
        );
        assert!(later <= bound, "{later} bytes held, more than {bound}");

        go.add_permits(CONNECTIONS * STREAMS);
        for connection in uploads {
            assert_uploads_arrive_whole(connection, BODY).await;
        }
        for _ in 0..4000 {
            if stats.active_connections() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            stats.active_connections(),
            0,
            "the clients' connections ended"
        );

        let uploads = waiting_uploads(h2c(server.addr).await, STREAMS, BODY).await;
        let full = windows.connection as usize;
        let (held, later) = held_once_full(stats, full).await;
        assert_eq!(
            (held, later),
            (full, full),
            "a new connection's whole window"
        );
        go.add_permits(STREAMS);
        assert_uploads_arrive_whole(uploads, BODY).await;
    });
}
