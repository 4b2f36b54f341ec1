//! Every route, with curl and raw requests.

use crate::support::*;

#[test]
fn healthz_put_get_head_delete_listing() {
    let s = Server::start(&[]);
    let r = s.request("GET /healthz HTTP/1.1", b"");
    assert_eq!((r.status, r.text().as_str()), (200, "ok\n"));

    let body = data(100_000, 1);
    let r = s.request("PUT /files/docs/a.txt HTTP/1.1", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let j = r.json();
    assert_eq!(j["path"], "docs/a.txt");
    assert_eq!(j["size"], 100_000);
    assert_eq!(j["sha256"], sha256(&body));
    // The documented fields only: the internals come with `Weir-Debug: 1`.
    let mut fields: Vec<_> = j.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["path", "replaced", "sha256", "size"]);
    let r = s.request("PUT /files/docs/a.txt HTTP/1.1\r\nweir-debug: 1", &body);
    assert_eq!(r.json()["data_path"], "hashed");
    assert_eq!(r.header("content-type"), Some("application/json"));

    // Replacing answers 200.
    let body2 = data(5_000, 2);
    let r = s.request("PUT /files/docs/a.txt HTTP/1.1", &body2);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["replaced"], true);

    let r = s.request("GET /files/docs/a.txt HTTP/1.1", b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, body2);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let digest = r.header("repr-digest").expect("Repr-Digest");
    assert!(digest.starts_with("sha-256=:"), "{digest}");

    let h = s.request("HEAD /files/docs/a.txt HTTP/1.1", b"");
    assert_eq!(h.status, 200);
    assert_eq!(h.header("content-length"), Some("5000"));
    assert!(h.body.is_empty());
    assert_eq!(h.header("etag"), r.header("etag"));

    s.request("PUT /files/docs/sub/b.bin HTTP/1.1", b"bb");
    let r = s.request("GET /files/docs/ HTTP/1.1", b"");
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(j["path"], "docs/");
    let entries: Vec<_> = j["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["type"].as_str().unwrap().to_owned(),
                e["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("a.txt".into(), "file".into(), 5000),
            ("sub".into(), "dir".into(), 0)
        ]
    );
    assert!(j["entries"][0]["modified"].as_u64().unwrap() > 1_600_000_000);
    let root = s.request("GET /files/ HTTP/1.1", b"").json();
    assert_eq!(root["entries"][0]["name"], "docs");
    // A directory named without the slash redirects to its listing.
    let r = s.request("GET /files/docs HTTP/1.1", b"");
    assert_eq!(
        (r.status, r.header("location")),
        (301, Some("/files/docs/"))
    );

    let r = s.request("DELETE /files/docs/a.txt HTTP/1.1", b"");
    assert_eq!(r.status, 204);
    let r = s.request("DELETE /files/docs/a.txt HTTP/1.1", b"");
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].is_string());
    let r = s.request("GET /files/docs/a.txt HTTP/1.1", b"");
    assert_eq!(r.status, 404);
    let r = s.request("GET /files/nope/ HTTP/1.1", b"");
    assert_eq!(r.status, 404);
    assert!(s.temps().is_empty());
}

#[test]
fn wrong_methods_and_unknown_paths() {
    let s = Server::start(&[]);
    let r = s.request("PATCH /files/x HTTP/1.1", b"");
    assert_eq!(r.status, 405);
    assert!(r.header("allow").unwrap().contains("PUT"));
    // A folder URL takes an empty PUT (it creates the folder): a body is refused.
    assert_eq!(s.request("PUT /files/dir/ HTTP/1.1", b"x").status, 400);
    assert!(!s.root.join("dir").exists());
    assert_eq!(s.request("PUT /files/ HTTP/1.1", b"x").status, 405);
    assert_eq!(s.request("POST /healthz HTTP/1.1", b"").status, 405);
    assert_eq!(s.request("GET /other HTTP/1.1", b"").status, 404);
    // POST without a multipart body.
    let r = s.request("POST /files/d/ HTTP/1.1\r\ncontent-type: text/plain", b"hi");
    assert_eq!(r.status, 415);
    // Upload over a directory, or below a file.
    s.request("PUT /files/d/f HTTP/1.1", b"f");
    assert_eq!(s.request("PUT /files/d HTTP/1.1", b"x").status, 409);
    assert_eq!(s.request("PUT /files/d/f/g HTTP/1.1", b"x").status, 409);
    assert!(s.temps().is_empty());
}

#[test]
fn no_hash_uploads_are_spliced_and_digests_still_verified() {
    let s = Server::start(&["--no-hash"]);
    let body = data(3 << 20, 3);
    let r = s.request("PUT /files/s.bin HTTP/1.1\r\nweir-debug: 1", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let j = r.json();
    assert_eq!(j["data_path"], "splice");
    assert_eq!(j["sha256"], serde_json::Value::Null);
    let spliced = j["body"]["spliced"].as_u64().unwrap();
    let copied = j["body"]["copied"].as_u64().unwrap();
    assert!(spliced > 0 && spliced + copied == body.len() as u64, "{j}");
    assert_eq!(s.request("GET /files/s.bin HTTP/1.1", b"").body, body);

    // With a Content-Digest the body takes the hashed path, to be verified.
    let head = format!(
        "PUT /files/v.bin HTTP/1.1\r\nweir-debug: 1\r\ncontent-digest: sha-256=:{}:",
        b64(&hex_bytes(&sha256(&body)))
    );
    let r = s.request(&head, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["data_path"], "hashed");
    assert_eq!(r.json()["sha256"], sha256(&body));
}

#[test]
fn digest_mismatch_stores_nothing() {
    for args in [&[][..], &["--no-hash"][..]] {
        let s = Server::start(args);
        let body = data(2 << 20, 4);
        let wrong = sha256(&data(2 << 20, 5));
        let head = format!(
            "PUT /files/d.bin HTTP/1.1\r\ncontent-digest: sha-256=:{}:",
            b64(&hex_bytes(&wrong))
        );
        let r = s.request(&head, &body);
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("sha-256"), "{}", r.text());
        assert_eq!(s.request("GET /files/d.bin HTTP/1.1", b"").status, 404);
        assert!(s.temps().is_empty());
        // An existing file is left as it was.
        s.request("PUT /files/d.bin HTTP/1.1", b"original");
        assert_eq!(s.request(&head, &body).status, 400);
        assert_eq!(
            s.request("GET /files/d.bin HTTP/1.1", b"").body,
            b"original"
        );
        // sha-512 is verified too; a malformed header is refused before the body.
        let r = s.request(
            "PUT /files/e HTTP/1.1\r\ncontent-digest: sha-512=:AAAA:",
            b"x",
        );
        assert_eq!(r.status, 400);
        let (status, _) = curl_status(&[
            "-X",
            "PUT",
            "--data-binary",
            "xyz",
            "-H",
            &format!("content-digest: sha-512=:{}:", b64(&[0u8; 64])),
            &s.url("/files/e"),
        ]);
        assert_eq!(status, 400);
        assert!(s.temps().is_empty());
    }
}

#[test]
fn upload_limits_and_quota() {
    let s = Server::start(&["--max-upload", "1MiB", "--max-storage", "3MiB"]);
    // Declared too large: refused before the body (curl sends Expect: 100-continue).
    let big = data(2 << 20, 6);
    let path = s.dir.path().join("big");
    std::fs::write(&path, &big).unwrap();
    let (status, body) = curl_status(&["-T", path.to_str().unwrap(), &s.url("/files/big")]);
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    // Chunked, so the limit hits while reading.
    let (status, _) = curl_status(&[
        "-T",
        path.to_str().unwrap(),
        "-H",
        "transfer-encoding: chunked",
        &s.url("/files/big"),
    ]);
    assert_eq!(status, 413);
    // Quota: 3 MiB in all.
    for i in 0..3 {
        let r = s.request(&format!("PUT /files/q{i} HTTP/1.1"), &data(900 << 10, i));
        assert_eq!(r.status, 201);
    }
    let r = s.request("PUT /files/q3 HTTP/1.1", &data(900 << 10, 9));
    assert_eq!(r.status, 507, "{}", r.text());
    // Chunked over the quota: found during the writes.
    let small = s.dir.path().join("small");
    std::fs::write(&small, data(600 << 10, 7)).unwrap();
    let (status, _) = curl_status(&[
        "-T",
        small.to_str().unwrap(),
        "-H",
        "transfer-encoding: chunked",
        &s.url("/files/q4"),
    ]);
    assert_eq!(status, 507);
    assert_eq!(s.request("GET /files/q4 HTTP/1.1", b"").status, 404);
    assert_eq!(
        s.request("GET /files/q0 HTTP/1.1", b"").body,
        data(900 << 10, 0)
    );
    assert!(s.temps().is_empty());
}

#[test]
fn unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("weir.sock");
    let s = Server::start(&["--unix", sock.to_str().unwrap()]);
    let body = s.dir.path().join("u.bin");
    std::fs::write(&body, data(1 << 20, 8)).unwrap();
    let (status, _) = curl_status(&[
        "--unix-socket",
        sock.to_str().unwrap(),
        "-T",
        body.to_str().unwrap(),
        "http://weir/files/u.bin",
    ]);
    assert_eq!(status, 201);
    let out = weir(&[
        "get",
        "--unix",
        sock.to_str().unwrap(),
        "http://weir/files/u.bin",
        s.dir.path().join("back").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(s.dir.path().join("back")).unwrap(),
        data(1 << 20, 8)
    );
}

/// Standard base64, padded (the `base64` crate's, as the service's).
pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn per_core_runtime_serves_and_stops_on_sigterm() {
    let mut s = Server::start(&["--runtime", "per-core"]);
    let body = data(3_000_000, 9);
    let r = s.request("PUT /files/per-core.bin HTTP/1.1", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["sha256"], sha256(&body));
    for _ in 0..8 {
        let r = s.request("GET /files/per-core.bin HTTP/1.1", b"");
        assert_eq!(r.body, body);
    }
    let pid = s.pid().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = s.child.wait().unwrap();
    assert!(
        status.success(),
        "weir serve --runtime per-core exited with {status}"
    );
}

/// A service without resumable uploads (not enabled: `Service::with_resumable` never called)
/// answers every resumable and tus request `503`, and still serves `/files/`.
#[test]
fn without_resumable_uploads_their_routes_are_unavailable() {
    let serve = InProcessServe::start(weir_store::LocalOptions::default());
    let addr = serve.addr;
    let creation = request(
        addr,
        "PUT /files/r.bin HTTP/1.1\r\nupload-complete: ?1",
        b"abc",
    );
    assert_eq!(creation.status, 503, "{}", creation.text());
    assert_eq!(
        creation.json()["type"],
        "https://weir.dev/problems/unavailable"
    );
    let upload = request(
        addr,
        "HEAD /uploads/0123456789abcdef0123456789abcdef HTTP/1.1",
        b"",
    );
    assert_eq!(upload.status, 503);
    let tus = request(
        addr,
        "POST /tus/ HTTP/1.1\r\ntus-resumable: 1.0.0\r\nupload-length: 3",
        b"",
    );
    assert_eq!(tus.status, 503);
    assert!(!serve.root.join("r.bin").exists());
    let put = request(addr, "PUT /files/r.bin HTTP/1.1", b"abc");
    assert_eq!(put.status, 201, "{}", put.text());
}
