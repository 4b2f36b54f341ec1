//! Path traversal and other hostile names: refused with 400 (403 for symlinks), nothing
//! written outside the root.

use crate::support::*;

fn files_outside_root(s: &Server) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(s.dir.path()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name != "root" && name != "server-stderr.log" && name != "outside" {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn traversal_attempts_are_refused() {
    let s = Server::start(&[]);
    let raw_targets = [
        "/files/../escape",
        "/files/../../etc/passwd",
        "/files/a/../../escape",
        "/files/%2e%2e/escape",
        "/files/%2E%2E/%2E%2E/escape",
        "/files/..%2f..%2fescape",
        "/files/%2fetc%2fescape",
        "/files/a%5c..%5c..%5cescape",
        "/files/a\\..\\escape",
        "/files/a%00b",
        "/files/a%0ab",
        "/files/a%zz",
        "/files/%ff",
        "/files/.weir-lock",
        "/files/a//b",
    ];
    for target in raw_targets {
        for method in ["PUT", "GET", "DELETE"] {
            let r = s.request(&format!("{method} {target} HTTP/1.1"), b"evil");
            assert_eq!(r.status, 400, "{method} {target}: {}", r.text());
        }
        let post =
            format!("POST {target}/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=b");
        assert_eq!(s.request(&post, b"--b--").status, 400, "POST {target}");
    }
    // curl with --path-as-is sends the dots unnormalised.
    for target in [
        "/files/../escape",
        "/files/%2e%2e/escape",
        "/files/x/..%2F..%2Fescape",
    ] {
        let (status, _) = curl_status(&[
            "--path-as-is",
            "-X",
            "PUT",
            "--data-binary",
            "evil",
            &s.url(target),
        ]);
        assert_eq!(status, 400, "{target}");
    }
    // A multipart file name that climbs out.
    let form = b"--b\r\ncontent-disposition: form-data; name=\"f\"; filename=\"../../escape\"\r\n\r\nevil\r\n--b--\r\n";
    let r = s.request(
        "POST /files/d/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=b",
        form,
    );
    assert_eq!(r.status, 400);
    assert!(
        files_outside_root(&s).is_empty(),
        "{:?}",
        files_outside_root(&s)
    );
    assert!(!s.dir.path().join("escape").exists());
    let listing = s.request("GET /files/ HTTP/1.1", b"").json();
    assert_eq!(listing["entries"].as_array().unwrap().len(), 0, "{listing}");
}

#[test]
fn symlinks_out_of_the_root_are_not_followed() {
    let s = Server::start(&[]);
    let outside = s.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"secret").unwrap();
    std::os::unix::fs::symlink(&outside, s.root.join("link")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), s.root.join("file-link")).unwrap();
    assert_eq!(
        s.request("GET /files/link/secret HTTP/1.1", b"").status,
        403
    );
    assert_eq!(s.request("GET /files/file-link HTTP/1.1", b"").status, 403);
    assert_eq!(
        s.request("PUT /files/link/new HTTP/1.1", b"evil").status,
        403
    );
    assert_eq!(
        s.request("PUT /files/file-link HTTP/1.1", b"evil").status,
        403
    );
    assert_eq!(
        s.request("DELETE /files/file-link HTTP/1.1", b"").status,
        403
    );
    assert_eq!(s.request("GET /files/link/ HTTP/1.1", b"").status, 403);
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"secret");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
}

#[test]
fn invisible_and_bidi_characters_in_names_are_refused() {
    let s = Server::start(&[]);
    // Right-to-left override, isolate, zero-width space, BOM, line separator, Arabic letter
    // mark: percent-encoded UTF-8 in the URL.
    for encoded in [
        "evil%E2%80%AEtxt.exe",
        "a%E2%81%A6b",
        "a%E2%80%8Bb",
        "%EF%BB%BFname",
        "a%E2%80%A8b",
        "a%D8%9Cb",
    ] {
        let r = s.request(&format!("PUT /files/{encoded} HTTP/1.1"), b"x");
        assert_eq!(r.status, 400, "{encoded}: {}", r.text());
        assert!(
            r.json()["error"]
                .as_str()
                .unwrap()
                .starts_with("invisible or bidirectional-control character"),
            "{}",
            r.text()
        );
        // And as a form's file name (raw UTF-8 in the part header).
        let name = weir_cli_percent_decode(encoded);
        let body = format!(
            "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{name}\"\r\n\r\nx\r\n--b--"
        );
        let r = s.request(
            "POST /files/d/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=b",
            body.as_bytes(),
        );
        assert_eq!(r.status, 400, "form {encoded}: {}", r.text());
    }
    let stored: Vec<_> = std::fs::read_dir(&s.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| !n.to_string_lossy().starts_with(".weir-"))
        .collect();
    assert!(stored.is_empty(), "{stored:?}");
}

#[test]
fn a_windows_path_as_form_file_name_is_refused_not_altered() {
    let s = Server::start(&[]);
    // As a browser sends it: backslashes unescaped inside the quoted filename.
    let body = b"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"C:\\x\\y.txt\"\r\n\r\nhello\r\n--b--";
    let r = s.request(
        "POST /files/up/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=b",
        body,
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"], "backslash in path");
    assert!(!s.root.join("up/C:xy.txt").exists());
    assert!(!s.root.join("C:xy.txt").exists());
    assert!(s.temps().is_empty());
}

/// `%XX` decoding for the test's table (UTF-8 sequences).
fn weir_cli_percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}
