//! WebSocket through axum on weir (`UpgradeServiceHandler`): a tungstenite client talks to an
//! axum `WebSocketUpgrade` echo route over TCP and over TLS; an upgrade pipelined behind an
//! ordinary request gets that request's answer first; ordinary requests stay weir's.

use crate::h2_support::*;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use std::io::{Read, Write};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::Message as ClientMessage;
use weir::{Config, UpgradeServiceHandler};

/// Echoes every text message back, prefixed, and binary ones as they are.
async fn echo(mut socket: WebSocket) {
    while let Some(Ok(message)) = socket.recv().await {
        let reply = match message {
            Message::Text(text) => Message::Text(format!("echo {}", text.as_str()).into()),
            Message::Binary(data) => Message::Binary(data),
            Message::Close(_) => break,
            _ => continue,
        };
        if socket.send(reply).await.is_err() {
            break;
        }
    }
}

/// A runtime for the test's clients.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn app() -> axum::Router {
    axum::Router::new()
        .route(
            "/ws",
            get(|ws: WebSocketUpgrade| async move { ws.on_upgrade(echo) }),
        )
        .route("/plain", get(|| async { "plain" }))
        .route(
            "/bye",
            get(|ws: WebSocketUpgrade| async move { ws.on_upgrade(|_socket| async {}) }),
        )
        .route(
            "/who",
            // weir puts its handle in every request it serves; hyper does not.
            get(
                |handle: Option<axum::Extension<weir::ExchangeHandle>>| async move {
                    if handle.is_some() { "weir" } else { "hyper" }
                },
            ),
        )
}

/// A WebSocket session on `io` to `url`: two text messages and a 1 MiB binary one, echoed.
async fn session<S: AsyncRead + AsyncWrite + Unpin>(url: &str, io: S) {
    let (mut ws, response) = tokio_tungstenite::client_async(url, io).await.unwrap();
    assert_eq!(response.status(), 101);
    for text in ["hello", "again"] {
        ws.send(ClientMessage::Text(text.into())).await.unwrap();
        let reply = ws.next().await.unwrap().unwrap();
        assert_eq!(reply, ClientMessage::Text(format!("echo {text}").into()));
    }
    let big = crate::support::pattern(1 << 20, 5);
    ws.send(ClientMessage::Binary(big.clone().into()))
        .await
        .unwrap();
    let reply = ws.next().await.unwrap().unwrap();
    assert!(reply == ClientMessage::Binary(big.into()), "1 MiB echoed");
    ws.close(None).await.unwrap();
}

#[test]
fn websocket_through_axum_over_tcp_and_tls() {
    let server = TlsTestServer::start_with(Config::default(), UpgradeServiceHandler::new(app()));
    let rt = runtime();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        tokio::time::timeout(
            Duration::from_secs(30),
            session(&format!("ws://{}/ws", server.addr), tcp),
        )
        .await
        .expect("the session over TCP");

        let tcp = tokio::net::TcpStream::connect(server.tls_addr)
            .await
            .unwrap();
        let connector = tokio_rustls::TlsConnector::from(server.cert.client_config(&[b"http/1.1"]));
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        let tls = connector.connect(name, tcp).await.unwrap();
        tokio::time::timeout(
            Duration::from_secs(30),
            session(
                &format!("wss://localhost:{}/ws", server.tls_addr.port()),
                tls,
            ),
        )
        .await
        .expect("the session over TLS");
    });
    // Ordinary requests are still weir's.
    assert_eq!(curl(&[&server.url("/plain")]), "plain");
}

/// An upgrade pipelined behind an ordinary request: the ordinary answer (still in weir's write
/// buffer when the connection is handed over) reaches the client first, then hyper's `101`.
#[test]
fn an_upgrade_pipelined_behind_a_request_gets_that_answer_first() {
    let server = TlsTestServer::start_with(Config::default(), UpgradeServiceHandler::new(app()));
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(
        b"GET /plain HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
          Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("\r\n\r\nplainHTTP/1.1 101")
        || !got.ends_with(b"\r\n\r\n")
    {
        let n = tcp
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("{e}: got {}", String::from_utf8_lossy(&got)));
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    // RFC 6455's sample key and its accept value.
    assert!(
        text.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
        "{text}"
    );
}

/// Only a WebSocket upgrade is handed to hyper: another (`Upgrade: h2c`, which curl offers on
/// `http://` URLs) and a plain request are weir's.
#[test]
fn only_websocket_upgrades_leave_weir() {
    let server = TlsTestServer::start_with(Config::default(), UpgradeServiceHandler::new(app()));
    let ask = |fields: &str| {
        let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let request = format!("GET /who HTTP/1.1\r\nHost: x\r\n{fields}Connection: close\r\n\r\n");
        tcp.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).unwrap();
        answer.rsplit("\r\n\r\n").next().unwrap().to_owned()
    };
    assert_eq!(ask(""), "weir");
    assert_eq!(
        ask(
            "Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"
        ),
        "weir"
    );
    // A WebSocket upgrade to a route that does not take one: hyper serves it (and the route
    // answers as a plain GET).
    assert_eq!(
        ask("Upgrade: websocket\r\nConnection: Upgrade\r\n"),
        "hyper"
    );
}

/// When the upgraded protocol's handler ends, the connection ends with it: the client reads
/// the close, and weir's connection is gone, though the client still holds its side open.
#[test]
fn the_connection_ends_when_the_upgraded_handler_does() {
    let server = TlsTestServer::start_with(Config::default(), UpgradeServiceHandler::new(app()));
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(
        b"GET /bye HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
          Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    )
    .unwrap();
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).expect("the server closes");
    assert!(answer.starts_with(b"HTTP/1.1 101"), "{answer:?}");
    // `tcp` is still open on this side; the server's connection must not wait for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.handle.stats().active_connections() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the connection lingers"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(tcp);
}

/// A WebSocket still open when the server shuts down is closed once the shutdown's grace is
/// over: the upgraded connection is the server's like any other, and does not hold it up.
#[test]
fn an_open_websocket_is_closed_after_the_shutdown_grace() {
    let config = Config::default().with_shutdown_grace(Duration::from_millis(200));
    let server = TlsTestServer::start_with(config, UpgradeServiceHandler::new(app()));
    let rt = runtime();
    let addr = server.addr;
    let mut ws = rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/ws"), tcp)
            .await
            .unwrap();
        ws.send(ClientMessage::Text("open".into())).await.unwrap();
        assert_eq!(
            ws.next().await.unwrap().unwrap(),
            ClientMessage::Text("echo open".into())
        );
        ws
    });
    // Returns only once every connection is gone.
    server.stop();
    rt.block_on(async {
        let end = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("the client sees the connection end");
        assert!(!matches!(end, Some(Ok(ClientMessage::Text(_)))), "{end:?}");
    });
}

/// `ConnectInfo` and WebSocket together (`UpgradeMakeServiceHandler` with axum's
/// `into_make_service_with_connect_info`): the upgraded route and a plain one both see the
/// client's address, the one the client connected from.
#[test]
fn a_websocket_route_takes_connect_info_too() {
    use axum::extract::ConnectInfo;
    use std::net::SocketAddr;
    let app = axum::Router::new()
        .route(
            "/ws-peer",
            get(
                |ws: WebSocketUpgrade, ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
                    ws.on_upgrade(move |mut socket| async move {
                        let _ = socket.send(Message::Text(peer.to_string().into())).await;
                    })
                },
            ),
        )
        .route(
            "/peer",
            get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }),
        );
    let server = TlsTestServer::start_with(
        Config::default(),
        weir::UpgradeMakeServiceHandler::new(
            app.into_make_service_with_connect_info::<SocketAddr>(),
        ),
    );
    let rt = runtime();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let local = tcp.local_addr().unwrap();
        let (mut ws, _) =
            tokio_tungstenite::client_async(format!("ws://{}/ws-peer", server.addr), tcp)
                .await
                .unwrap();
        let first = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(first, ClientMessage::Text(local.to_string().into()));
    });
    let plain = curl(&[&server.url("/peer")]);
    assert!(plain.starts_with("127.0.0.1:"), "{plain}");
}

/// A connection handed to hyper keeps weir's head limits: after a WebSocket request hyper
/// served as a plain one (the route takes no upgrade), a head with more fields than
/// `Limits::max_headers`, or larger than `Limits::max_head`, is a `431` there too (hyper's own
/// defaults, 100 fields and about 400 KiB, would take both).
#[test]
fn a_handed_over_connection_keeps_the_servers_head_limits() {
    let limits = weir::Limits::default()
        .with_max_headers(8)
        .with_max_head(4096);
    let server = TlsTestServer::start_with(
        Config::default().with_limits(limits),
        UpgradeServiceHandler::new(app()),
    );
    let many: String = (0..12).map(|i| format!("X-Field-{i}: {i}\r\n")).collect();
    let big = format!("X-Big: {}\r\n", "b".repeat(6000));
    for (what, fields) in [("12 fields", many), ("a 6 KB field", big)] {
        let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let request = format!(
            "GET /who HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\
             GET /who HTTP/1.1\r\nHost: x\r\n{fields}\r\n"
        );
        tcp.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        // hyper closes the connection after the 431.
        let _ = tcp.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.contains("\r\n\r\nhyper"),
            "{what}: the first request is hyper's: {answer}"
        );
        let second = answer.split("\r\n\r\nhyper").nth(1).unwrap_or_default();
        assert!(
            second.starts_with("HTTP/1.1 431"),
            "{what}: the second head is refused: {answer}"
        );
    }
}
