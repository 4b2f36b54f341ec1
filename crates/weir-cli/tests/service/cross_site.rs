//! Writes from browser pages of other origins (`serve/origin_guard.rs`): refused with 403 and
//! nothing stored or deleted when `Origin` names another origin or `Sec-Fetch-Site` says
//! `cross-site`; served from the server's own origin, from `--cors-origin` origins, with
//! `--allow-cross-site-writes`, and from clients that send neither field. A browser's view of
//! it: `tests/browser/page.py`.

use crate::support::*;
use std::net::{SocketAddr, TcpStream};
use weir_testkit::h1::{Client, form_body};

/// Sends `head` (request line and fields, `Host` among them) and `body` on a new connection.
pub fn send(addr: SocketAddr, head: &str, body: &[u8]) -> Resp {
    let mut client = Client::new(TcpStream::connect(addr).unwrap());
    client
        .stream()
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let req = format!(
        "{head}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    client.send(req.as_bytes());
    let _ = client.try_send(body);
    client.read_response_for(head.starts_with("HEAD "))
}

/// The names in `GET /files/` (over a request without `Origin`).
fn listed(s: &Server) -> Vec<String> {
    let r = s.request("GET /files/ HTTP/1.1", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let json = r.json();
    let entries = json["entries"].as_array().cloned().unwrap_or_default();
    let mut names: Vec<String> = entries
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The writes a page of another origin can make without a preflight (a form `POST`, a
/// `no-cors` `fetch`, `sendBeacon`), and those it could make if the server let it (`PUT`,
/// `DELETE`, a tus creation, a resumable append to an upload that is not there), each with `fields`; returns their statuses.
fn foreign_writes(s: &Server, fields: &str) -> Vec<u16> {
    let host = format!("host: {}", s.addr);
    let form = form_body(&[("form.txt", b"from a form")]);
    let writes: [(String, &[u8]); 7] = [
        (format!("PUT /files/put.txt HTTP/1.1\r\n{host}"), b"put"),
        (
            format!(
                "POST /files/ HTTP/1.1\r\n{host}\r\ncontent-type: multipart/form-data; boundary=XX"
            ),
            &form,
        ),
        (
            format!("POST /files/beacon/ HTTP/1.1\r\n{host}\r\ncontent-type: text/plain"),
            b"beacon",
        ),
        (format!("DELETE /files/keep.txt HTTP/1.1\r\n{host}"), b""),
        (format!("PUT /files/folder/ HTTP/1.1\r\n{host}"), b""),
        (
            format!(
                "POST /tus/ HTTP/1.1\r\n{host}\r\ntus-resumable: 1.0.0\r\nupload-length: 3\r\nupload-metadata: filename dHVz"
            ),
            b"",
        ),
        (
            format!(
                "PATCH /uploads/0123 HTTP/1.1\r\n{host}\r\nupload-offset: 0\r\nupload-complete: ?1\r\ncontent-type: application/partial-upload"
            ),
            b"res",
        ),
    ];
    writes
        .iter()
        .map(|(head, body)| {
            let r = send(s.addr, &format!("{head}\r\n{fields}"), body);
            if r.status == 403 {
                assert_eq!(
                    r.json()["type"],
                    "https://weir.dev/problems/cross-site-write",
                    "{head}"
                );
            }
            r.status
        })
        .collect()
}

#[test]
fn writes_from_another_origin_are_refused_and_change_nothing() {
    let s = Server::start(&[]);
    assert_eq!(s.request("PUT /files/keep.txt HTTP/1.1", b"k").status, 201);
    for fields in [
        "origin: http://evil.example",
        "origin: http://localhost:1",
        "origin: null",
        "sec-fetch-site: cross-site",
        "origin: http://evil.example\r\nsec-fetch-site: cross-site",
        "origin: http://evil.example\r\nsec-fetch-site: same-site",
    ] {
        let statuses = foreign_writes(&s, fields);
        assert_eq!(statuses, [403; 7], "{fields}");
        assert_eq!(listed(&s), ["keep.txt"], "{fields}");
    }
    // Reads from any origin are served as before (CORS keeps their answers from the page).
    let r = send(
        s.addr,
        &format!(
            "GET /files/keep.txt HTTP/1.1\r\nhost: {}\r\norigin: http://evil.example\r\nsec-fetch-site: cross-site",
            s.addr
        ),
        b"",
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"k"[..]));
}

#[test]
fn writes_from_this_origin_and_from_clients_without_origin_are_served() {
    let s = Server::start(&[]);
    let own = format!("origin: http://{}", s.addr);
    for fields in [
        own.as_str(),
        "sec-fetch-site: same-origin",
        "sec-fetch-site: none",
        // The browser's word over the comparison (a proxy that rewrote `Host`).
        "origin: https://files.example\r\nsec-fetch-site: same-origin",
        // curl, `weir put`, scripts: neither field.
        "user-agent: curl/8",
    ] {
        assert_eq!(s.request("PUT /files/keep.txt HTTP/1.1", b"k").status, 201);
        let statuses = foreign_writes(&s, fields);
        // PUT, form, beacon (a text/plain POST is not a form: 415), DELETE, folder, tus,
        // append (no such upload: 404).
        assert_eq!(statuses, [201, 201, 415, 204, 201, 201, 404], "{fields}");
        for path in ["put.txt", "form.txt", "folder/"] {
            let r = s.request(&format!("DELETE /files/{path} HTTP/1.1"), b"");
            assert_eq!(r.status, 204, "{fields}: {path}");
        }
    }
    // curl and `weir put` over a real client.
    let (status, _) = curl_status(&[
        "-X",
        "PUT",
        "--data-binary",
        "curl",
        &s.url("/files/curl.txt"),
    ]);
    assert_eq!(status, 201);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("put.txt");
    std::fs::write(&file, b"weir put").unwrap();
    let out = weir(&["put", file.to_str().unwrap(), &s.url("/files/weir-put.txt")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cors_origins_write_and_the_guard_can_be_switched_off() {
    const APP: &str = "https://app.example";
    let s = Server::start(&["--cors-origin", APP]);
    for fields in [
        format!("origin: {APP}"),
        format!("origin: {APP}\r\nsec-fetch-site: cross-site"),
    ] {
        assert_eq!(s.request("PUT /files/keep.txt HTTP/1.1", b"k").status, 201);
        let statuses = foreign_writes(&s, &fields);
        assert_eq!(statuses, [201, 201, 415, 204, 201, 201, 404], "{fields}");
        for path in ["put.txt", "form.txt", "folder/"] {
            let r = s.request(&format!("DELETE /files/{path} HTTP/1.1"), b"");
            assert_eq!(r.status, 204, "{fields}: {path}");
        }
    }
    // Another origin is still refused; the listed one's answers carry CORS fields.
    assert_eq!(foreign_writes(&s, "origin: https://evil.example"), [403; 7]);
    let r = send(
        s.addr,
        &format!(
            "PUT /files/a.txt HTTP/1.1\r\nhost: {}\r\norigin: {APP}",
            s.addr
        ),
        b"a",
    );
    assert_eq!(r.status, 201);
    assert_eq!(r.header("access-control-allow-origin"), Some(APP));

    let open = Server::start(&["--allow-cross-site-writes"]);
    assert_eq!(
        open.request("PUT /files/keep.txt HTTP/1.1", b"k").status,
        201
    );
    let statuses = foreign_writes(
        &open,
        "origin: http://evil.example\r\nsec-fetch-site: cross-site",
    );
    assert_eq!(statuses, [201, 201, 415, 204, 201, 201, 404]);
}
