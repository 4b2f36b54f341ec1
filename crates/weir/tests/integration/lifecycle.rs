//! Timeouts, graceful shutdown, connection limits, Unix sockets.

use crate::support::*;
use std::io::Read;
use std::time::Duration;
use weir::{Config, DataRate};

#[test]
fn head_timeout_answers_408() {
    let config = Config::default().with_head_timeout(Duration::from_millis(300));
    let server = TestServer::start(config);
    let mut c = server.connect();
    c.send(b"GET /hello HTTP/1.1\r\nHost:");
    let resp = c.read_response();
    assert_eq!(resp.status, 408);
    c.assert_closed();
}

#[test]
fn idle_keep_alive_connection_is_closed_silently() {
    let config = Config::default().with_keep_alive_timeout(Duration::from_millis(300));
    let server = TestServer::start(config);
    let mut c = server.connect();
    c.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
    c.assert_closed();
}

#[test]
fn slow_body_is_cut_by_the_data_rate() {
    let config =
        Config::default().with_min_body_rate(Some(DataRate::new(1000, Duration::from_millis(200))));
    let server = TestServer::start(config);
    let mut c = server.connect();
    c.send(b"PUT /observe?id=201 HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n");
    // A byte now and then: each read makes progress, but the average rate is far too low.
    for _ in 0..20 {
        if c.try_send(b"x").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        if !OBSERVED.lock().unwrap().iter().any(|(i, _)| *i == 201) {
            continue;
        }
        break;
    }
    assert_eq!(observed(201), "timeout");
}

#[test]
fn shutdown_closes_idle_connections_and_finishes_in_flight() {
    let server = TestServer::start(Config::default());
    let mut idle = server.connect();
    idle.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(idle.read_response().status, 200);
    // In flight: the body is only half sent when shutdown starts.
    let mut busy = server.connect();
    busy.send(b"PUT /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n01234");
    std::thread::sleep(Duration::from_millis(100));
    server.handle.shutdown();
    idle.assert_closed();
    busy.send(b"56789");
    let resp = busy.read_response();
    assert_eq!(resp.text(), "0123456789");
    assert_eq!(resp.header("connection"), Some("close"));
    busy.assert_closed();
    server.stop();
}

#[test]
fn connection_limit_queues_new_clients() {
    let config = Config::default().with_max_connections(2);
    let server = TestServer::start(config);
    let mut a = server.connect();
    let mut b = server.connect();
    a.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    b.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(a.read_response().status, 200);
    assert_eq!(b.read_response().status, 200);
    // A third client connects (kernel backlog) but is not served while two are open.
    let mut third = server.connect();
    third.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    third
        .stream()
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut byte = [0u8; 1];
    let waiting = third.stream().read(&mut byte);
    assert!(
        waiting.is_err(),
        "third connection was served while at the limit"
    );
    // The existing clients keep being served.
    a.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(a.read_response().status, 200);
    // When one leaves, the third is served.
    drop(b);
    third
        .stream()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(third.read_response().text(), "Hello, World!");
}

#[test]
fn unix_socket_serves_the_same_handler() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.sock");
    let server = TestServer::start_with(Config::default(), Routes, Some(path.clone()));
    let stream = std::os::unix::net::UnixStream::connect(&path).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = std::io::BufReader::new(stream);
    use std::io::{BufRead, Write};
    let data = pattern(4 << 20, 12);
    reader
        .get_mut()
        .write_all(
            format!(
                "PUT /file HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                data.len()
            )
            .as_bytes(),
        )
        .unwrap();
    reader.get_mut().write_all(&data).unwrap();
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    assert!(rest.contains(&sha256_hex(&data)), "{rest}");
    drop(server);
}

#[test]
fn per_core_runtimes_share_the_port() {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let setup = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = Config::default().with_reuse_port(true);
        let server = setup
            .block_on(weir::Server::bind("127.0.0.1:0", config))
            .unwrap();
        tx.send((server.local_addr().unwrap(), server.handle()))
            .unwrap();
        drop(setup);
        server.serve_per_core(Routes, 2).unwrap();
    });
    let (addr, handle) = rx.recv().unwrap();
    let mut clients: Vec<Client> = (0..8)
        .map(|_| Client::new(std::net::TcpStream::connect(addr).unwrap()))
        .collect();
    for round in 0..3 {
        for c in &mut clients {
            c.send(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
        }
        for c in &mut clients {
            assert_eq!(c.read_response().text(), "Hello, World!", "round {round}");
        }
    }
    handle.shutdown();
    thread.join().unwrap();
}

/// Answers with the name of the thread that ran the handler; `/block` first tells the test it
/// started, then blocks its thread (a current-thread runtime: the whole runtime) until released.
struct WhichThread {
    started: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl weir::Handler for WhichThread {
    async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
        let name = std::thread::current().name().unwrap_or("").to_string();
        if ex.request().path() == "/block" {
            self.started.lock().unwrap().send(()).unwrap();
            let _ = self
                .release
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(20));
        }
        ex.respond(http::StatusCode::OK).body(name).await
    }
}

/// One `Connection: close` request over a Unix socket, answered within 10 s or `None`.
fn unix_get(stream: &mut std::os::unix::net::UnixStream, path: &str) -> Option<String> {
    use std::io::Write;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

/// Per-core serving of a Unix socket: every thread waits on it, so while one thread is busy
/// (here: blocked by a handler) another accepts and answers. (It was served by the first thread
/// alone, so the second connection waited for the first thread.)
#[test]
fn per_core_runtimes_share_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.sock");
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel();
    let handler = WhichThread {
        started: std::sync::Mutex::new(started_tx),
        release: std::sync::Mutex::new(release_rx),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let bind_path = path.clone();
    let thread = std::thread::spawn(move || {
        let setup = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut server = weir::Server::new(Config::default());
        setup
            .block_on(async { server.listen_unix(&bind_path) })
            .unwrap();
        tx.send(server.handle()).unwrap();
        drop(setup);
        server.serve_per_core(handler, 2).unwrap();
    });
    let handle = rx.recv().unwrap();
    let blocked = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let blocked_thread = {
        let mut stream = blocked.try_clone().unwrap();
        std::thread::spawn(move || unix_get(&mut stream, "/block"))
    };
    started_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the blocking request reached its handler");
    let mut other = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let answered = unix_get(&mut other, "/who");
    release_tx.send(()).unwrap();
    let blocking = blocked_thread
        .join()
        .unwrap()
        .expect("the blocked request is answered");
    let _ = blocked.shutdown(std::net::Shutdown::Both);
    let answered = answered.expect("a second connection is answered while one thread is busy");
    let name = |r: &str| r.rsplit("\r\n\r\n").next().unwrap_or("").to_string();
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(name(&answered).starts_with("weir-core-"), "{answered}");
    assert_ne!(name(&answered), name(&blocking), "served by another thread");
    handle.shutdown();
    thread.join().unwrap();
    assert!(
        !path.exists(),
        "the socket file is removed once, by the original listener"
    );
}

#[test]
fn address_in_use_is_an_error_without_reuse_port() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let first = weir::Server::bind("127.0.0.1:0", Config::default())
            .await
            .unwrap();
        let addr = first.local_addr().unwrap();
        let second = weir::Server::bind(addr, Config::default()).await;
        assert_eq!(
            second.err().map(|e| e.kind()),
            Some(std::io::ErrorKind::AddrInUse)
        );
        // Per-core serving refuses listeners that cannot share their port.
        let err = first.serve_per_core(Routes, 2).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    });
}
