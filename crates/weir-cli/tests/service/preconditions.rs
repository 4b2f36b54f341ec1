//! Preconditions on every method (RFC 9110 §13.1.1–13.1.4, evaluated in §13.2.2's order), and
//! date validators that never mix two versions of a file (§8.8.2.2, §13.1.5).

use crate::support::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

/// Long before any file of a test was written.
const LONG_AGO: &str = "Mon, 01 Jan 2001 00:00:00 GMT";

fn put(s: &Server, path: &str, extra: &str, body: &[u8]) -> Resp {
    s.request(&format!("PUT /files/{path} HTTP/1.1{extra}"), body)
}

fn get(s: &Server, path: &str, extra: &str) -> Resp {
    s.request(&format!("GET /files/{path} HTTP/1.1{extra}"), b"")
}

fn stored(s: &Server, path: &str) -> Option<Vec<u8>> {
    let r = get(s, path, "");
    (r.status == 200).then_some(r.body)
}

fn etag_of(s: &Server, path: &str) -> String {
    get(s, path, "").header("etag").expect("ETag").to_owned()
}

#[test]
fn get_and_head_fail_on_if_match_and_if_unmodified_since() {
    let s = Server::start(&[]);
    let body = data(1000, 1);
    assert_eq!(put(&s, "g.bin", "", &body).status, 201);
    let r = get(&s, "g.bin", "");
    let etag = r.header("etag").unwrap();
    let modified = r.header("last-modified").unwrap();
    let status = |extra: &str| get(&s, "g.bin", extra).status;
    assert_eq!(status(&format!("\r\nif-match: {etag}")), 200);
    assert_eq!(status("\r\nif-match: *"), 200);
    assert_eq!(status(&format!("\r\nif-match: \"other\", {etag}")), 200);
    let r = get(&s, "g.bin", "\r\nif-match: \"other\"");
    assert_eq!(r.status, 412);
    assert!(r.json()["error"].as_str().unwrap().contains("precondition"));
    assert_eq!(
        status(&format!("\r\nif-match: W/{etag}")),
        412,
        "strong comparison"
    );
    let r = s.request("HEAD /files/g.bin HTTP/1.1\r\nif-match: \"other\"", b"");
    assert_eq!(r.status, 412);
    // If-Unmodified-Since: modified after the date → 412.
    assert_eq!(status(&format!("\r\nif-unmodified-since: {LONG_AGO}")), 412);
    assert_eq!(status(&format!("\r\nif-unmodified-since: {modified}")), 200);
    // Ignored after If-Match.
    let both = format!("\r\nif-match: {etag}\r\nif-unmodified-since: {LONG_AGO}");
    assert_eq!(status(&both), 200);
    // If-Match is evaluated before If-None-Match: 412, not 304.
    let both = format!("\r\nif-match: \"other\"\r\nif-none-match: {etag}");
    assert_eq!(status(&both), 412);
    // A range is not served when If-Match fails.
    assert_eq!(status("\r\nif-match: \"other\"\r\nrange: bytes=0-9"), 412);
    // Nothing there: 404 whatever the preconditions (RFC 9110 §13.2.1).
    assert_eq!(get(&s, "none.bin", "\r\nif-match: *").status, 404);
}

#[test]
fn put_honours_if_none_match_if_match_and_if_unmodified_since() {
    for args in [&[][..], &["--no-hash"][..]] {
        let s = Server::start(args);
        let v1 = data(3000, 1);
        let v2 = data(3000, 2);
        // Create-only.
        let r = put(&s, "p.bin", "\r\nif-none-match: *", &v1);
        assert_eq!(r.status, 201);
        // The answer's ETag is the one a GET returns.
        let etag = r.header("etag").expect("ETag on PUT");
        assert_eq!(etag, etag_of(&s, "p.bin"), "{args:?}");
        let r = put(&s, "p.bin", "\r\nif-none-match: *", &v2);
        assert_eq!(r.status, 412, "{args:?}");
        assert!(r.json()["error"].is_string());
        assert_eq!(stored(&s, "p.bin").unwrap(), v1);
        // Replace only the version named.
        assert_eq!(put(&s, "p.bin", "\r\nif-match: \"other\"", &v2).status, 412);
        assert_eq!(
            put(&s, "p.bin", &format!("\r\nif-match: W/{etag}"), &v2).status,
            412
        );
        assert_eq!(
            put(&s, "p.bin", &format!("\r\nif-none-match: {etag}"), &v2).status,
            412
        );
        assert_eq!(stored(&s, "p.bin").unwrap(), v1);
        let r = put(&s, "p.bin", &format!("\r\nif-match: {etag}"), &v2);
        assert_eq!(r.status, 200);
        let etag2 = r.header("etag").unwrap();
        assert_ne!(etag2, etag);
        assert_eq!(etag2, etag_of(&s, "p.bin"));
        assert_eq!(stored(&s, "p.bin").unwrap(), v2);
        // The old tag no longer names the file.
        assert_eq!(
            put(&s, "p.bin", &format!("\r\nif-match: {etag}"), &v1).status,
            412
        );
        assert_eq!(put(&s, "p.bin", "\r\nif-match: *", &v1).status, 200);
        // If-Match needs a file: nothing is created.
        assert_eq!(put(&s, "new.bin", "\r\nif-match: *", &v1).status, 412);
        assert_eq!(
            put(&s, "new/deep.bin", "\r\nif-match: \"x\"", &v1).status,
            412
        );
        assert_eq!(get(&s, "new.bin", "").status, 404);
        // If-Unmodified-Since.
        let r = put(
            &s,
            "p.bin",
            &format!("\r\nif-unmodified-since: {LONG_AGO}"),
            &v2,
        );
        assert_eq!(r.status, 412);
        assert_eq!(stored(&s, "p.bin").unwrap(), v1);
        // A file's own date holds (a first version: its date is strong; a version that shares
        // its second with an earlier one has a weak date, which never holds).
        assert_eq!(put(&s, "u.bin", "", &v1).status, 201);
        let modified = get(&s, "u.bin", "")
            .header("last-modified")
            .unwrap()
            .to_owned();
        let r = put(
            &s,
            "u.bin",
            &format!("\r\nif-unmodified-since: {modified}"),
            &v2,
        );
        assert_eq!(r.status, 200);
        // If-Modified-Since means nothing to a PUT.
        let r = put(
            &s,
            "p.bin",
            &format!("\r\nif-modified-since: {LONG_AGO}"),
            &v1,
        );
        assert_eq!(r.status, 200);
        assert!(s.temps().is_empty());
    }
}

/// A refused upload is answered from its head: no `100 Continue`, no body read.
#[test]
fn put_refused_by_a_precondition_before_its_body() {
    let s = Server::start(&[]);
    assert_eq!(put(&s, "e.bin", "", b"there").status, 201);
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(
        b"PUT /files/e.bin HTTP/1.1\r\nhost: t\r\nif-none-match: *\r\n\
          expect: 100-continue\r\ncontent-length: 1000000\r\n\r\n",
    )
    .unwrap();
    let mut status = String::new();
    BufReader::new(&c).read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 412"), "{status:?}");
    assert_eq!(stored(&s, "e.bin").unwrap(), b"there");
    assert!(s.temps().is_empty());
}

/// Ten clients create one path with `If-None-Match: *` at once: exactly one stores its body.
#[test]
fn racing_create_only_puts_store_exactly_one() {
    const CLIENTS: u64 = 10;
    let s = Server::start(&[]);
    let addr = s.addr;
    let barrier = Arc::new(Barrier::new(CLIENTS as usize));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                // Under weir's drain limit (256 KiB): a client refused from its head still
                // sends its whole body and reads its answer.
                let body = data(200_000, 100 + i);
                let mut c = TcpStream::connect(addr).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                let head = format!(
                    "PUT /files/race/one.bin HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\
                     if-none-match: *\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                // Every head (and so every early check) before any body.
                c.write_all(head.as_bytes()).unwrap();
                barrier.wait();
                let _ = c.write_all(&body);
                let mut raw = Vec::new();
                let _ = std::io::Read::read_to_end(&mut c, &mut raw);
                (parse_response(&raw).status, body)
            })
        })
        .collect();
    let results: Vec<_> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let winners: Vec<_> = results.iter().filter(|(st, _)| *st == 201).collect();
    let refused = results.iter().filter(|(st, _)| *st == 412).count();
    let statuses: Vec<_> = results.iter().map(|(st, _)| *st).collect();
    assert_eq!((winners.len(), refused), (1, 9), "{statuses:?}");
    assert_eq!(stored(&s, "race/one.bin").unwrap(), winners[0].1);
    assert!(s.temps().is_empty());
}

#[test]
fn a_form_with_if_none_match_creates_only() {
    let s = Server::start(&[]);
    assert_eq!(put(&s, "f/b.txt", "", b"old b").status, 201);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    std::fs::write(&a, b"new a").unwrap();
    std::fs::write(&b, b"new b").unwrap();
    let form = |extra: &[&str]| {
        let fa = format!("x=@{}", a.display());
        let fb = format!("y=@{}", b.display());
        let url = s.url("/files/f/");
        let mut argv = vec!["-F", &fa, "-F", &fb];
        argv.extend_from_slice(extra);
        argv.push(&url);
        curl_status(&argv)
    };
    let (status, body) = form(&["-H", "if-none-match: *"]);
    assert_eq!(status, 412, "{}", String::from_utf8_lossy(&body));
    assert_eq!(stored(&s, "f/b.txt").unwrap(), b"old b");
    assert_eq!(
        get(&s, "f/a.txt", "").status,
        404,
        "nothing of the form is stored"
    );
    assert!(s.temps().is_empty());
    assert_eq!(form(&[]).0, 201);
    assert_eq!(stored(&s, "f/b.txt").unwrap(), b"new b");
}

#[test]
fn delete_honours_preconditions() {
    let s = Server::start(&[]);
    assert_eq!(put(&s, "d.bin", "", b"keep me").status, 201);
    let etag = etag_of(&s, "d.bin");
    let modified = get(&s, "d.bin", "")
        .header("last-modified")
        .unwrap()
        .to_owned();
    let delete = |extra: &str| s.request(&format!("DELETE /files/d.bin HTTP/1.1{extra}"), b"");
    for refused in [
        "\r\nif-match: \"other\"".to_owned(),
        format!("\r\nif-match: W/{etag}"),
        format!("\r\nif-unmodified-since: {LONG_AGO}"),
        "\r\nif-none-match: *".to_owned(),
        format!("\r\nif-none-match: {etag}"),
    ] {
        let r = delete(&refused);
        assert_eq!(r.status, 412, "{refused:?}");
        assert!(r.json()["error"].is_string());
        assert_eq!(stored(&s, "d.bin").unwrap(), b"keep me", "{refused:?}");
    }
    assert_eq!(
        delete(&format!("\r\nif-unmodified-since: {modified}")).status,
        204
    );
    assert_eq!(put(&s, "d.bin", "", b"again").status, 201);
    let etag = etag_of(&s, "d.bin");
    assert_eq!(delete(&format!("\r\nif-match: {etag}")).status, 204);
    assert_eq!(get(&s, "d.bin", "").status, 404);
    // Nothing there: 404 whatever the preconditions.
    assert_eq!(delete("\r\nif-match: *").status, 404);
}

/// Sets the modification time of `path` under the server's root.
fn set_modified(root: &Path, path: &str, t: SystemTime) {
    let file = std::fs::File::options()
        .write(true)
        .open(root.join(path))
        .unwrap();
    file.set_modified(t).unwrap();
}

/// Whole seconds since the epoch, plus half a second.
fn half_past(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(secs * 1000 + 500)
}

/// Asserts that the date `old` (of an earlier version) does not validate the version now at
/// `path`, whose body is `now`: `If-Range` gives the whole new file, `If-Modified-Since` a 200.
fn old_date_is_stale(s: &Server, path: &str, old: &str, now: &[u8]) {
    let r = get(s, path, &format!("\r\nrange: bytes=0-9\r\nif-range: {old}"));
    assert_eq!(r.status, 200, "If-Range with the old version's date");
    assert_eq!(r.body, now);
    let r = get(s, path, &format!("\r\nif-modified-since: {old}"));
    assert_eq!(
        r.status, 200,
        "If-Modified-Since with the old version's date"
    );
    assert_eq!(r.body, now);
}

/// A file replaced within the second of its previous version (forced: the previous version's
/// modification time is set to a later second than the new one's commit) keeps no date that
/// validates the previous version.
#[test]
fn a_replacement_in_the_same_second_is_not_validated_by_the_old_date() {
    for args in [&[][..], &["--no-hash"][..]] {
        let s = Server::start(args);
        let (v1, v2, v3) = (data(2000, 1), data(2000, 2), data(2000, 3));
        assert_eq!(put(&s, "t.bin", "", &v1).status, 201);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        set_modified(&s.root, "t.bin", half_past(now + 60));
        let r = get(&s, "t.bin", "");
        let (old_date, old_etag) = (
            r.header("last-modified").unwrap(),
            r.header("etag").unwrap(),
        );
        let date = |name: &str| httpdate::parse_http_date(r.header(name).unwrap()).unwrap();
        assert!(
            date("last-modified") <= date("date"),
            "never later than Date"
        );
        assert_eq!(put(&s, "t.bin", "", &v2).status, 200);
        old_date_is_stale(&s, "t.bin", old_date, &v2);
        let r = get(&s, "t.bin", &format!("\r\nif-none-match: {old_etag}"));
        assert_eq!(r.status, 200, "{args:?}");
        // Once more in that second: the entity tags still differ.
        let v2_etag = etag_of(&s, "t.bin");
        assert_eq!(put(&s, "t.bin", "", &v3).status, 200);
        old_date_is_stale(&s, "t.bin", old_date, &v3);
        assert_ne!(etag_of(&s, "t.bin"), v2_etag, "{args:?}");
    }
}

/// The same without forcing anything: two versions back to back (almost always within one
/// second), and a delete followed by a new file at the same path.
#[test]
fn back_to_back_versions_and_a_recreated_file_have_distinct_dates() {
    let s = Server::start(&[]);
    let (v1, v2, v3) = (data(2000, 1), data(2000, 2), data(2000, 3));
    assert_eq!(put(&s, "b.bin", "", &v1).status, 201);
    let old_date = get(&s, "b.bin", "")
        .header("last-modified")
        .unwrap()
        .to_owned();
    assert_eq!(put(&s, "b.bin", "", &v2).status, 200);
    old_date_is_stale(&s, "b.bin", &old_date, &v2);

    let old_date = get(&s, "b.bin", "")
        .header("last-modified")
        .unwrap()
        .to_owned();
    let r = s.request("DELETE /files/b.bin HTTP/1.1", b"");
    assert_eq!(r.status, 204);
    assert_eq!(put(&s, "b.bin", "", &v3).status, 201);
    old_date_is_stale(&s, "b.bin", &old_date, &v3);
}

/// A resumable upload's creating request's preconditions (the local store; `s3_resumable.rs`
/// has the same over S3): judged at the creation (the target exists: `412`, nothing created)
/// and again under the commit lock when the upload completes. A file created at the target
/// meanwhile makes an `If-None-Match: *` upload's completion `412`: the file kept, the upload
/// removed. With nobody in between, it completes.
#[test]
fn resumable_creation_preconditions_are_checked_again_at_completion() {
    let s = Server::start(&[]);
    let complete = |url: &str, offset: usize, body: &[u8]| {
        s.request(
            &format!(
                "PATCH {url} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
                 upload-offset: {offset}\r\nupload-complete: ?1"
            ),
            body,
        )
    };
    let only_if_absent = "\r\nif-none-match: *";
    let url = crate::resumable::create_partial(&s, "raced.txt", b"first ", only_if_absent);
    let r = put(&s, "raced.txt", "", b"the other writer");
    assert_eq!(r.status, 201, "{}", r.text());
    let r = complete(&url, 6, b"second");
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(
        std::fs::read(s.root.join("raced.txt")).unwrap(),
        b"the other writer"
    );
    let r = s.request(&format!("HEAD {url} HTTP/1.1"), b"");
    assert_eq!(r.status, 404, "the refused upload is removed");

    // The target exists now: refused before anything is created.
    let r = put(
        &s,
        "raced.txt",
        "\r\nupload-complete: ?0\r\nif-none-match: *",
        b"x",
    );
    assert_eq!(r.status, 412, "{}", r.text());
    assert!(r.header("location").is_none());

    let url = crate::resumable::create_partial(&s, "quiet.txt", b"first ", only_if_absent);
    let r = complete(&url, 6, b"second");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        std::fs::read(s.root.join("quiet.txt")).unwrap(),
        b"first second"
    );
}
