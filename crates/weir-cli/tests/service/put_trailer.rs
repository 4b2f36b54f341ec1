//! `weir put` hashes the file while it sends it and sends the digest as a trailer: the file
//! is read once (counted by the client process's `rchar`), the server verifies the trailer
//! before the commit, resumable creations and appends included: a wrong one stores nothing.

use crate::routes::b64;
use crate::support::*;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;
use weir_testkit::h1::parse_responses;

/// Bytes the process `pid` read by `read(2)`-like calls (`rchar`): the file, and the few
/// bytes of the server's answers. Read once the process has exited but is not yet reaped
/// (a zombie keeps its counters).
fn rchar_at_exit(child: &mut std::process::Child) -> u64 {
    let pid = child.id();
    wait_for("weir put to exit", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
            .unwrap_or(true)
    });
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn put_reads_the_file_once_and_the_server_verifies_the_trailer() {
    let s = Server::start(&[]);
    let len = 24usize << 20;
    let content = data(len, 77);
    let src = s.dir.path().join("src.bin");
    std::fs::write(&src, &content).unwrap();
    let state = tempfile::tempdir().unwrap();
    // Both protocols; resumable (the draft's creation) and a plain PUT.
    let cases: [&[&str]; 3] = [&[], &["--no-resumable"], &["--http2"]];
    for (i, flags) in cases.iter().enumerate() {
        let target = format!("/files/once{i}");
        let mut child = Command::new(WEIR)
            .arg("put")
            .args(*flags)
            .args([src.to_str().unwrap(), &s.url(&target)])
            .env_remove("WEIR_TOKEN")
            .env("XDG_STATE_HOME", state.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let rchar = rchar_at_exit(&mut child);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{flags:?}: {err}");
        // Hashing first read the file twice (hash, then send): 2 × len.
        assert!(
            rchar >= len as u64 && rchar < len as u64 + (1 << 20),
            "{flags:?}: the client read {rchar} bytes for a {len}-byte file"
        );
        assert!(
            err.contains("hashed while sending, verified by the server"),
            "{flags:?}: {err}"
        );
        assert_eq!(std::fs::read(s.root.join(&target[7..])).unwrap(), content);
    }
}

/// A request with a chunked `body` followed by the trailer section `trailers`; every
/// response read (interim ones included).
fn chunked(addr: SocketAddr, head: &str, body: &[u8], trailers: &str) -> Vec<Resp> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "{head}\r\nhost: t\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\
         upload-draft-interop-version: 8\r\n\r\n"
    )
    .into_bytes();
    for piece in body.chunks(300_000) {
        req.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        req.extend_from_slice(piece);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(format!("0\r\n{trailers}\r\n").as_bytes());
    s.write_all(&req).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse_responses(&raw).0
}

fn field(name: &str, bytes: &[u8]) -> String {
    format!("{name}: sha-256=:{}:\r\n", b64(&Sha256::digest(bytes)))
}

#[test]
fn a_resumable_upload_with_a_wrong_trailer_digest_stores_nothing() {
    let s = Server::start(&[]);
    let body = data(3 << 20, 5);
    let creation = "PUT /files/r HTTP/1.1\r\nupload-complete: ?1\r\ntrailer: content-digest\r\n\
                    upload-length: 3145728";
    // A wrong Content-Digest trailer on a creation that carries the whole file: refused,
    // nothing stored (before, the trailer was ignored and the file stored).
    let wrong = chunked(s.addr, creation, &body, &field("content-digest", b"other"));
    let last = wrong.last().unwrap();
    assert_eq!(last.status, 400, "{}", last.text());
    assert!(!s.root.join("r").exists());
    // The right one: stored.
    let right = chunked(s.addr, creation, &body, &field("content-digest", &body));
    let last = right.last().unwrap();
    assert_eq!(last.status, 201, "{}", last.text());
    assert_eq!(std::fs::read(s.root.join("r")).unwrap(), body);

    // An upload created incomplete, then completed by an append whose Repr-Digest trailer
    // is the whole file's: verified at completion.
    for (name, digest_of, status) in [("a", &b"other"[..], 400), ("b", &body[..], 201)] {
        let head =
            format!("PUT /files/{name} HTTP/1.1\r\nupload-complete: ?0\r\nupload-length: 3145728");
        let made = chunked(s.addr, &head, &body[..1 << 20], "");
        let created = made.last().unwrap();
        assert_eq!(created.status, 201, "{}", created.text());
        let location = created.header("location").unwrap().to_owned();
        let patch = format!(
            "PATCH {location} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
             upload-offset: 1048576\r\nupload-complete: ?1\r\ntrailer: repr-digest"
        );
        let done = chunked(
            s.addr,
            &patch,
            &body[1 << 20..],
            &field("repr-digest", digest_of),
        );
        let last = done.last().unwrap();
        assert_eq!(last.status, status, "{name}: {}", last.text());
        let stored = s.root.join(name);
        if status == 400 {
            assert!(!stored.exists(), "{name}");
        } else {
            assert_eq!(std::fs::read(stored).unwrap(), body);
        }
    }
}
