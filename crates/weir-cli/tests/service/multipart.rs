//! `POST /files/{dir}/` with `multipart/form-data`, from curl -F.

use crate::support::*;

#[test]
fn several_files_with_curl_byte_exact() {
    let s = Server::start(&[]);
    let files = [
        ("one.bin", data(5 << 20, 21)),
        ("two.txt", b"just text\r\n--not a boundary\r\n".to_vec()),
        ("three.bin", data(700_001, 22)),
        ("empty", Vec::new()),
    ];
    let mut args = Vec::new();
    for (name, content) in &files {
        let path = s.dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        args.push("-F".to_owned());
        args.push(format!("{name}=@{}", path.display()));
    }
    args.push("-F".to_owned());
    args.push("comment=ignored field".to_owned());
    args.push("-H".to_owned());
    args.push("weir-debug: 1".to_owned());
    args.push(s.url("/files/up/"));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, body) = curl_status(&argv);
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let j: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let stored = j["files"].as_array().unwrap();
    assert_eq!(stored.len(), files.len());
    for ((name, content), entry) in files.iter().zip(stored) {
        assert_eq!(entry["path"], format!("up/{name}"));
        assert_eq!(entry["size"], content.len() as u64);
        assert_eq!(entry["sha256"], sha256(content));
        let r = s.request(&format!("GET /files/up/{name} HTTP/1.1"), b"");
        assert_eq!(r.status, 200);
        assert_eq!(&r.body, content, "{name}");
    }
    // Read straight into the buffer: nearly all of it direct.
    assert!(j["body"]["direct"].as_u64().unwrap() > 5 << 20, "{j}");
    assert!(s.temps().is_empty());

    // POST to the root, and to a directory named without the slash.
    let f = s.dir.path().join("one.bin");
    let (status, _) = curl_status(&["-F", &format!("x=@{}", f.display()), &s.url("/files/")]);
    assert_eq!(status, 201);
    assert_eq!(
        s.request("GET /files/one.bin HTTP/1.1", b"").body,
        files[0].1
    );
    let (status, _) = curl_status(&["-F", &format!("x=@{}", f.display()), &s.url("/files/nos")]);
    assert_eq!(status, 201);
    assert_eq!(
        s.request("GET /files/nos/one.bin HTTP/1.1", b"").status,
        200
    );
}

#[test]
fn a_broken_form_stores_nothing() {
    let s = Server::start(&[]);
    let head = "POST /files/b/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=XX";
    // Complete first part, then the body ends without the close delimiter.
    let body = b"--XX\r\ncontent-disposition: form-data; name=\"a\"; filename=\"a\"\r\n\r\naaaa\r\n--XX\r\ncontent-disposition: form-data; name=\"b\"; filename=\"b\"\r\n\r\nbbbb";
    let r = s.request(head, body);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(s.request("GET /files/b/a HTTP/1.1", b"").status, 404);
    // A form without files.
    let r = s.request(
        head,
        b"--XX\r\ncontent-disposition: form-data; name=\"f\"\r\n\r\nv\r\n--XX--\r\n",
    );
    assert_eq!(r.status, 400);
    assert!(s.temps().is_empty());
}
