//! `weir get` killed mid-download resumes from its partial file (issue 35): the next run asks
//! for the rest (`Range` from the partial file's length, `If-Range` with the recorded `ETag`),
//! verifies the whole file against `Repr-Digest`, and says where it resumed. The server is a
//! listener in the test, so that the first download stops at a byte chosen here, and every
//! request it got can be read back.

use crate::support::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// Serves `content` (`ETag: "v1"`, its `Repr-Digest`) to each connection in turn: the first
/// gets the head and `stop` bytes and then nothing more (held open); the others get what they
/// ask for (a `Range: bytes=N-` answered `206`, unless `If-Range` names another version).
/// Keeps each request's head.
fn server(content: Arc<Vec<u8>>, stop: usize) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/files/big.bin", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = heads.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line.to_ascii_lowercase());
            }
            kept.lock().unwrap().push(head.clone());
            let digest = {
                use sha2::Digest;
                base64(&sha2::Sha256::digest(&content[..]))
            };
            // `If-Range` with another version: the whole file (RFC 9110 §13.1.5).
            let same = head
                .lines()
                .find_map(|l| l.strip_prefix("if-range: "))
                .is_none_or(|v| v == "\"v1\"");
            let start: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("range: bytes="))
                .and_then(|r| r.trim_end_matches('-').parse().ok())
                .filter(|_| same)
                .unwrap_or(0);
            let status = if start > 0 {
                format!(
                    "206 Partial Content\r\ncontent-range: bytes {start}-{}/{}",
                    content.len() - 1,
                    content.len()
                )
            } else {
                "200 OK".to_owned()
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\netag: \"v1\"\r\nrepr-digest: sha-256=:{digest}:\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                content.len() - start
            );
            if n == 0 {
                let _ = stream.write_all(&content[..stop]);
                held.push(stream);
            } else {
                let _ = stream.write_all(&content[start..]);
            }
        }
    });
    (url, heads)
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn a_killed_download_resumes_from_its_partial_file() {
    let len = 3 << 20;
    let stop = 1 << 20;
    let content = Arc::new(data(len, 44));
    let (url, heads) = server(content.clone(), stop);
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("big.bin");
    let partial = dir.path().join(".big.bin.weir-get.partial");
    let mut child = std::process::Command::new(WEIR)
        .args(["get", &url, dest.to_str().unwrap()])
        .env_remove("WEIR_TOKEN")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the first MiB in the partial file", || {
        std::fs::metadata(&partial).is_ok_and(|m| m.len() == stop as u64)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!dest.exists());

    let out = weir(&["get", &url, dest.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(std::fs::read(&dest).unwrap(), *content);
    assert!(err.contains(&format!("resumed at byte {stop} ")), "{err}");
    assert!(err.contains("sha-256 verified"), "{err}");
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 2, "{heads:#?}");
    assert!(!heads[0].contains("range:"), "{}", heads[0]);
    assert!(
        heads[1].contains(&format!("range: bytes={stop}-\r\n")),
        "{}",
        heads[1]
    );
    assert!(heads[1].contains("if-range: \"v1\"\r\n"), "{}", heads[1]);
    // Nothing left beside the file.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["big.bin"], "{left:?}");
}

/// A partial file whose bytes are not the file's (the digest does not match at the end) is
/// never kept: the download fails, and the next run starts over.
#[test]
fn a_corrupt_partial_file_fails_verification_and_is_removed() {
    let len = 1 << 20;
    let content = Arc::new(data(len, 45));
    let (url, _) = server(content.clone(), 1000);
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("big.bin");
    // A partial file from "an earlier run" with wrong bytes, recorded for this URL.
    std::fs::write(
        dir.path().join(".big.bin.weir-get.partial"),
        vec![0u8; 1000],
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".big.bin.weir-get.state"),
        serde_json::json!({"url": url, "etag": "\"v1\""}).to_string(),
    )
    .unwrap();
    // The first connection stalls (a test server's rule), so the resumed request is taken
    // by the second: open and drop one first.
    drop(std::net::TcpStream::connect(url[7..].split('/').next().unwrap()).unwrap());
    let out = weir(&["get", &url, dest.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("does not match"), "{err}");
    assert!(!dest.exists());
    let left = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(left, 0, "the partial file and its state are removed");
}

/// A partial file of another version (its recorded `ETag` is not the file's now) is not
/// resumed from: the server answers the whole file, which replaces the partial bytes.
#[test]
fn a_partial_file_of_another_version_starts_over() {
    let len = 1 << 20;
    let content = Arc::new(data(len, 46));
    let (url, heads) = server(content.clone(), 1000);
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("big.bin");
    std::fs::write(
        dir.path().join(".big.bin.weir-get.partial"),
        vec![7u8; 5000],
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".big.bin.weir-get.state"),
        serde_json::json!({"url": url, "etag": "\"v0\""}).to_string(),
    )
    .unwrap();
    drop(std::net::TcpStream::connect(url[7..].split('/').next().unwrap()).unwrap());
    let out = weir(&["get", &url, dest.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("resumed"), "{err}");
    assert_eq!(std::fs::read(&dest).unwrap(), *content);
    let heads = heads.lock().unwrap();
    assert!(heads[1].contains("if-range: \"v0\"\r\n"), "{}", heads[1]);
}
