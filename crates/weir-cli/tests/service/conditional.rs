//! Conditional GETs: `If-None-Match`, `If-Modified-Since`, `If-Range`.

use crate::support::*;

#[test]
fn conditional_requests() {
    for args in [&[][..], &["--no-hash"][..]] {
        let s = Server::start(args);
        let body = data(4000, 12);
        assert!(s.request("PUT /files/c.bin HTTP/1.1", &body).status < 300);
        let r = s.request("GET /files/c.bin HTTP/1.1", b"");
        let etag = r.header("etag").expect("ETag");
        let modified = r.header("last-modified").expect("Last-Modified");
        assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
        // The hashed upload's ETag is its SHA-256 (in base64, as `Content-Digest` carries it);
        // without hashing, size and mtime.
        let digest = {
            use base64::Engine;
            use sha2::Digest;
            base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(&body))
        };
        let hashed = format!("\"sha256-{digest}\"");
        assert_eq!(etag == hashed, args.is_empty(), "{etag}");

        let get = |extra: &str| s.request(&format!("GET /files/c.bin HTTP/1.1\r\n{extra}"), b"");
        let r = get(&format!("if-none-match: {etag}"));
        assert_eq!(r.status, 304);
        assert!(r.body.is_empty());
        assert_eq!(r.header("etag").as_ref(), Some(&etag));
        assert_eq!(get(&format!("if-none-match: W/{etag}")).status, 304);
        assert_eq!(
            get(&format!("if-none-match: \"other\", {etag}")).status,
            304
        );
        assert_eq!(get("if-none-match: *").status, 304);
        assert_eq!(get("if-none-match: \"other\"").status, 200);
        assert_eq!(get(&format!("if-modified-since: {modified}")).status, 304);
        assert_eq!(
            get("if-modified-since: Mon, 01 Jan 2001 00:00:00 GMT").status,
            200
        );
        // If-None-Match wins over If-Modified-Since.
        let r = get(&format!(
            "if-none-match: \"other\"\r\nif-modified-since: {modified}"
        ));
        assert_eq!(r.status, 200);
        assert_eq!(r.body, body);
        let r = s.request(
            &format!("HEAD /files/c.bin HTTP/1.1\r\nif-none-match: {etag}"),
            b"",
        );
        assert_eq!(r.status, 304);

        // If-Range: the range applies only while the validator matches.
        let r = get(&format!("range: bytes=0-9\r\nif-range: {etag}"));
        assert_eq!((r.status, r.body.len()), (206, 10));
        let r = get("range: bytes=0-9\r\nif-range: \"stale\"");
        assert_eq!((r.status, r.body.len()), (200, 4000));
        let r = get(&format!("range: bytes=0-9\r\nif-range: W/{etag}"));
        assert_eq!(r.status, 200, "weak validators never match If-Range");
        let r = get(&format!("range: bytes=0-9\r\nif-range: {modified}"));
        assert_eq!(r.status, 206);

        // A new upload changes the validators.
        std::thread::sleep(std::time::Duration::from_millis(20));
        s.request("PUT /files/c.bin HTTP/1.1", &data(4000, 13));
        assert_eq!(get(&format!("if-none-match: {etag}")).status, 200);
    }
}
