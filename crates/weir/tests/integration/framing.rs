//! Malformed or ambiguous framing: the right status, then the connection closes and no byte
//! after the bad head is ever parsed as a request (RFC 9112 §6.3, §11.2).

use crate::support::*;
use weir::Config;

/// Sends `raw` followed by a valid pipelined request; expects one error response with
/// `status`, `Connection: close`, and then EOF (the pipelined request is never answered).
fn rejects(server: &TestServer, raw: &[u8], status: u16) {
    let mut c = server.connect();
    c.send(raw);
    let _ = c.try_send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    let resp = c.read_response();
    assert_eq!(
        resp.status,
        status,
        "{:?}: {}",
        String::from_utf8_lossy(raw),
        resp.text()
    );
    assert_eq!(resp.header("connection"), Some("close"));
    c.assert_closed();
}

#[test]
fn framing_errors_answer_and_close() {
    let server = TestServer::start(Config::default());
    let cases: &[(&[u8], u16)] = &[
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", 400),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc", 400),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 400),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        (b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
        (b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"GET /hello HTTP/1.1\r\n\r\n", 400),
        (b"GET /hello HTTP/1.1\nHost: a\n\n", 400),
        (b"GET /hello HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        (b"GET /hello HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", 400),
        (b"GET /hello HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n", 417),
    ];
    for (raw, status) in cases {
        rejects(&server, raw, *status);
    }
}

#[test]
fn malformed_chunked_body_answers_400_and_closes() {
    let server = TestServer::start(Config::default());
    let cases: &[&[u8]] = &[
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nContent-Length: 5\r\n\r\n",
    ];
    for raw in cases {
        rejects(&server, raw, 400);
    }
}

#[test]
fn unknown_expectations_are_ignored_when_not_refused() {
    let mut config = Config::default();
    config.limits.refuse_unknown_expectations = false;
    let server = TestServer::start(config);
    let mut c = server.connect();
    for expect in ["200", "", "teapot"] {
        let raw = format!(
            "POST /echo HTTP/1.1\r\nHost: a\r\nExpect: {expect}\r\nContent-Length: 3\r\n\r\nabc"
        );
        c.send(raw.as_bytes());
        let resp = c.read_response();
        assert_eq!(
            (resp.status, resp.text()),
            (200, "abc".to_owned()),
            "{expect:?}"
        );
    }
    // The connection stays open for the next request: nothing was left unread.
    c.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
}

#[test]
fn limits_answer_414_and_431() {
    let mut config = Config::default();
    config.limits.max_request_line = 1024;
    config.limits.max_head = 4096;
    config.limits.max_headers = 10;
    let server = TestServer::start(config);
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(2000));
    rejects(&server, long_target.as_bytes(), 414);
    let big_head = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
        "v".repeat(5000)
    );
    rejects(&server, big_head.as_bytes(), 431);
    let many = format!("GET / HTTP/1.1\r\nHost: a\r\n{}\r\n", "X: 1\r\n".repeat(12));
    rejects(&server, many.as_bytes(), 431);
}

#[test]
fn body_bytes_are_never_parsed_as_a_request() {
    // A GET with a Content-Length body whose bytes look like a request: they are the body.
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    let smuggled = b"GET /forget HTTP/1.1\r\nHost: a\r\n\r\n";
    let head = format!(
        "GET /echo HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
        smuggled.len()
    );
    c.send(head.as_bytes())
        .send(smuggled)
        .send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    let first = c.read_response();
    assert_eq!(first.status, 200);
    assert_eq!(first.body, smuggled);
    let second = c.read_response();
    assert_eq!(second.text(), "Hello, World!");
}

/// `Config::on_refused` is told of every head the server answers itself, with the client, the
/// status and the request line as far as it was read; a request that reaches its handler is not
/// reported.
#[test]
fn refused_heads_are_reported_to_on_refused() {
    use std::sync::{Arc, Mutex};
    type Seen = Vec<(u16, Option<String>, Option<Vec<u8>>, bool)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let kept = seen.clone();
    let config = Config::default().with_on_refused(Some(weir::OnRefused::new(move |r| {
        let tcp = matches!(r.peer, weir::transport::PeerAddr::Tcp(a) if a.ip().is_loopback());
        kept.lock().unwrap().push((
            r.status.as_u16(),
            r.method.map(str::to_owned),
            r.target.map(<[u8]>::to_vec),
            tcp && !r.reason.is_empty(),
        ));
    })));
    let server = TestServer::start(config);
    assert_eq!(
        request(&server, b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n").status,
        200
    );
    rejects(&server, b"G(T /x HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    rejects(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        501,
    );
    rejects(
        &server,
        b"GET /hello HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n",
        400,
    );
    let seen = seen.lock().unwrap().clone();
    let s = |t: &str| Some(t.to_owned());
    let b = |t: &str| Some(t.as_bytes().to_vec());
    assert_eq!(
        seen,
        [
            (400, None, None, true),
            (501, s("POST"), b("/echo"), true),
            (400, s("GET"), b("/hello"), true),
        ]
    );
}
