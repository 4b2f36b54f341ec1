//! The pipelined hashed path: bodies past the inline prefix are hashed on a hashing thread
//! while the connection's task receives the next buffers. Byte-exact files and digests, a
//! `Content-Digest` checked by the pipelined hasher, and a client that goes away while a hash
//! is in flight (held there by weir-store's `HashGate`, so the moment is chosen, not raced).

use crate::routes::b64;
use crate::support::*;
use sha2::{Digest, Sha256, Sha512};
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;
use weir_store::{HashGate, LocalOptions};

/// The bytes hashed inline before the pipeline starts (`serve::upload::PIPELINE_AFTER`).
const INLINE_PREFIX: usize = 2 << 20;

/// `weir serve`'s handler in this process with a gate on its store's hash jobs (open unless
/// the test closes it).
struct InProcess {
    serve: InProcessServe,
    gate: HashGate,
}

impl InProcess {
    fn start(gate: HashGate) -> Self {
        let serve = InProcessServe::start(LocalOptions {
            hash_gate: Some(gate.clone()),
            ..LocalOptions::default()
        });
        Self { serve, gate }
    }

    /// Waits until every upload buffer is back in the pool (a hash job that outlived its
    /// upload returns its buffer when it ends, on its own thread).
    fn wait_for_buffers(&self) {
        wait_for("every upload buffer back in the pool", || {
            self.serve.service.buffers_lent() == 0
        });
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        // Before the server stops (the field drops after this): a closed gate would hold its
        // hash jobs, and with them the shutdown.
        self.gate.open();
    }
}

fn temp_len(root: &Path) -> Option<u64> {
    let t = temps(root);
    t.first()
        .and_then(|t| std::fs::metadata(t).ok())
        .map(|m| m.len())
}

#[test]
fn bodies_of_many_buffers_are_byte_exact_with_odd_sizes() {
    let s = InProcess::start(HashGate::default());
    s.gate.open();
    // An odd size in every position: inside the inline prefix, just past it, and far past it
    // (dozens of buffers, a short last one).
    for (i, len) in [INLINE_PREFIX - 1, INLINE_PREFIX + 1, (24 << 20) + 12_345]
        .into_iter()
        .enumerate()
    {
        let body = data(len, 70 + i as u64);
        let head = format!("PUT /files/p{i} HTTP/1.1\r\nweir-debug: 1");
        let r = request(s.serve.addr, &head, &body);
        assert_eq!(r.status, 201, "{}", r.text());
        let j = r.json();
        assert_eq!(j["sha256"], sha256(&body));
        assert_eq!(j["size"], len as u64);
        assert_eq!(j["data_path"], "hashed");
        let inline = j["hashing"]["inline"].as_u64().unwrap();
        let pipelined = j["hashing"]["pipelined"].as_u64().unwrap();
        assert_eq!(inline + pipelined, len as u64, "{j}");
        if len > 8 << 20 {
            // Hashing threads were idle (one upload at a time): they did most of it.
            assert!(
                inline >= INLINE_PREFIX as u64 && pipelined > len as u64 / 2,
                "{j}"
            );
        } else if len < INLINE_PREFIX {
            assert_eq!(pipelined, 0, "{j}");
        }
        assert_eq!(
            request(s.serve.addr, &format!("GET /files/p{i} HTTP/1.1"), b"").body,
            body
        );
    }
    assert!(temps(&s.serve.root).is_empty());
    s.wait_for_buffers();
}

#[test]
fn chunked_bodies_take_the_pipeline_too() {
    let s = Server::start(&[]);
    let body = data((9 << 20) + 777, 74);
    let file = s.dir.path().join("chunked.bin");
    std::fs::write(&file, &body).unwrap();
    let (status, out) = curl_status(&[
        "-T",
        file.to_str().unwrap(),
        "-H",
        "transfer-encoding: chunked",
        "-H",
        "weir-debug: 1",
        &s.url("/files/chunked"),
    ]);
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&out));
    let j: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["sha256"], sha256(&body));
    assert!(j["hashing"]["pipelined"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(s.request("GET /files/chunked HTTP/1.1", b"").body, body);
}

#[test]
fn a_content_digest_mismatch_is_caught_by_the_pipelined_hasher() {
    let s = InProcess::start(HashGate::default());
    s.gate.open();
    let body = data((12 << 20) + 3, 75);
    let sha256_header = |b: &[u8]| format!("content-digest: sha-256=:{}:", b64(&Sha256::digest(b)));
    let sha512_header = |b: &[u8]| format!("content-digest: sha-512=:{}:", b64(&Sha512::digest(b)));
    // The last byte differs: only a hash of the whole body can tell.
    let mut other = body.clone();
    *other.last_mut().unwrap() ^= 0x80;
    for header in [sha256_header(&other), sha512_header(&other)] {
        let r = request(
            s.serve.addr,
            &format!("PUT /files/d HTTP/1.1\r\n{header}"),
            &body,
        );
        assert_eq!(r.status, 400, "{header}: {}", r.text());
        assert!(r.text().contains("digest"), "{}", r.text());
        assert_eq!(
            request(s.serve.addr, "GET /files/d HTTP/1.1", b"").status,
            404
        );
        assert!(temps(&s.serve.root).is_empty());
    }
    for header in [sha256_header(&body), sha512_header(&body)] {
        let r = request(
            s.serve.addr,
            &format!("PUT /files/d HTTP/1.1\r\nweir-debug: 1\r\n{header}"),
            &body,
        );
        assert!(r.status == 201 || r.status == 200, "{header}: {}", r.text());
        assert!(r.json()["hashing"]["pipelined"].as_u64().unwrap() > 0);
    }
    assert_eq!(
        request(s.serve.addr, "GET /files/d HTTP/1.1", b"").body,
        body
    );
    s.wait_for_buffers();
}

#[test]
fn a_client_gone_while_a_hash_is_in_flight_leaves_nothing() {
    let s = InProcess::start(HashGate::closed());
    assert_eq!(
        request(s.serve.addr, "PUT /files/t HTTP/1.1", b"old version").status,
        201
    );
    let body = data(4 << 20, 76);
    let mut sock = TcpStream::connect(s.serve.addr).unwrap();
    write!(
        sock,
        "PUT /files/t HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\n\r\n",
        64 << 20
    )
    .unwrap();
    // Exactly the inline prefix first: the service hashes it inline, and the pipeline starts
    // with the next byte.
    sock.write_all(&body[..INLINE_PREFIX]).unwrap();
    let root = s.serve.root.clone();
    wait_for("the inline prefix in the temporary file", || {
        temp_len(&root) == Some(INLINE_PREFIX as u64)
    });
    // Then more than one pipelined buffer's worth (512 KiB), less than two: the first buffer
    // fills and goes to a hashing thread, where the gate holds its job; the task waits in a
    // read with the rest in the next buffer.
    sock.write_all(&body[INLINE_PREFIX..INLINE_PREFIX + (600 << 10)])
        .unwrap();
    let waiting = s
        .gate
        .wait_for_job(Duration::from_secs(60))
        .expect("a hash job at the gate");
    assert_eq!(waiting.len(), 1);
    assert!(waiting[0] > INLINE_PREFIX as u64, "{waiting:?}");
    // Gone, with that hash in flight.
    drop(sock);
    wait_for("the temporary file to be removed", || {
        temps(&root).is_empty()
    });
    assert_eq!(s.gate.waiting(), waiting, "the hash was still in flight");
    assert!(
        s.serve.service.buffers_lent() > 0,
        "the job still holds its buffer"
    );
    // The job finishes after its upload is gone: every buffer goes back, nothing is stored.
    s.gate.open();
    s.wait_for_buffers();
    assert!(temps(&s.serve.root).is_empty());
    let r = request(s.serve.addr, "GET /files/t HTTP/1.1", b"");
    assert_eq!(r.body, b"old version");
    // The hashing threads serve the next upload.
    let r = request(
        s.serve.addr,
        "PUT /files/t HTTP/1.1\r\nweir-debug: 1",
        &body,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["sha256"], sha256(&body));
    assert!(r.json()["hashing"]["pipelined"].as_u64().unwrap() > 0);
    s.wait_for_buffers();
}
