//! `Range`: edge cases, HEAD, and the documented choice for several ranges (the whole file).

use crate::support::*;

fn get_range(s: &Server, range: &str) -> Resp {
    s.request(&format!("GET /files/r.bin HTTP/1.1\r\nrange: {range}"), b"")
}

#[test]
fn range_edge_cases() {
    let s = Server::start(&[]);
    let body = data(1000, 11);
    assert_eq!(s.request("PUT /files/r.bin HTTP/1.1", &body).status, 201);
    let cases: &[(&str, usize, usize)] = &[
        ("bytes=0-0", 0, 1),
        ("bytes=999-999", 999, 1),
        ("bytes=999-", 999, 1),
        ("bytes=-500", 500, 500),
        ("bytes=500-", 500, 500),
        ("bytes=-1", 999, 1),
        ("bytes=-5000", 0, 1000),
        ("bytes=10-19", 10, 10),
        ("bytes=990-5000", 990, 10),
    ];
    for &(range, start, len) in cases {
        let r = get_range(&s, range);
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(r.body, &body[start..start + len], "{range}");
        let want = format!("bytes {start}-{}/1000", start + len - 1);
        assert_eq!(r.header("content-range"), Some(want.as_str()), "{range}");
        assert_eq!(r.header("content-length"), Some(len.to_string().as_str()));
    }
    for range in [
        "bytes=1000-",
        "bytes=1000-1001",
        "bytes=5000-6000",
        "bytes=-0",
    ] {
        let r = get_range(&s, range);
        assert_eq!(r.status, 416, "{range}");
        assert_eq!(r.header("content-range"), Some("bytes */1000"));
    }
    // Several ranges, another unit, bad syntax: ignored, the whole file.
    for range in [
        "bytes=0-1,5-6",
        "bytes=0-0,-1",
        "items=0-1",
        "bytes=5-1",
        "bytes=x-",
    ] {
        let r = get_range(&s, range);
        assert_eq!(r.status, 200, "{range}");
        assert_eq!(r.body, body, "{range}");
        assert_eq!(r.header("content-range"), None);
    }
    let h = s.request("HEAD /files/r.bin HTTP/1.1\r\nrange: bytes=-500", b"");
    assert_eq!(h.status, 206);
    assert_eq!(h.header("content-length"), Some("500"));
    assert!(h.body.is_empty());
    // curl agrees.
    let out = curl(&["-r", "100-199", &s.url("/files/r.bin")]);
    assert_eq!(out.stdout, &body[100..200]);
    // Empty file: every range is unsatisfiable.
    s.request("PUT /files/empty HTTP/1.1\r\ncontent-length: 0", b"");
    let r = s.request("GET /files/empty HTTP/1.1\r\nrange: bytes=0-", b"");
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range"), Some("bytes */0"));
}
