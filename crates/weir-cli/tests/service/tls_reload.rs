//! SIGHUP reloads the TLS certificate: new connections get the new one, a connection open
//! across the reload keeps working, and a bad pair keeps the old one with one error line.

use crate::support::*;
use crate::tls::pki;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

/// A TLS connection to `addr` that trusts only the CA in `ca`.
fn connect(
    addr: std::net::SocketAddr,
    ca: &Path,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(ca).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = "127.0.0.1".try_into().unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    rustls::StreamOwned::new(conn, sock)
}

/// `GET /healthz` on a kept-alive connection: the status line.
fn healthz<S: Read + Write>(s: &mut S) -> String {
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: t\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    // "ok\n" ends the answer (Content-Length: 3).
    while !got.ends_with(b"\r\n\r\nok\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap()
        .to_owned()
}

/// Whether a new connection trusting `ca` completes its handshake and is answered.
fn new_connection_trusts(addr: std::net::SocketAddr, ca: &Path) -> bool {
    let (status, _) = curl_status(&[
        "--cacert",
        ca.to_str().unwrap(),
        &format!("https://127.0.0.1:{}/healthz", addr.port()),
    ]);
    status == 200
}

fn hangup(pid: u32) {
    let ok = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn sighup_reloads_the_certificate_and_keeps_connections() {
    let (a, b) = (pki(), pki());
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::copy(&a.cert, &cert).unwrap();
    std::fs::copy(&a.key, &key).unwrap();
    let s = Server::start(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let mut kept = connect(s.addr, &a.ca);
    assert_eq!(healthz(&mut kept), "HTTP/1.1 200 OK");
    assert!(new_connection_trusts(s.addr, &a.ca));
    assert!(!new_connection_trusts(s.addr, &b.ca));

    // Renewed: B's files in place, then SIGHUP.
    std::fs::copy(&b.cert, &cert).unwrap();
    std::fs::copy(&b.key, &key).unwrap();
    hangup(s.pid());
    wait_for("new connections to get certificate B", || {
        new_connection_trusts(s.addr, &b.ca)
    });
    assert!(!new_connection_trusts(s.addr, &a.ca));
    // The connection made with A goes on.
    assert_eq!(healthz(&mut kept), "HTTP/1.1 200 OK");

    // A bad pair (A's certificate, B's key): one error line, B stays.
    std::fs::copy(&a.cert, &cert).unwrap();
    hangup(s.pid());
    let log = s.dir.path().join("server-stderr.log");
    wait_for("the reload error to be logged", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("keeping the certificate in use"))
    });
    let text = std::fs::read_to_string(&log).unwrap();
    let errors: Vec<_> = text.lines().filter(|l| l.contains("SIGHUP")).collect();
    assert_eq!(errors.len(), 2, "{text}");
    assert!(errors[1].contains("does not match"), "{text}");
    assert!(new_connection_trusts(s.addr, &b.ca));
    assert_eq!(healthz(&mut kept), "HTTP/1.1 200 OK");
}

#[test]
fn sighup_without_tls_does_not_stop_the_service() {
    let s = Server::start(&[]);
    hangup(s.pid());
    let log = s.dir.path().join("server-stderr.log");
    wait_for("the SIGHUP to be logged", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("no TLS certificate to reload"))
    });
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
}
