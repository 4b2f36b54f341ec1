//! Forms (`POST /files/{dir}/`, `multipart/form-data`) and folder deletes with
//! `weir serve --store s3://`, against SeaweedFS's `weed mini` (`weir_testkit::seaweed`) and the
//! `weir` binary: `curl -F` with files below and above the part size, the memory of a form of
//! many files, and the all-or-none cases (a body cut off, `If-None-Match: *`, a target written while the form arrives, too
//! large, a name twice), each checked in the bucket: nothing stored, no multipart upload left.
//! Skipped with a loud message when `weed` is not installed, failed under `WEIR_REQUIRE_TOOLS=1`.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use weir_testkit::h1::{Client, form_body, request};
use weir_testkit::seaweed::{self, Seaweed};

mod s3_nodes;
use s3_nodes::{
    Node, base64_of, data, direct, hex, json, runtime, start_node, start_weed, vm_hwm_kib,
};

const MIB: usize = 1 << 20;
const PROBLEMS: &str = "https://weir.dev/problems/";

/// `weed mini` with its bucket, and a node on it with 5 MiB parts, two in flight, and `args`;
/// `None` (skipped) without `weed`.
fn start(args: &[&str]) -> Option<(Seaweed, Node)> {
    let weed = start_weed()?;
    let mut all = vec!["--s3-part-size", "5MiB", "--s3-parts-in-flight", "2"];
    all.extend_from_slice(args);
    let node = start_node(&weed, &format!("s3://{}", seaweed::BUCKET), &all);
    Some((weed, node))
}

/// The bucket's multipart uploads neither completed nor aborted.
fn pending(weed: &Seaweed) -> Vec<String> {
    runtime()
        .block_on(direct(weed).pending_multipart_keys())
        .unwrap()
}

/// Waits (at most 30 s) until `pending(weed)` is `want`.
fn wait_pending(weed: &Seaweed, want: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = pending(weed);
        if now == want {
            return;
        }
        assert!(Instant::now() < deadline, "pending {now:?}, want {want:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A form body (boundary `XX`) with one file part per `(filename, content)`.
fn form(parts: &[(&str, &[u8])]) -> Vec<u8> {
    form_body(parts)
}

/// The head of a form `POST` to `/files/{dir}/` with `extra` fields.
fn form_head(dir: &str, extra: &str) -> String {
    format!("POST /files/{dir}/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=XX{extra}")
}

fn status_of(addr: SocketAddr, path: &str) -> u16 {
    request(addr, &format!("GET /files/{path} HTTP/1.1"), b"").status
}

/// `curl -F` with five files: one above the part size (a multipart upload of two parts), two of
/// 3 MiB (the first waits in memory, the second no longer fits the form's one-part budget and
/// is sent at once as a one-part multipart upload), a small one with its media type, one into
/// a subfolder; and a field without a file. 201 with each file's size and SHA-256, each file
/// byte-exact with its `Repr-Digest`, no multipart upload left.
#[test]
fn a_form_of_several_files_is_stored_whole() {
    let Some((weed, node)) = start(&[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("a.txt", b"hello, form".to_vec()),
        ("big.bin", data(6 * MIB + 17, 1)),
        ("c.bin", data(3 * MIB, 2)),
        ("d.bin", data(3 * MIB, 3)),
        ("e.txt", b"in a subfolder".to_vec()),
    ];
    for (name, content) in &files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let at = |name: &str| dir.path().join(name).display().to_string();
    let out = dir.path().join("answer");
    let curl = std::process::Command::new("curl")
        .args(["-sS", "-o"])
        .arg(&out)
        .args(["-w", "%{http_code}", "-F", "note=not a file"])
        .args(["-F", &format!("f=@{};type=text/plain", at("a.txt"))])
        .args(["-F", &format!("f=@{}", at("big.bin"))])
        .args(["-F", &format!("f=@{}", at("c.bin"))])
        .args(["-F", &format!("f=@{}", at("d.bin"))])
        .args(["-F", &format!("f=@{};filename=sub/e.txt", at("e.txt"))])
        .arg(format!("http://{}/files/up/", node.addr))
        .output()
        .expect("curl");
    let answer = std::fs::read(&out).unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&answer)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&answer)));
    assert_eq!(String::from_utf8_lossy(&curl.stdout), "201", "{answer}");
    let listed = answer["files"].as_array().unwrap();
    assert_eq!(listed.len(), files.len(), "{answer}");
    for ((name, content), entry) in files.iter().zip(listed) {
        let path = match *name {
            "e.txt" => "up/sub/e.txt".to_owned(),
            _ => format!("up/{name}"),
        };
        let sha = Sha256::digest(content);
        assert_eq!(entry["path"], path.as_str(), "{answer}");
        assert_eq!(entry["size"], content.len(), "{answer}");
        assert_eq!(entry["sha256"], hex(&sha).as_str(), "{answer}");
        assert_eq!(entry["replaced"], false, "{answer}");
        let r = request(node.addr, &format!("GET /files/{path} HTTP/1.1"), b"");
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert!(r.body == *content, "{path}: the stored bytes differ");
        let digest = r.header("repr-digest").unwrap_or_default().to_owned();
        assert_eq!(digest, format!("sha-256=:{}:", base64_of(&sha)), "{path}");
        if *name == "a.txt" {
            assert_eq!(r.header("content-type"), Some("text/plain"));
        }
    }
    assert_eq!(pending(&weed), Vec::<String>::new());
}

/// A form of a hundred 1 MiB files (100 MiB, sent as it is generated): its files wait for the
/// end of the form, yet the node's peak RSS grows by about one part size of them, not by the
/// form (the bound: the file being written, 5 MiB × (2 in flight + 1), plus one part size of
/// small files waiting, plus the pause threshold; allowed twice that for the allocator); each
/// file stored with its SHA-256.
#[test]
fn a_form_of_many_files_holds_about_one_part_in_memory() {
    let Some((weed, node)) = start(&[]) else {
        return;
    };
    let files = 100;
    let part_head = |i: usize| {
        format!("--XX\r\ncontent-disposition: form-data; name=\"f\"; filename=\"{i}.bin\"\r\n\r\n")
    };
    let close = "--XX--\r\n";
    let len: usize = (0..files)
        .map(|i| part_head(i).len() + MIB + 2)
        .sum::<usize>()
        + close.len();
    let pid = node.child.id();
    let before = vm_hwm_kib(pid);
    let mut stream = TcpStream::connect(node.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let head = form_head("many", &format!("\r\ncontent-length: {len}"));
    write!(stream, "{head}\r\nhost: t\r\nconnection: close\r\n\r\n").unwrap();
    let mut shas = Vec::with_capacity(files);
    for i in 0..files {
        let content = data(MIB, i as u8);
        shas.push(hex(&Sha256::digest(&content)));
        stream.write_all(part_head(i).as_bytes()).unwrap();
        stream.write_all(&content).unwrap();
        stream.write_all(b"\r\n").unwrap();
    }
    stream.write_all(close.as_bytes()).unwrap();
    let r = Client::new(stream).read_response();
    assert_eq!(r.status, 201, "{}", r.text());
    let growth_mib = vm_hwm_kib(pid).saturating_sub(before) / 1024;
    eprintln!("peak RSS growth for a form of {files} files of 1 MiB: {growth_mib} MiB");
    assert!(
        growth_mib <= 48,
        "peak RSS grew by {growth_mib} MiB for a form of {files} MiB"
    );
    let listed = json(&r)["files"].as_array().unwrap().clone();
    assert_eq!(listed.len(), files);
    for (entry, sha) in listed.iter().zip(&shas) {
        assert_eq!(entry["sha256"], sha.as_str());
    }
    for i in [0, 57, files - 1] {
        let r = request(node.addr, &format!("GET /files/many/{i}.bin HTTP/1.1"), b"");
        assert!(r.body == data(MIB, i as u8), "many/{i}.bin differs");
    }
    assert_eq!(pending(&weed), Vec::<String>::new());
}

/// The client goes away in the middle of a form (its `Content-Length` never reached), while a
/// file above the part size has a multipart upload under way: nothing of the form is stored,
/// and that upload is aborted.
#[test]
fn a_form_cut_off_midway_stores_nothing() {
    let Some((weed, node)) = start(&[]) else {
        return;
    };
    let big = data(8 * MIB, 4);
    let body = form(&[("a.txt", b"first"), ("big.bin", &big)]);
    let mut stream = TcpStream::connect(node.addr).unwrap();
    let head = form_head("cut", &format!("\r\ncontent-length: {}", body.len()));
    write!(stream, "{head}\r\nhost: t\r\n\r\n").unwrap();
    // `a.txt` whole and 6 MiB of `big.bin`: its first part is being sent.
    stream.write_all(&body[..body.len() - 2 * MIB]).unwrap();
    wait_pending(&weed, &["cut/big.bin"]);
    drop(stream);
    wait_pending(&weed, &[]);
    assert_eq!(status_of(node.addr, "cut/a.txt"), 404);
    assert_eq!(status_of(node.addr, "cut/big.bin"), 404);
    assert_eq!(status_of(node.addr, "cut/"), 404);
}

/// `If-None-Match: *` (create only) with one target already stored: 412, none of the form's
/// files stored, the existing one untouched.
#[test]
fn if_none_match_with_one_existing_target_stores_none() {
    let Some((weed, node)) = start(&[]) else {
        return;
    };
    let a = node.addr;
    let r = request(a, "PUT /files/inm/b.txt HTTP/1.1", b"already here");
    assert_eq!(r.status, 201, "{}", r.text());
    let big = data(6 * MIB, 5);
    let body = form(&[("a.bin", &big), ("b.txt", b"new"), ("c.txt", b"third")]);
    let r = request(a, &form_head("inm", "\r\nif-none-match: *"), &body);
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(
        json(&r)["type"],
        format!("{PROBLEMS}precondition-failed").as_str()
    );
    assert_eq!(status_of(a, "inm/a.bin"), 404);
    assert_eq!(status_of(a, "inm/c.txt"), 404);
    let r = request(a, "GET /files/inm/b.txt HTTP/1.1", b"");
    assert_eq!(r.body, b"already here");
    assert_eq!(pending(&weed), Vec::<String>::new());

    // Without the existing target, the same form is created whole.
    let r = request(a, &form_head("inm2", "\r\nif-none-match: *"), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(status_of(a, "inm2/c.txt"), 200);
}

/// Another client stores one of the form's targets while the form arrives (after that part's
/// precondition held): its commit is refused (412), the file the form had already committed is
/// deleted again, the other client's file is kept, and no multipart upload is left.
#[test]
fn a_commit_refused_midway_undoes_the_files_already_committed() {
    let Some((weed, node)) = start(&[]) else {
        return;
    };
    let big = data(6 * MIB, 6);
    let body = form(&[("a.txt", b"mine"), ("b.bin", &big)]);
    let mut stream = TcpStream::connect(node.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = form_head(
        "race",
        &format!("\r\nif-none-match: *\r\ncontent-length: {}", body.len()),
    );
    write!(stream, "{head}\r\nhost: t\r\nconnection: close\r\n\r\n").unwrap();
    let held_back = MIB / 2;
    stream.write_all(&body[..body.len() - held_back]).unwrap();
    // `b.bin`'s part began (its precondition held) and its first part is being sent.
    wait_pending(&weed, &["race/b.bin"]);
    let r = request(node.addr, "PUT /files/race/b.bin HTTP/1.1", b"theirs");
    assert_eq!(r.status, 201, "{}", r.text());
    stream.write_all(&body[body.len() - held_back..]).unwrap();
    let r = Client::new(stream).read_response();
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(status_of(node.addr, "race/a.txt"), 404, "a.txt undone");
    let r = request(node.addr, "GET /files/race/b.bin HTTP/1.1", b"");
    assert_eq!(r.body, b"theirs");
    assert_eq!(pending(&weed), Vec::<String>::new());
}

/// Past `--max-upload`: declared, refused before the body; chunked, refused when the bytes get
/// there, with a multipart upload under way: 413, nothing stored, nothing pending once
/// answered.
#[test]
fn a_form_too_large_stores_nothing() {
    let Some((weed, node)) = start(&["--max-upload", "8MiB"]) else {
        return;
    };
    let big = data(10 * MIB, 7);
    let body = form(&[("a.txt", b"small"), ("big.bin", &big)]);
    let r = request(node.addr, &form_head("tl", ""), &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(json(&r)["type"], format!("{PROBLEMS}too-large").as_str());

    let mut chunked = format!(
        "{}\r\nhost: t\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n",
        form_head("tl", "")
    )
    .into_bytes();
    for piece in body.chunks(MIB) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let mut stream = TcpStream::connect(node.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let _ = stream.write_all(&chunked);
    let r = Client::new(stream).read_response();
    assert_eq!(r.status, 413, "{}", r.text());
    // The aborts are awaited before the answer.
    assert_eq!(pending(&weed), Vec::<String>::new());
    assert_eq!(status_of(node.addr, "tl/a.txt"), 404);
    assert_eq!(status_of(node.addr, "tl/big.bin"), 404);
}

/// Two parts with one file name: the local route's 409, nothing stored.
#[test]
fn a_name_twice_in_one_form_stores_nothing() {
    let Some((weed, node)) = start(&[]) else {
        return;
    };
    let big = data(6 * MIB, 8);
    let body = form(&[("x.bin", &big), ("y.txt", b"2"), ("x.bin", b"3")]);
    let r = request(node.addr, &form_head("dup", ""), &body);
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        json(&r)["type"],
        format!("{PROBLEMS}path-conflict").as_str()
    );
    assert!(
        json(&r)["detail"]
            .as_str()
            .is_some_and(|d| d.contains("same file name")),
        "{}",
        r.text()
    );
    assert_eq!(status_of(node.addr, "dup/x.bin"), 404);
    assert_eq!(status_of(node.addr, "dup/y.txt"), 404);
    assert_eq!(pending(&weed), Vec::<String>::new());
}

/// `DELETE /files/{dir}/` over S3: an empty folder (its marker) is deleted, 204, and leaves its
/// parent's listing; a folder with anything below it, marker or not, is refused (409
/// `path-conflict`), as is a file's path; none is 404. The marker's entry goes back to the
/// quota's count.
#[test]
fn folders_are_deleted_when_empty() {
    let Some((_weed, node)) = start(&["--max-storage", "1MiB"]) else {
        return;
    };
    let a = node.addr;
    for dir in ["keep/", "keep/empty/", "gone/"] {
        let r = request(
            a,
            &format!("PUT /files/{dir} HTTP/1.1\r\ncontent-length: 0"),
            b"",
        );
        assert_eq!(r.status, 201, "{dir}: {}", r.text());
    }
    let r = request(a, "PUT /files/implied/f.txt HTTP/1.1", b"x");
    assert_eq!(r.status, 201, "{}", r.text());
    let names = |path: &str| -> Vec<String> {
        let r = request(a, &format!("GET /files/{path} HTTP/1.1"), b"");
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        json(&r)["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(""), ["gone", "implied", "keep"]);

    let r = request(a, "DELETE /files/gone/ HTTP/1.1", b"");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(names(""), ["implied", "keep"]);
    assert_eq!(status_of(a, "gone/"), 404);
    assert_eq!(request(a, "DELETE /files/gone/ HTTP/1.1", b"").status, 404);

    // Not empty: a folder below the marker, or a file below no marker.
    for dir in ["keep/", "implied/"] {
        let r = request(a, &format!("DELETE /files/{dir} HTTP/1.1"), b"");
        assert_eq!(r.status, 409, "{dir}: {}", r.text());
        assert_eq!(
            json(&r)["type"],
            format!("{PROBLEMS}path-conflict").as_str()
        );
    }
    let r = request(a, "DELETE /files/implied/f.txt/ HTTP/1.1", b"");
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(names("keep/"), ["empty"]);
    assert_eq!(names("implied/"), ["f.txt"]);

    // Emptied from below, then deleted: the quota's count has its entries back.
    assert_eq!(
        request(a, "DELETE /files/keep/empty/ HTTP/1.1", b"").status,
        204
    );
    assert_eq!(request(a, "DELETE /files/keep/ HTTP/1.1", b"").status, 204);
    assert_eq!(names(""), ["implied"]);
    assert_eq!(storage_used(a), 1 + 4096);
}

/// `weir_storage_used_bytes` from `GET /metrics`.
fn storage_used(addr: SocketAddr) -> u64 {
    let r = request(addr, "GET /metrics HTTP/1.1", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    text.lines()
        .find_map(|l| l.strip_prefix("weir_storage_used_bytes "))
        .map(|v| v.trim().parse::<f64>().unwrap() as u64)
        .unwrap_or_else(|| panic!("no weir_storage_used_bytes in {text}"))
}
