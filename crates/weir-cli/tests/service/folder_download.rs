//! Folders out (issue 35, point 1): a folder as tar and zip read back by `tar`, Python's
//! `tarfile`/`zipfile` and `unzip`, byte for byte; an HTML index that `wget -r` and rclone's
//! `http` backend mirror byte for byte; a file cut during the archive fails the download
//! instead of ending a valid archive; the server's memory stays bounded whatever the folder.

use super::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use weir_testkit::tools;

/// A tree with nesting, names with spaces, `%`, `&`, unicode and quotes, an empty folder and
/// a file of a few MiB.
fn make_tree(root: &Path) {
    let d = root.join("d");
    for sub in ["sub/deep", "é x%/ü", "empty", "a&b 'q'"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    std::fs::write(d.join("a.txt"), b"hello\n").unwrap();
    std::fs::write(d.join("zero"), b"").unwrap();
    std::fs::write(d.join("sub/big.bin"), data(3 << 20, 7)).unwrap();
    std::fs::write(d.join("sub/deep/z 1.txt"), b"z").unwrap();
    std::fs::write(d.join("é x%/ü/日本 100%.txt"), data(1000, 3)).unwrap();
    std::fs::write(d.join("a&b 'q'/\"quoted\".txt"), b"q").unwrap();
    let long = "n".repeat(120);
    std::fs::write(d.join(format!("sub/{long}")), data(513, 5)).unwrap();
}

/// Every file and folder under `dir` (relative paths, folders ending in `/`), sorted, with
/// each file's SHA-256 (byte-exact comparisons that print short).
fn snapshot(dir: &Path) -> Vec<(String, Option<String>)> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, Option<String>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(base)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            if e.file_type().unwrap().is_dir() {
                out.push((format!("{rel}/"), None));
                walk(base, &e.path(), out);
            } else {
                out.push((rel, Some(sha256(&std::fs::read(e.path()).unwrap()))));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Downloads `url` with curl into `to`, returning the response head.
fn fetch(url: &str, to: &Path) -> String {
    let out = curl(&["-f", "-D", "-", "-o", to.to_str().unwrap(), url]);
    assert!(out.status.success(), "{url}: {out:?}");
    String::from_utf8_lossy(&out.stdout).to_lowercase()
}

/// Python: extract an archive with `tarfile` or `zipfile` into `to` (zip: `testzip()` checks
/// every CRC first); prints the member names.
const PY_EXTRACT: &str = r#"
import sys, tarfile, zipfile
kind, path, to = sys.argv[1:4]
if kind == "tar":
    with tarfile.open(path) as t:
        t.extractall(to, filter="data")
        print("\n".join(t.getnames()))
else:
    with zipfile.ZipFile(path) as z:
        bad = z.testzip()
        assert bad is None, bad
        z.extractall(to)
        print("\n".join(z.namelist()))
"#;

#[test]
fn tar_and_zip_of_a_tree_are_byte_exact() {
    let s = Server::start(&[]);
    make_tree(&s.root);
    // A name that looks percent-encoded (wget, below, would decode it once more when it
    // names its local file: only the archives get it).
    std::fs::write(s.root.join("d/é x%/%20.txt"), b"%20").unwrap();
    let expected = snapshot(&s.root.join("d"));
    let work = tempfile::tempdir().unwrap();
    let w = work.path();

    // tar: headers, then GNU tar lists and extracts it.
    let head = fetch(&s.url("/files/d/?tar"), &w.join("d.tar"));
    assert!(head.contains("content-type: application/x-tar"), "{head}");
    assert!(
        head.contains("content-disposition: attachment; filename=\"d.tar\""),
        "{head}"
    );
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let listed = run(Command::new("tar").arg("-tf").arg(w.join("d.tar")));
    assert!(listed.lines().any(|l| l == "d/empty/"), "{listed}");
    std::fs::create_dir(w.join("gnu")).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(w.join("d.tar"))
        .arg("-C")
        .arg(w.join("gnu")));
    assert_eq!(snapshot(&w.join("gnu/d")), expected);
    // The same bytes every time (stable order).
    fetch(&s.url("/files/d/?tar"), &w.join("again.tar"));
    assert_eq!(
        std::fs::read(w.join("d.tar")).unwrap(),
        std::fs::read(w.join("again.tar")).unwrap()
    );

    // The same bytes over HTTP/2 (where the files go through a buffer, not `sendfile`).
    let out = curl(&[
        "-f",
        "--http2-prior-knowledge",
        "-o",
        w.join("h2.tar").to_str().unwrap(),
        &s.url("/files/d/?tar"),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        std::fs::read(w.join("d.tar")).unwrap() == std::fs::read(w.join("h2.tar")).unwrap(),
        "HTTP/2's tar differs"
    );

    // Python's tarfile.
    run(Command::new("python3")
        .args(["-c", PY_EXTRACT, "tar"])
        .arg(w.join("d.tar"))
        .arg(w.join("py-tar")));
    assert_eq!(snapshot(&w.join("py-tar/d")), expected);

    // zip: zipfile checks every CRC, then extracts.
    let head = fetch(&s.url("/files/d/?zip"), &w.join("d.zip"));
    assert!(head.contains("content-type: application/zip"), "{head}");
    run(Command::new("python3")
        .args(["-c", PY_EXTRACT, "zip"])
        .arg(w.join("d.zip"))
        .arg(w.join("py-zip")));
    assert_eq!(snapshot(&w.join("py-zip/d")), expected);
    let zip = std::fs::read(w.join("d.zip")).unwrap();
    assert!(
        !contains(&zip, b"PK\x06\x06"),
        "no zip64 end record when nothing overflows"
    );

    // A zip with every zip64 structure (`?zip=64`), read by zipfile.
    fetch(&s.url("/files/d/?zip=64"), &w.join("d64.zip"));
    let zip64 = std::fs::read(w.join("d64.zip")).unwrap();
    assert!(contains(&zip64, b"PK\x06\x06") && contains(&zip64, b"PK\x06\x07"));
    run(Command::new("python3")
        .args(["-c", PY_EXTRACT, "zip"])
        .arg(w.join("d64.zip"))
        .arg(w.join("py-zip64")));
    assert_eq!(snapshot(&w.join("py-zip64/d")), expected);

    if tools::require(
        "unzip",
        tools::on_path("unzip").is_some(),
        "apt-get install unzip",
    ) {
        for name in ["d.zip", "d64.zip"] {
            let out = run(Command::new("unzip").arg("-t").arg(w.join(name)));
            assert!(out.contains("No errors detected"), "{out}");
        }
        std::fs::create_dir(w.join("unzip")).unwrap();
        run(Command::new("unzip")
            .arg("-q")
            .arg(w.join("d.zip"))
            .arg("-d")
            .arg(w.join("unzip")));
        assert_eq!(snapshot(&w.join("unzip/d")), expected);
    }

    // An empty folder, the whole store, a folder with a non-ASCII name, a missing one.
    fetch(&s.url("/files/d/empty/?tar"), &w.join("empty.tar"));
    let listed = run(Command::new("tar").arg("-tf").arg(w.join("empty.tar")));
    assert_eq!(listed, "empty/\n");
    fetch(&s.url("/files/d/empty/?zip"), &w.join("empty.zip"));
    run(Command::new("python3")
        .args(["-c", PY_EXTRACT, "zip"])
        .arg(w.join("empty.zip"))
        .arg(w.join("py-empty")));
    fetch(&s.url("/files/?tar"), &w.join("all.tar"));
    std::fs::create_dir(w.join("all")).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(w.join("all.tar"))
        .arg("-C")
        .arg(w.join("all")));
    assert_eq!(snapshot(&w.join("all/files/d")), expected);
    let head = fetch(&s.url("/files/d/%C3%A9%20x%25/?tar"), &w.join("u.tar"));
    assert!(
        head.contains("filename*=utf-8''%c3%a9%20x%25.tar"),
        "RFC 6266 filename*: {head}"
    );
    let (status, _) = curl_status(&[&s.url("/files/nothing/?tar")]);
    assert_eq!(status, 404);
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_html_index_is_walked_by_wget_and_rclone() {
    let s = Server::start(&[]);
    make_tree(&s.root);
    let expected = snapshot(&s.root.join("d"));
    let work = tempfile::tempdir().unwrap();
    let w = work.path();

    // Who gets what at a folder's URL: JSON stays the default for programs, the page for a
    // browser's navigation; `?html`, wget and rclone get the index; a query names a format
    // whatever the `Accept`.
    let get = |head: &str| s.request(&format!("GET /files/d/{head}"), b"");
    let r = get(" HTTP/1.1");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = get(" HTTP/1.1\r\naccept: */*\r\nuser-agent: curl/8.0");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = get(" HTTP/1.1\r\naccept: application/json\r\nuser-agent: Wget/1.21.3");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = get("?json HTTP/1.1\r\nuser-agent: rclone/v1.60.1");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let browser = "accept: text/html,application/xhtml+xml,*/*;q=0.8";
    let r = get(&format!(" HTTP/1.1\r\n{browser}"));
    assert!(r.text().contains("/assets/weir.js"), "the page");
    let r = get(&format!("?tar HTTP/1.1\r\n{browser}"));
    assert_eq!(r.header("content-type"), Some("application/x-tar"));
    for head in [
        "?html HTTP/1.1",
        " HTTP/1.1\r\naccept: */*\r\nuser-agent: Wget/1.21.3",
        " HTTP/1.1\r\nuser-agent: rclone/v1.60.1",
    ] {
        let r = get(head);
        assert_eq!(r.status, 200, "{head}");
        assert_eq!(
            r.header("content-type"),
            Some("text/html; charset=utf-8"),
            "{head}"
        );
        let text = r.text();
        assert!(
            text.contains("<a href=\"%C3%A9%20x%25/\">é x%/</a>"),
            "{head}: {text}"
        );
        assert!(text.contains("&amp;b &#39;q&#39;/"), "{text}");
        assert!(!text.contains("?"), "no link with a query: {text}");
    }

    // wget -r mirrors the tree through the index.
    if tools::require(
        "wget",
        tools::on_path("wget").is_some(),
        "apt-get install wget",
    ) {
        let out = w.join("wget");
        run(Command::new("wget")
            .args([
                "-q",
                "-r",
                "-np",
                "-nH",
                "--cut-dirs=2",
                "-R",
                "index.html*",
                "-P",
            ])
            .arg(&out)
            .arg(s.url("/files/d/")));
        assert_eq!(snapshot(&out), expected);
    }
    // rclone's http backend copies it.
    if tools::require(
        "rclone",
        tools::on_path("rclone").is_some(),
        "apt-get install rclone",
    ) {
        let out = w.join("rclone");
        run(Command::new("rclone")
            .args([
                "copy",
                "--create-empty-src-dirs",
                "--config",
                "/dev/null",
                "--http-url",
            ])
            .arg(s.url("/files/d/"))
            .arg(":http:")
            .arg(&out));
        assert_eq!(snapshot(&out), expected);
    }
}

/// Reads the rest of a chunked body from `stream` until the connection ends: (payload bytes,
/// whether the last chunk came).
fn read_chunked(stream: &mut TcpStream, already: Vec<u8>) -> (Vec<u8>, bool) {
    let mut raw = already;
    let _ = stream.read_to_end(&mut raw);
    let mut payload = Vec::new();
    let mut at = 0;
    loop {
        let Some(end) = raw[at..].windows(2).position(|w| w == b"\r\n") else {
            return (payload, false);
        };
        let size_text = std::str::from_utf8(&raw[at..at + end]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap(), 16).unwrap();
        at += end + 2;
        if size == 0 {
            return (payload, true);
        }
        if raw.len() < at + size + 2 {
            payload.extend_from_slice(&raw[at..]);
            return (payload, false);
        }
        payload.extend_from_slice(&raw[at..at + size]);
        at += size + 2;
    }
}

/// Starts `GET target` and reads until `want` body bytes came (and the head): returns the
/// stream and the body bytes read so far (raw, chunked).
fn start_download(s: &Server, target: &str, want: usize) -> (TcpStream, Vec<u8>) {
    let mut stream = TcpStream::connect(s.addr).unwrap();
    // `close`: the server ends the connection after a complete answer too, so reading to
    // the end tells both cases apart.
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let body_at = loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the head");
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    assert!(
        raw.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
    let mut body = raw.split_off(body_at);
    while body.len() < want {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0);
        body.extend_from_slice(&buf[..n]);
    }
    (stream, body)
}

/// A file cut in place while its bytes stream (an outside writer: weir's own writes replace
/// whole files) fails the download: the connection ends without the last chunk, so no valid
/// archive reaches the client; a file replaced through weir keeps its opened version whole.
#[test]
fn a_file_that_changes_during_the_archive_is_never_half_included() {
    for format in ["tar", "zip"] {
        let s = Server::start(&[]);
        let dir = s.root.join("d");
        std::fs::create_dir_all(&dir).unwrap();
        let big = data(24 << 20, 11);
        std::fs::write(dir.join("big.bin"), &big).unwrap();
        std::fs::write(dir.join("next.txt"), b"after").unwrap();

        // Read 1 MiB, then truncate the file to a third in place; the server, blocked on the
        // socket, finds the file short when it reads on.
        let (mut stream, body) = start_download(&s, &format!("/files/d/?{format}"), 1 << 20);
        std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("big.bin"))
            .unwrap()
            .set_len(big.len() as u64 / 3)
            .unwrap();
        let (payload, complete) = read_chunked(&mut stream, body);
        assert!(!complete, "{format}: the body must be cut, not ended");
        assert!(payload.len() < big.len(), "{format}");
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join(format!("cut.{format}"));
        std::fs::write(&path, &payload).unwrap();
        let out = Command::new("python3")
            .args(["-c", PY_EXTRACT, format])
            .arg(&path)
            .arg(work.path().join("x"))
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "{format}: a cut archive must not read as valid"
        );

        // Replaced through weir while streaming: the opened version, whole.
        std::fs::write(dir.join("big.bin"), &big).unwrap();
        let (mut stream, body) = start_download(&s, &format!("/files/d/?{format}"), 1 << 20);
        let new = data(24 << 20, 12);
        let r = s.request("PUT /files/d/big.bin HTTP/1.1", &new);
        assert_eq!(r.status, 200, "{}", r.text());
        let (payload, complete) = read_chunked(&mut stream, body);
        assert!(complete, "{format}");
        std::fs::write(&path, &payload).unwrap();
        run(Command::new("python3")
            .args(["-c", PY_EXTRACT, format])
            .arg(&path)
            .arg(work.path().join("whole")));
        let got = std::fs::read(work.path().join("whole/d/big.bin")).unwrap();
        assert!(got == big, "{format}: the version opened, whole");
    }
}

/// Peak RSS (`VmHWM`) while archiving 2,000 small files and one 256 MiB file, as tar and as
/// zip, to a client that reads everything: the growth is far below the folder's size (one
/// buffer and a page per level; for zip, the central directory of 2,000 entries).
#[test]
fn archiving_a_large_folder_keeps_memory_bounded() {
    let s = Server::start(&[]);
    let dir = s.root.join("many");
    std::fs::create_dir_all(dir.join("small")).unwrap();
    for i in 0..2000 {
        std::fs::write(dir.join(format!("small/file-{i:04}.txt")), format!("{i}\n")).unwrap();
    }
    let big = std::fs::File::create(dir.join("big.bin")).unwrap();
    big.set_len(256 << 20).unwrap();
    drop(big);
    let before = proc_status_kib(s.pid(), "VmHWM");
    for format in ["tar", "zip"] {
        let out = curl(&[
            "-f",
            "-o",
            "/dev/null",
            "-w",
            "%{size_download}",
            &s.url(&format!("/files/many/?{format}")),
        ]);
        assert!(out.status.success(), "{out:?}");
        let size: u64 = String::from_utf8_lossy(&out.stdout).parse().unwrap();
        assert!(size > 256 << 20, "{format}: {size}");
    }
    let after = proc_status_kib(s.pid(), "VmHWM");
    eprintln!("VmHWM {before} KiB before, {after} KiB after archiving 256 MiB + 2,000 files");
    assert!(
        after.saturating_sub(before) < 48 * 1024,
        "peak RSS grew by {} KiB",
        after - before
    );
}

/// A prefix token archives only folders at or under its prefix.
#[test]
fn a_prefix_token_archives_only_under_its_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        "admin-token read,write\nmine-token read photos/2024\n",
    )
    .unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("photos/2024")).unwrap();
    std::fs::create_dir_all(root.join("photos/2025")).unwrap();
    std::fs::write(root.join("photos/2024/a.jpg"), b"a").unwrap();
    std::fs::write(root.join("photos/2025/b.jpg"), b"b").unwrap();
    let (child, addr) = spawn(
        &root,
        dir.path(),
        &["--token-file", file.to_str().unwrap(), "--token-read"],
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = Server {
        child,
        addr,
        dir,
        root,
    };
    let get = |path: &str, token: &str| {
        s.request(
            &format!("GET {path} HTTP/1.1\r\nauthorization: Bearer {token}"),
            b"",
        )
        .status
    };
    for format in ["tar", "zip", "html"] {
        assert_eq!(
            get(&format!("/files/photos/2024/?{format}"), "mine-token"),
            200
        );
        assert_eq!(get(&format!("/files/photos/?{format}"), "mine-token"), 403);
        assert_eq!(get(&format!("/files/?{format}"), "mine-token"), 403);
        assert_eq!(get(&format!("/files/photos/?{format}"), "nobody"), 401);
        assert_eq!(get(&format!("/files/photos/?{format}"), "admin-token"), 200);
    }
}

/// `--zip-max-entries`: a zip whose central directory would hold more entries is refused with
/// `413` before any byte; tar has no such bound.
#[test]
fn a_zip_past_the_entry_bound_is_refused_before_any_byte() {
    let s = Server::start(&["--zip-max-entries", "4"]);
    let dir = s.root.join("d");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    for name in ["a", "b", "sub/c"] {
        std::fs::write(dir.join(name), name).unwrap();
    }
    // d/, a, b, sub/, sub/c: 5 entries.
    let r = s.request("GET /files/d/?zip HTTP/1.1", b"");
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    assert!(r.text().contains("?tar"), "{}", r.text());
    assert_eq!(s.request("GET /files/d/?tar HTTP/1.1", b"").status, 200);
    // d/sub/, sub/c: within the bound.
    let r = s.request("GET /files/d/sub/?zip HTTP/1.1", b"");
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The same cut over HTTP/2: the client holds its stream window (64 KiB) until the file is cut
/// in place, then reads on; the stream is reset, never ended.
#[test]
fn a_file_cut_during_the_archive_resets_the_http2_stream() {
    let s = Server::start(&[]);
    let dir = s.root.join("d");
    std::fs::create_dir_all(&dir).unwrap();
    let big = data(8 << 20, 13);
    std::fs::write(dir.join("big.bin"), &big).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (received, ended) = rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        let (mut client, conn) = h2::client::Builder::new()
            .initial_window_size(65_535)
            .handshake::<_, bytes::Bytes>(tcp)
            .await
            .unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let request = http::Request::get("http://t/files/d/?tar")
            .body(())
            .unwrap();
        let (response, _) = client.send_request(request, true).unwrap();
        let response = response.await.unwrap();
        assert_eq!(response.status(), 200);
        let mut body = response.into_body();
        // Take 32 KiB without giving the window back: the server stops there.
        let mut received = 0usize;
        let mut held = 0usize;
        while received < 32 * 1024 {
            let chunk = body.data().await.unwrap().unwrap();
            received += chunk.len();
            held += chunk.len();
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("big.bin"))
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let _ = body.flow_control().release_capacity(held);
        loop {
            match body.data().await {
                Some(Ok(chunk)) => {
                    received += chunk.len();
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                Some(Err(e)) => {
                    assert!(e.is_reset(), "{e}");
                    return (received, false);
                }
                None => return (received, true),
            }
        }
    });
    assert!(!ended, "the stream must be reset, not ended");
    assert!(received < big.len(), "{received}");
}
