//! Webhooks (`--hook-url`): a local receiver (a listener in the test) gets a `POST` of the
//! event's JSON after each commit and delete; `5xx` answers and refused connections are retried
//! with backoff up to `--hook-attempts`, a receiver that never answers is timed out; every
//! outcome is counted, and the stored file is never touched.

use crate::metrics::scrape;
use crate::support::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

/// A receiver: answers the n-th request (from 0) with `answer(n)`, or holds it unanswered
/// when that is `None`. Keeps each request's body.
pub(crate) struct Receiver {
    addr: SocketAddr,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Receiver {
    pub(crate) fn start(answer: fn(usize) -> Option<u16>) -> Receiver {
        Self::start_with(move |n| answer(n).map(|status| (status, "")))
    }

    /// [`Receiver::start`] whose answers may carry header lines (each ending in CRLF).
    fn start_with(
        answer: impl Fn(usize) -> Option<(u16, &'static str)> + Send + 'static,
    ) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { return };
                let body = read_request(&mut stream);
                kept.lock().unwrap().push(body);
                match answer(n) {
                    Some((status, fields)) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 {status} X\r\n{fields}content-length: 0\r\nconnection: close\r\n\r\n"
                        );
                    }
                    // Never answered: kept open so that the sender waits.
                    None => held.push(stream),
                }
            }
        });
        Receiver { addr, bodies }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub(crate) fn bodies(&self) -> Vec<serde_json::Value> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap())
            .collect()
    }
}

/// Reads one request (head, then a `Content-Length` body); returns the body.
fn read_request(stream: &mut impl Read) -> Vec<u8> {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap_or(0) == 0 {
            return got;
        }
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(head.starts_with("post /hook http/1.1\r\n"), "{head}");
    assert!(
        head.contains("content-type: application/json\r\n"),
        "{head}"
    );
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0; length];
    stream.read_exact(&mut body).unwrap();
    body
}

fn count(s: &Server, key: &str) -> f64 {
    scrape(&s.url("/metrics"), None)[key]
}

const OK: &str = "weir_webhooks_total{outcome=\"ok\"}";
const FAILED: &str = "weir_webhooks_total{outcome=\"failed\"}";
const TIMEOUT: &str = "weir_webhooks_total{outcome=\"timeout\"}";
const ATTEMPTS: &str = "weir_webhook_attempts_total";

#[test]
fn a_receiver_failing_twice_gets_the_event_on_the_third_attempt() {
    if !crate::metrics::parser() {
        return;
    }
    let receiver = Receiver::start(|n| Some(if n < 2 { 503 } else { 200 }));
    let s = Server::start(&["--hook-url", &receiver.url(), "--hook-backoff", "1s"]);
    let body = data(5000, 3);
    assert_eq!(s.request("PUT /files/d/a.bin HTTP/1.1", &body).status, 201);
    wait_for("the delivery", || count(&s, OK) == 1.0);
    let sum = sha256(&body);
    let event = serde_json::json!({"event": "stored", "path": "d/a.bin", "size": 5000, "sha256": sum, "token": null});
    assert_eq!(receiver.bodies(), [event.clone(), event.clone(), event]);
    assert_eq!(count(&s, ATTEMPTS), 3.0);
    assert_eq!(count(&s, FAILED), 0.0);
    let got = s.request("GET /files/d/a.bin HTTP/1.1", b"");
    assert_eq!((got.status, got.body == body), (200, true));
    // A delete is posted too (answered 200 at once now).
    assert_eq!(s.request("DELETE /files/d/a.bin HTTP/1.1", b"").status, 204);
    wait_for("the delete's delivery", || count(&s, OK) == 2.0);
    assert_eq!(
        receiver.bodies()[3],
        serde_json::json!({"event": "deleted", "path": "d/a.bin", "size": 0, "sha256": null, "token": null})
    );
    assert_eq!(count(&s, ATTEMPTS), 4.0);
}

/// A 503 with `Retry-After: 1` is retried after that second, not after the backoff: with a
/// backoff of 5 minutes the event could not arrive within the wait; the log tells the pause
/// chosen.
#[test]
fn retry_after_replaces_the_backoff() {
    if !crate::metrics::parser() {
        return;
    }
    let receiver = Receiver::start_with(|n| {
        Some(if n == 0 {
            (503, "retry-after: 1\r\n")
        } else {
            (200, "")
        })
    });
    let s = Server::start(&["--hook-url", &receiver.url(), "--hook-backoff", "5m"]);
    assert_eq!(s.request("PUT /files/r.bin HTTP/1.1", b"abc").status, 201);
    wait_for("the delivery", || count(&s, OK) == 1.0);
    assert_eq!(receiver.bodies().len(), 2);
    assert_eq!(count(&s, ATTEMPTS), 2.0);
    let log = std::fs::read_to_string(s.dir.path().join("server-stderr.log")).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("webhook attempt failed"))
        .unwrap();
    // Without the terminal's colour codes, if any.
    let mut plain = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('\x1b') {
        plain.push_str(&rest[..at]);
        rest = rest[at..].split_once('m').map_or("", |(_, r)| r);
    }
    plain.push_str(rest);
    assert!(
        plain.contains("answered 503") && plain.contains("retry_in=1s"),
        "{plain}"
    );
}

#[test]
fn a_hanging_receiver_is_timed_out_and_counted() {
    if !crate::metrics::parser() {
        return;
    }
    let receiver = Receiver::start(|_| None);
    let s = Server::start(&[
        "--hook-url",
        &receiver.url(),
        "--hook-timeout",
        "1s",
        "--hook-attempts",
        "2",
    ]);
    let body = data(3000, 4);
    assert_eq!(s.request("PUT /files/h.bin HTTP/1.1", &body).status, 201);
    wait_for("the timeout", || count(&s, TIMEOUT) == 1.0);
    assert_eq!(count(&s, ATTEMPTS), 2.0);
    assert_eq!(receiver.bodies().len(), 2, "both attempts reached it");
    assert_eq!(count(&s, OK), 0.0);
    let got = s.request("GET /files/h.bin HTTP/1.1", b"");
    assert_eq!((got.status, got.body == body), (200, true));
}

#[test]
fn a_receiver_that_is_down_is_retried_then_counted_as_failed() {
    if !crate::metrics::parser() {
        return;
    }
    // A port nothing listens on: bound, then closed.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}/hook");
    let s = Server::start(&["--hook-url", &url, "--hook-attempts", "3"]);
    let body = data(2000, 5);
    assert_eq!(s.request("PUT /files/down.bin HTTP/1.1", &body).status, 201);
    wait_for("the failure", || count(&s, FAILED) == 1.0);
    assert_eq!(count(&s, ATTEMPTS), 3.0);
    assert_eq!(count(&s, OK) + count(&s, TIMEOUT), 0.0);
    let got = s.request("GET /files/down.bin HTTP/1.1", b"");
    assert_eq!((got.status, got.body == body), (200, true));
}

#[test]
fn a_client_error_is_not_retried() {
    if !crate::metrics::parser() {
        return;
    }
    let receiver = Receiver::start(|_| Some(404));
    let s = Server::start(&["--hook-url", &receiver.url()]);
    assert_eq!(s.request("PUT /files/x HTTP/1.1", b"abc").status, 201);
    wait_for("the failure", || count(&s, FAILED) == 1.0);
    assert_eq!(count(&s, ATTEMPTS), 1.0);
    assert_eq!(receiver.bodies().len(), 1);
}

#[test]
fn a_bad_hook_url_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let err = spawn(
        &dir.path().join("root"),
        dir.path(),
        &["--hook-url", "ftp://x/"],
        &[],
    )
    .expect_err("refused");
    assert!(err.contains("http:// or https://"), "{err}");
}

#[test]
fn the_webhook_from_the_environment_and_its_attempts_from_the_file() {
    if !crate::metrics::parser() {
        return;
    }
    let receiver = Receiver::start(|_| Some(500));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("weir.toml");
    std::fs::write(&file, "hook-attempts = 2\nhook-backoff = \"1s\"\n").unwrap();
    let url = receiver.url();
    let (child, addr) = spawn(
        &dir.path().join("root"),
        dir.path(),
        &["--config", file.to_str().unwrap()],
        &[("WEIR_HOOK_URL", url.as_str())],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().join("root");
    let s = Server {
        child,
        addr,
        dir,
        root,
    };
    assert_eq!(s.request("PUT /files/e HTTP/1.1", b"abc").status, 201);
    wait_for("the failure", || count(&s, FAILED) == 1.0);
    assert_eq!(count(&s, ATTEMPTS), 2.0);
    assert_eq!(receiver.bodies().len(), 2);
}

#[test]
fn an_https_receiver_trusted_through_the_systems_roots() {
    if !crate::metrics::parser() {
        return;
    }
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let pki = crate::tls::pki();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&pki.cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(&pki.key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, stream);
            let body = read_request(&mut tls);
            kept.lock().unwrap().push(body);
            let _ = tls.write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
    });
    // The system's roots, as weir reads them (rustls-native-certs), are the test CA alone.
    let url = format!("https://localhost:{port}/hook");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let ca = pki.ca.to_str().unwrap();
    let (child, addr) = spawn(
        &root,
        dir.path(),
        &["--hook-url", &url],
        &[("SSL_CERT_FILE", ca)],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = Server {
        child,
        addr,
        dir,
        root,
    };
    assert_eq!(s.request("PUT /files/tls.txt HTTP/1.1", b"abc").status, 201);
    wait_for("the delivery over TLS", || count(&s, OK) == 1.0);
    let got: serde_json::Value = serde_json::from_slice(&bodies.lock().unwrap()[0]).unwrap();
    assert_eq!(got["path"], "tls.txt");
    assert_eq!(count(&s, ATTEMPTS), 1.0);
}

/// With every worker held by a receiver that never answers and the queue full, a further event
/// is dropped and counted; the uploads are all answered and stored regardless.
#[test]
fn a_full_queue_drops_events_and_counts_them() {
    if !crate::metrics::parser() {
        return;
    }
    let receiver = Receiver::start(|_| None);
    let s = Server::start(&["--hook-url", &receiver.url(), "--hook-timeout", "10m"]);
    // Four events taken by the workers (each waiting for its answer), at most 1,024 queued:
    // of 1,030 uploads' events, at least two are dropped (more only if a worker took its event
    // after the queue had filled).
    let uploads = 1030;
    let mut c = weir_testkit::h1::Client::new(std::net::TcpStream::connect(s.addr).unwrap());
    for i in 0..uploads {
        c.send(
            format!("PUT /files/q/{i} HTTP/1.1\r\nhost: t\r\ncontent-length: 1\r\n\r\nx")
                .as_bytes(),
        );
        assert_eq!(c.read_response().status, 201, "upload {i}");
    }
    let dropped = "weir_webhooks_total{outcome=\"dropped\"}";
    wait_for("the workers to take their events", || {
        receiver.bodies().len() == 4
    });
    let scraped = scrape(&s.url("/metrics"), None);
    assert!(
        scraped[dropped] >= (uploads - 4 - 1024) as f64,
        "{}",
        scraped[dropped]
    );
    assert_eq!(scraped[ATTEMPTS], 4.0);
    assert_eq!(s.request("GET /files/q/1029 HTTP/1.1", b"").body, b"x");
}

#[test]
fn a_receiver_trickling_its_answer_is_cut_at_the_timeout_of_the_attempt() {
    // The first four connections (one per worker) get a status line, then one byte of a
    // header line every 100 ms, forever: each read is quick, the answer never ends. The
    // others are answered at once.
    const TRICKLED: usize = 4;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(0usize));
    let seen = bodies.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            read_request(&mut stream);
            *seen.lock().unwrap() += 1;
            if n >= TRICKLED {
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
                continue;
            }
            std::thread::spawn(move || {
                let mut out = b"HTTP/1.1 200 OK\r\n".to_vec();
                out.extend(std::iter::repeat_n(b"x-slow: aaaaaaaaa\r\n".iter(), 100_000).flatten());
                for byte in out {
                    // Ends once the sender has given up (its side closed).
                    if stream.write_all(&[byte]).is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            });
        }
    });
    let s = Server::start(&[
        "--hook-url",
        &url,
        "--hook-timeout",
        "1s",
        "--hook-attempts",
        "1",
    ]);
    for i in 0..TRICKLED {
        let put = format!("PUT /files/t{i} HTTP/1.1");
        assert_eq!(s.request(&put, b"x").status, 201);
    }
    // Every trickled attempt ends as timed out (counted: a timeout per read never fired while
    // the receiver trickled), and the workers go on to the next event.
    wait_for("the trickled attempts to time out", || {
        count(&s, TIMEOUT) == TRICKLED as f64
    });
    assert_eq!(s.request("PUT /files/next HTTP/1.1", b"x").status, 201);
    wait_for("the next event to be delivered", || count(&s, OK) == 1.0);
    assert_eq!(*bodies.lock().unwrap(), TRICKLED + 1);
}
