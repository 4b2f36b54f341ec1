//! What an idle keep-alive connection holds on the server's heap, counted.
//!
//! A counting global allocator keeps the bytes live on the heap of the server's runtime threads
//! ([`live_bytes`]; the client runs on the test thread, not counted). N connections each make
//! one `GET` and stay open; the heap then holds, per connection, the task (its future and
//! tokio's header), the socket's registration, and whatever buffers the connection keeps while
//! it waits for its next request. The bound is 8 KiB per connection: the read and write buffers
//! go back to the server's pool when a connection goes idle, and the task's future holds no
//! buffer of its own. Over TLS the record layer's read buffer is released too; the TLS state
//! (keys, rustls's kernel connection) stays, which is why its bound is larger.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;
use weir::http::StatusCode;
use weir::{Config, Exchange, Handler};
use weir_testkit::alloc::{LiveBytes, count_this_thread, live_bytes};

#[global_allocator]
static ALLOC: LiveBytes = LiveBytes;

/// The bound per idle connection (issue 18, item 7).
const MAX_PER_IDLE_CONNECTION: i64 = 8 * 1024;

/// Held by each test: the counter counts every server's threads.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Healthz;

impl Handler for Healthz {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        ex.respond(StatusCode::OK)
            .header("content-type", "text/plain")
            .body("ok\n")
            .await
    }
}

/// Starts a server (TLS with `tls`) on a runtime whose threads are counted.
fn start_server(config: Config, tls: Option<weir::TlsConfig>) -> std::net::SocketAddr {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .on_thread_start(|| count_this_thread(true))
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut server = weir::Server::new(config);
            let addr = match tls {
                Some(tls) => server.listen_tls("127.0.0.1:0", tls).await.unwrap(),
                None => server.listen_tcp("127.0.0.1:0").await.unwrap(),
            };
            tx.send(addr).unwrap();
            server.serve(Healthz).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// One `GET` on `stream`, its whole response read.
fn one_request(stream: &mut impl ReadWrite) {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 1024];
    let mut len = 0;
    loop {
        let n = stream.read(&mut buf[len..]).unwrap();
        assert!(n > 0, "closed after {len} bytes");
        len += n;
        let got = &buf[..len];
        if got.starts_with(b"HTTP/1.1 200") && got.ends_with(b"\r\n\r\nok\n") {
            return;
        }
        assert!(len < buf.len(), "unexpected response");
    }
}

/// The live heap once it stops changing: the server's tasks reach their idle point just after
/// the client has read their responses. Polled, not timed: the figure asserted is a count.
fn settled_live_bytes() -> i64 {
    let mut last = live_bytes();
    let mut same = 0;
    for _ in 0..1000 {
        std::thread::sleep(Duration::from_millis(10));
        let now = live_bytes();
        if now == last {
            same += 1;
            if same == 10 {
                return now;
            }
        } else {
            same = 0;
            last = now;
        }
    }
    panic!("the heap did not settle");
}

/// Heap bytes per idle connection, after `n` connections opened by `connect` made one request
/// each.
fn live_bytes_per_idle_connection<C: ReadWrite>(n: usize, connect: impl Fn() -> C) -> i64 {
    // Warm-up: the server's pool, timer wheel levels and slab pages reach their working size.
    for _ in 0..64 {
        let mut c = connect();
        one_request(&mut c);
    }
    let mut conns: Vec<C> = Vec::with_capacity(n);
    let before = settled_live_bytes();
    for _ in 0..n {
        let mut c = connect();
        one_request(&mut c);
        conns.push(c);
    }
    let after = settled_live_bytes();
    // Each connection still answers: they are idle, not gone.
    for c in conns.iter_mut().step_by(n / 8) {
        one_request(c);
    }
    (after - before) / n as i64
}

#[test]
fn an_idle_http1_connection_holds_at_most_8_kib() {
    let _alone = MEASURING.lock().unwrap_or_else(|p| p.into_inner());
    // The default configuration: HTTP/2 on, so each connection's first bytes are sniffed.
    let addr = start_server(Config::default(), None);
    let per_conn = live_bytes_per_idle_connection(400, || TcpStream::connect(addr).unwrap());
    println!("HTTP/1.1: {per_conn} heap bytes per idle connection");
    assert!(
        per_conn <= MAX_PER_IDLE_CONNECTION,
        "{per_conn} bytes per idle connection"
    );
}

#[test]
fn an_idle_https_connection_holds_no_buffers() {
    use weir::rustls;
    let _alone = MEASURING.lock().unwrap_or_else(|p| p.into_inner());
    let cert = weir_testkit::cert::TestCert::new();
    let addr = start_server(Config::default(), Some(cert.tls_config()));
    let config = cert.client_config(&[b"http/1.1"]);
    let per_conn = live_bytes_per_idle_connection(200, || {
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(config.clone(), name).unwrap();
        rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap())
    });
    println!("HTTPS HTTP/1.1: {per_conn} heap bytes per idle connection");
    // The TLS state itself stays (rustls's kernel connection for key updates, the record
    // keys, the boxed stream): as much right after the handshake as after a request, so none of
    // it is a buffer. The bound is the plain connection's plus that; the buffers (the record
    // layer's 32 KiB, HTTP/1.1's pair) are what it refuses.
    assert!(
        per_conn <= MAX_PER_IDLE_CONNECTION + 16 * 1024,
        "{per_conn} bytes per idle connection"
    );
}
