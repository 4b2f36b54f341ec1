//! weir's TLS record layer against rustls's client (blocking, on a real socket): TLS 1.2 and
//! 1.3 uploads byte-exact, TLS 1.3 key updates mid-body, `close_notify` both ways, an abrupt
//! close mid-body, and a corrupted record answered with an alert. And a client that builds its
//! own records where rustls's would not: key update requests that are never read, a key update
//! in the `Finished` flight, renegotiation attempts again and again.

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
    let tcp = TcpStream::connect(server.tls_addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut client = StreamOwned::new(client_conn(server, version, tweak), tcp);
    while client.conn.is_handshaking() {
        client.conn.complete_io(&mut client.sock).unwrap();
    }
    assert_eq!(client.conn.protocol_version(), Some(version.version));
    client
}

/// A rustls client connection to `server`, before its handshake.
fn client_conn(
    server: &TlsTestServer,
    version: &'static rustls::SupportedProtocolVersion,
    tweak: impl FnOnce(&mut rustls::ClientConfig),
) -> ClientConnection {
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
    ClientConnection::new(Arc::new(config), name).unwrap()
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

/// Sends `GET /hello` and reads its answer.
fn hello(client: &mut Client) {
    client
        .write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let (_, body) = read_response(&mut BufReader::new(client));
    assert_eq!(body, b"Hello, World!");
}

/// Reads one response with a `content-length` through `client`'s rustls, counting the bytes
/// that came off the socket for it (records of every kind).
fn read_response_counting(client: &mut Client) -> (String, usize) {
    let mut wire = 0;
    let mut plain = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        if let Some(end) = plain.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&plain[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if plain.len() >= end + 4 + len {
                return (String::from_utf8(plain).unwrap(), wire);
            }
        }
        let n = client.sock.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the response was whole");
        wire += n;
        client.conn.read_tls(&mut &buf[..n]).unwrap();
        client.conn.process_new_packets().unwrap();
        // Ends in `WouldBlock` once what was decrypted is read; what came before it is kept.
        let _ = client.conn.reader().read_to_end(&mut plain);
    }
}

/// A client asks for a key update before each byte of a body and never reads until the
/// response: the server answers the first request only (it sends nothing else meanwhile, so one
/// update of its key answers them all: RFC 8446 §4.6.3). Each answer is a record the client need
/// not read; answered one by one, they grew the server's send queue for as long as the client
/// sent (255 MiB in 45 s in the attack review).
#[test]
fn key_update_requests_that_the_client_never_reads_are_answered_once() {
    let server = TlsTestServer::start(Config::default());
    const BODY: usize = 300;
    // The bytes the client receives for the response to a POST whose first `updates` bytes
    // each follow a key update request.
    let received = |updates: usize| {
        let mut client = connect(&server, &rustls::version::TLS13);
        // The session tickets and a first response are read: what follows is the POST's.
        hello(&mut client);
        let head =
            format!("POST /sha HTTP/1.1\r\nHost: localhost\r\nContent-Length: {BODY}\r\n\r\n");
        client.write_all(head.as_bytes()).unwrap();
        for byte in 0..BODY {
            if byte < updates {
                client.conn.refresh_traffic_keys().unwrap();
            }
            client.write_all(b"x").unwrap();
            client.flush().unwrap();
        }
        let (response, wire) = read_response_counting(&mut client);
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.contains(&sha256_hex(&[b'x'; BODY])), "{response}");
        wire
    };
    let one = received(1);
    let many = received(BODY);
    // A key update record is 27 bytes: 299 more of them would be 8,073 bytes.
    assert_eq!(many, one, "bytes received after {BODY} requests against 1");
}

/// The client's `Finished`, a key update request and a request leave in one write. The server
/// must send its own key update before the response (or not change its key): rustls, given the
/// whole flight, took the update and changed the server's key with its answer left unsent, and
/// the client could not read the response (11 times in 40 in the attack review).
#[test]
fn a_key_update_in_the_finished_flight_is_answered() {
    let server = TlsTestServer::start(Config::default());
    for round in 0..12 {
        let mut conn = client_conn(&server, &rustls::version::TLS13, |_| {});
        let mut tcp = TcpStream::connect(server.tls_addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        // The ClientHello out, the server's flight in: then the client's `Finished` is queued,
        // not yet sent.
        while conn.is_handshaking() {
            while conn.wants_write() {
                conn.write_tls(&mut tcp).unwrap();
            }
            conn.read_tls(&mut tcp).unwrap();
            conn.process_new_packets().unwrap();
        }
        conn.refresh_traffic_keys().unwrap();
        conn.writer()
            .write_all(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut flight = Vec::new();
        while conn.wants_write() {
            conn.write_tls(&mut flight).unwrap();
        }
        tcp.write_all(&flight).unwrap();
        let mut client = StreamOwned::new(conn, tcp);
        let (status, body) = read_response(&mut BufReader::new(&mut client));
        assert!(
            status.starts_with("HTTP/1.1 200"),
            "round {round}: {status}"
        );
        assert_eq!(body, b"Hello, World!", "round {round}");
    }
}

/// Record protection of both directions from a client's extracted secrets (TLS 1.2 or 1.3),
/// for a client that writes records rustls would not.
struct HandBuilt {
    sock: TcpStream,
    seal: Box<dyn rustls::crypto::cipher::MessageEncrypter>,
    tx_seq: u64,
    open: Box<dyn rustls::crypto::cipher::MessageDecrypter>,
    rx_seq: u64,
}

impl HandBuilt {
    /// Takes over `client` (with secret extraction enabled) after its handshake.
    fn take_over(client: Client) -> Self {
        use rustls::ConnectionTrafficSecrets as S;
        let suite = client.conn.negotiated_cipher_suite().unwrap();
        let StreamOwned { conn, sock } = client;
        let secrets = conn.dangerous_extract_secrets().unwrap();
        let key_iv = |s: S| match s {
            S::Aes128Gcm { key, iv }
            | S::Aes256Gcm { key, iv }
            | S::Chacha20Poly1305 { key, iv } => (key, iv),
            _ => panic!("suite"),
        };
        let ((tx_seq, tx), (rx_seq, rx)) = (secrets.tx, secrets.rx);
        let ((tx_key, tx_iv), (rx_key, rx_iv)) = (key_iv(tx), key_iv(rx));
        let (seal, open) = match suite {
            rustls::SupportedCipherSuite::Tls12(suite) => {
                let shape = suite.aead_alg.key_block_shape();
                let (fixed, explicit) = tx_iv.as_ref().split_at(shape.fixed_iv_len);
                (
                    suite
                        .aead_alg
                        .encrypter(tx_key, fixed, &explicit[..shape.explicit_nonce_len]),
                    suite
                        .aead_alg
                        .decrypter(rx_key, &rx_iv.as_ref()[..shape.fixed_iv_len]),
                )
            }
            rustls::SupportedCipherSuite::Tls13(suite) => (
                suite.aead_alg.encrypter(tx_key, tx_iv),
                suite.aead_alg.decrypter(rx_key, rx_iv),
            ),
        };
        Self {
            sock,
            seal,
            tx_seq,
            open,
            rx_seq,
        }
    }

    fn send(&mut self, typ: rustls::ContentType, payload: &[u8]) {
        use rustls::crypto::cipher::{OutboundChunks, OutboundPlainMessage};
        let message = OutboundPlainMessage {
            typ,
            version: rustls::ProtocolVersion::TLSv1_2,
            payload: OutboundChunks::Single(payload),
        };
        let record = self.seal.encrypt(message, self.tx_seq).unwrap().encode();
        self.tx_seq += 1;
        self.sock.write_all(&record).unwrap();
    }

    /// The next record's type and plaintext; `None` at the end of the stream.
    fn receive(&mut self) -> Option<(rustls::ContentType, Vec<u8>)> {
        let mut header = [0u8; 5];
        match self.sock.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) => panic!("{e}"),
        }
        let mut body = vec![0u8; usize::from(u16::from_be_bytes([header[3], header[4]]))];
        self.sock.read_exact(&mut body).unwrap();
        let message = rustls::crypto::cipher::InboundOpaqueMessage::new(
            header[0].into(),
            rustls::ProtocolVersion::TLSv1_2,
            &mut body,
        );
        let plain = self.open.decrypt(message, self.rx_seq).unwrap();
        self.rx_seq += 1;
        Some((plain.typ, plain.payload.to_vec()))
    }
}

/// A TLS 1.2 client that asks to renegotiate again and again, between bytes of a request
/// body (so that application data keeps the connection from looking idle): the first two
/// attempts are refused with a `no_renegotiation` warning, the third ends the connection with
/// a fatal `handshake_failure`. Refused with a warning every time, a client that never read
/// them grew the server's send queue to 500 MiB in 20 s in the attack review.
#[test]
fn renegotiation_attempts_are_refused_twice_then_end_the_connection() {
    use rustls::ContentType;
    let server = TlsTestServer::start(Config::default());
    let mut client = connect_with(&server, &rustls::version::TLS12, |c| {
        c.enable_secret_extraction = true;
    });
    hello(&mut client);
    let mut client = HandBuilt::take_over(client);
    let head = b"POST /sha HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\n";
    client.send(ContentType::ApplicationData, head);
    // A ClientHello's frame: the server refuses a renegotiation before reading what it asks.
    let client_hello = [1, 0, 0, 4, 3, 3, 0, 0];
    for attempt in 1..=3 {
        client.send(ContentType::ApplicationData, b"x");
        client.send(ContentType::Handshake, &client_hello);
        let answer = client.receive().expect("an answer");
        let expected = if attempt <= 2 { [1, 100] } else { [2, 40] };
        assert_eq!(
            answer,
            (ContentType::Alert, expected.to_vec()),
            "attempt {attempt}"
        );
    }
    assert_eq!(
        client.receive(),
        None,
        "the connection ends after the fatal alert"
    );
}

/// A TLS 1.2 record whose decrypted plaintext is longer than 2^14 bytes (its ciphertext within
/// TLS 1.2's larger bound, so only the decryption can tell): `record_overflow` (RFC 5246
/// §6.2.3), not `decode_error`.
#[test]
fn an_oversized_plaintext_is_answered_with_record_overflow() {
    use rustls::ContentType;
    let server = TlsTestServer::start(Config::default());
    let mut client = connect_with(&server, &rustls::version::TLS12, |c| {
        c.enable_secret_extraction = true;
    });
    hello(&mut client);
    let mut client = HandBuilt::take_over(client);
    client.send(ContentType::ApplicationData, &[b'x'; 16385]);
    assert_eq!(
        client.receive(),
        Some((ContentType::Alert, vec![2, 22])),
        "a fatal record_overflow"
    );
}

/// Alerts a TLS 1.2 client sends mid-request: a warning, and `user_canceled` at any level, are
/// not fatal (the request is answered); any other fatal alert ends the connection unanswered.
#[test]
fn tls12_warnings_and_user_canceled_pass_a_fatal_alert_ends_the_connection() {
    use rustls::ContentType;
    let server = TlsTestServer::start(Config::default());
    let start = || {
        let mut client = connect_with(&server, &rustls::version::TLS12, |c| {
            c.enable_secret_extraction = true;
        });
        hello(&mut client);
        HandBuilt::take_over(client)
    };
    let head = b"GET /hello HTTP/1.1\r\nHost: localhost\r\n";
    // no_certificate (41) as a warning; user_canceled (90) at the fatal level too, as RFC 8446
    // §6.1 reads it (it is followed by close_notify, not an error).
    for alert in [[1u8, 41], [2, 90]] {
        let mut client = start();
        client.send(ContentType::ApplicationData, head);
        client.send(ContentType::Alert, &alert);
        client.send(ContentType::ApplicationData, b"\r\n");
        let (typ, answer) = client.receive().expect("an answer");
        assert_eq!(typ, ContentType::ApplicationData, "{alert:?}");
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "{alert:?}: {}",
            String::from_utf8_lossy(&answer)
        );
    }
    // handshake_failure (40), fatal: nothing more is read or answered.
    let mut client = start();
    client.send(ContentType::ApplicationData, head);
    client.send(ContentType::Alert, &[2, 40]);
    assert_eq!(client.receive(), None);
}

/// A `KeyUpdate` is TLS 1.3's: sent on a TLS 1.2 connection, it is an `unexpected_message`
/// (fatal), not a key change.
#[test]
fn a_key_update_on_tls12_is_an_unexpected_message() {
    use rustls::ContentType;
    let server = TlsTestServer::start(Config::default());
    let mut client = connect_with(&server, &rustls::version::TLS12, |c| {
        c.enable_secret_extraction = true;
    });
    hello(&mut client);
    let mut client = HandBuilt::take_over(client);
    client.send(ContentType::Handshake, &[24, 0, 0, 1, 0]);
    assert_eq!(
        client.receive(),
        Some((ContentType::Alert, vec![2, 10])),
        "a fatal unexpected_message"
    );
}

/// Records that carry no application data (here empty application-data records) are tolerated
/// 64 in a row; the 65th ends the connection, so a client cannot keep the server decrypting
/// nothing for ever.
#[test]
fn sixty_four_empty_records_in_a_row_pass_the_sixty_fifth_ends_the_connection() {
    use rustls::ContentType;
    let server = TlsTestServer::start(Config::default());
    for (empty, answered) in [(64, true), (65, false)] {
        let mut client = connect_with(&server, &rustls::version::TLS12, |c| {
            c.enable_secret_extraction = true;
        });
        hello(&mut client);
        let mut client = HandBuilt::take_over(client);
        for _ in 0..empty {
            client.send(ContentType::ApplicationData, b"");
        }
        if answered {
            client.send(
                ContentType::ApplicationData,
                b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n",
            );
            let (typ, answer) = client.receive().expect("an answer");
            assert_eq!(typ, ContentType::ApplicationData);
            assert!(answer.starts_with(b"HTTP/1.1 200"), "after {empty}");
        } else {
            let (typ, alert) = client.receive().expect("an alert");
            assert_eq!((typ, alert[0]), (ContentType::Alert, 2), "after {empty}");
            assert_eq!(client.receive(), None);
        }
    }
}

/// Handshake messages after a TLS 1.3 handshake: a `KeyUpdate` that does not ask for an answer
/// changes the client's key and nothing else (no answer, no alert); a `ClientHello` is an
/// `unexpected_message` (TLS 1.3 has no renegotiation to refuse politely).
#[test]
fn tls13_key_update_not_requested_is_taken_a_client_hello_is_unexpected() {
    use rustls::ContentType;
    let server = TlsTestServer::start(Config::default());
    let start = || {
        let mut client = connect_with(&server, &rustls::version::TLS13, |c| {
            c.enable_secret_extraction = true;
        });
        hello(&mut client);
        HandBuilt::take_over(client)
    };
    let mut client = start();
    client.send(
        ContentType::ApplicationData,
        b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n",
    );
    // update_not_requested (0): the client's next records would use its next key; it sends
    // none, and ends its side of the connection.
    client.send(ContentType::Handshake, &[24, 0, 0, 1, 0]);
    client.sock.shutdown(std::net::Shutdown::Write).unwrap();
    let mut records = Vec::new();
    while let Some(record) = client.receive() {
        records.push(record);
    }
    let (typ, answer) = &records[0];
    assert_eq!(*typ, ContentType::ApplicationData);
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{records:?}");
    assert!(
        !records
            .iter()
            .any(|(typ, body)| *typ == ContentType::Alert && body[0] == 2),
        "no fatal alert: {records:?}"
    );

    let mut client = start();
    client.send(ContentType::Handshake, &[1, 0, 0, 4, 3, 3, 0, 0]);
    assert_eq!(
        client.receive(),
        Some((ContentType::Alert, vec![2, 10])),
        "a fatal unexpected_message"
    );
}
