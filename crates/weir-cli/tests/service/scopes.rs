//! Scoped credentials (`--token-file`): a read-only token cannot write, a prefix token cannot
//! leave its prefix, each refused before any body byte is read; and the refusal to start
//! writable and anonymous on a public address.

use crate::support::*;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn start_with_tokens() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    let deleter_hash = hex(&Sha256::digest(b"deleter-token"));
    std::fs::write(
        &file,
        format!(
            "# who may do what\nreader-token read\nwriter-token read,write photos/2024\n\
             sha256:{deleter_hash} delete\n"
        ),
    )
    .unwrap();
    let root = dir.path().join("root");
    let (child, addr) = spawn(
        &root,
        dir.path(),
        &["--token-file", file.to_str().unwrap()],
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Server {
        child,
        addr,
        dir,
        root,
    }
}

fn with(s: &Server, token: &str, head: &str, body: &[u8]) -> u16 {
    s.request(&format!("{head}\r\nauthorization: Bearer {token}"), body)
        .status
}

#[test]
fn scopes_and_prefixes_are_enforced() {
    let s = start_with_tokens();
    let put =
        |token: &str, path: &str| with(&s, token, &format!("PUT /files/{path} HTTP/1.1"), b"data");
    assert_eq!(put("writer-token", "photos/2024/a.jpg"), 201);
    assert_eq!(
        put("writer-token", "photos/2024%2Fb.jpg"),
        201,
        "decoded before the check"
    );
    assert_eq!(put("writer-token", "photos/2025/a.jpg"), 403);
    assert_eq!(put("writer-token", "photos/2024x/a.jpg"), 403);
    assert_eq!(put("writer-token", "photos/2024/../../x"), 400);
    assert_eq!(put("reader-token", "photos/2024/c.jpg"), 403);
    assert_eq!(put("deleter-token", "photos/2024/c.jpg"), 403);
    assert_eq!(put("sha256:whatever", "a"), 401);
    assert_eq!(put("nobody", "a"), 401);
    assert_eq!(s.request("PUT /files/a HTTP/1.1", b"x").status, 401);
    // Reads are public (no --token-read); a read token reads too.
    assert_eq!(
        s.request("GET /files/photos/2024/a.jpg HTTP/1.1", b"")
            .status,
        200
    );
    assert_eq!(
        with(
            &s,
            "reader-token",
            "GET /files/photos/2024/a.jpg HTTP/1.1",
            b""
        ),
        200
    );
    // Deletes: the delete scope, from a hash in the file.
    let del = |token: &str| with(&s, token, "DELETE /files/photos/2024/a.jpg HTTP/1.1", b"");
    assert_eq!(del("writer-token"), 403);
    assert_eq!(del("reader-token"), 403);
    assert_eq!(del("deleter-token"), 204);
    // Uploads by id have no path a prefix could cover.
    assert_eq!(
        with(&s, "writer-token", "HEAD /uploads/abc HTTP/1.1", b""),
        403
    );
    // Metrics: a read scope without a prefix.
    assert_eq!(with(&s, "reader-token", "GET /metrics HTTP/1.1", b""), 200);
    assert_eq!(with(&s, "writer-token", "GET /metrics HTTP/1.1", b""), 403);
    assert_eq!(s.request("GET /metrics HTTP/1.1", b"").status, 401);
    assert!(s.temps().is_empty());
    assert!(!s.root.join("photos/2025").exists());
}

/// Sends a head with `Expect: 100-continue` and a large declared body, and no body; returns
/// the first status line the server sends.
fn first_answer(s: &Server, token: Option<&str>, path: &str) -> String {
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    write!(
        c,
        "PUT {path} HTTP/1.1\r\nhost: t\r\n{auth}expect: 100-continue\r\n\
         content-length: 100000000\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let mut byte = [0; 1];
    while !got.ends_with(b"\r\n") {
        assert_eq!(c.read(&mut byte).unwrap(), 1, "closed: {got:?}");
        got.push(byte[0]);
    }
    String::from_utf8(got).unwrap()
}

#[test]
fn refusals_come_before_the_body() {
    let s = start_with_tokens();
    // Refused: the final status comes first, never `100 Continue` (no body byte was asked for).
    let cases = [
        (None, "/files/photos/2024/big", "401"),
        (Some("nobody"), "/files/photos/2024/big", "401"),
        (Some("reader-token"), "/files/photos/2024/big", "403"),
        (Some("writer-token"), "/files/elsewhere/big", "403"),
    ];
    for (token, path, status) in cases {
        let line = first_answer(&s, token, path);
        assert!(
            line.starts_with(&format!("HTTP/1.1 {status}")),
            "{token:?} {path}: {line}"
        );
    }
    // Allowed: the server asks for the body.
    let line = first_answer(&s, Some("writer-token"), "/files/photos/2024/big");
    assert!(line.starts_with("HTTP/1.1 100"), "{line}");
}

#[test]
fn public_and_anonymous_and_writable_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let public = ["--listen", "0.0.0.0:0"];
    let err = spawn(&root, dir.path(), &public, &[]).unwrap_err();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("weir: ")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("--allow-anonymous-write") && lines[0].contains("0.0.0.0"),
        "{err}"
    );
    let mut allowed = public.to_vec();
    allowed.push("--allow-anonymous-write");
    let (mut child, _) = spawn(&root, dir.path(), &allowed, &[]).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let (mut child, _) = spawn(&root, dir.path(), &public, &[("WEIR_TOKEN", "t")]).unwrap();
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn token_file_mistakes_are_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(&file, "good read\nbad reed\nsha256:12 write\n").unwrap();
    let out = std::process::Command::new(WEIR)
        .args(["serve", "--root"])
        .arg(dir.path().join("r"))
        .arg("--token-file")
        .arg(&file)
        .env_remove("WEIR_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("weir: ") && lines[0].contains("line 2: unknown scope"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("weir: ") && lines[1].contains("line 3: sha256:"),
        "{err}"
    );
    assert!(!dir.path().join("r").exists());
}
