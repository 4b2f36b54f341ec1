//! DNS rebinding (`serve/host_check.rs`): on a loopback listener, a `Host` (HTTP/2:
//! `:authority`) that is not `localhost`, a loopback address or an `--allowed-host` name gets
//! 421 before any route, and nothing is stored, listed or deleted; `/healthz` and the Unix
//! socket are not checked. These servers are started without the test suite's allowed names
//! (`support::TEST_HOSTS`).

use crate::cross_site::send;
use crate::support::*;
use std::path::Path;

/// `weir serve ARGS` on 127.0.0.1 with the defaults' `Host` rule (and `env`).
fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (child, addr) =
        weir_testkit::serve_binary::spawn(Path::new(WEIR), &root, dir.path(), args, env)
            .unwrap_or_else(|e| panic!("{e}"));
    Server {
        child,
        addr,
        dir,
        root,
    }
}

/// The statuses of a `PUT`, a listing, a download, a `DELETE`, the page, `/metrics`, a tus
/// creation and `/healthz`, all naming `host`.
fn statuses(s: &Server, host: &str) -> Vec<u16> {
    let requests: [(&str, &[u8]); 8] = [
        ("PUT /files/new.txt", b"new"),
        ("GET /files/", b""),
        ("GET /files/keep.txt", b""),
        ("DELETE /files/keep.txt", b""),
        ("GET /", b""),
        ("GET /metrics", b""),
        (
            "POST /tus/\r\ntus-resumable: 1.0.0\r\nupload-length: 3\r\nupload-metadata: filename dHVz",
            b"",
        ),
        ("GET /healthz", b""),
    ];
    requests
        .iter()
        .map(|(head, body)| {
            let (line, fields) = head.split_once("\r\n").unwrap_or((head, ""));
            let fields = if fields.is_empty() {
                String::new()
            } else {
                format!("\r\n{fields}")
            };
            let r = send(
                s.addr,
                &format!("{line} HTTP/1.1\r\nhost: {host}{fields}"),
                body,
            );
            if r.status == 421 {
                assert_eq!(
                    r.json()["type"],
                    "https://weir.dev/problems/host-not-allowed"
                );
            }
            r.status
        })
        .collect()
}

fn files(s: &Server) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(&s.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

const REFUSED: [u16; 8] = [421, 421, 421, 421, 421, 421, 421, 200];
const SERVED: [u16; 8] = [201, 200, 200, 204, 200, 200, 201, 200];

#[test]
fn a_foreign_host_is_refused_on_a_loopback_listener() {
    let s = start(&[], &[]);
    let port = s.addr.port();
    assert_eq!(s.request_as("localhost", "PUT /files/keep.txt", b"k"), 201);
    for host in [
        format!("attacker.example:{port}"),
        "attacker.example".to_owned(),
        format!("127.0.0.1.nip.io:{port}"),
        format!("localhost.attacker.example:{port}"),
        format!("10.1.2.3:{port}"),
    ] {
        assert_eq!(statuses(&s, &host), REFUSED, "{host}");
        assert_eq!(files(&s), ["keep.txt"], "{host}");
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "LOCALHOST".to_owned(),
    ] {
        assert_eq!(statuses(&s, &host), SERVED, "{host}");
        assert_eq!(s.request_as("localhost", "PUT /files/keep.txt", b"k"), 201);
        assert_eq!(s.request_as("localhost", "DELETE /files/new.txt", b""), 204);
    }

    // HTTP/2 (h2c): `:authority` is checked the same way.
    let url = s.url("/files/keep.txt");
    let h2 = |host: &str| {
        curl_status(&[
            "--http2-prior-knowledge",
            "-o",
            "/dev/null",
            "-H",
            &format!("host: {host}"),
            &url,
        ])
        .0
    };
    assert_eq!(h2(&format!("attacker.example:{port}")), 421);
    assert_eq!(h2(&format!("localhost:{port}")), 200);
    let (status, _) = curl_status(&[
        "--http2-prior-knowledge",
        "-X",
        "PUT",
        "--data-binary",
        "h2",
        "-H",
        &format!("host: attacker.example:{port}"),
        &s.url("/files/h2.txt"),
    ]);
    assert_eq!(status, 421);
    assert_eq!(files(&s), ["keep.txt"]);

    // The clients of the repository name the address they connect to: they pass.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("up.txt");
    std::fs::write(&file, b"weir put").unwrap();
    let out = weir(&["put", file.to_str().unwrap(), &s.url("/files/up.txt")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = dir.path().join("back.txt");
    let out = weir(&["get", &s.url("/files/up.txt"), back.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&back).unwrap(), b"weir put");
    let (status, _) = curl_status(&["--http2-prior-knowledge", &s.url("/files/")]);
    assert_eq!(status, 200);
}

#[test]
fn allowed_hosts_are_let_in_and_then_checked_everywhere() {
    let s = start(&["--allowed-host", "files.example"], &[]);
    let port = s.addr.port();
    assert_eq!(s.request_as("localhost", "PUT /files/keep.txt", b"k"), 201);
    assert_eq!(statuses(&s, &format!("files.example:{port}")), SERVED);
    assert_eq!(statuses(&s, &format!("other.example:{port}")), REFUSED);
    assert_eq!(files(&s), ["new.txt"]);

    // From the environment, comma-separated; `*` turns the check off.
    let s = start(&[], &[("WEIR_ALLOWED_HOST", "a.example,B.example")]);
    let port = s.addr.port();
    assert_eq!(s.request_as("localhost", "PUT /files/keep.txt", b"k"), 201);
    assert_eq!(statuses(&s, &format!("b.example:{port}")), SERVED);
    assert_eq!(statuses(&s, "c.example"), REFUSED);
    let s = start(&["--allowed-host", "*"], &[]);
    assert_eq!(s.request_as("localhost", "PUT /files/keep.txt", b"k"), 201);
    assert_eq!(statuses(&s, "attacker.example"), SERVED);

    // A name with a port, or a URL, stops the start.
    for bad in ["files.example:8080", "http://files.example"] {
        let out = weir(&["serve", "--listen", "127.0.0.1:0", "--allowed-host", bad]);
        assert!(!out.status.success(), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--allowed-host"),
            "{bad}"
        );
    }
}

#[test]
fn the_unix_socket_is_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("weir.sock");
    let s = start(&["--unix", sock.to_str().unwrap()], &[]);
    let (status, _) = curl_status(&[
        "--unix-socket",
        sock.to_str().unwrap(),
        "-X",
        "PUT",
        "--data-binary",
        "local",
        "-H",
        "host: attacker.example",
        "http://attacker.example/files/unix.txt",
    ]);
    assert_eq!(status, 201);
    assert_eq!(files(&s), ["unix.txt"]);
}

trait RequestAs {
    /// The status of `head` (request line without the version, then fields) naming `host`.
    fn request_as(&self, host: &str, head: &str, body: &[u8]) -> u16;
}

impl RequestAs for Server {
    fn request_as(&self, host: &str, head: &str, body: &[u8]) -> u16 {
        send(self.addr, &format!("{head} HTTP/1.1\r\nhost: {host}"), body).status
    }
}
