//! Forms (`multipart/form-data`) are all-or-none, across conflicts and SIGKILL, and hold a
//! constant number of descriptors however many files they carry (issue 19, points 3 and 7).

use crate::support::*;
use std::io::{Read, Write};

const HEAD: &str = "multipart/form-data; boundary=XX";

fn post(s: &Server, dir: &str, parts: &[(String, Vec<u8>)]) -> Resp {
    s.request(
        &format!("POST /files/{dir}/ HTTP/1.1\r\ncontent-type: {HEAD}"),
        &weir_testkit::h1::form_body(parts),
    )
}

fn part(name: &str, content: &[u8]) -> (String, Vec<u8>) {
    (name.to_owned(), content.to_vec())
}

#[test]
fn a_form_that_conflicts_with_itself_or_the_tree_stores_nothing() {
    let s = Server::start(&[]);
    assert_eq!(s.request("PUT /files/t/file HTTP/1.1", b"f").status, 201);
    let cases = [
        // A later part names a directory at an earlier part's path, and the reverse.
        ("f1", vec![part("a", b"1"), part("a/b", b"2")]),
        ("f2", vec![part("a/b", b"1"), part("a", b"2")]),
        // Two parts with the same file name.
        (
            "f3",
            vec![part("x", b"1"), part("y", b"2"), part("x", b"3")],
        ),
        // A part under a stored file.
        ("t", vec![part("ok", b"1"), part("file/below", b"2")]),
    ];
    for (dir, parts) in &cases {
        let r = post(&s, dir, parts);
        assert_eq!(r.status, 409, "{dir}: {}", r.text());
        assert!(r.json()["error"].as_str().is_some(), "{}", r.text());
        for (name, _) in parts {
            let r = s.request(&format!("GET /files/{dir}/{name} HTTP/1.1"), b"");
            assert!(
                r.status == 404 || r.status == 409,
                "{dir}/{name}: {}",
                r.status
            );
        }
    }
    // No directory was left behind, and nothing else was stored.
    for dir in ["f1", "f2", "f3"] {
        assert!(!s.root.join(dir).exists(), "{dir} was created");
    }
    let listing = s.request("GET /files/t/ HTTP/1.1", b"").json();
    assert_eq!(listing["entries"].as_array().unwrap().len(), 1, "{listing}");
    assert!(s.temps().is_empty(), "{:?}", s.temps());
}

#[test]
fn sigkill_during_the_commit_of_a_form_leaves_all_or_none() {
    const FILES: usize = 300;
    let mut s = Server::start(&[]);
    let parts: Vec<_> = (0..FILES)
        .map(|i| (format!("p{i:03}"), data(64 << 10, i as u64)))
        .collect();
    let body = weir_testkit::h1::form_body(&parts);
    let mut sock = std::net::TcpStream::connect(s.addr).unwrap();
    write!(
        sock,
        "POST /files/k/ HTTP/1.1\r\nhost: t\r\ncontent-type: {HEAD}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    sock.write_all(&body).unwrap();
    // Kill the server as soon as the first file of the form is visible: in the middle of the
    // commit (or after it, if it was that quick).
    let first = s.root.join("k/p000");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !first.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the form never committed"
        );
        std::hint::spin_loop();
    }
    s.kill();
    drop(sock);
    let (dir, root) = s.into_parts();
    let s = Server::start_at(dir, root, &[]);
    let stored: Vec<_> = parts
        .iter()
        .filter(|(name, content)| {
            let r = s.request(&format!("GET /files/k/{name} HTTP/1.1"), b"");
            r.status == 200 && r.body == *content
        })
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        stored.len() == FILES || stored.is_empty(),
        "{} of {FILES} files stored: {stored:?}",
        stored.len()
    );
    assert!(s.temps().is_empty(), "{:?}", s.temps());
}

/// Descriptors of the server that are open on upload temporaries.
#[cfg(target_os = "linux")]
fn open_temporaries(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().contains(".weir-upload-"))
        .count()
}

#[cfg(target_os = "linux")]
#[test]
fn a_form_of_many_files_holds_one_upload_descriptor() {
    const FILES: usize = 300;
    let s = Server::start(&[]);
    let parts: Vec<_> = (0..FILES)
        .map(|i| (format!("p{i:03}"), data(1000, i as u64)))
        .collect();
    let body = weir_testkit::h1::form_body(&parts);
    let mut sock = std::net::TcpStream::connect(s.addr).unwrap();
    write!(
        sock,
        "POST /files/m/ HTTP/1.1\r\nhost: t\r\nconnection: close\r\ncontent-type: {HEAD}\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    // Everything but the close delimiter: every part staged, the form not finished.
    let (sent, rest) = body.split_at(body.len() - 8);
    sock.write_all(sent).unwrap();
    let root = s.root.clone();
    wait_for("every part to be staged", || temps(&root).len() == FILES);
    let open = open_temporaries(s.pid());
    assert!(open <= 1, "{open} upload descriptors open for one form");
    sock.write_all(rest).unwrap();
    let mut raw = Vec::new();
    sock.read_to_end(&mut raw).unwrap();
    let r = parse_response(&raw);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["files"].as_array().unwrap().len(), FILES);
    assert_eq!(open_temporaries(s.pid()), 0);
    assert_eq!(
        s.request("GET /files/m/p299 HTTP/1.1", b"").body,
        parts[299].1
    );
}

#[cfg(target_os = "linux")]
#[test]
fn serve_raises_its_open_file_limit_to_the_hard_limit() {
    let dir = tempfile::tempdir().unwrap();
    // Started with a soft limit of 256, as a careless service manager might.
    let script = format!(
        "ulimit -Sn 256 && exec '{WEIR}' serve --root '{}' --listen 127.0.0.1:0",
        dir.path().join("root").display()
    );
    let mut child = std::process::Command::new("sh")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.contains("http://"), "{line}");
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let open_files: Vec<_> = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .split_whitespace()
        .skip(3)
        .take(2)
        .collect();
    assert_eq!(
        open_files[0], open_files[1],
        "soft and hard: {open_files:?}"
    );
    assert_ne!(open_files[0], "256");
}
