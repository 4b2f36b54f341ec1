//! Request bodies: streamed byte-exact, read directly into large buffers, bounded by the pause
//! threshold, limited by the maximum body size, and never mistaken for a clean end when the
//! client goes away.

use crate::support::*;
use std::io::Write;
use std::net::Shutdown;
use weir::Config;

fn chunked_encode(data: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].min(rest.len());
        i += 1;
        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(b"\r\n");
        rest = &rest[n..];
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Parses `key=value` fields of a `/sha` or `/file` answer.
fn field(text: &str, key: &str) -> u64 {
    text.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {text}"))
}

#[test]
fn echo_content_length_and_chunked() {
    let server = TestServer::start(Config::default());
    let data = pattern(1 << 20, 1);
    let mut c = server.connect();
    c.send(
        format!(
            "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
            data.len()
        )
        .as_bytes(),
    );
    c.send(&data);
    assert!(c.read_response().body == data);
    c.send(b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    c.send(&chunked_encode(&data, &[1, 100, 70_000, 5000, 3]));
    assert!(c.read_response().body == data);
}

#[test]
fn large_reads_go_straight_into_the_handler_buffer() {
    let config = Config::default().with_max_body_size(None);
    let server = TestServer::start(config);
    let data = pattern(32 << 20, 2);
    let mut c = server.connect();
    c.send(
        format!(
            "PUT /sha?buf=1048576 HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
            data.len()
        )
        .as_bytes(),
    );
    c.send(&data);
    let text = c.read_response().text();
    assert!(text.starts_with(&sha256_hex(&data)), "{text}");
    assert_eq!(field(&text, "received"), data.len() as u64);
    // Only bytes that arrived together with the head pass through the connection buffer.
    let copied = field(&text, "copied");
    assert!(
        copied <= Config::default().read_buffer_size as u64,
        "{text}"
    );
    assert_eq!(field(&text, "direct") + copied, data.len() as u64);
}

#[test]
fn small_reads_are_buffered_under_the_pause_threshold() {
    let server = TestServer::start(Config::default());
    let data = pattern(8 << 20, 3);
    for threshold in [8 * 1024, 64 * 1024] {
        let mut c = server.connect();
        c.send(format!("PUT /sha?buf=4096&threshold={threshold} HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n", data.len()).as_bytes());
        c.send(&data);
        let text = c.read_response().text();
        assert!(text.starts_with(&sha256_hex(&data)), "{text}");
        assert_eq!(field(&text, "copied"), data.len() as u64);
        let peak = field(&text, "peak") as usize;
        assert!(
            peak <= threshold + Config::default().read_buffer_size,
            "threshold {threshold}: {text}"
        );
    }
}

#[test]
fn chunks_never_exceed_the_pause_threshold() {
    let server = TestServer::start(Config::default());
    let data = pattern(4 << 20, 4);
    let mut c = server.connect();
    c.send(
        format!(
            "PUT /chunks?threshold=32768 HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
            data.len()
        )
        .as_bytes(),
    );
    c.send(&data);
    let text = c.read_response().text();
    assert!(text.starts_with(&sha256_hex(&data)), "{text}");
    assert!(field(&text, "largest") <= 32768, "{text}");
}

#[test]
fn backpressure_bounds_what_is_buffered_while_the_handler_waits() {
    // The handler sleeps before reading while the client writes 256 MiB: the server must not
    // read ahead beyond the threshold (the client blocks in TCP instead), and the upload then
    // completes byte-exact.
    let config = Config::default().with_max_body_size(None);
    let threshold = config.pause_threshold;
    let read_buffer = config.read_buffer_size;
    let server = TestServer::start(config);
    let block = pattern(1 << 20, 5);
    let total = 256usize << 20;
    let mut c = server.connect();
    let mut writer = c.stream().try_clone().unwrap();
    let head = format!(
        "PUT /sha?buf=8192&sleep=1000 HTTP/1.1\r\nHost: a\r\nContent-Length: {total}\r\n\r\n"
    );
    let sender = std::thread::spawn(move || {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        writer.write_all(head.as_bytes()).unwrap();
        for _ in 0..total / block.len() {
            writer.write_all(&block).unwrap();
            hasher.update(&block);
        }
        hex(&hasher.finalize())
    });
    let text = c.read_response().text();
    let expected = sender.join().unwrap();
    assert!(text.starts_with(&expected), "{text}");
    let peak = server.handle.stats().peak_body_buffered();
    assert!(peak <= threshold + read_buffer, "peak {peak}");
    assert!(
        field(&text, "peak") as usize <= threshold + read_buffer,
        "{text}"
    );
}

#[test]
fn body_to_file_is_byte_exact_and_spliced() {
    let server = TestServer::start(Config::default());
    let data = pattern(8 << 20, 6);
    let mut c = server.connect();
    c.send(
        format!(
            "PUT /file HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
            data.len()
        )
        .as_bytes(),
    );
    c.send(&data);
    let text = c.read_response().text();
    assert!(text.starts_with(&sha256_hex(&data)), "{text}");
    assert_eq!(field(&text, "len"), data.len() as u64);
    let (spliced, copied) = (field(&text, "spliced"), field(&text, "copied"));
    assert_eq!(spliced + copied, data.len() as u64);
    if cfg!(target_os = "linux") {
        assert!(
            copied <= Config::default().read_buffer_size as u64,
            "{text}"
        );
    }
    // Chunked bodies splice chunk data too.
    c.send(b"PUT /file HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    c.send(&chunked_encode(&data, &[3 << 20]));
    let text = c.read_response().text();
    assert!(text.starts_with(&sha256_hex(&data)), "{text}");
}

#[test]
fn max_body_size_server_default_and_per_request_override() {
    let config = Config::default().with_max_body_size(Some(4096));
    let server = TestServer::start(config);
    let data = pattern(10_000, 7);
    // Over the server limit: 413, and the connection closes.
    let mut c = server.connect();
    c.send(
        format!(
            "PUT /sha HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
            data.len()
        )
        .as_bytes(),
    );
    let _ = c.try_send(&data);
    let resp = c.read_response();
    assert_eq!(resp.status, 413);
    assert_eq!(resp.header("connection"), Some("close"));
    // Raised by the handler for this request: accepted.
    let mut c = server.connect();
    c.send(
        format!(
            "PUT /sha?max=20000 HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
            data.len()
        )
        .as_bytes(),
    );
    c.send(&data);
    let resp = c.read_response();
    assert_eq!(resp.status, 200);
    assert!(resp.text().starts_with(&sha256_hex(&data)));
    // Lowered by the handler, with a chunked body (no length up front): 413 once exceeded.
    let mut c = server.connect();
    c.send(b"PUT /sha?max=1000 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    let _ = c.try_send(&chunked_encode(&data[..3000], &[500]));
    let resp = c.read_response();
    assert_eq!(resp.status, 413);
}

#[test]
fn unhandled_too_large_error_answers_413() {
    let config = Config::default().with_max_body_size(Some(100));
    let server = TestServer::start(config);
    let mut c = server.connect();
    c.send(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 200\r\n\r\n");
    let resp = c.read_response();
    assert_eq!(resp.status, 413);
    assert_eq!(resp.header("connection"), Some("close"));
}

#[test]
fn expect_continue_sent_on_first_read_only() {
    let server = TestServer::start(Config::default());
    // A handler that reads: 100 first, then the final response.
    let mut c = server.connect();
    c.send(b"PUT /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    let interim = c.read_response();
    assert_eq!(interim.status, 100);
    c.send(b"hello");
    assert_eq!(c.read_response().text(), "hello");
    // A handler that answers without reading: no 100, and the connection closes (the client
    // may or may not send the body).
    let mut c = server.connect();
    c.send(b"PUT /unauthorized HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    let resp = c.read_response();
    assert_eq!(resp.status, 401);
    assert_eq!(resp.header("connection"), Some("close"));
    c.assert_closed();
}

#[test]
fn disconnect_mid_body_is_an_error_not_an_end() {
    let server = TestServer::start(Config::default());
    for (id, framing) in [
        (101, "Content-Length: 100000"),
        (102, "Transfer-Encoding: chunked"),
    ] {
        let mut c = server.connect();
        c.send(format!("PUT /observe?id={id} HTTP/1.1\r\nHost: a\r\n{framing}\r\n\r\n").as_bytes());
        if framing.contains("chunked") {
            c.send(b"1000\r\n");
        }
        c.send(&[b'x'; 3000]);
        c.stream().shutdown(Shutdown::Write).unwrap();
        assert_eq!(observed(id), "disconnect");
    }
}

/// Whether files in `dir` can be preallocated: on a filesystem that cannot, weir writes as
/// before and the preallocation tests have nothing to show.
#[cfg(target_os = "linux")]
fn can_preallocate(dir: &std::path::Path) -> bool {
    let probe = tempfile::tempfile_in(dir).unwrap();
    let flags = rustix::fs::FallocateFlags::KEEP_SIZE;
    match rustix::fs::fallocate(&probe, flags, 0, 1 << 20) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("no preallocation on {}: {e}", dir.display());
            false
        }
    }
}

/// A declared length is reserved in the file before the body is written (Linux `fallocate`,
/// keeping the size): while the body is still arriving, the file already holds blocks for all
/// of it, and its length is only what was written.
#[cfg(target_os = "linux")]
#[test]
fn body_to_file_reserves_the_declared_length_first() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    if !can_preallocate(dir.path()) {
        return;
    }
    let server = TestServer::start(Config::default());
    let path = dir.path().join("body");
    let data = pattern(8 << 20, 21);
    let mut c = server.connect();
    c.send(
        format!(
            "PUT /file-at?path={} HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
            path.display(),
            data.len()
        )
        .as_bytes(),
    );
    let first = 1 << 20;
    c.send(&data[..first]);
    // The handler is inside `body_to_file`, waiting for the rest; wait until it has written.
    let mut tries = 0;
    let meta = loop {
        match std::fs::metadata(&path) {
            Ok(m) if m.len() > 0 => break m,
            _ if tries < 2000 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => panic!("the handler never wrote: {other:?}"),
        }
    };
    assert!(meta.len() <= first as u64, "{}", meta.len());
    assert!(
        meta.blocks() * 512 >= data.len() as u64,
        "{} bytes of blocks for a {}-byte body",
        meta.blocks() * 512,
        data.len()
    );
    c.send(&data[first..]);
    let text = c.read_response().text();
    assert_eq!(field(&text, "len"), data.len() as u64, "{text}");
    assert_eq!(std::fs::read(&path).unwrap(), data);
}

/// A declared length no disk holds (1 PiB) fails at the reservation, before the body is read:
/// no `100 Continue` goes out, and the handler hears a file error, which it answers (here weir's
/// default answer to an I/O error).
#[cfg(target_os = "linux")]
#[test]
fn body_to_file_refuses_a_body_the_disk_cannot_hold_before_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    if !can_preallocate(dir.path()) {
        return;
    }
    let server = TestServer::start(Config::default().with_max_body_size(None));
    let path = dir.path().join("body");
    let mut c = server.connect();
    c.send(
        format!(
            "PUT /file-at?path={} HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\
             Content-Length: {}\r\n\r\n",
            path.display(),
            1u64 << 50
        )
        .as_bytes(),
    );
    let resp = c.read_response();
    assert_eq!(resp.status, 500, "{}", resp.text());
    let text = resp.text();
    assert!(
        text.contains("No space left") || text.contains("too large"),
        "{text}"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn body_to_file_in_bounded_pieces() {
    let server = TestServer::start(Config::default());
    let data = pattern(5 << 20, 13);
    let mut c = server.connect();
    for framing in ["content-length", "chunked"] {
        let head = if framing == "chunked" {
            "PUT /file-pieces?piece=1000000 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".to_string()
        } else {
            format!(
                "PUT /file-pieces?piece=1000000 HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
                data.len()
            )
        };
        c.send(head.as_bytes());
        if framing == "chunked" {
            c.send(&chunked_encode(&data, &[700_000, 3]));
        } else {
            c.send(&data);
        }
        let text = c.read_response().text();
        assert!(text.starts_with(&sha256_hex(&data)), "{framing}: {text}");
        assert_eq!(field(&text, "len"), data.len() as u64);
        assert!(field(&text, "largest") <= 1_000_000, "{framing}: {text}");
        assert!(field(&text, "pieces") >= 6, "{framing}: {text}");
    }
}

#[test]
fn body_at_hand_counts_what_a_read_would_get_without_waiting() {
    // The client sends the head and 60,000 of 1 MiB, then waits: the handler sees exactly
    // those at hand (buffered or queued in the socket: fewer than the receive window a fresh
    // connection opens with), 20,000 fewer once it read that many,
    // and none once the body ended, whatever the client sent after it (a pipelined request
    // is not the body's).
    const ID: u64 = 0xA7_4A4D;
    let server = TestServer::start(Config::default());
    let total = 1usize << 20;
    let data = pattern(total, 9);
    let mut c = server.connect();
    let mut writer = c.stream().try_clone().unwrap();
    let head = format!(
        "PUT /at-hand?id={ID}&want=60000&take=20000 HTTP/1.1\r\nHost: a\r\n\
         Content-Length: {total}\r\n\r\n"
    );
    writer.write_all(head.as_bytes()).unwrap();
    writer.write_all(&data[..60_000]).unwrap();
    assert_eq!(observed(ID), "before=60000 after=40000");
    writer.write_all(&data[60_000..]).unwrap();
    writer
        .write_all(b"GET /hello HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    assert_eq!(c.read_response().text(), format!("end=0 read={total}\n"));
    assert_eq!(c.read_response().text(), "Hello, World!");
}
