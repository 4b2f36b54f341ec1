//! tus 1.0.0 on `/tus/` against the real binary: every rule over raw sockets, and tuspy (the
//! tus project's Python client) uploading whole and resuming an interrupted upload.

use crate::routes::b64;
use crate::support::*;
use std::path::Path;
use std::process::Command;

const T: &str = "\r\ntus-resumable: 1.0.0";
const OCTETS: &str = "\r\ncontent-type: application/offset+octet-stream";

fn sha256_b64(data: &[u8]) -> String {
    use sha2::Digest;
    b64(&sha2::Sha256::digest(data))
}

/// `POST /tus/` for `name` (in `dir` if given) of `length` bytes, with `body`: the response.
fn create(s: &Server, length: usize, name: &str, dir: Option<&str>, body: &[u8]) -> Resp {
    let mut meta = format!("filename {}", b64(name.as_bytes()));
    if let Some(dir) = dir {
        meta.push_str(&format!(
            ",dir {},filetype dGV4dC9wbGFpbg==",
            b64(dir.as_bytes())
        ));
    }
    let ct = if body.is_empty() { "" } else { OCTETS };
    s.request(
        &format!(
            "POST /tus/ HTTP/1.1{T}\r\nupload-length: {length}\r\nupload-metadata: {meta}{ct}"
        ),
        body,
    )
}

fn location(r: &Resp) -> String {
    assert_eq!(r.status, 201, "{:?}\n{}", r.headers, r.text());
    let l = r.header("location").expect("Location").to_owned();
    assert!(l.starts_with("/tus/"), "{l}");
    l
}

fn patch(s: &Server, url: &str, offset: usize, body: &[u8], extra: &str) -> Resp {
    s.request(
        &format!("PATCH {url} HTTP/1.1{T}{OCTETS}\r\nupload-offset: {offset}{extra}"),
        body,
    )
}

fn head(s: &Server, url: &str) -> Resp {
    s.request(&format!("HEAD {url} HTTP/1.1{T}"), b"")
}

/// Files in the resumable area (the partial data and records).
fn staged(root: &Path) -> usize {
    std::fs::read_dir(root.join(".weir-staging/resumable")).map_or(0, |d| d.count())
}

#[test]
fn options_answer_without_tus_resumable_and_other_requests_need_it() {
    let s = Server::start(&["--max-upload", "1MiB"]);
    let r = s.request("OPTIONS /tus/ HTTP/1.1", b"");
    assert_eq!(r.status, 204, "{:?}", r.headers);
    assert_eq!(r.header("tus-version").unwrap(), "1.0.0");
    assert_eq!(r.header("tus-resumable").unwrap(), "1.0.0");
    assert_eq!(
        r.header("tus-extension").unwrap(),
        "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum"
    );
    assert_eq!(r.header("tus-max-size").unwrap(), (1 << 20).to_string());
    assert_eq!(r.header("tus-checksum-algorithm").unwrap(), "sha256");
    for version in ["", "\r\ntus-resumable: 0.2.2"] {
        let r = s.request(
            &format!(
                "POST /tus/ HTTP/1.1{version}\r\nupload-length: 3\r\nupload-metadata: filename YQ=="
            ),
            b"",
        );
        assert_eq!(r.status, 412, "{:?}", r.headers);
        assert_eq!(r.header("tus-version").unwrap(), "1.0.0");
    }
    let r = s.request("HEAD /tus/00000000000000000000000000000000 HTTP/1.1", b"");
    assert_eq!(r.status, 412);
    assert_eq!(staged(&s.root), 0);
}

#[test]
fn create_head_patch_commit_the_file_under_files() {
    let s = Server::start(&[]);
    let body = data(300_000, 7);
    let url = location(&create(&s, body.len(), "f.bin", Some("a/b"), b""));
    let r = head(&s, &url);
    assert_eq!(r.status, 200, "{:?}", r.headers);
    assert_eq!(r.header("upload-offset").unwrap(), "0");
    assert_eq!(r.header("upload-length").unwrap(), body.len().to_string());
    assert_eq!(r.header("cache-control").unwrap(), "no-store");
    assert_eq!(r.header("tus-resumable").unwrap(), "1.0.0");
    assert!(
        r.header("upload-metadata")
            .unwrap()
            .contains("filename Zi5iaW4=")
    );
    let expires = r.header("upload-expires").unwrap();
    assert!(httpdate::parse_http_date(expires).is_ok(), "{expires}");

    // A PATCH needs the tus media type and the upload's offset.
    let r = s.request(
        &format!(
            "PATCH {url} HTTP/1.1{T}\r\ncontent-type: application/octet-stream\r\nupload-offset: 0"
        ),
        &body[..10],
    );
    assert_eq!(r.status, 415);
    let r = patch(&s, &url, 5, &body[..10], "");
    assert_eq!(r.status, 409, "{:?}", r.headers);
    assert_eq!(r.header("upload-offset").unwrap(), "0");

    let r = patch(&s, &url, 0, &body[..100_000], "");
    assert_eq!(r.status, 204, "{:?}\n{}", r.headers, r.text());
    assert_eq!(r.header("upload-offset").unwrap(), "100000");
    assert!(r.header("upload-expires").is_some());
    // Nothing partial is visible.
    assert_eq!(s.request("GET /files/a/b/f.bin HTTP/1.1", b"").status, 404);
    assert!(!s.root.join("a/b/f.bin").exists());
    // More than the length is refused before any is read.
    let r = patch(&s, &url, 100_000, &data(200_001, 1), "");
    assert_eq!(r.status, 413, "{:?}", r.headers);

    let r = patch(&s, &url, 100_000, &body[100_000..], "");
    assert_eq!(r.status, 204, "{:?}\n{}", r.headers, r.text());
    assert_eq!(r.header("upload-offset").unwrap(), body.len().to_string());
    assert_eq!(
        r.header("repr-digest").unwrap(),
        format!("sha-256=:{}:", sha256_b64(&body))
    );
    assert_eq!(std::fs::read(s.root.join("a/b/f.bin")).unwrap(), body);
    let r = s.request("GET /files/a/b/f.bin HTTP/1.1", b"");
    assert_eq!((r.status, r.body == body), (200, true));
    // After completion: the offset is the length; an empty PATCH at the end is answered.
    let r = head(&s, &url);
    assert_eq!(r.header("upload-offset").unwrap(), body.len().to_string());
    assert_eq!(patch(&s, &url, body.len(), b"", "").status, 204);
    assert_eq!(patch(&s, &url, body.len(), b"x", "").status, 400);
}

#[test]
fn creation_with_upload_stores_the_body_of_the_post() {
    let s = Server::start(&[]);
    let body = data(50_000, 3);
    let r = create(&s, body.len(), "whole", None, &body);
    location(&r);
    assert_eq!(r.header("upload-offset").unwrap(), body.len().to_string());
    assert_eq!(std::fs::read(s.root.join("whole")).unwrap(), body);

    let r = create(&s, body.len(), "part", None, &body[..20_000]);
    let url = location(&r);
    assert_eq!(r.header("upload-offset").unwrap(), "20000");
    assert!(!s.root.join("part").exists());
    assert_eq!(patch(&s, &url, 20_000, &body[20_000..], "").status, 204);
    assert_eq!(std::fs::read(s.root.join("part")).unwrap(), body);

    // An empty file completes at creation.
    location(&create(&s, 0, "empty", None, b""));
    assert_eq!(std::fs::read(s.root.join("empty")).unwrap(), b"");
    // A body needs the tus media type.
    let r = s.request(
        &format!("POST /tus/ HTTP/1.1{T}\r\nupload-length: 3\r\nupload-metadata: filename eA=="),
        b"abc",
    );
    assert_eq!(r.status, 415);
}

#[test]
fn a_chunk_whose_checksum_does_not_match_is_discarded() {
    let s = Server::start(&[]);
    let body = data(200_000, 5);
    let url = location(&create(&s, body.len(), "c", None, b""));
    let good = format!(
        "\r\nupload-checksum: sha256 {}",
        sha256_b64(&body[..80_000])
    );
    let wrong = format!("\r\nupload-checksum: sha256 {}", sha256_b64(b"other"));
    let r = patch(&s, &url, 0, &body[..80_000], &wrong);
    assert_eq!(r.status, 460, "{:?}\n{}", r.headers, r.text());
    assert_eq!(head(&s, &url).header("upload-offset").unwrap(), "0");
    let id = url.trim_start_matches("/tus/");
    let data_file = s.root.join(format!(".weir-staging/resumable/{id}.data"));
    assert_eq!(std::fs::metadata(&data_file).unwrap().len(), 0);
    // Unsupported algorithms and malformed values: 400, nothing kept.
    for bad in [
        "\r\nupload-checksum: md5 AAAA",
        "\r\nupload-checksum: sha256 !!",
        "\r\nupload-checksum: sha256",
    ] {
        assert_eq!(patch(&s, &url, 0, &body[..10], bad).status, 400, "{bad}");
    }
    let r = patch(&s, &url, 0, &body[..80_000], &good);
    assert_eq!(r.status, 204, "{:?}\n{}", r.headers, r.text());
    assert_eq!(r.header("upload-offset").unwrap(), "80000");
    let last = format!(
        "\r\nupload-checksum: sha256 {}",
        sha256_b64(&body[80_000..])
    );
    assert_eq!(patch(&s, &url, 80_000, &body[80_000..], &last).status, 204);
    assert_eq!(std::fs::read(s.root.join("c")).unwrap(), body);
}

#[test]
fn delete_terminates_the_upload_and_frees_its_data() {
    let s = Server::start(&[]);
    let url = location(&create(&s, 1000, "gone", None, &[b'x'; 400]));
    assert!(staged(&s.root) >= 2);
    let r = s.request(&format!("DELETE {url} HTTP/1.1{T}"), b"");
    assert_eq!(r.status, 204, "{:?}", r.headers);
    assert_eq!(head(&s, &url).status, 404);
    assert_eq!(patch(&s, &url, 400, b"y", "").status, 404);
    assert_eq!(
        s.request(&format!("DELETE {url} HTTP/1.1{T}"), b"").status,
        404
    );
    assert_eq!(staged(&s.root), 0);
    assert!(!s.root.join("gone").exists());
    assert_eq!(head(&s, "/tus/not-an-id").status, 404);
}

#[test]
fn targets_are_refused_like_any_path_and_sizes_are_limited() {
    let s = Server::start(&["--max-upload", "1000"]);
    for meta in [
        format!("filename {}", b64(b"../x")),
        format!("filename {}", b64(b".weir-staging")),
        format!("filename a,dir {}", b64(b"../../etc")),
        format!("filename {}", b64(b"a\\b")),
        "filetype dGV4dA==".to_owned(),
        "filename !!!".to_owned(),
    ] {
        let r = s.request(
            &format!("POST /tus/ HTTP/1.1{T}\r\nupload-length: 3\r\nupload-metadata: {meta}"),
            b"",
        );
        assert_eq!(r.status, 400, "{meta}: {}", r.text());
    }
    let r = s.request(
        &format!("POST /tus/ HTTP/1.1{T}\r\nupload-metadata: filename YQ=="),
        b"",
    );
    assert_eq!(r.status, 400, "no Upload-Length");
    let r = s.request(
        &format!("POST /tus/ HTTP/1.1{T}\r\nupload-length: 1001\r\nupload-metadata: filename YQ=="),
        b"",
    );
    assert_eq!(r.status, 413);
    assert_eq!(staged(&s.root), 0);
    let r = s.request(&format!("GET /tus/ HTTP/1.1{T}"), b"");
    assert_eq!(r.status, 405);
}

#[test]
fn tus_requests_need_the_write_token() {
    let s = Server::start(&["--token", "s3cret"]);
    assert_eq!(s.request("OPTIONS /tus/ HTTP/1.1", b"").status, 204);
    let r = create(&s, 3, "t", None, b"");
    assert_eq!(r.status, 401);
    assert_eq!(staged(&s.root), 0);
    let r = s.request(
        &format!(
            "POST /tus/ HTTP/1.1{T}\r\nauthorization: Bearer s3cret\r\nupload-length: 3\r\n\
             upload-metadata: filename dA=={OCTETS}"
        ),
        b"abc",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let url = location(&r);
    assert_eq!(head(&s, &url).status, 401);
    assert_eq!(std::fs::read(s.root.join("t")).unwrap(), b"abc");
}

/// `python3` with tuspy, or `None` (skipped, or failed, by `tools::require`).
fn tuspy() -> Option<()> {
    let found = weir_testkit::tools::python_imports("tusclient");
    weir_testkit::tools::require("tuspy", found, "pip install tuspy").then_some(())
}

fn run_tuspy(s: &Server, file: &Path, name: &str, dir: &str, mode: &str, url_file: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/service/tus_client.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(s.url("/tus/"))
        .arg(file)
        .args([name, dir, mode])
        .arg(url_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tuspy {mode}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tuspy_uploads_whole_and_resumes_an_interrupted_upload() {
    if tuspy().is_none() {
        return;
    }
    let s = Server::start(&[]);
    let body = data((5 << 20) + 12_345, 11);
    let file = s.dir.path().join("source.bin");
    std::fs::write(&file, &body).unwrap();
    let url_file = s.dir.path().join("url");

    run_tuspy(&s, &file, "whole.bin", "py/x", "whole", &url_file);
    assert_eq!(std::fs::read(s.root.join("py/x/whole.bin")).unwrap(), body);

    // Two chunks, then the client process ends; a new one resumes from the stored URL.
    run_tuspy(&s, &file, "cut.bin", "", "start", &url_file);
    assert!(!s.root.join("cut.bin").exists());
    let url = std::fs::read_to_string(&url_file).unwrap();
    let path = url.trim().trim_start_matches(&s.url(""));
    assert_eq!(
        head(&s, path).header("upload-offset").unwrap(),
        (2 << 20).to_string()
    );
    run_tuspy(&s, &file, "cut.bin", "", "resume", &url_file);
    assert_eq!(std::fs::read(s.root.join("cut.bin")).unwrap(), body);
    let r = s.request("GET /files/cut.bin HTTP/1.1", b"");
    assert_eq!(r.status, 200);
    assert_eq!(sha256(&r.body), sha256(&body));
}

/// Where `scripts/test` installs tus-js-client (`npm install --prefix target/tus-js`), unless
/// `TUS_JS_NODE_PATH` says otherwise.
fn tus_js_node_path() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("TUS_JS_NODE_PATH").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tus-js/node_modules"),
        std::path::PathBuf::from,
    );
    let found = Command::new("node")
        .args(["-e", "require('tus-js-client')"])
        .env("NODE_PATH", &path)
        .output()
        .is_ok_and(|o| o.status.success());
    let install = format!(
        "npm install --prefix target/tus-js tus-js-client, or set TUS_JS_NODE_PATH; looked in {}",
        path.display()
    );
    weir_testkit::tools::require("node with tus-js-client", found, &install).then_some(path)
}

#[test]
fn tus_js_client_uploads_whole_and_resumes_an_aborted_upload() {
    let Some(node_path) = tus_js_node_path() else {
        return;
    };
    let s = Server::start(&[]);
    let body = data((3 << 20) + 777, 13);
    let file = s.dir.path().join("source.bin");
    std::fs::write(&file, &body).unwrap();
    let url_file = s.dir.path().join("url");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/service/tus_client.js");
    let run = |name: &str, dir: &str, mode: &str| {
        let out = Command::new("node")
            .arg(&script)
            .arg(s.url("/tus/"))
            .arg(&file)
            .args([name, dir, mode])
            .arg(&url_file)
            .env("NODE_PATH", &node_path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tus-js-client {mode}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run("whole.bin", "js", "whole");
    assert_eq!(std::fs::read(s.root.join("js/whole.bin")).unwrap(), body);
    run("cut.bin", "", "start");
    assert!(!s.root.join("cut.bin").exists());
    let url = std::fs::read_to_string(&url_file).unwrap();
    let path = url.trim().trim_start_matches(&s.url(""));
    let offset: u64 = head(&s, path)
        .header("upload-offset")
        .unwrap()
        .parse()
        .unwrap();
    assert!(offset >= 2 << 20 && offset < body.len() as u64, "{offset}");
    run("cut.bin", "", "resume");
    assert_eq!(std::fs::read(s.root.join("cut.bin")).unwrap(), body);
}

/// Opens a PATCH of `total` bytes at `offset`, waits for its `100 Continue` (sent when the
/// handler starts reading the body: it holds the upload's lock by then), and sends `part` of
/// them; the connection stays open.
fn open_patch(
    s: &Server,
    url: &str,
    offset: usize,
    total: usize,
    part: &[u8],
    extra: &str,
) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "PATCH {url} HTTP/1.1{T}{OCTETS}\r\nupload-offset: {offset}{extra}\r\nhost: t\r\n\
         expect: 100-continue\r\ncontent-length: {total}\r\n\r\n"
    );
    c.write_all(head.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(c.read(&mut byte).unwrap(), 1, "closed before 100 Continue");
        got.push(byte[0]);
    }
    assert!(
        got.starts_with(b"HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    c.write_all(part).unwrap();
    c
}

#[test]
fn one_patch_at_a_time_and_a_cut_patch_keeps_what_arrived() {
    let s = Server::start(&[]);
    let body = data(400_000, 9);
    let url = location(&create(&s, body.len(), "cut", None, b""));
    let first = open_patch(&s, &url, 0, body.len(), &body[..150_000], "");
    assert_eq!(patch(&s, &url, 0, b"", "").status, 423);
    // Cut once the server has written what was sent: bytes still in the socket when the cut
    // arrives may come with it and go with the request (on a loaded machine, all of them).
    let data = s
        .root
        .join(".weir-staging/resumable")
        .join(format!("{}.data", url.rsplit('/').next().unwrap()));
    wait_for("the PATCH's bytes to reach the data file", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() == 150_000)
    });
    drop(first);
    // The cut request's bytes that arrived are kept (and durable) once the server saw the cut.
    let mut offset = 0;
    wait_for("the cut PATCH to be recorded", || {
        let r = head(&s, &url);
        offset = r.header("upload-offset").unwrap().parse().unwrap();
        offset > 0 && patch(&s, &url, offset, b"", "").status == 204
    });
    assert_eq!(offset, 150_000);
    assert_eq!(patch(&s, &url, offset, &body[offset..], "").status, 204);
    assert_eq!(std::fs::read(s.root.join("cut")).unwrap(), body);
}

#[test]
fn a_cut_that_comes_with_the_last_bytes_keeps_them() {
    use std::io::Write;
    let s = Server::start(&[]);
    let body = data(400_000, 10);
    let url = location(&create(&s, body.len(), "late", None, b""));
    let mut first = open_patch(&s, &url, 0, body.len(), b"", "");
    // The server is stopped while the client sends and cuts: when it goes on, the bytes and the
    // end of the connection are all there, the cut in the same read as the last of them.
    let pid = s.child.id().to_string();
    let signal = |which: &str| {
        let done = std::process::Command::new("kill")
            .args([which, &pid])
            .status();
        assert!(done.unwrap().success());
    };
    signal("-STOP");
    first.write_all(&body[..150_000]).unwrap();
    drop(first);
    signal("-CONT");
    let mut offset = 0;
    wait_for("the cut PATCH to be recorded", || {
        let r = head(&s, &url);
        offset = r.header("upload-offset").unwrap().parse().unwrap();
        patch(&s, &url, offset, b"", "").status == 204
    });
    // Every byte that arrived is kept, not only those read before the cut was seen.
    assert_eq!(offset, 150_000);
    assert_eq!(patch(&s, &url, offset, &body[offset..], "").status, 204);
    assert_eq!(std::fs::read(s.root.join("late")).unwrap(), body);
}

#[test]
fn a_cut_checksummed_patch_keeps_nothing() {
    let s = Server::start(&[]);
    let body = data(300_000, 4);
    let url = location(&create(&s, body.len(), "k", None, b""));
    let sum = format!("\r\nupload-checksum: sha256 {}", sha256_b64(&body));
    let first = open_patch(&s, &url, 0, body.len(), &body[..100_000], &sum);
    assert_eq!(patch(&s, &url, 0, b"", "").status, 423);
    drop(first);
    // Free again, and at 0: nothing of an unverifiable request was acknowledged.
    wait_for("the cut PATCH to end", || {
        patch(&s, &url, 0, b"", "").status == 204
    });
    assert_eq!(head(&s, &url).header("upload-offset").unwrap(), "0");
    let r = patch(&s, &url, 0, &body, &sum);
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("k")).unwrap(), body);
}

#[test]
fn a_deferred_length_is_declared_by_a_later_patch() {
    let s = Server::start(&[]);
    let r = s.request("OPTIONS /tus/ HTTP/1.1", b"");
    assert!(
        r.header("tus-extension")
            .unwrap()
            .split(',')
            .any(|e| e == "creation-defer-length"),
        "{:?}",
        r.headers
    );
    let meta = format!("filename {}", b64(b"deferred.bin"));
    let r = s.request(
        &format!("POST /tus/ HTTP/1.1{T}\r\nupload-defer-length: 1\r\nupload-metadata: {meta}"),
        b"",
    );
    let url = location(&r);
    let h = head(&s, &url);
    assert_eq!(h.header("upload-defer-length").unwrap(), "1");
    assert!(h.header("upload-length").is_none(), "{:?}", h.headers);
    let body = data(1500, 31);
    let r = patch(&s, &url, 0, &body[..1000], "");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("upload-offset").unwrap(), "1000");
    assert!(!s.root.join("deferred.bin").exists());
    // A length below the offset is refused; the right one completes the upload.
    let r = patch(&s, &url, 1000, &body[1000..], "\r\nupload-length: 999");
    assert_eq!(r.status, 400, "{}", r.text());
    let r = patch(&s, &url, 1000, &body[1000..], "\r\nupload-length: 1500");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("deferred.bin")).unwrap(), body);
    let h = head(&s, &url);
    assert_eq!(h.header("upload-length").unwrap(), "1500");
    // Both fields, or a defer value other than 1: 400, nothing created.
    let before = staged(&s.root);
    for fields in [
        "\r\nupload-length: 10\r\nupload-defer-length: 1",
        "\r\nupload-defer-length: 2",
    ] {
        let r = s.request(
            &format!("POST /tus/ HTTP/1.1{T}{fields}\r\nupload-metadata: {meta}"),
            b"",
        );
        assert_eq!(r.status, 400, "{fields:?}: {}", r.text());
    }
    assert_eq!(staged(&s.root), before);
}

#[test]
fn a_malformed_upload_length_is_400_even_beside_a_deferred_one() {
    let s = Server::start(&[]);
    let meta = format!("filename {}", b64(b"m.bin"));
    // Not a plain non-negative decimal: a sign, an exponent, a list, empty, past u64.
    for value in ["-1", "1e3", "5,6", "", "+5", "99999999999999999999999"] {
        for defer in ["", "\r\nupload-defer-length: 1"] {
            let r = s.request(
                &format!(
                    "POST /tus/ HTTP/1.1{T}\r\nupload-length: {value}{defer}\r\n\
                     upload-metadata: {meta}"
                ),
                b"",
            );
            assert_eq!(r.status, 400, "{value:?}{defer:?}: {}", r.text());
            assert!(r.json()["detail"].as_str().is_some(), "{value:?}");
        }
    }
    // A malformed Upload-Defer-Length is not a deferral.
    for value in ["", "01x", "1,1"] {
        let r = s.request(
            &format!(
                "POST /tus/ HTTP/1.1{T}\r\nupload-defer-length: {value}\r\nupload-metadata: {meta}"
            ),
            b"",
        );
        assert_eq!(r.status, 400, "defer {value:?}: {}", r.text());
    }
    assert_eq!(staged(&s.root), 0);
    // A deferred upload's later PATCH: a malformed length is refused, its bytes not taken.
    let r = s.request(
        &format!("POST /tus/ HTTP/1.1{T}\r\nupload-defer-length: 1\r\nupload-metadata: {meta}"),
        b"",
    );
    let url = location(&r);
    for value in ["-1", "1e3", "5,6", ""] {
        let r = patch(&s, &url, 0, b"abc", &format!("\r\nupload-length: {value}"));
        assert_eq!(r.status, 400, "PATCH {value:?}: {}", r.text());
    }
    assert_eq!(head(&s, &url).header("upload-offset").unwrap(), "0");
}

/// `weir_http_requests_in_flight` as `/metrics` shows it (the scrape itself counted).
fn in_flight(s: &Server) -> u64 {
    let r = s.request("GET /metrics HTTP/1.1", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("weir_http_requests_in_flight "))
        .expect("the in-flight gauge");
    line.trim().parse().unwrap()
}

#[test]
fn a_head_during_a_patch_answers_the_offset_the_patch_leaves() {
    use std::io::{Read, Write};
    let s = Server::start(&[]);
    let body = data(400_000, 12);
    let url = location(&create(&s, body.len(), "waited", None, b""));
    let first = open_patch(&s, &url, 0, body.len(), &body[..150_000], "");
    let data = s
        .root
        .join(".weir-staging/resumable")
        .join(format!("{}.data", url.rsplit('/').next().unwrap()));
    wait_for("the PATCH's bytes to reach the data file", || {
        std::fs::metadata(&data).is_ok_and(|m| m.len() == 150_000)
    });
    // The HEAD is sent while the PATCH runs: it is answered at once (the outdated offset), or
    // it is in flight beside the PATCH (and the scrape) until the PATCH ends.
    let mut h = std::net::TcpStream::connect(s.addr).unwrap();
    write!(
        h,
        "HEAD {url} HTTP/1.1{T}\r\nhost: t\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    h.set_nonblocking(true).unwrap();
    let mut early = Vec::new();
    wait_for("the HEAD to be answered or to wait", || {
        let mut buf = [0u8; 4096];
        match h.read(&mut buf) {
            Ok(n) => early.extend_from_slice(&buf[..n]),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
        }
        early.ends_with(b"\r\n\r\n") || in_flight(&s) == 3
    });
    drop(first);
    h.set_nonblocking(false).unwrap();
    h.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut raw = early;
    let _ = h.read_to_end(&mut raw);
    let answer = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    let offset: u64 = answer
        .lines()
        .find_map(|l| l.strip_prefix("upload-offset:"))
        .unwrap_or_else(|| panic!("no Upload-Offset in {answer}"))
        .trim()
        .parse()
        .unwrap();
    // What the PATCH left is what the HEAD said: the next PATCH at that offset is taken.
    let stored = std::fs::metadata(&data).unwrap().len();
    assert_eq!(offset, stored, "{answer}");
    assert_eq!(offset, 150_000);
    let r = patch(&s, &url, 150_000, &body[150_000..], "");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(std::fs::read(s.root.join("waited")).unwrap(), body);
}
