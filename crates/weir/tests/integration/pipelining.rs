//! Pipelined requests are answered in order, and flushed together.

use crate::support::*;
use weir::Config;

#[test]
fn ten_requests_in_one_write_get_ten_responses_in_order() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    let mut batch = Vec::new();
    for i in 0..10 {
        if i % 3 == 0 {
            batch.extend_from_slice(
                format!("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nbody-{i}")
                    .as_bytes(),
            );
        } else if i % 3 == 1 {
            batch.extend_from_slice(b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nch\r\n1\r\nX\r\n0\r\n\r\n");
        } else {
            batch.extend_from_slice(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
        }
    }
    c.send(&batch);
    for i in 0..10 {
        let resp = c.read_response();
        assert_eq!(resp.status, 200);
        let expected = match i % 3 {
            0 => format!("body-{i}"),
            1 => "chX".to_string(),
            _ => "Hello, World!".to_string(),
        };
        assert_eq!(resp.text(), expected, "response {i}");
    }
}

#[test]
fn pipelined_after_unread_body_is_drained() {
    // The handler ignores a small body: the server drains it and serves the next request.
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"POST /ignore HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(c.read_response().text(), "ignored\n");
    assert_eq!(c.read_response().text(), "Hello, World!");
}

#[test]
fn connection_close_is_honoured() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"GET /hello HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    let resp = c.read_response();
    assert_eq!(resp.header("connection"), Some("close"));
    c.assert_closed();
}

#[test]
fn http10_keep_alive_rules() {
    let server = TestServer::start(Config::default());
    let mut c = server.connect();
    c.send(b"GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let resp = c.read_response();
    assert_eq!(resp.header("connection"), Some("keep-alive"));
    c.send(b"GET /hello HTTP/1.0\r\n\r\n");
    let resp = c.read_response();
    assert_eq!(resp.text(), "Hello, World!");
    assert_eq!(resp.header("connection"), Some("close"));
    c.assert_closed();
}
