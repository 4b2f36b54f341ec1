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

/// `BodyWriter::send_file` over HTTP/1.1: the file's bytes (by `sendfile`) as one chunk
/// between the body's other writes; a file shorter than asked for cuts the response (no last
/// chunk: curl fails), never ends it.
#[test]
fn a_file_inside_a_streamed_body() {
    let server = TestServer::start(Config::default());
    let out = Command::new("curl")
        .args(["-sS", "--raw", &server.url("/sendfile-in-body?len=3000000")])
        .output()
        .unwrap();
    assert!(out.status.success());
    let raw = out.stdout;
    assert!(raw.starts_with(b"4\r\nhead\r\n"), "chunked");
    assert!(raw.ends_with(b"4\r\ntail\r\n0\r\n\r\n"));
    let body = Command::new("curl")
        .args(["-sS", &server.url("/sendfile-in-body?len=3000000")])
        .output()
        .unwrap()
        .stdout;
    let mut expected = b"head".to_vec();
    expected.extend_from_slice(&pattern(3_000_000, 9)[3..]);
    expected.extend_from_slice(b"tail");
    assert!(body == expected, "a file inside a streamed body");
    let cut = Command::new("curl")
        .args(["-sS", &server.url("/sendfile-in-body?len=3000000&short=1")])
        .output()
        .unwrap();
    assert!(!cut.status.success(), "a short file must cut the response");
    assert!(!cut.stdout.ends_with(b"tail"));
}
