//! A request body read after its response: an axum handler that answers `202 Accepted` at
//! once and hands the body to a task of its own (as hyper allows). weir serves that body after
//! the response, over every protocol, and the connection's next request waits until the task
//! has read it or dropped it. Each case sends the upload and then a GET on one connection: over
//! HTTP/1.1 with a client that sends the whole body whatever the response (curl stops sending
//! once it has a complete response, and closes), over HTTP/2 with the h2 client.

use crate::h2_support::*;
use crate::support::*;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::routing::{get, post};
use bytes::Bytes;
use http_body_util::BodyExt;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use weir::{Config, ServiceHandler};
use weir_testkit::h1::parse_responses;

/// Where the tasks report what they read: `"<bytes> <sha256>"` or `"error after <bytes>: …"`.
type Reports = Arc<Mutex<Sender<String>>>;

/// `POST /later`: `202` at once; a spawned task reads the body to its end and reports it.
/// `POST /dropped`: `202` at once; a spawned task keeps the body 200 ms unread, then drops it.
fn app(reports: Reports) -> Router {
    async fn later(State(reports): State<Reports>, body: Body) -> StatusCode {
        tokio::spawn(async move {
            let mut body = body;
            let mut all = Vec::new();
            let report = loop {
                match body.frame().await {
                    Some(Ok(frame)) => {
                        all.extend_from_slice(frame.data_ref().map_or(&[][..], |d| d))
                    }
                    Some(Err(e)) => break format!("error after {}: {e}", all.len()),
                    None => break format!("{} {}", all.len(), sha256_hex(&all)),
                }
            };
            let _ = reports.lock().unwrap().send(report);
        });
        StatusCode::ACCEPTED
    }
    async fn dropped(State(reports): State<Reports>, body: Body) -> StatusCode {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            drop(body);
            let _ = reports.lock().unwrap().send("dropped".into());
        });
        StatusCode::ACCEPTED
    }
    Router::new()
        .route("/later", post(later))
        .route("/dropped", post(dropped))
        .route("/", get(|| async { "next\n" }))
        .with_state(reports)
}

fn server() -> (TlsTestServer, Receiver<String>) {
    let (tx, rx) = channel();
    let server = TlsTestServer::start_with(
        Config::default().with_max_body_size(None),
        ServiceHandler::new(app(Arc::new(Mutex::new(tx)))),
    );
    (server, rx)
}

fn report(rx: &Receiver<String>) -> String {
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the task reports")
}

/// Sends `data` to `upload`, then GETs `next` on the same connection (HTTP/1.1: this file's
/// client, which sends the whole body whatever the response; HTTP/2: the h2 client). The
/// upload's status and the GET's answer (HTTP/1.1: `closed` instead, if the upload's response
/// said `connection: close` and the server then closed); a panic if the connection broke.
fn upload_then_get(
    name: &str,
    server: &TlsTestServer,
    data: &Bytes,
    upload: &str,
    next: &str,
) -> String {
    let tls = name.starts_with("HTTPS");
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A connection the server never frees would hang the test: bounded, it fails instead.
    let within = |run| async move {
        tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .unwrap_or_else(|_| panic!("{name}: no answer within 60 s"))
    };
    rt.block_on(within(async {
        if name.ends_with("1.1") {
            let tcp = TcpStream::connect(if tls { server.tls_addr } else { server.addr })
                .await
                .unwrap();
            if !tls {
                return h1_upload_then_get(tcp, data.clone(), upload, next).await;
            }
            let connector =
                tokio_rustls::TlsConnector::from(server.cert.client_config(&[b"http/1.1"]));
            let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
            let io = connector.connect(name, tcp).await.unwrap();
            return h1_upload_then_get(io, data.clone(), upload, next).await;
        }
        let mut client = if tls {
            h2_tls(server.tls_addr, &server.cert).await
        } else {
            h2c(server.addr).await
        };
        let posted = h2_request(&mut client, Method::POST, upload, &[], data.clone())
            .await
            .unwrap();
        let got = h2_request(&mut client, Method::GET, next, &[], Bytes::new())
            .await
            .unwrap();
        format!("{} {}", posted.status.as_u16(), got.text())
    }))
}

/// HTTP/1.1 on `io`: the upload sent by a task of its own (so the response is read while the
/// body still goes out), then the GET once the whole body is sent; `closed` instead of the
/// GET's answer when the upload's response said `connection: close` and the server closed.
async fn h1_upload_then_get<S>(io: S, data: Bytes, upload: &str, next: &str) -> String
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut rd, mut wr) = tokio::io::split(io);
    let head = format!(
        "POST {upload} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
        data.len()
    );
    let sending = tokio::spawn(async move {
        wr.write_all(head.as_bytes()).await?;
        wr.write_all(&data).await?;
        wr.flush().await?;
        Ok::<_, std::io::Error>(wr)
    });
    let mut buf = Vec::new();
    let posted = read_response(&mut rd, &mut buf).await;
    // The whole body is sent in either case: the server reads it for the application.
    let mut wr = sending.await.unwrap().unwrap();
    if posted.header("connection") == Some("close") {
        let end = rd.read(&mut [0; 64]).await.unwrap();
        assert_eq!(end, 0, "closed after the body");
        return format!("{} closed", posted.status);
    }
    let get = format!("GET {next} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    wr.write_all(get.as_bytes()).await.unwrap();
    wr.flush().await.unwrap();
    let got = read_response(&mut rd, &mut buf).await;
    format!("{} {}", posted.status, got.text())
}

/// One whole response off `rd` (the testkit's parser); `buf` keeps what follows it.
async fn read_response<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut Vec<u8>) -> Resp {
    let mut chunk = [0u8; 4096];
    loop {
        let (mut responses, rest) = parse_responses(buf);
        if !responses.is_empty() {
            *buf = rest;
            return responses.remove(0);
        }
        let n = rd.read(&mut chunk).await.unwrap();
        assert!(
            n > 0,
            "the connection closed: {:?}",
            String::from_utf8_lossy(buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn a_body_moved_to_a_task_is_read_after_a_202() {
    let (server, rx) = server();
    // A small body (in the request's first packets) and one of 4 MiB, four times the pause
    // threshold and the HTTP/2 stream window: most of it is read from the socket only after
    // the response went out.
    for size in [3000, 4 << 20] {
        let data = Bytes::from(pattern(size, 7));
        let expected = format!("{size} {}", sha256_hex(&data));
        for (name, _, _) in protocols(&server) {
            let out = upload_then_get(name, &server, &data, "/later", "/");
            assert_eq!(report(&rx), expected, "{name}, {size} bytes");
            // The response came first. The connection served the next request once the body
            // was read, except where weir said at the response that it would close: over
            // HTTP/1.1, when more of the body was still to come than it drains for a handler
            // that does not read (`Config::drain_limit`), as it cannot know yet that this one
            // will (how much was left depends on how far the task had read).
            let may_close = size > Config::default().drain_limit as usize && name.ends_with("1.1");
            if !(may_close && out == "202 closed") {
                assert_eq!(out, "202 next\n", "{name}, {size} bytes");
            }
        }
    }
    server.stop();
}

#[test]
fn a_body_kept_unread_then_dropped_frees_the_connection() {
    let (server, rx) = server();
    let data = Bytes::from(pattern(3000, 8));
    for (name, _, _) in protocols(&server) {
        let out = upload_then_get(name, &server, &data, "/dropped", "/");
        assert_eq!(report(&rx), "dropped", "{name}");
        // The next request on the connection is answered once the body is dropped (over
        // HTTP/1.1 weir drains the unread rest first).
        assert_eq!(out, "202 next\n", "{name}");
    }
    server.stop();
}
