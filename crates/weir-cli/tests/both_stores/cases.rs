//! The test bodies, each written once over a [`Backend`] (`main.rs` runs each on both stores).

use crate::s3_nodes::{base64_of, data, hex};
use crate::{Backend, Kind, Serve, json, names};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};
use weir_testkit::h1::{Client, form_body};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// Sends `head` with `Content-Length: declared` and then only `sent` on a new connection, then
/// ends the client's side and reads until the server closes: when this returns, the server is
/// done with the cut request.
fn send_cut(s: &Serve, head: &str, declared: usize, sent: &[u8]) {
    let mut stream = TcpStream::connect(s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "{head}\r\nhost: t\r\ncontent-length: {declared}\r\n\r\n"
    )
    .unwrap();
    stream.write_all(sent).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    assert!(
        !rest.starts_with(b"HTTP/1.1 2"),
        "a cut request answered with success: {}",
        String::from_utf8_lossy(&rest)
    );
}

fn sha_b64(bytes: &[u8]) -> String {
    base64_of(&Sha256::digest(bytes))
}

/// A PUT cut after half its declared body: a new file is not visible (404, not listed), an
/// existing file keeps its old bytes, nothing is left pending (no temporary, no multipart
/// upload), and the path takes a whole upload afterwards.
pub fn a_put_cut_midway_leaves_nothing_visible(b: &Backend) {
    // Over S3, parts of 5 MiB: the half sent fills one, which goes to a multipart upload.
    let s = form_server(b);
    let old = data(10 * KIB, 1);
    s.put("cut/keep.bin", &old);
    let new = data(12 * MIB, 2);
    for path in ["cut/new.bin", "cut/keep.bin"] {
        send_cut(
            &s,
            &format!("PUT /files/{path} HTTP/1.1"),
            new.len(),
            &new[..new.len() / 2],
        );
    }
    assert_eq!(s.get("cut/new.bin").status, 404);
    let r = s.get("cut/keep.bin");
    assert_eq!(r.status, 200);
    assert!(r.body == old, "the existing file changed");
    assert_eq!(names(&s.list("cut/", "")), ["keep.bin"]);
    nothing_pending(b, &s);
    // Nothing left in the way: the same upload whole is stored.
    assert_eq!(s.put("cut/new.bin", &new).status, 201);
    assert!(s.get("cut/new.bin").body == new);
}

/// `If-None-Match: *`, `If-Match` with the current and a stale ETag, on PUT and DELETE; the
/// ETag a PUT answers is the one GET serves.
pub fn preconditions_on_put_and_delete(b: &Backend) {
    let s = b.serve(&[]);
    let (v1, v2) = (data(3000, 1), data(3000, 2));
    let put = |extra: &str, body: &[u8]| s.req(&format!("PUT /files/p.bin HTTP/1.1{extra}"), body);
    let r = put("\r\nif-none-match: *", &v1);
    assert_eq!(r.status, 201, "{}", r.text());
    let etag1 = r.header("etag").expect("ETag on PUT").to_owned();
    assert_eq!(s.get("p.bin").header("etag"), Some(etag1.as_str()));

    let r = put("\r\nif-none-match: *", &v2);
    assert_eq!(r.status, 412, "{}", r.text());
    let r = put("\r\nif-match: \"stale\"", &v2);
    assert_eq!(r.status, 412, "{}", r.text());
    assert!(s.get("p.bin").body == v1, "a refused PUT changed the file");

    let r = put(&format!("\r\nif-match: {etag1}"), &v2);
    assert_eq!(r.status, 200, "{}", r.text());
    let etag2 = r.header("etag").unwrap().to_owned();
    assert_ne!(etag1, etag2);
    let r = s.get("p.bin");
    assert!(r.body == v2);
    assert_eq!(r.header("etag"), Some(etag2.as_str()));
    assert_eq!(put(&format!("\r\nif-match: {etag1}"), &v1).status, 412);
    assert!(s.get("p.bin").body == v2);

    let delete = |extra: &str| s.req(&format!("DELETE /files/p.bin HTTP/1.1{extra}"), b"");
    assert_eq!(delete(&format!("\r\nif-match: {etag1}")).status, 412);
    assert_eq!(delete("\r\nif-none-match: *").status, 412);
    assert!(
        s.get("p.bin").body == v2,
        "a refused DELETE removed the file"
    );
    assert_eq!(delete(&format!("\r\nif-match: {etag2}")).status, 204);
    assert_eq!(s.get("p.bin").status, 404);
    // Nothing there: `If-Match: *` refuses a PUT, and nothing is created.
    assert_eq!(put("\r\nif-match: *", &v1).status, 412);
    assert_eq!(s.get("p.bin").status, 404);
}

/// A range, a suffix range, an unsatisfiable one, `If-Range` with the current and a stale ETag.
pub fn ranges(b: &Backend) {
    let s = b.serve(&[]);
    let body = data(1000, 3);
    let etag = s.put("r.bin", &body).header("etag").unwrap().to_owned();
    let get = |extra: &str| s.req(&format!("GET /files/r.bin HTTP/1.1{extra}"), b"");

    let r = get("\r\nrange: bytes=10-19");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), Some("bytes 10-19/1000"));
    assert_eq!(r.body, &body[10..20]);

    let r = get("\r\nrange: bytes=-100");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), Some("bytes 900-999/1000"));
    assert_eq!(r.body, &body[900..]);

    let r = get("\r\nrange: bytes=990-");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &body[990..]);

    let r = get("\r\nrange: bytes=2000-");
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range"), Some("bytes */1000"));

    let r = get(&format!("\r\nif-range: {etag}\r\nrange: bytes=0-9"));
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &body[..10]);
    let r = get("\r\nif-range: \"stale\"\r\nrange: bytes=0-9");
    assert_eq!(r.status, 200, "a stale If-Range serves the whole file");
    assert!(r.body == body);
}

/// `Content-Digest` right: stored, and GET's `Repr-Digest` is the SHA-256; wrong: 400 and
/// nothing stored (a new path stays absent, an existing file keeps its bytes).
pub fn digests(b: &Backend) {
    let s = b.serve(&[]);
    let body = data(100 * KIB, 4);
    let digest = format!("sha-256=:{}:", sha_b64(&body));
    let r = s.req(
        &format!("PUT /files/d/ok.bin HTTP/1.1\r\ncontent-digest: {digest}"),
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(json(&r)["sha256"], hex(&Sha256::digest(&body)));
    let r = s.get("d/ok.bin");
    assert!(r.body == body);
    assert_eq!(r.header("repr-digest"), Some(digest.as_str()));

    let wrong = format!("sha-256=:{}:", sha_b64(b"something else"));
    for path in ["d/wrong.bin", "d/ok.bin"] {
        let r = s.req(
            &format!("PUT /files/{path} HTTP/1.1\r\ncontent-digest: {wrong}"),
            &data(100 * KIB, 5),
        );
        assert_eq!(r.status, 400, "{path}: {}", r.text());
    }
    assert_eq!(s.get("d/wrong.bin").status, 404);
    assert!(
        s.get("d/ok.bin").body == body,
        "a refused PUT changed the file"
    );
    assert_eq!(names(&s.list("d/", "")), ["ok.bin"]);
}

fn form_head(dir: &str, extra: &str) -> String {
    format!("POST /files/{dir}/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=XX{extra}")
}

/// A form of several files (one in a subfolder): 201, each stored byte-exact, listed.
pub fn a_form_is_stored_whole(b: &Backend) {
    let s = b.serve(&[]);
    let big = data(300 * KIB, 6);
    let parts: [(&str, &[u8]); 3] = [
        ("a.txt", b"first"),
        ("b.bin", &big),
        ("sub/c.txt", b"third"),
    ];
    let r = s.req(&form_head("f", ""), &form_body(&parts));
    assert_eq!(r.status, 201, "{}", r.text());
    for (name, content) in parts {
        let r = s.get(&format!("f/{name}"));
        assert_eq!(r.status, 200, "{name}");
        assert!(r.body == content, "{name} differs");
    }
    assert_eq!(names(&s.list("f/", "")), ["a.txt", "b.bin", "sub"]);
}

/// `If-None-Match: *` with one of the form's targets already stored: 412, none of the form's
/// files stored, the existing one untouched (checked as each part begins: both stores).
pub fn a_form_with_an_existing_target_under_if_none_match_stores_none(b: &Backend) {
    let s = b.serve(&[]);
    s.put("inm/b.txt", b"already here");
    let big = data(200 * KIB, 7);
    let parts: [(&str, &[u8]); 3] = [("a.bin", &big), ("b.txt", b"new"), ("c.txt", b"third")];
    let r = s.req(
        &form_head("inm", "\r\nif-none-match: *"),
        &form_body(&parts),
    );
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(s.get("inm/a.bin").status, 404);
    assert_eq!(s.get("inm/c.txt").status, 404);
    assert_eq!(s.get("inm/b.txt").body, b"already here");
    assert_eq!(names(&s.list("inm/", "")), ["b.txt"]);
    // Without the existing target the same form is stored whole.
    let r = s.req(
        &form_head("inm2", "\r\nif-none-match: *"),
        &form_body(&parts),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(names(&s.list("inm2/", "")), ["a.bin", "b.txt", "c.txt"]);
}

/// Polls `cond` every 20 ms; the 60 s bound only turns a hang into a failure.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends a form to `/files/{dir}/` with `extra` fields, files `first` (small) and `b.bin`
/// (6 MiB); once `b.bin`'s part began (its precondition held then) and its bytes are being
/// stored, calls `meanwhile`, then sends the rest: the form's answer.
fn form_with_a_write_meanwhile(
    b: &Backend,
    s: &Serve,
    dir: &str,
    extra: &str,
    first: &str,
    meanwhile: impl FnOnce(),
) -> weir_testkit::h1::Resp {
    let big = data(6 * MIB, 8);
    let body = form_body(&[(first, &b"mine"[..]), ("b.bin", &big)]);
    let mut stream = TcpStream::connect(s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = form_head(dir, &format!("{extra}\r\ncontent-length: {}", body.len()));
    write!(stream, "{head}\r\nhost: t\r\nconnection: close\r\n\r\n").unwrap();
    let held_back = MIB / 2;
    stream.write_all(&body[..body.len() - held_back]).unwrap();
    // The local upload moved on from the first file's temporary to its own; the bucket has
    // `b.bin`'s multipart upload (parts of 5 MiB: see `form_server`).
    let target = format!("{dir}/b.bin");
    match b.kind {
        Kind::Local => wait_for("b.bin's temporary", || s.local_temps() == 2),
        Kind::S3 => wait_for("b.bin's multipart upload", || {
            s.pending_uploads().iter().any(|k| k.ends_with(&target))
        }),
    }
    meanwhile();
    stream.write_all(&body[body.len() - held_back..]).unwrap();
    Client::new(stream).read_response()
}

/// A server whose uploads of more than 5 MiB have a part in the store before their end: over
/// S3, parts of 5 MiB (for [`form_with_a_write_meanwhile`], `b.bin`'s first part is sent while
/// the rest of the form is held back).
fn form_server(b: &Backend) -> Serve {
    match b.kind {
        Kind::Local => b.serve(&[]),
        Kind::S3 => b.serve(&["--s3-part-size", "5MiB"]),
    }
}

/// Nothing of a form left behind once it is answered: no temporary (local), no multipart
/// upload (S3).
fn nothing_pending(b: &Backend, s: &Serve) {
    match b.kind {
        Kind::Local => assert_eq!(s.local_temps(), 0, "every staged file removed"),
        Kind::S3 => assert_eq!(s.pending_uploads(), Vec::<String>::new(), "no upload left"),
    }
}

/// A form under `If-None-Match: *` whose last target another client stores after that part
/// began: the commit is refused, 412, the other client's file is kept, and the form's file it
/// *created* is not there once answered. Both stores promise that: the local store commits all
/// or none (it was never stored), a bucket commits in order and deletes again the files the
/// form created.
pub fn a_form_failing_at_commit_keeps_each_stores_promise(b: &Backend) {
    let s = form_server(b);
    let r = form_with_a_write_meanwhile(b, &s, "race", "\r\nif-none-match: *", "a.txt", || {
        let r = s.req("PUT /files/race/b.bin HTTP/1.1", b"theirs");
        assert_eq!(r.status, 201, "{}", r.text());
    });
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(s.get("race/b.bin").body, b"theirs");
    assert_eq!(s.get("race/a.txt").status, 404);
    assert_eq!(names(&s.list("race/", "")), ["b.bin"]);
    nothing_pending(b, &s);
}

/// Where the promises differ: a form replacing two files under `If-Match` with both ETags,
/// whose second target another client replaces after that part began. The local store commits
/// all or none: 412, the first file keeps its old bytes. A bucket commits in order: the first
/// file was replaced before the second failed, and a replacement cannot be undone, so it stays
/// replaced and the 412 names it (docs/OPERATING.md, "S3-compatible storage").
pub fn a_form_failing_after_a_replacement_keeps_each_stores_promise(b: &Backend) {
    let s = form_server(b);
    let e1 = s
        .put("rep/a.txt", b"old a")
        .header("etag")
        .unwrap()
        .to_owned();
    let e2 = s
        .put("rep/b.bin", b"old b")
        .header("etag")
        .unwrap()
        .to_owned();
    let extra = format!("\r\nif-match: {e1}, {e2}");
    let r = form_with_a_write_meanwhile(b, &s, "rep", &extra, "a.txt", || {
        let r = s.req("PUT /files/rep/b.bin HTTP/1.1", b"theirs");
        assert_eq!(r.status, 200, "{}", r.text());
    });
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(s.get("rep/b.bin").body, b"theirs");
    if b.forms_atomic() {
        assert_eq!(s.get("rep/a.txt").body, b"old a", "all or none");
        assert!(!r.text().contains("rep/a.txt"), "{}", r.text());
    } else {
        assert_eq!(s.get("rep/a.txt").body, b"mine", "a replacement stays");
        assert!(
            r.text().contains("stay stored") && r.text().contains("rep/a.txt"),
            "{}",
            r.text()
        );
    }
    assert_eq!(names(&s.list("rep/", "")), ["a.txt", "b.bin"]);
    nothing_pending(b, &s);
}

fn ietf_patch(location: &str, offset: usize, complete: bool) -> String {
    format!(
        "PATCH {location} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
         upload-offset: {offset}\r\nupload-complete: {}",
        if complete { "?1" } else { "?0" }
    )
}

fn offset_of(s: &Serve, location: &str) -> usize {
    let r = s.req(&format!("HEAD {location} HTTP/1.1"), b"");
    assert_eq!(r.status, 204, "HEAD {location}");
    r.header("upload-offset").unwrap().parse().unwrap()
}

/// The resumable-upload draft: created with `Upload-Complete: ?0` and the first bytes (not
/// served meanwhile), an append, the offset by HEAD, a wrong offset 409, completed: byte-exact
/// with its SHA-256.
pub fn resumable_draft_create_append_complete(b: &Backend) {
    let s = b.serve(&[]);
    let total = 300 * KIB + 7;
    let body = data(total, 9);
    let (cut1, cut2) = (100 * KIB, 200 * KIB + 3);
    let r = s.req(
        &format!("PUT /files/up/r.bin HTTP/1.1\r\nupload-complete: ?0\r\nupload-length: {total}"),
        &body[..cut1],
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let location = r.header("location").unwrap().to_owned();
    assert_eq!(r.header("upload-offset"), Some(cut1.to_string().as_str()));
    assert_eq!(
        s.get("up/r.bin").status,
        404,
        "an incomplete upload is not served"
    );
    assert_eq!(offset_of(&s, &location), cut1);

    let r = s.req(&ietf_patch(&location, cut1 + 1, false), b"x");
    assert_eq!(r.status, 409, "{}", r.text());
    let r = s.req(&ietf_patch(&location, cut1, false), &body[cut1..cut2]);
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(offset_of(&s, &location), cut2);
    let r = s.req(&ietf_patch(&location, cut2, true), &body[cut2..]);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(json(&r)["sha256"], hex(&Sha256::digest(&body)));
    assert_eq!(json(&r)["size"], total);
    let r = s.get("up/r.bin");
    assert!(r.status == 200 && r.body == body, "stored bytes differ");
}

/// An append cut midway: the upload stays, HEAD reports how far it got (at most what was sent),
/// the client resumes from there, and the completed file is byte-exact.
pub fn resumable_draft_interrupted_append_resumes(b: &Backend) {
    let s = b.serve(&[]);
    let total = 3 * MIB;
    let body = data(total, 10);
    let r = s.req(
        &format!("PUT /files/up/i.bin HTTP/1.1\r\nupload-complete: ?0\r\nupload-length: {total}"),
        &body[..MIB],
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let location = r.header("location").unwrap().to_owned();
    let sent = MIB + MIB / 2;
    send_cut(
        &s,
        &ietf_patch(&location, MIB, true),
        total - MIB,
        &body[MIB..sent],
    );
    assert_eq!(s.get("up/i.bin").status, 404, "a cut upload is not served");
    let offset = offset_of(&s, &location);
    assert!((MIB..=sent).contains(&offset), "offset {offset}");
    let r = s.req(&ietf_patch(&location, offset, true), &body[offset..]);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = s.get("up/i.bin");
    assert!(r.status == 200 && r.body == body, "stored bytes differ");
}

/// tus: created with `Upload-Metadata` (file name and folder), PATCH in two pieces with the
/// offset by HEAD between them, the final file byte-exact; a wrong offset 409.
pub fn tus_create_patch_in_two_pieces(b: &Backend) {
    let s = b.serve(&[]);
    let tus = "tus-resumable: 1.0.0";
    let body_type = "content-type: application/offset+octet-stream";
    let total = 200 * KIB + 11;
    let body = data(total, 11);
    let metadata = format!("filename {},dir {}", base64_of(b"t.bin"), base64_of(b"up"));
    let r = s.req(
        &format!(
            "POST /tus/ HTTP/1.1\r\n{tus}\r\nupload-length: {total}\r\nupload-metadata: {metadata}"
        ),
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let location = r.header("location").unwrap().to_owned();
    let head = |s: &Serve| {
        let r = s.req(&format!("HEAD {location} HTTP/1.1\r\n{tus}"), b"");
        assert_eq!(r.status, 200);
        r.header("upload-offset").unwrap().to_owned()
    };
    assert_eq!(head(&s), "0");
    let patch = |offset: usize| {
        format!("PATCH {location} HTTP/1.1\r\n{tus}\r\n{body_type}\r\nupload-offset: {offset}")
    };
    let half = 100 * KIB;
    let r = s.req(&patch(0), &body[..half]);
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(head(&s), half.to_string());
    assert_eq!(
        s.get("up/t.bin").status,
        404,
        "an incomplete upload is not served"
    );
    assert_eq!(s.req(&patch(5), &body[5..]).status, 409);
    let r = s.req(&patch(half), &body[half..]);
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("upload-offset"), Some(total.to_string().as_str()));
    let r = s.get("up/t.bin");
    assert!(r.status == 200 && r.body == body, "stored bytes differ");
}

/// tus: a `PATCH` cut midway keeps the upload; HEAD reports how far it got (at most what was
/// sent), the client resumes from there, and the final file is byte-exact.
pub fn tus_interrupted_patch_resumes(b: &Backend) {
    let s = b.serve(&[]);
    let tus = "tus-resumable: 1.0.0";
    let body_type = "content-type: application/offset+octet-stream";
    let total = 3 * MIB;
    let body = data(total, 13);
    let metadata = format!("filename {}", base64_of(b"ti.bin"));
    let r = s.req(
        &format!(
            "POST /tus/ HTTP/1.1\r\n{tus}\r\nupload-length: {total}\r\nupload-metadata: {metadata}"
        ),
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let location = r.header("location").unwrap().to_owned();
    let patch = |offset: usize| {
        format!("PATCH {location} HTTP/1.1\r\n{tus}\r\n{body_type}\r\nupload-offset: {offset}")
    };
    let sent = MIB + MIB / 3;
    send_cut(&s, &patch(0), total, &body[..sent]);
    assert_eq!(s.get("ti.bin").status, 404, "a cut upload is not served");
    let r = s.req(&format!("HEAD {location} HTTP/1.1\r\n{tus}"), b"");
    assert_eq!(r.status, 200);
    let offset: usize = r.header("upload-offset").unwrap().parse().unwrap();
    assert!(offset <= sent, "offset {offset}");
    let r = s.req(&patch(offset), &body[offset..]);
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("upload-offset"), Some(total.to_string().as_str()));
    let r = s.get("ti.bin");
    assert!(r.status == 200 && r.body == body, "stored bytes differ");
}

/// 250 files and 3 folders: pages of 40 by `next`/`after`, and of 100 by the `Link`, visit each
/// entry once in order; folders are listed as `dir`; each entry has the same fields on both
/// stores (a folder's `modified` is `null` in a bucket, where a folder has no time).
pub fn listings_paginate_each_entry_once(b: &Backend) {
    let s = b.serve(&[]);
    let mut want = Vec::new();
    for i in 0..250 {
        let name = format!("f{i:03}.txt");
        s.put(&format!("l/{name}"), name.as_bytes());
        want.push(name);
    }
    for d in ["d1", "d2", "zz"] {
        s.put(&format!("l/{d}/inner.txt"), b"inner");
        want.push(d.to_owned());
    }
    want.sort();

    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let query = match &after {
            None => "limit=40".to_owned(),
            Some(a) => format!("limit=40&after={a}"),
        };
        let j = s.list("l/", &query);
        let page = names(&j);
        assert!(!page.is_empty() && page.len() <= 40, "{j}");
        seen.extend(page);
        pages += 1;
        match j.get("next") {
            Some(n) => after = Some(n.as_str().unwrap().to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, want, "each entry once, in order");
    assert!(pages >= 7, "{pages} pages");

    // The `Link` header's target walks the same entries.
    let mut seen = Vec::new();
    let mut target = Some("/files/l/?limit=100".to_owned());
    while let Some(t) = target {
        let r = s.req(&format!("GET {t} HTTP/1.1"), b"");
        assert_eq!(r.status, 200, "{}", r.text());
        seen.extend(names(&json(&r)));
        target = r.header("link").map(|l| {
            assert!(l.ends_with("; rel=\"next\""), "{l}");
            l[1..l.find('>').unwrap()].to_owned()
        });
    }
    assert_eq!(seen, want);

    // The shape of a file's entry and a folder's.
    let j = s.list("l/", "limit=300");
    assert_eq!(j["path"], "l/");
    let entries = j["entries"].as_array().unwrap();
    let keys = |e: &serde_json::Value| {
        let mut k: Vec<String> = e.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let dir = entries.iter().find(|e| e["name"] == "d1").unwrap();
    let file = entries.iter().find(|e| e["name"] == "f000.txt").unwrap();
    assert_eq!(dir["type"], "dir");
    assert_eq!(file["type"], "file");
    assert_eq!(file["size"], 8);
    assert!(
        file["modified"].as_u64().is_some_and(|t| t > 1_700_000_000),
        "{file}"
    );
    assert_eq!(keys(dir), keys(file), "{dir} {file}");
    assert_eq!(keys(file), ["modified", "name", "size", "type"], "{file}");
    let top: Vec<String> = j.as_object().unwrap().keys().cloned().collect();
    assert_eq!(top, ["entries", "path"], "{j}");
    if b.folders_have_times() {
        assert!(
            dir["modified"].as_u64().is_some_and(|t| t > 1_700_000_000),
            "{dir}"
        );
    } else {
        assert_eq!(dir["modified"], serde_json::Value::Null, "{dir}");
    }
}

/// `PUT /files/dir/` 201 then 200, listed empty and in its parent; `DELETE` of a non-empty
/// folder 409 (nothing removed), of an empty one 204, then 404.
pub fn folders_create_and_delete(b: &Backend) {
    let s = b.serve(&[]);
    let mkdir = |p: &str| {
        s.req(
            &format!("PUT /files/{p} HTTP/1.1\r\ncontent-length: 0"),
            b"",
        )
    };
    let r = mkdir("dir/");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(json(&r)["created"], true);
    let r = mkdir("dir/");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(json(&r)["created"], false);
    assert_eq!(names(&s.list("dir/", "")), Vec::<String>::new());
    assert_eq!(names(&s.list("", "")), ["dir"]);

    s.put("full/x.txt", b"x");
    let r = s.req("DELETE /files/full/ HTTP/1.1", b"");
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(s.get("full/x.txt").body, b"x");

    let r = s.req("DELETE /files/dir/ HTTP/1.1", b"");
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(s.get("dir/").status, 404);
    assert_eq!(names(&s.list("", "")), ["full"]);
    assert_eq!(s.req("DELETE /files/dir/ HTTP/1.1", b"").status, 404);
}

fn storage_metrics(s: &Serve) -> (u64, Option<u64>) {
    let r = s.req("GET /metrics HTTP/1.1", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .map(|v| v.trim().parse::<f64>().unwrap() as u64)
    };
    (
        value("weir_storage_used_bytes").unwrap(),
        value("weir_storage_quota_bytes"),
    )
}

/// `--max-storage 1MiB` (both stores hold uploads to it): a file counted with its 4 KiB entry
/// cost, an upload past the quota 507 with nothing stored, room again after a DELETE.
pub fn quota_holds(b: &Backend) {
    let s = b.serve(&["--max-storage", "1MiB"]);
    let (before, quota) = storage_metrics(&s);
    assert_eq!(quota, Some(MIB as u64));
    let six = data(600 * KIB, 12);
    assert_eq!(s.put("q/one.bin", &six).status, 201);
    let (used, _) = storage_metrics(&s);
    assert!(
        used >= before + six.len() as u64 + 4096,
        "{before} → {used}"
    );
    let r = s.req("PUT /files/q/two.bin HTTP/1.1", &six);
    assert_eq!(r.status, 507, "{}", r.text());
    assert_eq!(s.get("q/two.bin").status, 404);
    assert_eq!(
        storage_metrics(&s).0,
        used,
        "a refused upload holds nothing"
    );
    assert_eq!(s.req("DELETE /files/q/one.bin HTTP/1.1", b"").status, 204);
    assert_eq!(s.put("q/two.bin", &six).status, 201);
    assert!(s.get("q/two.bin").body == six);
}

/// A file under a path that is a file, a file where a folder is, and a form doing both. The
/// local store is a tree: `path-conflict` (409), nothing stored, the form's replaced file
/// untouched. A bucket has keys, not a tree: a key `a` and keys under `a/` coexist, so each
/// of these is stored, and `a` is listed both as a file and as a folder (docs/OPERATING.md,
/// "S3-compatible storage").
pub fn a_file_where_a_folder_is(b: &Backend) {
    let s = b.serve(&[]);
    s.put("t/r.txt", b"old");
    s.put("t/clash", b"a file");
    s.put("t/dir/inner", b"inner");
    let under_a_file = s.req("PUT /files/t/clash/f.txt HTTP/1.1", b"under a file");
    let over_a_folder = s.req("PUT /files/t/dir HTTP/1.1", b"over a folder");
    let parts: [(&str, &[u8]); 2] = [("r.txt", b"new"), ("clash/g.txt", b"g")];
    let form = s.req(&form_head("t", ""), &form_body(&parts));
    let listed = names(&s.list("t/", ""));
    if b.paths_are_a_tree() {
        for r in [&under_a_file, &over_a_folder, &form] {
            assert_eq!(r.status, 409, "{}", r.text());
            assert_eq!(json(r)["type"], "https://weir.dev/problems/path-conflict");
        }
        assert_eq!(s.get("t/clash/f.txt").status, 404);
        assert_eq!(s.get("t/clash/g.txt").status, 404);
        assert_eq!(s.get("t/r.txt").body, b"old", "all or none: not replaced");
        assert_eq!(listed, ["clash", "dir", "r.txt"]);
    } else {
        for r in [&under_a_file, &over_a_folder, &form] {
            assert_eq!(r.status, 201, "{}", r.text());
        }
        assert_eq!(s.get("t/clash/f.txt").body, b"under a file");
        assert_eq!(s.get("t/clash/g.txt").body, b"g");
        assert_eq!(s.get("t/dir").body, b"over a folder");
        assert_eq!(s.get("t/r.txt").body, b"new");
        assert_eq!(listed, ["clash", "clash", "dir", "dir", "r.txt"]);
    }
    // Either way the file first stored at each name is still served.
    assert_eq!(s.get("t/clash").body, b"a file");
    assert_eq!(s.get("t/dir/inner").body, b"inner");
}
