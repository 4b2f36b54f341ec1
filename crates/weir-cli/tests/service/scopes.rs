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
             sha256:{deleter_hash} delete\nmaker-token read,create name=maker\n"
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
    // Reads are private with tokens (no --public-read): a token with the read scope reads,
    // one without it does not, none is 401.
    assert_eq!(
        s.request("GET /files/photos/2024/a.jpg HTTP/1.1", b"")
            .status,
        401
    );
    assert_eq!(
        with(
            &s,
            "deleter-token",
            "GET /files/photos/2024/a.jpg HTTP/1.1",
            b""
        ),
        403
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
    // Uploads by id are judged on their target (`prefix_tokens_on_resumable_uploads`); an
    // id that names no upload is not found.
    assert_eq!(
        with(&s, "writer-token", "HEAD /uploads/abc HTTP/1.1", b""),
        404
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

/// A token file with an unconfined writer and a prefix writer (`photos/2024`).
fn start_with_writers() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        "admin-token read,write,delete\nwriter-token write photos/2024\n",
    )
    .unwrap();
    let root = dir.path().join("root");
    Server::start_at(dir, root, &["--token-file", file.to_str().unwrap()])
}

/// The `Location` of an upload created by `head` (an IETF or tus creation without content).
fn created(s: &Server, token: &str, head: &str) -> String {
    let r = s.request(&format!("{head}\r\nauthorization: Bearer {token}"), b"");
    assert_eq!(
        r.status,
        201,
        "{head}: {}",
        String::from_utf8_lossy(&r.body)
    );
    r.header("location").unwrap().to_owned()
}

/// Sends `head` with `Expect: 100-continue` and a declared body, and no body: the first status
/// line the server sends.
fn first_line(s: &Server, head: &str) -> String {
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        c,
        "{head}\r\nhost: t\r\nexpect: 100-continue\r\ncontent-length: 3\r\n\r\n"
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
fn prefix_tokens_on_resumable_uploads() {
    let s = start_with_writers();
    let auth = "authorization: Bearer writer-token";
    // tus creation: the target from Upload-Metadata (filename, dir), judged before any body.
    // dir "photos/2024" = cGhvdG9zLzIwMjQ=, "other" = b3RoZXI=; filename "a" = YQ==.
    let tus = |dir: &str| {
        format!(
            "POST /tus/ HTTP/1.1\r\n{auth}\r\ntus-resumable: 1.0.0\r\nupload-length: 3\r\n\
             content-type: application/offset+octet-stream\r\n\
             upload-metadata: filename YQ==,dir {dir}"
        )
    };
    assert!(first_line(&s, &tus("b3RoZXI=")).starts_with("HTTP/1.1 403"));
    assert!(first_line(&s, &tus("cGhvdG9zLzIwMjQ=")).starts_with("HTTP/1.1 100"));
    // Appends by id: only to uploads whose target is in the token's prefix, whoever made them.
    let tus_create = |dir: &str| {
        created(
            &s,
            "admin-token",
            &format!(
                "POST /tus/ HTTP/1.1\r\ntus-resumable: 1.0.0\r\nupload-length: 3\r\n\
                 upload-metadata: filename YQ==,dir {dir}"
            ),
        )
    };
    let outside = tus_create("b3RoZXI=");
    let inside = tus_create("cGhvdG9zLzIwMjQ=");
    let patch = |location: &str| {
        format!(
            "PATCH {location} HTTP/1.1\r\n{auth}\r\ntus-resumable: 1.0.0\r\nupload-offset: 0\r\n\
             content-type: application/offset+octet-stream"
        )
    };
    assert!(first_line(&s, &patch(&outside)).starts_with("HTTP/1.1 403"));
    let r = s.request(&patch(&inside), b"abc");
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        s.request(
            "GET /files/photos/2024/a HTTP/1.1\r\nauthorization: Bearer admin-token",
            b""
        )
        .body,
        b"abc"
    );
    let r = s.request(
        &format!("DELETE {outside} HTTP/1.1\r\n{auth}\r\ntus-resumable: 1.0.0"),
        b"",
    );
    assert_eq!(r.status, 403, "cannot cancel another prefix's upload");
    // The IETF draft's uploads: creation on the file's path (as a PUT), appends by id.
    let ietf = |path: &str| {
        let extra = "\r\nupload-length: 3\r\nauthorization: Bearer admin-token";
        crate::resumable::create_partial(&s, path, b"", extra)
    };
    let outside = ietf("other/b");
    let inside = ietf("photos/2024/b");
    let append = |location: &str| {
        format!(
            "PATCH {location} HTTP/1.1\r\n{auth}\r\nupload-offset: 0\r\nupload-complete: ?1\r\n\
             content-type: application/partial-upload"
        )
    };
    assert!(first_line(&s, &append(&outside)).starts_with("HTTP/1.1 403"));
    assert!(first_line(&s, &append(&inside)).starts_with("HTTP/1.1 100"));
    let creation = format!("PUT /files/other/c HTTP/1.1\r\n{auth}\r\nupload-complete: ?1");
    assert!(first_line(&s, &creation).starts_with("HTTP/1.1 403"));
    assert!(!s.root.join("other").exists());
}

/// The `create` scope: uploads that cannot replace. Without `If-None-Match: *` they are
/// refused before the body (403); with it, a file already there is a 412 from the store's own
/// check, atomic with the commit; a `write` token still replaces.
#[test]
fn a_create_token_creates_but_never_replaces() {
    let s = start_with_tokens();
    let put = |token: &str, path: &str, extra: &str| {
        let r = s.request(
            &format!("PUT /files/{path} HTTP/1.1\r\nauthorization: Bearer {token}{extra}"),
            b"data",
        );
        (
            r.status,
            r.json()["error"].as_str().unwrap_or("").to_owned(),
        )
    };
    let create = "\r\nif-none-match: *";
    let (status, error) = put("maker-token", "new.txt", "");
    assert_eq!(status, 403);
    assert!(error.contains("If-None-Match: *"), "{error}");
    assert!(!s.root.join("new.txt").exists());
    assert_eq!(put("maker-token", "new.txt", create).0, 201);
    assert_eq!(
        put("maker-token", "new.txt", create).0,
        412,
        "never replaced"
    );
    assert_eq!(std::fs::read(s.root.join("new.txt")).unwrap(), b"data");
    // Refused before the body: no 100 Continue for the unconditional upload.
    let line = first_answer(&s, Some("maker-token"), "/files/big");
    assert!(line.starts_with("HTTP/1.1 403"), "{line}");
    // A folder replaces nothing; deletes and tus are not creation.
    let r = s.request(
        "PUT /files/dir/ HTTP/1.1\r\nauthorization: Bearer maker-token",
        b"",
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        with(&s, "maker-token", "DELETE /files/new.txt HTTP/1.1", b""),
        403
    );
    assert_eq!(
        with(
            &s,
            "maker-token",
            "POST /tus/ HTTP/1.1\r\ntus-resumable: 1.0.0\r\nupload-length: 4",
            b""
        ),
        403
    );
    // A form: the precondition holds for each of its files.
    let form =
        "--b\r\ncontent-disposition: form-data; name=f; filename=new.txt\r\n\r\nother\r\n--b--\r\n";
    let head = "POST /files/ HTTP/1.1\r\nauthorization: Bearer maker-token\r\n\
                content-type: multipart/form-data; boundary=b";
    assert_eq!(s.request(head, form.as_bytes()).status, 403);
    assert_eq!(
        s.request(&format!("{head}{create}"), form.as_bytes())
            .status,
        412
    );
    assert_eq!(std::fs::read(s.root.join("new.txt")).unwrap(), b"data");

    // weir put with a create token: it sends If-None-Match: * by default.
    let file = s.dir.path().join("local.txt");
    std::fs::write(&file, b"local").unwrap();
    let url_new = s.url("/files/from-cli.txt");
    let put_cli = |extra: &[&str]| {
        let mut args = vec!["put", "--token", "maker-token", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.push(url_new.as_str());
        weir(&args)
    };
    let out = put_cli(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = put_cli(&["--overwrite"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("403"));
    assert_eq!(
        std::fs::read(s.root.join("from-cli.txt")).unwrap(),
        b"local"
    );
}
