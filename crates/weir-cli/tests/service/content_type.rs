//! The client's `Content-Type` is kept with the file and served back; without one, the type
//! comes from the extension (mime_guess's table). With curl, as users upload.

use crate::support::*;

/// The `Content-Type` curl sees for `url` (`-I`: a HEAD).
fn served_type(url: &str) -> String {
    let out = curl(&["-sS", "-I", url]);
    let head = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    head.lines()
        .find_map(|l| l.strip_prefix("content-type: "))
        .unwrap_or_else(|| panic!("no content-type: {head}"))
        .trim()
        .to_owned()
}

#[test]
fn the_clients_type_is_kept_and_served_back() {
    let s = Server::start(&[]);
    let file = s.dir.path().join("report");
    std::fs::write(&file, b"{\"a\": 1}").unwrap();
    let f = file.to_str().unwrap();
    let (status, out) = curl_status(&[
        "-T",
        f,
        "-H",
        "content-type: application/vnd.weir.report+json; charset=utf-8",
        &s.url("/files/r/report.txt"),
    ]);
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&out));
    if !keeps_user_xattrs(&s.root) {
        eprintln!("skipped: the test directory's filesystem keeps no user xattrs");
        return;
    }
    assert_eq!(
        served_type(&s.url("/files/r/report.txt")),
        "application/vnd.weir.report+json; charset=utf-8"
    );
    let r = s.request("GET /files/r/report.txt HTTP/1.1", b"");
    assert_eq!(r.body, b"{\"a\": 1}");

    // Replaced without a type: the new version goes by its name.
    let (status, _) = curl_status(&["-T", f, &s.url("/files/r/report.txt")]);
    assert_eq!(status, 200);
    assert_eq!(
        served_type(&s.url("/files/r/report.txt")),
        "text/plain; charset=utf-8"
    );

    // curl -d's default type describes a form, not the file: ignored.
    let (status, _) = curl_status(&[
        "--data-binary",
        "hello",
        "-X",
        "PUT",
        &s.url("/files/r/empty.txt"),
    ]);
    assert_eq!(status, 201);
    assert_eq!(
        served_type(&s.url("/files/r/empty.txt")),
        "text/plain; charset=utf-8"
    );

    // Not a media type: ignored.
    let (status, _) = curl_status(&[
        "-T",
        f,
        "-H",
        "content-type: not a type",
        &s.url("/files/r/x.json"),
    ]);
    assert_eq!(status, 201);
    assert_eq!(served_type(&s.url("/files/r/x.json")), "application/json");
}

#[test]
fn without_a_type_the_extension_decides() {
    let s = Server::start(&[]);
    for (name, want) in [
        ("a.txt", "text/plain; charset=utf-8"),
        ("b.epub", "application/epub+zip"),
        ("c.jpg", "image/jpeg"),
        ("d.unknownext", "application/octet-stream"),
    ] {
        let r = s.request(&format!("PUT /files/{name} HTTP/1.1"), b"x");
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(
            served_type(&s.url(&format!("/files/{name}"))),
            want,
            "{name}"
        );
    }
}

/// Whether the filesystem of `dir` keeps user xattrs (else the type cannot be kept): tried on
/// a file of its own, with Python's standard library.
fn keeps_user_xattrs(dir: &std::path::Path) -> bool {
    let probe = dir.join("xattr-probe");
    std::fs::write(&probe, b"").unwrap();
    let status = std::process::Command::new("python3")
        .args([
            "-c",
            "import os, sys; os.setxattr(sys.argv[1], 'user.probe', b'1')",
        ])
        .arg(&probe)
        .status()
        .unwrap();
    std::fs::remove_file(&probe).unwrap();
    status.success()
}

/// The `Content-Type` of a `GET` of `path`.
fn got_type(s: &Server, path: &str) -> String {
    let r = s.request(&format!("GET {path} HTTP/1.1"), b"");
    assert_eq!(r.status, 200, "{path}");
    r.header("content-type").unwrap().to_owned()
}

#[test]
fn form_parts_resumable_and_tus_uploads_keep_their_types() {
    let s = Server::start(&[]);
    if !keeps_user_xattrs(&s.root) {
        eprintln!("skipped: the test directory's filesystem keeps no user xattrs");
        return;
    }
    // A form: each part's own type (names whose extension says otherwise).
    let form = "--b\r\ncontent-disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\n\
                content-type: image/x-weir-a\r\n\r\nAAA\r\n\
                --b\r\ncontent-disposition: form-data; name=\"g\"; filename=\"b.txt\"\r\n\r\nBBB\r\n--b--\r\n";
    let r = s.request(
        "POST /files/f/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=b",
        form.as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(got_type(&s, "/files/f/a.txt"), "image/x-weir-a");
    assert_eq!(got_type(&s, "/files/f/b.txt"), "text/plain; charset=utf-8");
    // An IETF resumable upload: the creation request's type, kept until the last append.
    let url = crate::resumable::create_partial(
        &s,
        "r/c.txt",
        b"CC",
        "\r\ncontent-type: application/x-weir-c\r\nupload-length: 4",
    );
    let r = s.request(
        &format!(
            "PATCH {url} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
             upload-offset: 2\r\nupload-complete: ?1"
        ),
        b"cc",
    );
    assert!(r.status == 200 || r.status == 201, "{}", r.status);
    assert_eq!(got_type(&s, "/files/r/c.txt"), "application/x-weir-c");
    // tus: Upload-Metadata's filetype (base64 of "video/x-weir-d"), filename "d.txt".
    let r = s.request(
        "POST /tus/ HTTP/1.1\r\ntus-resumable: 1.0.0\r\nupload-length: 3\r\n\
         content-type: application/offset+octet-stream\r\n\
         upload-metadata: filename ZC50eHQ=,filetype dmlkZW8veC13ZWlyLWQ=",
        b"DDD",
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(got_type(&s, "/files/d.txt"), "video/x-weir-d");
}
