//! What an idle keep-alive connection holds on the server's heap, counted.
//!
//! A counting global allocator keeps the bytes live on the heap ([`live_bytes`]). N connections
//! each make one `GET` and stay open; the heap then holds, per connection, the task (its future
//! and tokio's header), the socket's registration, and whatever buffers the connection keeps
//! while it waits for its next request. The bound is 8 KiB per connection: the read and write
//! buffers go back to the server's pool when a connection goes idle, and the task's future holds
//! no buffer of its own. The client runs on the test thread with stack buffers only (its
//! `TcpStream`s live in a vector reserved before the first reading), so it adds nothing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;
use weir::http::StatusCode;
use weir::{Config, Exchange, Handler};
use weir_testkit::alloc::{LiveBytes, live_bytes};

#[global_allocator]
static ALLOC: LiveBytes = LiveBytes;

/// The bound per idle connection (issue 18, item 7).
const MAX_PER_IDLE_CONNECTION: i64 = 8 * 1024;

struct Healthz;

impl Handler for Healthz {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        ex.respond(StatusCode::OK)
            .header("content-type", "text/plain")
            .body("ok\n")
            .await
    }
}

fn start_server(config: Config) -> std::net::SocketAddr {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let server = weir::Server::bind("127.0.0.1:0", config).await.unwrap();
            tx.send(server.local_addr().unwrap()).unwrap();
            server.serve(Healthz).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

/// One `GET` on `stream`, its whole response read (stack buffer, no allocation).
fn one_request(stream: &mut TcpStream) {
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
    for _ in 0..500 {
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

/// Heap bytes per idle connection, after `n` connections made one request each.
fn live_bytes_per_idle_connection(config: Config, n: usize) -> i64 {
    let addr = start_server(config);
    // Warm-up: the server's pools, timer wheel levels and slab pages reach their working size.
    for _ in 0..64 {
        let mut c = TcpStream::connect(addr).unwrap();
        one_request(&mut c);
    }
    let mut conns: Vec<TcpStream> = Vec::with_capacity(n);
    let before = settled_live_bytes();
    for _ in 0..n {
        let mut c = TcpStream::connect(addr).unwrap();
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
    let per_conn = live_bytes_per_idle_connection(Config::default(), 400);
    eprintln!(
        "HTTP/1.1 (default config, h2c sniffing on): {per_conn} heap bytes per idle connection"
    );
    assert!(
        per_conn <= MAX_PER_IDLE_CONNECTION,
        "{per_conn} bytes per idle connection"
    );
}
