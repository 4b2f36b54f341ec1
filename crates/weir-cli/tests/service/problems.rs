//! Every error answer is an RFC 9457 problem: `application/problem+json` with the `type`,
//! `title`, `status` and `detail` of its kind (docs/OPERATING.md's table), and the older
//! `error` member with the same text as `detail`.

use crate::resumable::create_partial;
use crate::routes::{b64, hex_bytes};
use crate::support::*;

const WEIR: &str = "https://weir.dev/problems/";
const DRAFT: &str = "https://iana.org/assignments/http-problem-types#";

/// Checks `r` is the problem `type_uri` with `status`.
fn assert_problem(what: &str, r: &Resp, status: u16, type_uri: &str) {
    assert_eq!(r.status, status, "{what}: {}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/problem+json"),
        "{what}"
    );
    let p = r.json();
    assert_eq!(p["type"], type_uri, "{what}: {p}");
    assert_eq!(p["status"], status, "{what}: {p}");
    assert!(
        p["title"].as_str().is_some_and(|t| !t.is_empty()),
        "{what}: {p}"
    );
    let detail = p["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: {p}"));
    assert!(!detail.is_empty(), "{what}: {p}");
    assert_eq!(p["error"], detail, "{what}: {p}");
}

#[test]
fn each_error_is_its_problem_type() {
    let s = Server::start(&["--max-upload", "1000", "--max-storage", "1MiB"]);
    s.request("PUT /files/d/f HTTP/1.1", b"f");
    s.request("PUT /files/small HTTP/1.1", b"0123456789");
    std::os::unix::fs::symlink("/etc", s.root.join("link")).unwrap();
    let other = sha256(b"other bytes");
    let wrong_digest = format!(
        "PUT /files/x HTTP/1.1\r\ncontent-digest: sha-256=:{}:",
        b64(&hex_bytes(&other))
    );
    let cases: [(&str, String, &[u8], u16, String); 13] = [
        (
            "digest syntax",
            "PUT /files/x HTTP/1.1\r\ncontent-digest: sha-256=:!!:".into(),
            b"x",
            400,
            format!("{WEIR}bad-request"),
        ),
        (
            "reserved name",
            "PUT /files/.weir-lock HTTP/1.1".into(),
            b"x",
            400,
            format!("{WEIR}invalid-path"),
        ),
        (
            "digest mismatch",
            wrong_digest,
            b"x",
            400,
            format!("{WEIR}digest-mismatch"),
        ),
        (
            "symlink",
            "GET /files/link/passwd HTTP/1.1".into(),
            b"",
            403,
            format!("{WEIR}symlink-refused"),
        ),
        (
            "missing file",
            "GET /files/nothing HTTP/1.1".into(),
            b"",
            404,
            format!("{WEIR}not-found"),
        ),
        (
            "method",
            "PATCH /files/small HTTP/1.1".into(),
            b"",
            405,
            format!("{WEIR}method-not-allowed"),
        ),
        (
            "directory in the way",
            "PUT /files/d HTTP/1.1".into(),
            b"x",
            409,
            format!("{WEIR}path-conflict"),
        ),
        (
            "precondition",
            "PUT /files/small HTTP/1.1\r\nif-match: \"nope\"".into(),
            b"x",
            412,
            format!("{WEIR}precondition-failed"),
        ),
        (
            "tus version",
            "POST /tus/ HTTP/1.1\r\nupload-length: 3".into(),
            b"",
            412,
            format!("{WEIR}tus-version"),
        ),
        (
            "too large",
            "PUT /files/big HTTP/1.1".into(),
            &[7; 2000],
            413,
            format!("{WEIR}too-large"),
        ),
        (
            "form type",
            "POST /files/d/ HTTP/1.1\r\ncontent-type: text/plain".into(),
            b"hi",
            415,
            format!("{WEIR}unsupported-media-type"),
        ),
        (
            "range",
            "GET /files/small HTTP/1.1\r\nrange: bytes=100-".into(),
            b"",
            416,
            format!("{WEIR}range-not-satisfiable"),
        ),
        (
            "resumable lengths",
            "PUT /files/r HTTP/1.1\r\nupload-complete: ?1\r\nupload-length: 5".into(),
            b"abc",
            400,
            format!("{DRAFT}inconsistent-upload-length"),
        ),
    ];
    for (what, head, body, status, type_uri) in cases {
        let r = s.request(&head, body);
        assert_problem(what, &r, status, &type_uri);
    }

    // A resumable append at the wrong offset, a tus one too.
    let url = create_partial(&s, "part", b"abc", "");
    let r = s.request(
        &format!(
            "PATCH {url} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
             upload-offset: 1\r\nupload-complete: ?0"
        ),
        b"x",
    );
    assert_problem(
        "draft offset",
        &r,
        409,
        &format!("{DRAFT}mismatching-upload-offset"),
    );
    let r = s.request(
        "POST /tus/ HTTP/1.1\r\ntus-resumable: 1.0.0\r\nupload-length: 10\r\n\
         upload-metadata: filename dHVz",
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let location = r.header("location").unwrap().to_owned();
    let r = s.request(
        &format!(
            "PATCH {location} HTTP/1.1\r\ntus-resumable: 1.0.0\r\n\
             content-type: application/offset+octet-stream\r\nupload-offset: 4"
        ),
        b"x",
    );
    assert_problem("tus offset", &r, 409, &format!("{WEIR}offset-mismatch"));
}

#[test]
fn credentials_and_storage_problems() {
    let s = Server::start(&["--token", "t", "--max-storage", "64KiB"]);
    let r = s.request("PUT /files/a HTTP/1.1", b"x");
    assert_problem("no token", &r, 401, &format!("{WEIR}unauthorized"));
    let r = s.request(
        "PUT /files/a HTTP/1.1\r\nauthorization: Bearer t",
        &[1; 100_000],
    );
    assert_problem("quota", &r, 507, &format!("{WEIR}insufficient-storage"));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(&file, "reader read\n").unwrap();
    let s = Server::start(&["--token-file", file.to_str().unwrap()]);
    let r = s.request(
        "PUT /files/a HTTP/1.1\r\nauthorization: Bearer reader",
        b"x",
    );
    assert_problem("read-only token", &r, 403, &format!("{WEIR}forbidden"));
}
