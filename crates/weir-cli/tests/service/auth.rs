//! Tokens: 401 with `WWW-Authenticate` before any of the body is read.

use crate::support::*;
use std::io::{Read, Write};
use std::time::Duration;

#[test]
fn writes_need_the_token_and_are_refused_before_the_body() {
    let s = Server::start(&["--token", "s3cret"]);
    let r = s.request("PUT /files/a HTTP/1.1", b"x");
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"weir\""));
    let r = s.request("PUT /files/a HTTP/1.1\r\nauthorization: Bearer wrong", b"x");
    assert_eq!(r.status, 401);
    assert_eq!(s.request("DELETE /files/a HTTP/1.1", b"").status, 401);
    let r = s.request(
        "POST /files/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=b",
        b"--b--",
    );
    assert_eq!(r.status, 401);

    // A 100 MiB upload announced with Expect: 100-continue: the first thing back is the 401,
    // never a 100 Continue, and the body is never asked for.
    let mut sock = std::net::TcpStream::connect(s.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sock.write_all(
        b"PUT /files/big HTTP/1.1\r\nhost: t\r\ncontent-length: 104857600\r\nexpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut first = [0u8; 12];
    sock.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 401");
    drop(sock);

    let ok = s.request(
        "PUT /files/a HTTP/1.1\r\nauthorization: Bearer s3cret",
        b"x",
    );
    assert_eq!(ok.status, 201);
    // Reads are open without --token-read.
    assert_eq!(s.request("GET /files/a HTTP/1.1", b"").status, 200);
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
    assert!(s.temps().is_empty());
    assert!(!s.root.join("big").exists());
}

#[test]
fn token_read_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (child, addr) = spawn(
        &root,
        dir.path(),
        &["--token-read"],
        &[("WEIR_TOKEN", "envtok")],
    )
    .unwrap();
    let s = Server {
        child,
        addr,
        root,
        dir,
    };
    assert_eq!(s.request("GET /files/ HTTP/1.1", b"").status, 401);
    assert_eq!(s.request("GET /files/x HTTP/1.1", b"").status, 401);
    assert_eq!(
        s.request("GET /files/ HTTP/1.1\r\nauthorization: Bearer envtok", b"")
            .status,
        200
    );
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);

    // The client takes --token or WEIR_TOKEN, and reports a refusal in one line.
    let file = s.dir.path().join("f");
    std::fs::write(&file, b"hello").unwrap();
    let out = weir(&["put", file.to_str().unwrap(), &s.url("/files/f")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("401") && err.contains("bearer token"), "{err}");
    let out = weir(&[
        "put",
        "--token",
        "envtok",
        file.to_str().unwrap(),
        &s.url("/files/f"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = s.dir.path().join("back");
    let out = std::process::Command::new(WEIR)
        .args(["get", &s.url("/files/f"), back.to_str().unwrap()])
        .env("WEIR_TOKEN", "envtok")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(back).unwrap(), b"hello");
}

#[test]
fn two_authorization_fields_are_refused_whichever_comes_first() {
    let s = Server::start(&["--token", "s3cret"]);
    for (first, second) in [
        ("s3cret", "wrong"),
        ("wrong", "s3cret"),
        ("s3cret", "s3cret"),
    ] {
        let r = s.request(
            &format!(
                "PUT /files/two HTTP/1.1\r\nauthorization: Bearer {first}\r\nauthorization: Bearer {second}"
            ),
            b"x",
        );
        assert_eq!(r.status, 400, "{first} then {second}: {}", r.text());
        assert_eq!(r.json()["error"], "more than one Authorization field");
    }
    assert!(!s.root.join("two").exists());
    assert!(s.temps().is_empty());
    // One field still works.
    let r = s.request(
        "PUT /files/two HTTP/1.1\r\nauthorization: Bearer s3cret",
        b"x",
    );
    assert_eq!(r.status, 201);
}
