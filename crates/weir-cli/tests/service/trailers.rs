//! A `Content-Digest` sent as a trailer (after a chunked HTTP/1.1 body, or in the HEADERS frame
//! that ends an HTTP/2 request) is verified before the commit, like one in the head: a wrong
//! one is a 400 and nothing is stored, with hashing on or off, announced or not.

use crate::routes::b64;
use crate::support::*;
use sha2::{Digest, Sha256, Sha512};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// `PUT /files/{path}` with a chunked `body` and a trailer section of `trailers` lines;
/// `announce` adds `Trailer: content-digest`.
fn put_chunked(addr: SocketAddr, path: &str, body: &[u8], trailers: &str, announce: bool) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "PUT /files/{path} HTTP/1.1\r\nhost: t\r\nconnection: close\r\ntransfer-encoding: chunked\r\nweir-debug: 1\r\n"
    )
    .into_bytes();
    if announce {
        req.extend_from_slice(b"trailer: Content-Digest\r\n");
    }
    req.extend_from_slice(b"\r\n");
    for piece in body.chunks(100_000) {
        req.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        req.extend_from_slice(piece);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(format!("0\r\n{trailers}\r\n").as_bytes());
    s.write_all(&req).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse_response(&raw)
}

fn sha256_field(body: &[u8]) -> String {
    format!(
        "content-digest: sha-256=:{}:\r\n",
        b64(&Sha256::digest(body))
    )
}

#[test]
fn a_trailer_digest_is_verified_before_the_commit() {
    let body = data(700_001, 41);
    let right = sha256_field(&body);
    let wrong = sha256_field(b"something else");
    let sha512 = format!(
        "content-digest: sha-512=:{}:\r\n",
        b64(&Sha512::digest(&body))
    );
    for args in [&[][..], &["--no-hash"][..]] {
        let s = Server::start(args);
        for announce in [true, false] {
            let tag = format!("{args:?} announce={announce}");
            let r = put_chunked(s.addr, "bad", &body, &wrong, announce);
            assert_eq!(r.status, 400, "{tag}: {}", r.text());
            assert!(r.text().contains("sha-256"), "{tag}: {}", r.text());
            assert!(!s.root.join("bad").exists(), "{tag}");

            let r = put_chunked(s.addr, "good", &body, &right, announce);
            assert!(r.status == 201 || r.status == 200, "{tag}: {}", r.text());
            assert_eq!(std::fs::read(s.root.join("good")).unwrap(), body, "{tag}");
            // Announced: hashed while received, whatever --no-hash says.
            let j = r.json();
            if announce || args.is_empty() {
                assert_eq!(j["data_path"], "hashed", "{tag}: {j}");
            } else {
                assert_eq!(j["data_path"], "splice", "{tag}: {j}");
            }

            let r = put_chunked(s.addr, "s512", &body, &sha512, announce);
            assert!(r.status == 201 || r.status == 200, "{tag}: {}", r.text());
        }
        // Disagreeing with the head's digest, or malformed: 400.
        let mut sock = TcpStream::connect(s.addr).unwrap();
        let head = format!(
            "PUT /files/both HTTP/1.1\r\nhost: t\r\nconnection: close\r\ntransfer-encoding: chunked\r\n{}\r\n3\r\nabc\r\n0\r\n{}\r\n",
            sha256_field(b"abc"),
            sha256_field(b"abd")
        );
        sock.write_all(head.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let _ = sock.read_to_end(&mut raw);
        let r = parse_response(&raw);
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("disagrees"), "{}", r.text());
        let r = put_chunked(
            s.addr,
            "junk",
            b"abc",
            "content-digest: sha-256=nope\r\n",
            true,
        );
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(!s.root.join("both").exists());
        assert!(!s.root.join("junk").exists());
        assert!(s.temps().is_empty());
    }
}

#[test]
fn an_http2_trailer_digest_is_verified_before_the_commit() {
    let s = Server::start(&[]);
    let body = data(300_000, 42);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        for (name, digest, want) in [
            ("h2bad", Sha256::digest(b"other"), 400),
            ("h2good", Sha256::digest(&body), 201),
        ] {
            let request = http::Request::builder()
                .method("PUT")
                .uri(format!("http://localhost/files/{name}"))
                .body(())
                .unwrap();
            let mut ready = client.clone().ready().await.unwrap();
            let (response, mut send) = ready.send_request(request, false).unwrap();
            // Within the default 64 KiB windows: one piece at a time, as capacity allows.
            let mut rest = bytes::Bytes::from(body.clone());
            while !rest.is_empty() {
                send.reserve_capacity(rest.len());
                let cap = std::future::poll_fn(|cx| send.poll_capacity(cx))
                    .await
                    .unwrap()
                    .unwrap();
                send.send_data(rest.split_to(cap.min(rest.len())), false)
                    .unwrap();
            }
            let mut trailers = http::HeaderMap::new();
            let value = format!("sha-256=:{}:", b64(&digest));
            trailers.insert("content-digest", value.parse().unwrap());
            send.send_trailers(trailers).unwrap();
            let response = response.await.unwrap();
            assert_eq!(response.status().as_u16(), want, "{name}");
        }
    });
    drop(rt);
    assert!(!s.root.join("h2bad").exists());
    assert_eq!(std::fs::read(s.root.join("h2good")).unwrap(), body);
    assert!(s.temps().is_empty());
}
