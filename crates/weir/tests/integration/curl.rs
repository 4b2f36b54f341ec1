//! A real client: curl uploads of 64 MiB with Content-Length, chunked, and Expect:
//! 100-continue, each stored byte-exact.

use crate::support::*;
use std::process::Command;
use weir::Config;

fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--fail-with-body",
            "--max-time",
            "120",
        ])
        .args(args)
        .output()
        .expect("curl is installed");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn curl_uploads_are_byte_exact() {
    let config = Config::default().with_max_body_size(None);
    let server = TestServer::start(config);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("upload.bin");
    let data = pattern(64 << 20, 11);
    std::fs::write(&path, &data).unwrap();
    let file_arg = format!("@{}", path.display());
    let expected = sha256_hex(&data);
    let url = server.url("/file");

    // Content-Length, no Expect.
    let out = curl(&["-T", path.to_str().unwrap(), "-H", "Expect:", &url]);
    assert!(out.starts_with(&expected), "{out}");
    // Expect: 100-continue (curl's default for large bodies).
    let out = curl(&[
        "-T",
        path.to_str().unwrap(),
        "-H",
        "Expect: 100-continue",
        &url,
    ]);
    assert!(out.starts_with(&expected), "{out}");
    // Chunked.
    let out = curl(&[
        "--data-binary",
        &file_arg,
        "-H",
        "Transfer-Encoding: chunked",
        &url,
    ]);
    assert!(out.starts_with(&expected), "{out}");
    // Through the buffered read path too.
    let out = curl(&["--data-binary", &file_arg, &server.url("/sha?buf=7000")]);
    assert!(out.starts_with(&expected), "{out}");
}
