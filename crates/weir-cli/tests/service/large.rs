//! Large and concurrent transfers: 256 MiB round trips (hashing on and off), 8 concurrent
//! uploads, and the server's memory during a 1 GiB upload.

use crate::support::*;
use std::io::{Read, Write};

fn same_file(a: &std::path::Path, b: &std::path::Path) {
    assert_eq!(
        std::fs::metadata(a).unwrap().len(),
        std::fs::metadata(b).unwrap().len()
    );
    assert_eq!(
        sha256_file(a),
        sha256_file(b),
        "{} vs {}",
        a.display(),
        b.display()
    );
}

#[test]
fn round_trip_256_mib_hashing_on_and_off() {
    let big = big_file();
    let want = sha256_file(big);
    for (args, curl_path) in [(&[][..], "hashed"), (&["--no-hash"][..], "splice")] {
        let s = Server::start(args);
        // curl upload: see which way the server took.
        let (status, body) = curl_status(&[
            "-T",
            big.to_str().unwrap(),
            "-H",
            "weir-debug: 1",
            &s.url("/files/big-curl"),
        ]);
        assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
        let j: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(j["data_path"], curl_path);
        assert_eq!(j["size"], 256u64 << 20);
        if curl_path == "hashed" {
            assert_eq!(j["sha256"], want);
            assert!(j["body"]["direct"].as_u64().unwrap() > 200 << 20, "{j}");
        } else {
            assert!(j["body"]["spliced"].as_u64().unwrap() > 200 << 20, "{j}");
        }
        // weir put with sendfile (loopback would choose the buffer), Content-Digest verified by
        // the server.
        let out = weir(&[
            "put",
            "--sendfile",
            big.to_str().unwrap(),
            &s.url("/files/big-put"),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Downloads with both clients, byte-exact.
        let got = s.dir.path().join("got-weir");
        let out = weir(&["get", &s.url("/files/big-curl"), got.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        same_file(big, &got);
        let got_curl = s.dir.path().join("got-curl");
        let (status, _) =
            curl_status(&["-o", got_curl.to_str().unwrap(), &s.url("/files/big-put")]);
        assert_eq!(status, 200);
        same_file(big, &got_curl);
        same_file(big, &s.root.join("big-curl"));
        assert!(s.temps().is_empty());
    }
}

#[test]
fn eight_concurrent_uploads_are_byte_exact() {
    let s = Server::start(&[]);
    let addr = s.addr;
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            std::thread::spawn(move || {
                let body = data(6 << 20, 100 + i);
                // Four to their own paths, four racing to one path.
                let path = if i < 4 {
                    format!("own/{i}")
                } else {
                    "shared".to_owned()
                };
                let r = request(addr, &format!("PUT /files/{path} HTTP/1.1"), &body);
                assert!(r.status == 201 || r.status == 200, "{}", r.text());
                assert_eq!(r.json()["sha256"], sha256(&body));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for i in 0..4 {
        let r = s.request(&format!("GET /files/own/{i} HTTP/1.1"), b"");
        assert_eq!(r.body, data(6 << 20, 100 + i));
    }
    let shared = s.request("GET /files/shared HTTP/1.1", b"").body;
    let winners = (4..8).filter(|&i| shared == data(6 << 20, 100 + i)).count();
    assert_eq!(winners, 1, "the shared path holds exactly one whole upload");
    assert!(s.temps().is_empty());
}

#[test]
fn a_1_gib_upload_keeps_server_memory_flat() {
    const PAUSE: u64 = 1 << 20;
    let s = Server::start(&["--pause-threshold", "1MiB"]);
    // Warm up: the runtime's threads, the connection buffers and the upload buffer pool.
    assert_eq!(
        s.request("PUT /files/warm HTTP/1.1", &data(4 << 20, 40))
            .status,
        201
    );
    let before = proc_status_kib(s.pid(), "VmHWM");

    let len: u64 = 1 << 30;
    let mut sock = std::net::TcpStream::connect(s.addr).unwrap();
    write!(
        sock,
        "PUT /files/huge HTTP/1.1\r\nhost: t\r\nconnection: close\r\ncontent-length: {len}\r\n\r\n"
    )
    .unwrap();
    let block = data(1 << 20, 41);
    for _ in 0..(len >> 20) {
        sock.write_all(&block).unwrap();
    }
    let mut raw = Vec::new();
    sock.read_to_end(&mut raw).ok();
    let r = parse_response(&raw);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["size"], len);

    let after = proc_status_kib(s.pid(), "VmHWM");
    let growth = (after.saturating_sub(before)) * 1024;
    eprintln!("VmHWM {before} KiB before, {after} KiB after a 1 GiB upload");
    assert!(
        growth <= PAUSE + (4 << 20),
        "peak RSS grew by {growth} bytes during a 1 GiB upload (before {before} KiB, after {after} KiB)"
    );
}
