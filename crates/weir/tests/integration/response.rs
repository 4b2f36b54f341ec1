//! Response framing: sized, chunked, HEAD, 204/304, 1xx, files, errors.

use crate::support::*;
use weir::Config;

#[test]
fn sized_response_has_length_and_date() {
    let server = TestServer::start(Config::default());
    let resp = request(&server, b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-length"), Some("13"));
    assert_eq!(resp.header("date").map(str::len), Some(29));
    assert_eq!(resp.header("server"), None);
}

#[test]
fn server_header_is_optional() {
    let config = Config::default().with_server_header(Some("weir".into()));
    let server = TestServer::start(config);
    let resp = request(&server, b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(resp.header("server"), Some("weir"));
}

#[test]
fn head_gets_length_without_body() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"HEAD /hello HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    let head = c.read_response_for(true);
    assert_eq!(head.header("content-length"), Some("13"));
    // The next response starts right after the head: no body bytes were sent.
    assert_eq!(c.read_response().text(), "Hello, World!");
}

#[test]
fn no_content_and_not_modified_have_no_body() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"GET /no-content HTTP/1.1\r\nHost: a\r\n\r\nGET /not-modified HTTP/1.1\r\nHost: a\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 204);
    assert_eq!(r.header("content-length"), None);
    assert_eq!(r.header("transfer-encoding"), None);
    assert_eq!(c.read_response().status, 304);
    assert_eq!(c.read_response().text(), "Hello, World!");
}

#[test]
fn streamed_response_is_chunked_for_11_and_close_delimited_for_10() {
    let server = TestServer::start(Config::default());
    let resp = request(&server, b"GET /stream HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert!(resp.text().starts_with("part 0\npart 1\npart 2\n"));
    assert_eq!(resp.body.len(), 21 + 100_000);
    let mut c = server.connect();
    c.send(b"GET /stream HTTP/1.0\r\n\r\n");
    let resp = c.read_response();
    assert_eq!(resp.header("transfer-encoding"), None);
    assert_eq!(resp.header("connection"), Some("close"));
    assert_eq!(resp.body.len(), 21 + 100_000);
}

#[test]
fn early_hints_before_the_final_response() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"GET /hints HTTP/1.1\r\nHost: a\r\n\r\n");
    let hints = c.read_response();
    assert_eq!(hints.status, 103);
    assert_eq!(hints.header("link"), Some("</a.css>; rel=preload"));
    assert_eq!(c.read_response().text(), "after hints");
    // HTTP/1.0 clients never see 1xx.
    let mut c = server.connect();
    c.send(b"GET /hints HTTP/1.0\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
}

#[test]
fn handler_errors_and_omissions() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"GET /forget HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(c.read_response().status, 500);
    c.send(b"GET /fail HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(c.read_response().status, 418);
    // A header with CR LF is refused: no response splitting; the handler's error becomes 500.
    c.send(b"GET /bad-header HTTP/1.1\r\nHost: a\r\n\r\n");
    let resp = c.read_response();
    assert_eq!(resp.status, 500);
    assert_eq!(resp.header("set-cookie"), None);
    // The connection still works.
    c.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(c.read_response().text(), "Hello, World!");
}

#[test]
fn large_bodies_and_files() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"GET /big?len=3000000 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(c.read_response().body == pattern(3_000_000, 7));
    c.send(b"GET /sendfile?len=5000000 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(c.read_response().body == pattern(5_000_000, 9));
    c.send(b"HEAD /sendfile?len=1000 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(
        c.read_response_for(true).header("content-length"),
        Some("1000")
    );
    c.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(c.read_response().text(), "Hello, World!");
}

/// Data segments the client's socket has received (`TCP_INFO`'s `tcpi_data_segs_in`).
#[cfg(target_os = "linux")]
fn data_segments_in(c: &mut Client) -> u32 {
    use std::os::fd::AsRawFd;
    // SAFETY: `tcp_info` is integers only, for which all zeroes is a value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` is a writable `tcp_info` of `len` bytes; the kernel writes at most `len`.
    let rc = unsafe {
        libc::getsockopt(
            c.stream().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    info.tcpi_data_segs_in
}

/// A file up to the coalescing limit leaves with its head in one write, as a small body from
/// memory does: one TCP segment, where the head's write and then `sendfile` make two. A larger
/// file still goes by `sendfile`, after its head.
#[cfg(target_os = "linux")]
#[test]
fn a_small_file_leaves_with_its_head_in_one_segment() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(c.read_response().text(), "Hello, World!");
    let before = data_segments_in(&mut c);
    c.send(b"GET /sendfile?len=4096 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(c.read_response().body == pattern(4096, 9));
    assert_eq!(data_segments_in(&mut c) - before, 1);
    let before = data_segments_in(&mut c);
    c.send(b"GET /sendfile?len=40000 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(c.read_response().body == pattern(40000, 9));
    assert!(data_segments_in(&mut c) - before >= 2);
}

/// A small file that turns out shorter than announced fails its response: the head leaves,
/// the body is cut, and the connection closes, as for a large file.
#[test]
fn a_small_file_shorter_than_announced_closes_the_connection_after_its_head() {
    use std::io::Read;
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"GET /sendfile?len=1000&short=1 HTTP/1.1\r\nHost: a\r\n\r\n");
    let mut got = Vec::new();
    c.stream().read_to_end(&mut got).unwrap();
    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 200 ok\r\n"), "{text}");
    assert!(text.contains("content-length: 1005\r\n"), "{text}");
    let body = &got[got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4..];
    assert!(body.len() < 1005, "{} body bytes", body.len());
}

/// Adds `access-control-allow-origin` on `/extra` (then answers with a header of its own),
/// nothing on other paths.
struct ExtraHeaderRoutes;

impl weir::Handler for ExtraHeaderRoutes {
    async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
        if ex.request().path() == "/extra" {
            ex.add_response_header("access-control-allow-origin", "https://a.example");
            ex.add_response_header("vary", "origin");
        }
        ex.respond(http::StatusCode::OK)
            .header("x-own", "1")
            .body("ok")
            .await
    }
}

#[test]
fn headers_added_to_the_exchange_reach_its_response_only() {
    let server = TestServer::start_with(Config::default(), ExtraHeaderRoutes, None);
    let mut c = server.connect();
    c.send(b"GET /extra HTTP/1.1\r\nHost: a\r\n\r\nGET /plain HTTP/1.1\r\nHost: a\r\n\r\n");
    let first = c.read_response();
    assert_eq!(
        first.header("access-control-allow-origin"),
        Some("https://a.example")
    );
    assert_eq!(first.header("vary"), Some("origin"));
    assert_eq!(
        (first.header("x-own"), first.text().as_str()),
        (Some("1"), "ok")
    );
    // The next request on the connection starts without them.
    let second = c.read_response();
    assert_eq!(second.header("access-control-allow-origin"), None);
    assert_eq!(second.header("x-own"), Some("1"));

    // The same over HTTP/2 (its support module needs TLS too).
    #[cfg(all(feature = "http2", feature = "tls"))]
    {
        crate::h2_support::assert_curl_has_http2();
        let head = crate::h2_support::curl(&[
            "--http2-prior-knowledge",
            "--include",
            &server.url("/extra"),
        ]);
        assert!(head.starts_with("HTTP/2 200"), "{head}");
        assert!(
            head.contains("access-control-allow-origin: https://a.example\r\n"),
            "{head}"
        );
    }
}
