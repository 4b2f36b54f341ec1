//! HTTPS: curl over HTTP/1.1 and HTTP/2 (ALPN) with a self-signed certificate, 256 MiB
//! uploads byte-exact, the h2 client over TLS, and the handshake's timeout and bound.

use crate::h2_support::*;
use crate::support::*;
use bytes::Bytes;
use http::Method;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use weir::Config;

fn upload_config() -> Config {
    Config::default().with_max_body_size(None)
}

/// 256 MiB of test data in a file, and its SHA-256.
fn big_file(dir: &tempfile::TempDir) -> (String, String) {
    let path = dir.path().join("upload.bin");
    let data = pattern(256 << 20, 21);
    std::fs::write(&path, &data).unwrap();
    (path.to_str().unwrap().to_owned(), sha256_hex(&data))
}

#[test]
fn curl_https_uploads_over_http1_and_http2_are_byte_exact() {
    assert_curl_has_http2();
    let server = TlsTestServer::start(upload_config());
    let dir = tempfile::tempdir().unwrap();
    let (path, expected) = big_file(&dir);
    let cacert = server.cert.cert_path.to_str().unwrap().to_owned();
    for (version_flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
        // To a file (the buffered path: no splice over TLS).
        let out = curl(&[
            version_flag,
            "--cacert",
            &cacert,
            "-T",
            &path,
            "-H",
            "Expect:",
            "--write-out",
            "v=%{http_version}",
            &server.tls_url("/file"),
        ]);
        assert!(out.starts_with(&expected), "{version_flag}: {out}");
        assert!(out.contains("spliced=0"), "{version_flag}: {out}");
        assert!(
            out.ends_with(&format!("v={version}")),
            "{version_flag}: {out}"
        );
        // Through read_body with a large buffer.
        let out = curl(&[
            version_flag,
            "--cacert",
            &cacert,
            "--data-binary",
            &format!("@{path}"),
            &server.tls_url("/sha?buf=1048576"),
        ]);
        assert!(out.starts_with(&expected), "{version_flag}: {out}");
    }
}

#[test]
fn alpn_picks_the_protocol_and_the_handler_sees_it() {
    assert_curl_has_http2();
    let server = TlsTestServer::start(Config::default());
    let cacert = server.cert.cert_path.to_str().unwrap().to_owned();
    let url = server.tls_url("/version?x=1");
    let h1 = curl(&["--http1.1", "--cacert", &cacert, &url]);
    assert_eq!(
        h1,
        format!(
            "HTTP/1.1 GET /version?x=1 host=localhost:{}\n",
            server.tls_addr.port()
        )
    );
    let h2 = curl(&["--http2", "--cacert", &cacert, &url]);
    assert_eq!(
        h2,
        format!(
            "HTTP/2.0 GET /version?x=1 host=localhost:{}\n",
            server.tls_addr.port()
        )
    );
}

#[test]
fn http2_disabled_offers_only_http1() {
    assert_curl_has_http2();
    let mut config = Config::default();
    config.http2.enabled = false;
    let server = TlsTestServer::start(config);
    let cacert = server.cert.cert_path.to_str().unwrap().to_owned();
    let out = curl(&[
        "--http2",
        "--cacert",
        &cacert,
        "--write-out",
        " v=%{http_version}",
        &server.tls_url("/hello"),
    ]);
    assert_eq!(out, "Hello, World! v=1.1");
}

#[test]
fn h2_client_over_tls_uploads_and_downloads() {
    let server = TlsTestServer::start(upload_config());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut client = h2_tls(server.tls_addr, &server.cert).await;
        let data = Bytes::from(pattern(32 << 20, 5));
        let resp = h2_request(&mut client, Method::PUT, "/file", &[], data.clone())
            .await
            .unwrap();
        assert!(
            resp.text().starts_with(&sha256_hex(&data)),
            "{}",
            resp.text()
        );
        let resp = h2_request(
            &mut client,
            Method::GET,
            "/big?len=3000000",
            &[],
            Bytes::new(),
        )
        .await
        .unwrap();
        assert_eq!(resp.body, pattern(3_000_000, 7));
    });
}

/// Reads until the server closes `s`; `false` if it is still open after 30 s.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

/// A real client's GET over HTTPS, given 20 s at most.
fn https_hello(server: &TlsTestServer) -> String {
    let cacert = server.cert.cert_path.to_str().unwrap().to_owned();
    curl(&[
        "--max-time",
        "20",
        "--cacert",
        &cacert,
        &server.tls_url("/hello"),
    ])
}

/// A rustls client's `ClientHello`, as it would send it.
fn client_hello_bytes() -> Vec<u8> {
    let config = weir::rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        weir::TlsConfig::crypto_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(weir::rustls::RootCertStore::empty())
    .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = weir::rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    hello
}

/// Connections that send nothing, or only part of a `ClientHello`, hold no handshake slot: with
/// one slot and a minute for each handshake, a real client still gets through at once. They
/// once took the slots first, so 1,200 silent connections made a real client wait 8–9 s.
#[test]
fn silent_connections_hold_no_handshake_slot() {
    assert_curl_has_http2();
    let config = Config::default()
        .with_tls_client_hello_timeout(Duration::from_secs(60))
        .with_tls_handshake_timeout(Duration::from_secs(60))
        .with_max_tls_handshakes(1);
    let server = TlsTestServer::start(config);
    let hello = client_hello_bytes();
    let mut silent: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(server.tls_addr).unwrap())
        .collect();
    let mut partial = TcpStream::connect(server.tls_addr).unwrap();
    partial.write_all(&hello[..hello.len() - 1]).unwrap();
    silent.push(partial);
    for _ in 0..2 {
        assert_eq!(https_hello(&server), "Hello, World!");
    }
    drop(silent);
}

/// A `ClientHello` that does not arrive whole within its timeout is closed, without a byte sent
/// to it; one that arrives and then stalls holds its slot for the handshake timeout at most.
#[test]
fn stalled_handshakes_time_out_and_free_their_slot() {
    assert_curl_has_http2();
    let config = Config::default()
        .with_tls_client_hello_timeout(Duration::from_millis(300))
        .with_tls_handshake_timeout(Duration::from_millis(300))
        .with_max_tls_handshakes(1);
    let server = TlsTestServer::start(config);
    let hello = client_hello_bytes();
    for sent in [0, 10, hello.len() - 1] {
        let mut staller = TcpStream::connect(server.tls_addr).unwrap();
        staller.write_all(&hello[..sent]).unwrap();
        staller
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut buf = [0u8; 16];
        match staller.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => panic!("server sent {n} bytes before a whole ClientHello"),
            Err(e) => assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "{sent} bytes of a ClientHello: never closed"
            ),
        }
    }
    // A whole ClientHello takes the only slot; the server answers, waits for the client's
    // next flight, and closes when the handshake timeout passes.
    let mut staller = TcpStream::connect(server.tls_addr).unwrap();
    staller.write_all(&hello).unwrap();
    assert!(
        closed_by_server(&mut staller),
        "a stalled handshake never closed"
    );
    // The slot is free again: a real client gets through.
    assert_eq!(https_hello(&server), "Hello, World!");
}

#[test]
fn plaintext_on_the_tls_port_is_dropped() {
    let server = TlsTestServer::start(Config::default());
    let mut s = TcpStream::connect(server.tls_addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    // rustls answers a non-TLS record with an alert at most; never an HTTP response.
    assert!(!rest.starts_with(b"HTTP/"), "{rest:?}");
}

#[test]
fn a_users_own_rustls_configuration_serves_with_weirs_alpn() {
    use rustls_pki_types::pem::PemObject;
    assert_curl_has_http2();
    let cert = TestCert::new();
    let certs = rustls_pki_types::CertificateDer::pem_file_iter(&cert.cert_path)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(&cert.key_path).unwrap();
    let provider = std::sync::Arc::new(weir::TlsConfig::crypto_provider());
    // No ALPN protocols here: weir adds its own at the listener.
    let server_config = weir::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let tls = weir::TlsConfig::from_rustls(server_config);
    let (server, addr) = weir_testkit::server::ServerThread::start(
        Config::default(),
        Routes,
        async move |s: &mut weir::Server| s.listen_tls("127.0.0.1:0", tls).await.unwrap(),
    );
    let cacert = cert.cert_path.to_str().unwrap();
    let url = format!("https://localhost:{}/hello", addr.port());
    for (flag, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
        let out = curl(&[
            flag,
            "--cacert",
            cacert,
            "--write-out",
            " v=%{http_version}",
            &url,
        ]);
        assert_eq!(out, format!("Hello, World! v={version}"), "{flag}");
    }
    server.stop();
}
