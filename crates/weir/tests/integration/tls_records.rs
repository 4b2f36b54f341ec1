//! weir's TLS record layer against rustls's client (blocking, on a real socket): TLS 1.2 and
//! 1.3 uploads byte-exact, TLS 1.3 key updates mid-body, `close_notify` both ways, an abrupt
//! close mid-body, and a corrupted record answered with an alert.

use crate::h2_support::TlsTestServer;
use crate::support::*;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;
use weir::rustls::{self, ClientConnection, StreamOwned};
use weir::{Config, Exchange, Handler};

type Client = StreamOwned<ClientConnection, TcpStream>;

/// A blocking rustls client connected to `server`'s TLS port, speaking only `version`.
fn connect(server: &TlsTestServer, version: &'static rustls::SupportedProtocolVersion) -> Client {
    connect_with(server, version, |_| {})
}

/// [`connect`], with a change to the client's configuration.
fn connect_with(
    server: &TlsTestServer,
    version: &'static rustls::SupportedProtocolVersion,
    tweak: impl FnOnce(&mut rustls::ClientConfig),
) -> Client {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(server.cert.cert_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tweak(&mut config);
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(server.tls_addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut client = StreamOwned::new(conn, tcp);
    while client.conn.is_handshaking() {
        client.conn.complete_io(&mut client.sock).unwrap();
    }
    assert_eq!(client.conn.protocol_version(), Some(version.version));
    client
}

/// Reads one response with a `content-length`; returns its status line and body.
fn read_response(reader: &mut impl BufRead) -> (String, Vec<u8>) {
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let mut len = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    (status, body)
}

/// POSTs `data` to `/sha` in pieces of 1 MiB, calling `between` after each piece; returns the
/// response body.
fn upload(client: &mut Client, data: &[u8], mut between: impl FnMut(&mut Client)) -> String {
    let head = format!(
        "POST /sha?buf=65536 HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
        data.len()
    );
    client.write_all(head.as_bytes()).unwrap();
    for piece in data.chunks(1 << 20) {
        client.write_all(piece).unwrap();
        between(client);
    }
    client.flush().unwrap();
    let (status, body) = read_response(&mut BufReader::new(client));
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    String::from_utf8(body).unwrap()
}

#[test]
fn tls12_and_tls13_uploads_are_byte_exact_and_survive_key_updates() {
    let server = TlsTestServer::start(Config::default().with_max_body_size(None));
    let data = pattern(24 << 20, 13);
    let expected = sha256_hex(&data);
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let mut client = connect(&server, version);
        // Twice on one connection: the second upload starts from a buffer in steady state.
        for _ in 0..2 {
            let out = upload(&mut client, &data, |_| {});
            assert!(out.starts_with(&expected), "{version:?}: {out}");
        }
    }
    // TLS 1.3: the client updates its key (asking for the server's) every 4 MiB, 6 times
    // mid-body; the server takes the client's new keys and answers with its own.
    let mut client = connect(&server, &rustls::version::TLS13);
    let mut pieces = 0;
    let out = upload(&mut client, &data, |c| {
        pieces += 1;
        if pieces % 4 == 0 {
            c.conn.refresh_traffic_keys().unwrap();
        }
    });
    assert!(out.starts_with(&expected), "key updates: {out}");
    // And the connection still works both ways under the new keys.
    client
        .write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let (_, body) = read_response(&mut BufReader::new(&mut client));
    assert_eq!(body, b"Hello, World!");
    // The server answers a key update that asks for one with its own: the client's receive
    // sequence number starts again at 0 there. Without the answer it counts every record since
    // the handshake (the session tickets and both responses: 3 when that was tried).
    let mut client = connect_with(&server, &rustls::version::TLS13, |c| {
        c.enable_secret_extraction = true;
    });
    let hello = |client: &mut Client| {
        client
            .write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let (_, body) = read_response(&mut BufReader::new(client));
        assert_eq!(body, b"Hello, World!");
    };
    hello(&mut client);
    client.conn.refresh_traffic_keys().unwrap();
    hello(&mut client);
    let (rx_seq, _) = client.conn.dangerous_extract_secrets().unwrap().rx;
    assert_eq!(rx_seq, 1, "records received under the server's current key");
}

#[test]
fn close_notify_ends_the_clients_stream_and_the_server_answers_with_its_own() {
    let server = TlsTestServer::start(Config::default());
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let mut client = connect(&server, version);
        client
            .write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let (_, body) = read_response(&mut BufReader::new(&mut client));
        assert_eq!(body, b"Hello, World!");
        client.conn.send_close_notify();
        client.flush().unwrap();
        // The server sees the end of the stream, closes, and says so with `close_notify`:
        // rustls reports a clean end (`Ok(0)`), not `UnexpectedEof`.
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "{version:?}: {rest:?}");
    }
}

/// Reads the body and reports whether reading it ended in a disconnect.
struct ReportsDisconnect(Arc<Mutex<mpsc::Sender<bool>>>);

impl Handler for ReportsDisconnect {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match ex.read_body(&mut buf).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    let _ = self.0.lock().unwrap().send(e.is_disconnect());
                    return Err(e);
                }
            }
        }
        let _ = self.0.lock().unwrap().send(false);
        ex.respond(weir::http::StatusCode::OK).body("read").await
    }
}

#[test]
fn a_body_cut_short_with_or_without_close_notify_is_a_disconnect() {
    let (tx, rx) = mpsc::channel();
    let server = TlsTestServer::start_with(
        Config::default().with_max_body_size(None),
        ReportsDisconnect(Arc::new(Mutex::new(tx))),
    );
    for clean in [false, true] {
        let mut client = connect(&server, &rustls::version::TLS13);
        client
            .write_all(b"POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000000\r\n\r\n")
            .unwrap();
        client.write_all(&pattern(1 << 20, 3)).unwrap();
        if clean {
            client.conn.send_close_notify();
            client.flush().unwrap();
        } else {
            client.flush().unwrap();
        }
        client.sock.shutdown(std::net::Shutdown::Both).unwrap();
        let disconnect = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(disconnect, "close_notify sent: {clean}");
    }
}

#[test]
fn a_corrupted_record_is_answered_with_a_bad_record_mac_alert() {
    let server = TlsTestServer::start(Config::default());
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let mut client = connect(&server, version);
        // A well-framed application-data record whose authentication cannot succeed, written
        // past rustls, straight on the socket.
        let mut record = vec![23, 3, 3, 0, 64];
        record.extend_from_slice(&[0x5a; 64]);
        client.sock.write_all(&record).unwrap();
        let mut buf = [0u8; 64];
        let e = client.read(&mut buf).unwrap_err();
        assert!(e.to_string().contains("BadRecordMac"), "{version:?}: {e}");
    }
}
