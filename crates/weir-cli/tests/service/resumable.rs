//! Resumable uploads (draft-ietf-httpbis-resumable-upload-12) against the real binary: every
//! rule over raw sockets (and curl for HTTP/2), cut connections, a SIGKILLed server, expiry.

use crate::support::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Every whole response on a connection, interim ones first.
fn responses(raw: &[u8]) -> Vec<Resp> {
    weir_testkit::h1::parse_responses(raw).0
}

/// A request on a new connection: `head` (no final CRLF; `connection: close` and the
/// `content-length` of `body` added), then `body`; all responses, the final one last.
pub(crate) fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> Vec<Resp> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let req = format!(
        "{head}\r\nhost: t\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    responses(&raw)
}

pub(crate) fn last(mut all: Vec<Resp>) -> Resp {
    all.pop().expect("a final response")
}

/// Creates an upload of `path` with `body` as its first part (`Upload-Complete: ?0`): its URL.
pub(crate) fn create_partial(s: &Server, path: &str, body: &[u8], extra: &str) -> String {
    let r = last(exchange(
        s.addr,
        &format!("PUT /files/{path} HTTP/1.1\r\nupload-complete: ?0{extra}"),
        body,
    ));
    assert_eq!(r.status, 201, "{:?}\n{}", r.headers, r.text());
    assert_eq!(r.header("upload-offset").unwrap(), body.len().to_string());
    assert_eq!(r.header("upload-complete").unwrap(), "?0");
    r.header("location").unwrap().to_owned()
}

fn patch(s: &Server, url: &str, offset: u64, complete: bool, body: &[u8]) -> Resp {
    let c = if complete { "?1" } else { "?0" };
    last(exchange(
        s.addr,
        &format!(
            "PATCH {url} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
             upload-offset: {offset}\r\nupload-complete: {c}\r\nweir-debug: 1"
        ),
        body,
    ))
}

fn head(s: &Server, url: &str) -> Resp {
    s.request(&format!("HEAD {url} HTTP/1.1"), b"")
}

fn offset_of(s: &Server, url: &str) -> u64 {
    let r = head(s, url);
    assert_eq!(r.status, 204, "{:?}", r.headers);
    r.header("upload-offset").unwrap().parse().unwrap()
}

fn area(root: &Path) -> PathBuf {
    root.join(".weir-staging/resumable")
}

fn area_files(root: &Path) -> Vec<String> {
    std::fs::read_dir(area(root))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

fn data_file(root: &Path, url: &str) -> PathBuf {
    area(root).join(format!("{}.data", url.trim_start_matches("/uploads/")))
}

/// Reads one response head (up to its blank line) from `sock`.
fn read_head(sock: &mut TcpStream) -> String {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(sock.read(&mut byte).unwrap(), 1, "connection closed");
        raw.push(byte[0]);
    }
    String::from_utf8(raw).unwrap()
}

#[test]
fn the_104_arrives_before_the_body_is_sent_and_a_whole_upload_is_stored() {
    let s = Server::start(&[]);
    let body = data(300_000, 1);
    let mut sock = TcpStream::connect(s.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        sock,
        "PUT /files/d/whole.bin HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\
         upload-complete: ?1\r\nupload-draft-interop-version: 8\r\nweir-debug: 1\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    // Nothing of the body sent yet: the interim answer comes first.
    let interim = read_head(&mut sock);
    assert!(interim.starts_with("HTTP/1.1 104 "), "{interim}");
    let lower = interim.to_ascii_lowercase();
    let location = lower
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .to_owned();
    let id = location.strip_prefix("/uploads/").unwrap();
    assert_eq!(id.len(), 32);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(
        lower.contains("upload-draft-interop-version: 8\r\n"),
        "{interim}"
    );
    assert!(lower.contains("upload-limit: max-size="), "{interim}");
    sock.write_all(&body).unwrap();
    let mut raw = Vec::new();
    sock.read_to_end(&mut raw).unwrap();
    let r = last(responses(&raw));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("upload-complete").unwrap(), "?1");
    assert_eq!(r.json()["sha256"], sha256(&body));
    // Sent whole: hashed while received, as a PUT is.
    assert_eq!(r.json()["hashing"]["inline"], body.len());
    assert_eq!(std::fs::read(s.root.join("d/whole.bin")).unwrap(), body);
    // The resource says complete (for a client that missed the answer); no data is left.
    let h = head(&s, &location);
    assert_eq!(h.header("upload-complete").unwrap(), "?1");
    assert_eq!(h.header("upload-offset").unwrap(), body.len().to_string());
    assert!(!data_file(&s.root, &location).exists());
    // Nothing of it is listed or served under /files/ but the file.
    let listing = s.request("GET /files/ HTTP/1.1", b"").json();
    assert_eq!(listing["entries"].as_array().unwrap().len(), 1, "{listing}");
}

#[test]
fn offset_retrieval_then_append_completes_the_file() {
    let s = Server::start(&[]);
    let body = data(1_000_000, 2);
    let url = create_partial(
        &s,
        "part.bin",
        &body[..400_000],
        "\r\nupload-length: 1000000",
    );
    let h = head(&s, &url);
    assert_eq!(h.status, 204);
    assert_eq!(h.header("upload-offset").unwrap(), "400000");
    assert_eq!(h.header("upload-complete").unwrap(), "?0");
    assert_eq!(h.header("upload-length").unwrap(), "1000000");
    assert_eq!(h.header("cache-control").unwrap(), "no-store");
    assert!(h.header("upload-limit").unwrap().contains("max-age="));
    // Nothing is visible at the target yet.
    assert_eq!(s.request("GET /files/part.bin HTTP/1.1", b"").status, 404);
    let r = patch(&s, &url, 400_000, false, &body[400_000..700_000]);
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("upload-offset").unwrap(), "700000");
    let r = patch(&s, &url, 700_000, true, &body[700_000..]);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["sha256"], sha256(&body));
    assert_eq!(std::fs::read(s.root.join("part.bin")).unwrap(), body);
}

#[test]
fn a_mismatched_offset_is_409_with_the_right_offset() {
    let s = Server::start(&[]);
    let url = create_partial(&s, "m", &data(1000, 3), "");
    for wrong in [0, 999, 1001, 5000] {
        let r = patch(&s, &url, wrong, false, b"xyz");
        assert_eq!(r.status, 409, "{}", r.text());
        assert_eq!(r.header("upload-offset").unwrap(), "1000");
        assert_eq!(
            r.header("content-type").unwrap(),
            "application/problem+json"
        );
        let p = r.json();
        assert_eq!(
            p["type"],
            "https://iana.org/assignments/http-problem-types#mismatching-upload-offset"
        );
        assert_eq!(
            (p["expected-offset"].as_u64(), p["provided-offset"].as_u64()),
            (Some(1000), Some(wrong))
        );
    }
    assert_eq!(offset_of(&s, &url), 1000);
}

#[test]
fn an_append_after_completion_is_refused_and_changes_nothing() {
    let s = Server::start(&[]);
    let body = data(5000, 4);
    let url = create_partial(&s, "c", &body[..2000], "");
    assert_eq!(patch(&s, &url, 2000, true, &body[2000..]).status, 201);
    let empty = patch(&s, &url, 5000, true, b"");
    assert_eq!(empty.status, 400);
    assert_eq!(
        empty.json()["type"],
        "https://iana.org/assignments/http-problem-types#completed-upload"
    );
    let more = patch(&s, &url, 5000, true, b"more");
    assert_eq!(more.status, 400);
    assert_eq!(
        more.json()["type"],
        "https://iana.org/assignments/http-problem-types#inconsistent-upload-length"
    );
    assert_eq!(std::fs::read(s.root.join("c")).unwrap(), body);
}

#[test]
fn inconsistent_lengths_are_400() {
    let s = Server::start(&[]);
    // Upload-Length against the content of a completing creation.
    let r = last(exchange(
        s.addr,
        "PUT /files/l HTTP/1.1\r\nupload-complete: ?1\r\nupload-length: 10",
        b"12345",
    ));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.json()["type"]
            .as_str()
            .unwrap()
            .ends_with("#inconsistent-upload-length")
    );
    // An append that completes short of the declared length keeps its bytes.
    let url = create_partial(&s, "l2", b"abc", "\r\nupload-length: 10");
    let r = last(exchange(
        s.addr,
        &format!(
            "PATCH {url} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
             upload-offset: 3\r\nupload-complete: ?0\r\nupload-length: 11"
        ),
        b"de",
    ));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(offset_of(&s, &url), 3);
    assert_eq!(s.request("GET /files/l HTTP/1.1", b"").status, 404);
}

#[test]
fn unknown_uploads_are_404() {
    let s = Server::start(&[]);
    let unknown = "/uploads/0123456789abcdef0123456789abcdef";
    assert_eq!(head(&s, unknown).status, 404);
    assert_eq!(patch(&s, unknown, 0, true, b"x").status, 404);
    assert_eq!(
        s.request(&format!("DELETE {unknown} HTTP/1.1"), b"").status,
        404
    );
    for bad in [
        "/uploads/x",
        "/uploads/",
        "/uploads/0123456789ABCDEF0123456789ABCDEF",
    ] {
        assert_eq!(head(&s, bad).status, 404, "{bad}");
    }
}

#[test]
fn delete_cancels_the_upload_and_removes_its_data() {
    let s = Server::start(&[]);
    let url = create_partial(&s, "gone", &data(100_000, 5), "");
    assert!(data_file(&s.root, &url).exists());
    let r = s.request(&format!("DELETE {url} HTTP/1.1"), b"");
    assert_eq!(r.status, 204);
    assert_eq!(head(&s, &url).status, 404);
    assert_eq!(patch(&s, &url, 100_000, true, b"x").status, 404);
    assert!(area_files(&s.root).is_empty(), "{:?}", area_files(&s.root));
    assert_eq!(s.request("GET /files/gone HTTP/1.1", b"").status, 404);
}

#[test]
fn upload_limit_is_announced_and_enforced() {
    let s = Server::start(&[
        "--max-upload",
        "1000",
        "--resumable-max-append",
        "300",
        "--resumable-min-append",
        "100",
    ]);
    // Declared length past max-size: refused before anything is created.
    let r = last(exchange(
        s.addr,
        "PUT /files/big HTTP/1.1\r\nupload-complete: ?0\r\nupload-length: 2000",
        b"",
    ));
    assert_eq!(r.status, 413, "{}", r.text());
    let limit = r.header("upload-limit").unwrap();
    assert!(limit.contains("max-size=1000"), "{limit}");
    assert!(limit.contains("max-append-size=300"), "{limit}");
    assert!(limit.contains("min-append-size=100"), "{limit}");
    // A creation body past max-append-size.
    let r = last(exchange(
        s.addr,
        "PUT /files/big HTTP/1.1\r\nupload-complete: ?0",
        &[7u8; 301],
    ));
    assert_eq!(r.status, 413);
    assert!(area_files(&s.root).is_empty(), "{:?}", area_files(&s.root));
    // An empty creation (to learn the URL first) is not held to min-append-size.
    let empty = create_partial(&s, "careful", b"", "");
    assert_eq!(offset_of(&s, &empty), 0);
    let url = create_partial(&s, "big", &[1u8; 300], "");
    // An incomplete append below min-append-size; one past max-append-size.
    assert_eq!(patch(&s, &url, 300, false, &[2u8; 50]).status, 400);
    assert_eq!(patch(&s, &url, 300, false, &[2u8; 301]).status, 413);
    assert_eq!(offset_of(&s, &url), 300);
    // Appends up to max-size work; one more byte does not.
    assert_eq!(patch(&s, &url, 300, false, &[2u8; 300]).status, 204);
    assert_eq!(patch(&s, &url, 600, false, &[3u8; 300]).status, 204);
    assert_eq!(patch(&s, &url, 900, true, &[4u8; 101]).status, 413);
    // A completing append is exempt from min-append-size.
    let r = patch(&s, &url, 900, true, &[4u8; 10]);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(std::fs::metadata(s.root.join("big")).unwrap().len(), 910);
}

#[test]
fn an_http2_append_completes_the_upload() {
    let s = Server::start(&[]);
    let body = data(2_000_000, 6);
    // Creation over HTTP/2: the 104 comes as an interim HEADERS frame.
    let first = s.dir.path().join("first");
    std::fs::write(&first, &body[..500_000]).unwrap();
    let out = curl(&[
        "--http2-prior-knowledge",
        "-i",
        "-T",
        first.to_str().unwrap(),
        "-H",
        "upload-complete: ?0",
        &s.url("/files/h2.bin"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    assert!(text.starts_with("http/2 104"), "{text}");
    assert!(text.contains("http/2 201"), "{text}");
    let url = text
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(offset_of(&s, &url), 500_000);
    let rest = s.dir.path().join("rest");
    std::fs::write(&rest, &body[500_000..]).unwrap();
    let out = curl(&[
        "--http2-prior-knowledge",
        "-i",
        "-X",
        "PATCH",
        "-H",
        "content-type: application/partial-upload",
        "-H",
        "upload-offset: 500000",
        "-H",
        "upload-complete: ?1",
        "--data-binary",
        &format!("@{}", rest.display()),
        &s.url(&url),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTTP/2 201"), "{text}");
    assert!(text.contains(&sha256(&body)), "{text}");
    assert_eq!(std::fs::read(s.root.join("h2.bin")).unwrap(), body);
}

#[test]
fn a_second_append_while_one_runs_is_409_until_the_first_connection_drops() {
    let s = Server::start(&[]);
    let url = create_partial(&s, "busy", b"0123456789", "");
    let mut first = TcpStream::connect(s.addr).unwrap();
    write!(
        first,
        "PATCH {url} HTTP/1.1\r\nhost: t\r\ncontent-type: application/partial-upload\r\n\
         upload-offset: 10\r\nupload-complete: ?0\r\ncontent-length: 1000000\r\n\r\n"
    )
    .unwrap();
    first.write_all(&[9u8; 1000]).unwrap();
    let data = data_file(&s.root, &url);
    wait_for("the first append to write", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() == 1010)
    });
    let r = patch(&s, &url, 10, false, b"x");
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.header("upload-offset").unwrap(), "10");
    drop(first);
    // Its bytes are kept: the next append starts where it stopped (409 until its request
    // has ended and recorded them).
    let mut r = patch(&s, &url, 1010, true, b"end");
    for _ in 0..3000 {
        if r.status != 409 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        r = patch(&s, &url, 1010, true, b"end");
    }
    assert_eq!(r.status, 201, "{}", r.text());
    let mut expected = b"0123456789".to_vec();
    expected.extend_from_slice(&[9u8; 1000]);
    expected.extend_from_slice(b"end");
    assert_eq!(std::fs::read(s.root.join("busy")).unwrap(), expected);
}

/// Sends `PUT` with `Upload-Complete: ?1` and `part` of `whole`, then cuts the connection; the
/// upload's URL once the server has recorded what it got.
fn cut_upload(s: &Server, path: &str, whole: &[u8], part: usize) -> String {
    let mut sock = TcpStream::connect(s.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        sock,
        "PUT /files/{path} HTTP/1.1\r\nhost: t\r\nupload-complete: ?1\r\ncontent-length: {}\r\n\r\n",
        whole.len()
    )
    .unwrap();
    let interim = read_head(&mut sock).to_ascii_lowercase();
    let url = interim
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .to_owned();
    sock.write_all(&whole[..part]).unwrap();
    let data = data_file(&s.root, &url);
    wait_for("the bytes sent to reach the data file", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() == part as u64)
    });
    drop(sock);
    url
}

/// Appends the rest from the offset the server reports (retrying while the cut request still
/// holds the upload) and checks the stored file.
fn resume_and_check(s: &Server, url: &str, path: &str, whole: &[u8], hashed: bool) {
    let mut tries = 0;
    let (r, offset) = loop {
        let offset = offset_of(s, url) as usize;
        let r = patch(s, url, offset as u64, true, &whole[offset..]);
        if r.status != 409 || tries > 3000 {
            break (r, offset);
        }
        tries += 1;
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(r.status, 201, "{}", r.text());
    if hashed {
        assert_eq!(r.json()["sha256"], sha256(whole));
        // Resumed from the hash state kept with the offset: the last request hashed its own
        // bytes as they came, and completion read nothing back.
        let hashing = &r.json()["hashing"];
        let hashed_now =
            hashing["inline"].as_u64().unwrap() + hashing["pipelined"].as_u64().unwrap();
        assert_eq!(hashed_now, (whole.len() - offset) as u64, "{hashing}");
    }
    assert_eq!(std::fs::read(s.root.join(path)).unwrap(), whole);
}

#[test]
fn a_cut_connection_resumes_byte_exact() {
    for args in [&[][..], &["--no-hash"][..]] {
        let s = Server::start(args);
        let whole = data(12 << 20, 7);
        let url = cut_upload(&s, "cut.bin", &whole, 5 << 20);
        wait_for("the cut request's bytes to be recorded", || {
            offset_of(&s, &url) == 5 << 20
        });
        resume_and_check(&s, &url, "cut.bin", &whole, args.is_empty());
    }
}

/// Appends `whole[from..]` with `Upload-Complete: ?1`, sends up to `to`, then cuts the
/// connection; returns once the server recorded `to` as the offset.
fn cut_append(s: &Server, url: &str, whole: &[u8], from: usize, to: usize) {
    let mut sock = TcpStream::connect(s.addr).unwrap();
    write!(
        sock,
        "PATCH {url} HTTP/1.1\r\nhost: t\r\ncontent-type: application/partial-upload\r\n\
         upload-offset: {from}\r\nupload-complete: ?1\r\ncontent-length: {}\r\n\r\n",
        whole.len() - from
    )
    .unwrap();
    sock.write_all(&whole[from..to]).unwrap();
    let data = data_file(&s.root, url);
    wait_for("the bytes sent to reach the data file", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() == to as u64)
    });
    drop(sock);
    wait_for("the cut request's bytes to be recorded", || {
        offset_of(s, url) == to as u64
    });
}

#[test]
fn an_upload_cut_three_times_at_odd_offsets_hashes_on_from_its_kept_state() {
    let s = Server::start(&[]);
    let whole = data(12 << 20, 31);
    // Not block-aligned: every cut leaves part of a SHA-256 block pending in the kept state.
    let cuts = [3_000_017, 5_555_555, 9_999_991];
    let url = cut_upload(&s, "odd.bin", &whole, cuts[0]);
    wait_for("the cut request's bytes to be recorded", || {
        offset_of(&s, &url) == cuts[0] as u64
    });
    cut_append(&s, &url, &whole, cuts[0], cuts[1]);
    cut_append(&s, &url, &whole, cuts[1], cuts[2]);
    // The record holds the hash state of exactly the recorded offset.
    let meta = data_file(&s.root, &url).with_extension("meta");
    let record = std::fs::read_to_string(meta).unwrap();
    assert!(record.contains("\nsha256-state "), "{record}");
    resume_and_check(&s, &url, "odd.bin", &whole, true);
}

#[test]
fn a_server_sigkilled_mid_append_resumes_after_restart() {
    let mut s = Server::start(&[]);
    let whole = data(12 << 20, 8);
    let url = create_partial(&s, "k.bin", &whole[..1 << 20], "");
    let mut sock = TcpStream::connect(s.addr).unwrap();
    write!(
        sock,
        "PATCH {url} HTTP/1.1\r\nhost: t\r\ncontent-type: application/partial-upload\r\n\
         upload-offset: {}\r\nupload-complete: ?1\r\ncontent-length: {}\r\n\r\n",
        1 << 20,
        whole.len() - (1 << 20)
    )
    .unwrap();
    sock.write_all(&whole[1 << 20..6 << 20]).unwrap();
    let data = data_file(&s.root, &url);
    wait_for("the append to write", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() > 2 << 20)
    });
    s.kill();
    drop(sock);
    let (dir, root) = s.into_parts();
    let s = Server::start_at(dir, root, &[]);
    // The offset is what was recorded, and the data file holds exactly that.
    let offset = offset_of(&s, &url);
    assert!((1 << 20..=6 << 20).contains(&offset), "{offset}");
    assert_eq!(std::fs::metadata(&data).unwrap().len(), offset);
    resume_and_check(&s, &url, "k.bin", &whole, true);
}

#[test]
fn expired_uploads_are_swept_with_their_space() {
    let s = Server::start(&["--resumable-expiry", "2s", "--max-storage", "3MiB"]);
    let url = create_partial(&s, "e", &data(2 << 20, 9), "");
    // The partial data counts against --max-storage.
    let r = s.request("PUT /files/other HTTP/1.1", &data(2 << 20, 10));
    assert_eq!(r.status, 507, "{}", r.text());
    wait_for("the sweep", || head(&s, &url).status == 404);
    assert!(area_files(&s.root).is_empty(), "{:?}", area_files(&s.root));
    // The space came back.
    let r = s.request("PUT /files/other HTTP/1.1", &data(2 << 20, 10));
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn expired_uploads_are_swept_at_start() {
    let mut s = Server::start(&["--resumable-expiry", "1h"]);
    let url = create_partial(&s, "e", &data(1000, 11), "");
    s.kill();
    let (dir, root) = s.into_parts();
    // Its record says it was created long ago.
    let meta = area(&root).join(format!("{}.meta", url.trim_start_matches("/uploads/")));
    let text = std::fs::read_to_string(&meta).unwrap();
    let old: String = text
        .lines()
        .map(|l| {
            if l.starts_with("active ") {
                "active 1".to_owned()
            } else {
                l.to_owned()
            }
        })
        .map(|l| l + "\n")
        .collect();
    std::fs::write(&meta, old).unwrap();
    let s = Server::start_at(dir, root, &["--resumable-expiry", "1h"]);
    assert_eq!(head(&s, &url).status, 404);
    assert!(area_files(&s.root).is_empty(), "{:?}", area_files(&s.root));
}

#[test]
fn a_plain_put_is_unchanged() {
    let s = Server::start(&[]);
    let body = data(100_000, 12);
    // Without the field, and with a value that is not a Boolean (the field is ignored).
    for extra in [
        "",
        "\r\nupload-complete: true",
        "\r\nupload-complete: ?1, ?0",
    ] {
        let all = exchange(s.addr, &format!("PUT /files/plain HTTP/1.1{extra}"), &body);
        assert_eq!(all.len(), 1, "an interim answer to a plain PUT ({extra:?})");
        let r = &all[0];
        assert!(matches!(r.status, 200 | 201), "{}", r.text());
        assert_eq!(r.header("upload-complete"), None);
        assert_eq!(r.json()["sha256"], sha256(&body));
    }
    assert!(area_files(&s.root).is_empty());
}

#[test]
fn upload_resources_need_the_write_token() {
    let s = Server::start(&["--token", "sekret"]);
    let r = last(exchange(
        s.addr,
        "PUT /files/t HTTP/1.1\r\nupload-complete: ?0\r\nauthorization: Bearer sekret",
        b"abc",
    ));
    assert_eq!(r.status, 201);
    let url = r.header("location").unwrap();
    assert_eq!(head(&s, url).status, 401);
    assert_eq!(patch(&s, url, 3, true, b"d").status, 401);
    assert_eq!(
        s.request(&format!("DELETE {url} HTTP/1.1"), b"").status,
        401
    );
    let r = s.request(
        &format!("HEAD {url} HTTP/1.1\r\nauthorization: Bearer sekret"),
        b"",
    );
    assert_eq!(r.header("upload-offset").unwrap(), "3");
}

#[test]
fn options_announces_partial_uploads_and_the_limits() {
    let s = Server::start(&["--max-upload", "5000"]);
    for target in ["/files/any/path", "/files/", "*"] {
        let r = s.request(&format!("OPTIONS {target} HTTP/1.1"), b"");
        assert_eq!(r.status, 204, "{target}: {:?}", r.headers);
        assert_eq!(r.header("accept-patch"), Some("application/partial-upload"));
        assert!(r.header("upload-limit").unwrap().contains("max-size=5000"));
    }
}

#[test]
fn a_large_upload_sent_whole_is_hashed_while_received() {
    let s = Server::start(&[]);
    let body = data(80 << 20, 13);
    let r = last(exchange(
        s.addr,
        "PUT /files/large.bin HTTP/1.1\r\nupload-complete: ?1\r\nweir-debug: 1",
        &body,
    ));
    assert_eq!(r.status, 201, "{}", r.text());
    let j = r.json();
    assert_eq!(j["sha256"], sha256(&body));
    let hashing = &j["hashing"];
    let hashed = hashing["inline"].as_u64().unwrap() + hashing["pipelined"].as_u64().unwrap();
    assert_eq!(hashed, body.len() as u64);
    assert_eq!(std::fs::read(s.root.join("large.bin")).unwrap(), body);
}

#[test]
fn a_post_to_a_directory_creates_the_upload_its_content_disposition_names() {
    let s = Server::start(&[]);
    let body = data(900_000, 21);
    let all = exchange(
        s.addr,
        "POST /files/docs/ HTTP/1.1\r\nupload-complete: ?0\r\n\
         content-type: application/octet-stream\r\n\
         content-disposition: inline; filename=\"a b.bin\"",
        &body[..300_000],
    );
    assert_eq!(all[0].status, 104, "{:?}", all[0].headers);
    let location = all[0].header("location").unwrap().to_owned();
    let r = last(all);
    assert_eq!(r.status, 201, "{:?}\n{}", r.headers, r.text());
    assert_eq!(r.header("location").unwrap(), location);
    assert_eq!(offset_of(&s, &location), 300_000);
    // Nothing is visible before completion.
    assert!(!s.root.join("docs/a b.bin").exists());
    let r = patch(&s, &location, 300_000, true, &body[300_000..]);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["path"], "docs/a b.bin");
    assert_eq!(r.json()["sha256"], sha256(&body));
    assert_eq!(std::fs::read(s.root.join("docs/a b.bin")).unwrap(), body);
}

#[test]
fn an_http2_post_sent_whole_is_stored_under_its_utf8_name() {
    let s = Server::start(&[]);
    let body = data(400_000, 22);
    let src = s.dir.path().join("src");
    std::fs::write(&src, &body).unwrap();
    let out = curl(&[
        "--http2-prior-knowledge",
        "-i",
        "-H",
        "upload-complete: ?1",
        "-H",
        "content-type: application/octet-stream",
        "-H",
        "content-disposition: inline; filename=\"x.bin\"; filename*=UTF-8''%C3%A9t%C3%A9.bin",
        "--data-binary",
        &format!("@{}", src.display()),
        &s.url("/files/"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTTP/2 104"), "{text}");
    assert!(text.contains("HTTP/2 201"), "{text}");
    assert!(text.contains(&sha256(&body)), "{text}");
    assert_eq!(std::fs::read(s.root.join("été.bin")).unwrap(), body);
}

#[test]
fn a_resumable_post_without_a_usable_name_is_400_and_creates_nothing() {
    let s = Server::start(&[]);
    for disposition in [
        "",
        "\r\ncontent-disposition: inline",
        "\r\ncontent-disposition: inline; filename=\"../up.bin\"",
        "\r\ncontent-disposition: form-data; filename=\"x.bin\"",
    ] {
        let r = last(exchange(
            s.addr,
            &format!("POST /files/d/ HTTP/1.1\r\nupload-complete: ?1{disposition}"),
            b"12345",
        ));
        assert_eq!(r.status, 400, "{disposition:?}: {}", r.text());
        assert!(r.json()["error"].is_string(), "{}", r.text());
    }
    assert!(area_files(&s.root).is_empty(), "{:?}", area_files(&s.root));
    assert!(!s.root.join("d").exists());
}

#[test]
fn a_form_post_with_upload_complete_is_still_a_form() {
    let s = Server::start(&[]);
    let form = b"--XyZ\r\ncontent-disposition: form-data; name=\"f\"; filename=\"f.txt\"\r\n\r\n\
hello\r\n--XyZ--\r\n";
    let all = exchange(
        s.addr,
        "POST /files/forms/ HTTP/1.1\r\nupload-complete: ?1\r\n\
         content-type: multipart/form-data; boundary=XyZ",
        form,
    );
    // No upload resource: the form is stored whole, as without the field.
    assert!(all.iter().all(|r| r.status != 104));
    let r = last(all);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("forms/f.txt")).unwrap(), b"hello");
    assert!(area_files(&s.root).is_empty());
}

#[test]
fn a_long_append_announces_its_durable_offset_in_104s() {
    let s = Server::start(&[]);
    let body = data(72 << 20, 23);
    let url = create_partial(&s, "progress.bin", &body[..1000], "");
    let all = exchange(
        s.addr,
        &format!(
            "PATCH {url} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
             upload-offset: 1000\r\nupload-complete: ?1"
        ),
        &body[1000..],
    );
    let progress: Vec<u64> = all
        .iter()
        .filter(|r| r.status == 104)
        .map(|r| {
            // Progress, not an announcement of the resource.
            assert!(r.header("location").is_none(), "{:?}", r.headers);
            r.header("upload-offset").unwrap().parse().unwrap()
        })
        .collect();
    // One checkpoint per 64 MiB received: one announcement, of an offset past it.
    assert_eq!(progress.len(), 1, "{progress:?}");
    assert!(
        progress[0] >= 1000 + (64 << 20) && progress[0] < body.len() as u64,
        "{progress:?}"
    );
    let r = last(all);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["sha256"], sha256(&body));
}

#[test]
fn an_offset_asked_while_an_append_runs_is_the_one_that_append_ends_at() {
    let s = Server::start(&[]);
    let url = create_partial(&s, "asked", b"0123456789", "");
    let mut first = TcpStream::connect(s.addr).unwrap();
    write!(
        first,
        "PATCH {url} HTTP/1.1\r\nhost: t\r\ncontent-type: application/partial-upload\r\n\
         upload-offset: 10\r\nupload-complete: ?0\r\ncontent-length: 1000000\r\n\r\n"
    )
    .unwrap();
    first.write_all(&[7u8; 5000]).unwrap();
    let data = data_file(&s.root, &url);
    wait_for("the first append to write", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() == 5010)
    });
    // Asked while the append runs (nothing of it checkpointed yet), answered once it ends: the
    // offset is where it ended, not the outdated 10, and the next append is taken at it.
    let addr = s.addr;
    let asked = std::thread::spawn({
        let url = url.clone();
        move || request(addr, &format!("HEAD {url} HTTP/1.1"), b"")
    });
    std::thread::sleep(Duration::from_millis(200));
    drop(first);
    let r = asked.join().unwrap();
    assert_eq!(r.status, 204, "{:?}", r.headers);
    assert_eq!(r.header("upload-offset").unwrap(), "5010");
    let r = patch(&s, &url, 5010, true, b"end");
    assert_eq!(r.status, 201, "{}", r.text());
    let mut expected = b"0123456789".to_vec();
    expected.extend_from_slice(&[7u8; 5000]);
    expected.extend_from_slice(b"end");
    assert_eq!(std::fs::read(s.root.join("asked")).unwrap(), expected);
}

/// The value of `key` in an upload's record (`<id>.meta`), if the record is there.
fn recorded(root: &Path, url: &str, key: &str) -> Option<String> {
    let meta = data_file(root, url).with_extension("meta");
    let text = std::fs::read_to_string(meta).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ').map(str::to_owned))
}

/// Opens the gate when dropped, so that a failing test does not leave the server's shutdown
/// waiting for a held checkpoint.
struct OpenOnDrop(weir_store::HashGate);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

#[test]
fn the_connection_keeps_receiving_while_a_checkpoint_is_held() {
    // In-process, with every checkpoint held before its fdatasync until the test lets it go:
    // the body goes on arriving meanwhile (a checkpoint on the connection's task would stop
    // reading until it ended, and the data file would stay at the checkpoint's offset).
    let gate = weir_store::HashGate::closed();
    let s = InProcessServe::start_resumable(weir_store::LocalOptions {
        checkpoint_gate: Some(gate.clone()),
        ..weir_store::LocalOptions::default()
    });
    let gate = OpenOnDrop(gate);
    let whole = std::sync::Arc::new(data((88 << 20) + 12_345, 51));
    let mut sock = TcpStream::connect(s.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        sock,
        "PUT /files/held.bin HTTP/1.1\r\nhost: t\r\nupload-complete: ?1\r\nconnection: close\r\n\
         content-length: {}\r\n\r\n",
        whole.len()
    )
    .unwrap();
    let interim = read_head(&mut sock).to_ascii_lowercase();
    let url = interim
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .to_owned();
    let writer = {
        let mut sock = sock.try_clone().unwrap();
        let whole = std::sync::Arc::clone(&whole);
        std::thread::spawn(move || sock.write_all(&whole))
    };
    let held = gate.0.wait_for_job(Duration::from_secs(60)).unwrap();
    assert_eq!(held.len(), 1, "{held:?}");
    let at = held[0];
    assert!(
        at >= weir_store::CHECKPOINT_BYTES && at < whole.len() as u64,
        "{at}"
    );
    // Held: the whole rest of the body reaches the data file all the same.
    let data = data_file(&s.root, &url);
    wait_for("the body to arrive while its checkpoint is held", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() == whole.len() as u64)
    });
    writer.join().unwrap().unwrap();
    // Nothing was recorded past what is durable (the held checkpoint did not sync yet), and
    // it is still the only one out.
    assert_eq!(recorded(&s.root, &url, "offset").as_deref(), Some("0"));
    assert_eq!(gate.0.waiting(), vec![at]);
    gate.0.open();
    let mut raw = Vec::new();
    sock.read_to_end(&mut raw).unwrap();
    let all = responses(&raw);
    // The checkpoint's offset announced once it was recorded, then the upload stored whole.
    let progress: Vec<&str> = all
        .iter()
        .filter(|r| r.status == 104)
        .map(|r| r.header("upload-offset").unwrap())
        .collect();
    assert_eq!(progress, [at.to_string()]);
    let r = last(all);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["sha256"], sha256(&whole));
    assert_eq!(std::fs::read(s.root.join("held.bin")).unwrap(), *whole);
}

#[test]
fn a_server_sigkilled_after_an_in_request_checkpoint_resumes_from_it() {
    let mut s = Server::start(&[]);
    let whole = data(100 << 20, 52);
    let url = create_partial(&s, "after.bin", &whole[..1000], "");
    let mut sock = TcpStream::connect(s.addr).unwrap();
    write!(
        sock,
        "PATCH {url} HTTP/1.1\r\nhost: t\r\ncontent-type: application/partial-upload\r\n\
         upload-offset: 1000\r\nupload-complete: ?1\r\ncontent-length: {}\r\n\r\n",
        whole.len() - 1000
    )
    .unwrap();
    // Past one checkpoint, and not the whole body: the request stays open until the kill.
    let sent = 1000 + (80 << 20);
    sock.write_all(&whole[1000..sent]).unwrap();
    wait_for("a checkpoint inside the request to be recorded", || {
        recorded(&s.root, &url, "offset")
            .and_then(|o| o.parse::<u64>().ok())
            .is_some_and(|o| o >= 1000 + weir_store::CHECKPOINT_BYTES)
    });
    s.kill();
    drop(sock);
    let (dir, root) = s.into_parts();
    let s = Server::start_at(dir, root, &[]);
    // The offset is the checkpoint's, the data file holds exactly that, and the record keeps
    // the hash state of exactly those bytes: the resumed upload hashes on from it, and its
    // digest is of every byte.
    let offset = offset_of(&s, &url);
    assert!(
        (1000 + weir_store::CHECKPOINT_BYTES..=sent as u64).contains(&offset),
        "{offset}"
    );
    assert_eq!(
        std::fs::metadata(data_file(&s.root, &url)).unwrap().len(),
        offset
    );
    assert!(recorded(&s.root, &url, "sha256-state").is_some());
    resume_and_check(&s, &url, "after.bin", &whole, true);
}

#[test]
fn a_malformed_upload_length_is_400_and_creates_nothing() {
    let s = Server::start(&[]);
    let url = create_partial(&s, "good", b"abc", "");
    let before = area_files(&s.root).len();
    // Not an RFC 9651 non-negative Integer: too many digits, a sign, an exponent, a List, empty.
    for value in ["1234567890123456", "-1", "1e3", "5,6", "", "1.0", "?1"] {
        let r = last(exchange(
            s.addr,
            &format!("PUT /files/m HTTP/1.1\r\nupload-complete: ?0\r\nupload-length: {value}"),
            b"ab",
        ));
        assert_eq!(r.status, 400, "{value:?}: {}", r.text());
        assert!(r.json()["detail"].as_str().is_some(), "{value:?}");
        let r = last(exchange(
            s.addr,
            &format!(
                "PATCH {url} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
                 upload-offset: 3\r\nupload-complete: ?0\r\nupload-length: {value}"
            ),
            b"de",
        ));
        assert_eq!(r.status, 400, "PATCH {value:?}: {}", r.text());
    }
    // Two field lines are not one Item either.
    let r = last(exchange(
        s.addr,
        "PUT /files/m HTTP/1.1\r\nupload-complete: ?0\r\nupload-length: 5\r\nupload-length: 5",
        b"ab",
    ));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(area_files(&s.root).len(), before);
    assert_eq!(offset_of(&s, &url), 3);
    // Absent is still allowed: the length is learnt later.
    create_partial(&s, "m", b"ab", "");
}
