//! Tokens: 401 with `WWW-Authenticate` before any of the body is read; reads private once a
//! token exists unless `--public-read`, and said at start.

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
    // Reads need the token too (issue 35: they were public unless --token-read), but the page
    // and the health check, which hold no data, do not.
    assert_eq!(s.request("GET /files/a HTTP/1.1", b"").status, 401);
    assert_eq!(s.request("GET /files/ HTTP/1.1", b"").status, 401);
    let r = s.request("GET /files/a HTTP/1.1\r\nauthorization: Bearer wrong", b"");
    assert_eq!(r.status, 401);
    let r = s.request("GET /files/a HTTP/1.1\r\nauthorization: Bearer s3cret", b"");
    assert_eq!((r.status, &r.body[..]), (200, &b"x"[..]));
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
    assert_eq!(s.request("GET / HTTP/1.1", b"").status, 200);
    assert!(s.temps().is_empty());
    assert!(!s.root.join("big").exists());
}

/// `--token-read` (deprecated: what it did is the default now) still starts, and says so.
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
    let log = std::fs::read_to_string(s.dir.path().join("server-stderr.log")).unwrap();
    assert!(
        log.contains("--token-read (WEIR_TOKEN_READ, token-read) is deprecated"),
        "{log}"
    );

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

/// `--public-read`: anyone reads, writes still need the token, and a wrong token is refused
/// even on a read (it used to be served as anonymous); the start says who may read.
#[test]
fn public_read_is_an_explicit_choice_said_at_start() {
    let s = Server::start(&["--token", "s3cret", "--public-read"]);
    let r = s.request(
        "PUT /files/a HTTP/1.1\r\nauthorization: Bearer s3cret",
        b"x",
    );
    assert_eq!(r.status, 201);
    assert_eq!(s.request("GET /files/a HTTP/1.1", b"").status, 200);
    assert_eq!(s.request("GET /files/ HTTP/1.1", b"").status, 200);
    assert_eq!(s.request("PUT /files/b HTTP/1.1", b"x").status, 401);
    let r = s.request("GET /files/a HTTP/1.1\r\nauthorization: Bearer wrong", b"");
    assert_eq!(r.status, 401, "a wrong token on a public read");

    // What the start says, after the line with the address.
    let said = |args: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(WEIR)
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(dir.path().join("root"))
            .args(args)
            .env_remove("WEIR_TOKEN")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        let serving = lines.next().unwrap().unwrap();
        assert!(serving.contains("serving"), "{serving}");
        let access = lines.next().unwrap().unwrap();
        let _ = child.kill();
        let _ = child.wait();
        access
    };
    assert_eq!(
        said(&["--token", "t"]),
        "weir: reads are private: they need a token with the read scope (--public-read opens them)"
    );
    assert_eq!(
        said(&["--token", "t", "--public-read"]),
        "weir: reads are public (--public-read); writes and deletes need a token"
    );
    assert!(said(&[]).starts_with("weir: no token configured"));
    // The same from the config file (the flag's name as its key).
    let config = s.dir.path().join("weir.toml");
    std::fs::write(&config, "public-read = true\n").unwrap();
    assert_eq!(
        said(&["--token", "t", "--config", config.to_str().unwrap()]),
        "weir: reads are public (--public-read); writes and deletes need a token"
    );
    // Without a token there is nothing to open: refused rather than ignored.
    let out = weir(&["serve", "--listen", "127.0.0.1:0", "--public-read"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--public-read needs a token"));
}
