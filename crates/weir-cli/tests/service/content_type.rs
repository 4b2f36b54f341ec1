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
