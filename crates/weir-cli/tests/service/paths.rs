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
