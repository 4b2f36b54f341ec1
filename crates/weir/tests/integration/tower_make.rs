//! A tower make service served by weir (`MakeServiceHandler`): axum's
//! `into_make_service_with_connect_info`, so that `ConnectInfo` extractors see the client, over
//! HTTP/1.1, h2c, and TLS with HTTP/1.1 and HTTP/2, and over a Unix socket with weir's
//! `PeerAddr` as the target.

use crate::h2_support::*;
use crate::support::*;
use axum::extract::ConnectInfo;
use axum::extract::connect_info::Connected;
use axum::routing::get;
use axum::{Extension, Router};
use std::net::SocketAddr;
use std::process::Command;
use weir::transport::PeerAddr;
use weir::{Config, ExchangeHandle, MakeServiceHandler};

/// The local ports curl is told to take, so that the address the app reports can be checked
/// against the client's own (curl tries them in turn until one is free).
const PORTS: (u16, u16) = (46000, 46999);

/// curl's output and exit status for `args`, with the status line first.
fn curl_status(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "60"])
        .args(["--write-out", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl is installed");
    assert!(out.status.success(), "curl {args:?}: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.parse().unwrap(), body.to_owned())
}

/// `axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())` moved to
/// weir by that one line: the extractor holds the client's address, the port curl sent from,
/// the same the request's `ExchangeHandle` gives, over every protocol.
#[test]
fn connect_info_holds_the_clients_address_over_every_protocol() {
    assert_curl_has_http2();
    async fn peer(
        ConnectInfo(addr): ConnectInfo<SocketAddr>,
        Extension(handle): Extension<ExchangeHandle>,
    ) -> String {
        format!("{addr} {:?}", handle.peer_addr())
    }
    let app = Router::new().route("/peer", get(peer));
    let server = TlsTestServer::start_with(
        Config::default(),
        MakeServiceHandler::new(app.into_make_service_with_connect_info::<SocketAddr>()),
    );
    let ports = format!("{}-{}", PORTS.0, PORTS.1);
    for (name, base, flags) in protocols(&server) {
        let url = format!("{base}/peer");
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.extend(["--local-port", &ports, &url]);
        let (status, body) = curl_status(&args);
        assert_eq!(status, 200, "{name}: {body}");
        let (info, handle) = body.split_once(' ').unwrap();
        let addr: SocketAddr = info.parse().unwrap();
        assert_eq!(addr.ip().to_string(), "127.0.0.1", "{name}");
        assert!(
            (PORTS.0..=PORTS.1).contains(&addr.port()),
            "{name}: the port curl sent from, got {addr}"
        );
        assert_eq!(handle, format!("{:?}", PeerAddr::Tcp(addr)), "{name}");
    }
}

/// The application's own connect-info type, made from weir's `PeerAddr`.
#[derive(Clone, Debug)]
struct Client(PeerAddr);

impl Connected<PeerAddr> for Client {
    fn connect_info(peer: PeerAddr) -> Self {
        Client(peer)
    }
}

/// A `SocketAddr` cannot describe a client on a Unix socket: that request is a `500` saying
/// what to use instead, and the connection serves on. With `PeerAddr` as the target, the same
/// app serves TCP and Unix clients alike.
#[test]
fn a_unix_client_needs_a_peer_addr_target() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.sock");
    let app = Router::new().route(
        "/peer",
        get(|ConnectInfo(addr): ConnectInfo<SocketAddr>| async move { addr.to_string() }),
    );
    let server = TestServer::start_with(
        Config::default(),
        MakeServiceHandler::new(app.into_make_service_with_connect_info::<SocketAddr>()),
        Some(path.clone()),
    );
    let unix = ["--unix-socket", path.to_str().unwrap()];
    let (status, _) = curl_status(&[unix[0], unix[1], "http://localhost/peer"]);
    assert_eq!(status, 500);
    let (status, body) = curl_status(&[&server.url("/peer")]);
    assert_eq!((status, body.starts_with("127.0.0.1:")), (200, true));
    server.stop();

    let path = dir.path().join("weir-peer.sock");
    let app = Router::new().route(
        "/peer",
        get(|ConnectInfo(Client(peer)): ConnectInfo<Client>| async move { format!("{peer:?}") }),
    );
    let server = TestServer::start_with(
        Config::default(),
        MakeServiceHandler::with_target(app.into_make_service_with_connect_info::<Client>()),
        Some(path.clone()),
    );
    let (status, body) = curl_status(&["--unix-socket", path.to_str().unwrap(), "http://x/peer"]);
    assert_eq!((status, body.as_str()), (200, "Unix"));
    let (status, body) = curl_status(&[&server.url("/peer")]);
    assert_eq!(status, 200);
    assert!(body.starts_with("Tcp(127.0.0.1:"), "{body}");
}
