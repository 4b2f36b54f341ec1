//! Timeouts, data rates and the connection bound, with short configured values. Assertions are
//! on behaviour (status, close, the connection task gone), never on how long anything took.

use crate::harness::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use weir::{Config, DataRate};

/// Writes `first`, then `byte` every `every` until `stop` is set, a write fails, or `max` bytes
/// went out. Returns how many trickled bytes were written.
fn trickle(
    stream: &TcpStream,
    first: &[u8],
    byte: u8,
    every: Duration,
    max: usize,
    stop: Arc<AtomicBool>,
) -> JoinHandle<usize> {
    let mut w = stream.try_clone().expect("clone");
    let first = first.to_vec();
    std::thread::spawn(move || {
        if w.write_all(&first).is_err() {
            return 0;
        }
        let mut sent = 0;
        while sent < max && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(every);
            if w.write_all(&[byte]).is_err() {
                break;
            }
            sent += 1;
        }
        sent
    })
}

/// Reads until the server closes, then stops the trickling writer.
fn read_while_trickling(
    stream: TcpStream,
    writer: JoinHandle<usize>,
    stop: Arc<AtomicBool>,
) -> (Transcript, usize) {
    let t = read_until_closed(stream);
    stop.store(true, Ordering::Relaxed);
    let sent = writer.join().expect("writer");
    (t, sent)
}

fn statuses(t: &Transcript) -> Vec<u16> {
    t.responses.iter().map(|r| r.status).collect()
}

/// RFC 9110 §15.5.9: a head that does not complete in time is answered 408 and the connection
/// closed, even when every read brings a byte (slowloris): the deadline runs from the head's
/// start, it is not re-armed by progress.
#[test]
fn slowloris_head_gets_408_although_each_read_makes_progress() {
    let server = TestServer::start(Config::default().with_head_timeout(Duration::from_millis(500)));
    let stream = server.connect();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = trickle(
        &stream,
        b"GET /echo HTTP/1.1\r\nHost: a\r\nX-Slow: ",
        b'a',
        Duration::from_millis(50),
        400,
        stop.clone(),
    );
    let (t, sent) = read_while_trickling(stream, writer, stop);
    assert_eq!(statuses(&t), [408], "{t:?}");
    assert_eq!(t.responses[0].header("connection"), Some("close"));
    assert!(t.closed);
    assert!(sent < 400, "the head never timed out");
    assert!(server.wait_idle(), "connection task still running");
}

#[test]
fn connection_that_never_sends_is_closed() {
    let server = TestServer::start(Config::default().with_head_timeout(Duration::from_millis(300)));
    let t = read_until_closed(server.connect());
    assert!(t.closed);
    assert!(statuses(&t).iter().all(|&s| s == 408), "{t:?}");
    assert!(server.wait_idle());
}

/// RFC 9112 §9.8: an idle persistent connection may be closed at any time; weir does it
/// silently after the keep-alive timeout, and the connection's task ends.
#[test]
fn idle_keep_alive_connection_is_closed_silently() {
    let server =
        TestServer::start(Config::default().with_keep_alive_timeout(Duration::from_millis(300)));
    let mut stream = server.connect();
    stream
        .write_all(b"GET /sentinel HTTP/1.1\r\nHost: a\r\n\r\n")
        .expect("write");
    let t = read_until_closed(stream);
    assert_eq!(statuses(&t), [200], "{t:?}");
    assert_eq!(
        t.responses[0].header("connection"),
        None,
        "kept alive at first"
    );
    assert!(t.closed);
    assert!(server.wait_idle());
}

/// After a keep-alive request, a next head that starts but never ends gets the head timeout
/// (408), not the much longer keep-alive one.
#[test]
fn partial_head_on_a_kept_alive_connection_gets_408() {
    let server = TestServer::start(
        Config::default()
            .with_head_timeout(Duration::from_millis(300))
            .with_keep_alive_timeout(Duration::from_secs(60)),
    );
    let mut stream = server.connect();
    stream
        .write_all(b"GET /sentinel HTTP/1.1\r\nHost: a\r\n\r\nGET /sentinel HTTP/1.1\r\n")
        .expect("write");
    let t = read_until_closed(stream);
    assert_eq!(statuses(&t), [200, 408], "{t:?}");
    assert!(t.closed);
    assert!(server.wait_idle());
}

fn rate_config(bytes_per_second: u64, grace: Duration) -> Config {
    Config::default().with_min_body_rate(Some(DataRate::new(bytes_per_second, grace)))
}

/// An upload that dribbles a byte every 100 ms makes progress on every read, but averages far
/// below the minimum rate: after the grace it is answered 408 and closed.
#[test]
fn dribbling_upload_is_cut_by_the_body_rate() {
    let server = TestServer::start(rate_config(1000, Duration::from_millis(1500)));
    let stream = server.connect();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = trickle(
        &stream,
        b"PUT /count HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n",
        b'x',
        Duration::from_millis(100),
        600,
        stop.clone(),
    );
    let (t, sent) = read_while_trickling(stream, writer, stop);
    assert_eq!(statuses(&t), [408], "{t:?}");
    let received: u64 = t.responses[0]
        .text()
        .strip_prefix("timeout after ")
        .and_then(|n| n.parse().ok())
        .expect("the handler saw a timeout");
    assert!(
        received >= 2,
        "reads made no progress before the cut: {received}"
    );
    assert!(sent < 600, "the upload was never cut");
    assert_eq!(t.responses[0].header("connection"), Some("close"));
    assert!(t.closed);
    assert!(server.wait_idle());
}

/// The same rule does not cut an upload that stays above the minimum.
#[test]
fn upload_above_the_minimum_rate_completes() {
    let server = TestServer::start(rate_config(1000, Duration::from_millis(200)));
    let mut stream = server.connect();
    stream
        .write_all(
            b"PUT /count HTTP/1.1\r\nHost: a\r\nContent-Length: 10000\r\nConnection: close\r\n\r\n",
        )
        .expect("write");
    // 250 bytes every 50 ms: 5x the minimum.
    for _ in 0..40 {
        stream.write_all(&[b'y'; 250]).expect("write");
        std::thread::sleep(Duration::from_millis(50));
    }
    let t = read_until_closed(stream);
    assert_eq!(statuses(&t), [200], "{t:?}");
    assert_eq!(t.responses[0].text(), "received 10000");
}

fn response_rate_config() -> Config {
    Config::default()
        .with_min_response_rate(Some(DataRate::new(1024 * 1024, Duration::from_millis(200))))
}

/// A client that asks for a large body and never reads: once the socket buffers are full the
/// server's write stalls, the response rate cuts it, and the connection task ends while the
/// client still holds its socket open.
fn non_reading_client_is_dropped(target: &str, len: usize) {
    let server = TestServer::start(response_rate_config());
    let mut stream = server.connect();
    stream
        .write_all(format!("GET {target}?len={len} HTTP/1.1\r\nHost: a\r\n\r\n").as_bytes())
        .expect("write");
    assert!(server.wait_active(|n| n == 1), "never served");
    assert!(
        server.wait_idle(),
        "{target}: connection task still running with a client that does not read"
    );
    // The client, reading now, gets part of the body and then the close.
    let mut received = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => received += n,
        }
    }
    assert!(received < len, "{target}: the whole body was delivered");
}

#[test]
fn non_reading_client_of_a_streamed_response_is_dropped() {
    non_reading_client_is_dropped("/big", 1 << 30);
}

#[test]
fn non_reading_client_of_one_large_write_is_dropped() {
    non_reading_client_is_dropped("/big-one", 128 << 20);
}

/// 100,000 pipelined requests from a client that never reads the answers: responses are
/// flushed in bounded batches, the flush stalls, the response rate cuts it, and the server
/// stops reading the flood (its task ends) instead of buffering answers without limit.
#[test]
fn pipelined_flood_from_a_client_that_never_reads_is_dropped() {
    let server = TestServer::start(response_rate_config());
    let stream = server.connect();
    let mut writer = stream.try_clone().expect("clone");
    let flood = std::thread::spawn(move || {
        let request = b"GET /sentinel HTTP/1.1\r\nHost: a\r\n\r\n";
        let batch = request.repeat(1000);
        let mut sent = 0;
        for _ in 0..100 {
            if writer.write_all(&batch).is_err() {
                break;
            }
            sent += 1000;
        }
        sent
    });
    assert!(server.wait_active(|n| n == 1), "never served");
    assert!(
        server.wait_idle(),
        "connection task still running with a client that does not read"
    );
    // What the client can still read is what the kernel had buffered: far less than the
    // answers to everything it sent.
    let t = read_until_closed(stream);
    let sent = flood.join().expect("flood thread");
    assert!(t.responses.len() < sent, "every request was answered");
}

/// The response rate does not cut a client that reads.
#[test]
fn reading_client_gets_the_whole_large_response() {
    let server = TestServer::start(response_rate_config());
    for target in ["/big", "/big-one"] {
        let mut stream = server.connect();
        let len = 64usize << 20;
        stream
            .write_all(
                format!("GET {target}?len={len} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .expect("write");
        let t = read_until_closed(stream);
        assert_eq!(statuses(&t), [200]);
        assert_eq!(t.responses[0].body.len(), len, "{target}");
    }
}

/// At the connection bound new clients wait (in the listen backlog) while the connections
/// already open keep being served; as those leave, the waiting ones are served.
#[test]
fn connection_bound_queues_new_clients_and_serves_the_rest() {
    const BOUND: usize = 4;
    let server = TestServer::start(Config::default().with_max_connections(BOUND));
    let ask = |s: &mut TcpStream| {
        s.write_all(b"GET /sentinel HTTP/1.1\r\nHost: a\r\n\r\n")
            .expect("write");
    };
    let mut open: Vec<TcpStream> = (0..BOUND).map(|_| server.connect()).collect();
    for s in &mut open {
        ask(s);
        assert_eq!(one_response(s), SENTINEL_BODY);
    }
    // More waiting clients than the bound: they ask to close, so each one served frees its
    // place for the next.
    let mut waiting: Vec<TcpStream> = (0..6).map(|_| server.connect()).collect();
    for s in &mut waiting {
        s.write_all(b"GET /sentinel HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            .expect("write");
    }
    for round in 0..3 {
        for s in &mut open {
            ask(s);
            assert_eq!(one_response(s), SENTINEL_BODY, "round {round}");
        }
        assert!(server.handle.stats().active_connections() <= BOUND);
    }
    for s in &mut waiting {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let mut byte = [0u8; 1];
        assert!(
            s.read(&mut byte).is_err(),
            "a client beyond the bound was served"
        );
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
    }
    drop(open);
    for s in &mut waiting {
        assert_eq!(one_response(s), SENTINEL_BODY);
        assert!(server.handle.stats().active_connections() <= BOUND);
    }
}

/// Reads exactly one response (they are short and `Content-Length` framed) and returns its body.
fn one_response(s: &mut TcpStream) -> String {
    let mut data = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        if let Some(r) = parse_responses(&data).0.first() {
            return r.text();
        }
        match s.read(&mut byte) {
            Ok(1) => data.push(byte[0]),
            _ => return format!("no response: {:?}", String::from_utf8_lossy(&data)),
        }
    }
}
