//! The browser page's routes (`serve/page.rs`): embedded assets with their policy and
//! validators, folder URLs answering the page to browsers and JSON to programs, the page's
//! token cookie accepted for reads only, and uploaded HTML never rendered as the site's page.
//! The page itself, in a browser: `tests/browser/`.

use crate::support::*;

#[test]
fn the_page_and_its_assets_are_served_with_a_strict_policy_and_validators() {
    let s = Server::start(&[]);
    for (path, kind, needle) in [
        ("/", "text/html; charset=utf-8", "<!doctype html>"),
        (
            "/assets/weir.js",
            "text/javascript; charset=utf-8",
            "\"use strict\"",
        ),
        ("/assets/weir.css", "text/css; charset=utf-8", "#transfers"),
    ] {
        let r = s.request(&format!("GET {path} HTTP/1.1"), b"");
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some(kind));
        assert!(r.text().contains(needle), "{path}");
        let csp = r.header("content-security-policy").unwrap();
        assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"));
        assert!(!csp.contains("unsafe-inline"));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        let etag = r.header("etag").unwrap();
        let again = s.request(
            &format!("GET {path} HTTP/1.1\r\nif-none-match: {etag}"),
            b"",
        );
        assert_eq!((again.status, again.body.len()), (304, 0), "{path}");
        let other = s.request(&format!("GET {path} HTTP/1.1\r\nif-none-match: \"x\""), b"");
        assert_eq!(other.status, 200);
        let head = s.request(&format!("HEAD {path} HTTP/1.1"), b"");
        assert_eq!(head.status, 200);
    }
    assert_eq!(s.request("POST / HTTP/1.1", b"").status, 405);
    assert_eq!(s.request("GET /assets/other.js HTTP/1.1", b"").status, 404);
}

#[test]
fn folders_answer_the_page_to_browsers_and_json_to_programs() {
    let s = Server::start(&[]);
    assert_eq!(s.request("PUT /files/d/a.txt HTTP/1.1", b"a").status, 201);
    let browser = "accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    for dir in ["/files/", "/files/d/", "/files/not-yet/"] {
        let page = s.request(&format!("GET {dir} HTTP/1.1\r\n{browser}"), b"");
        assert_eq!(page.status, 200, "{dir}");
        assert!(page.text().starts_with("<!doctype html>"));
        assert_eq!(page.header("vary"), Some("accept"));
    }
    for accept in ["", "\r\naccept: */*", "\r\naccept: application/json"] {
        let r = s.request(&format!("GET /files/d/ HTTP/1.1{accept}"), b"");
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["entries"][0]["name"], "a.txt", "{accept:?}");
    }
    // A file is the file, whatever the browser prefers.
    let file = s.request(&format!("GET /files/d/a.txt HTTP/1.1\r\n{browser}"), b"");
    assert_eq!(file.body, b"a");
}

#[test]
fn the_page_cookie_reads_but_never_writes() {
    let s = Server::start(&["--token", "s3cret t"]);
    assert_eq!(
        s.request(
            "PUT /files/f HTTP/1.1\r\nauthorization: Bearer s3cret t",
            b"f"
        )
        .status,
        201
    );
    // The page is public: it holds no data, and it is where the token is entered.
    assert_eq!(s.request("GET / HTTP/1.1", b"").status, 200);
    assert_eq!(s.request("GET /files/f HTTP/1.1", b"").status, 401);
    let good = "cookie: theme=dark; weir-token=s3cret%20t";
    assert_eq!(
        s.request(&format!("GET /files/f HTTP/1.1\r\n{good}"), b"")
            .body,
        b"f"
    );
    assert_eq!(
        s.request(&format!("GET /files/ HTTP/1.1\r\n{good}"), b"")
            .status,
        200
    );
    for bad in [
        "cookie: weir-token=s3cret",
        "cookie: weir-token=s3cret%20",
        "cookie: weir-tokens3cret%20t",
        "cookie: xweir-token=s3cret%20t",
        "cookie: weir-token=%zz",
    ] {
        assert_eq!(
            s.request(&format!("GET /files/f HTTP/1.1\r\n{bad}"), b"")
                .status,
            401,
            "{bad}"
        );
    }
    // Writes never take it: a cookie travels with requests the user did not make.
    assert_eq!(
        s.request(&format!("DELETE /files/f HTTP/1.1\r\n{good}"), b"")
            .status,
        401
    );
    assert_eq!(
        s.request(&format!("PUT /files/g HTTP/1.1\r\n{good}"), b"g")
            .status,
        401
    );
    let create = format!("PUT /files/g HTTP/1.1\r\n{good}\r\nupload-complete: ?0");
    assert_eq!(s.request(&create, b"").status, 401);
    assert!(s.root.join("f").exists() && !s.root.join("g").exists());
}

#[test]
fn uploaded_html_is_never_the_site_page() {
    let s = Server::start(&[]);
    let html = b"<script>document.cookie</script>";
    assert_eq!(s.request("PUT /files/x.html HTTP/1.1", html).status, 201);
    let r = s.request("GET /files/x.html HTTP/1.1\r\naccept: text/html", b"");
    assert_eq!(r.body, html);
    assert_eq!(r.header("content-security-policy"), Some("sandbox"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
}

#[test]
fn an_empty_put_to_a_folder_url_creates_the_folder() {
    let s = Server::start(&["--token", "t"]);
    let auth = "\r\nauthorization: Bearer t";
    assert_eq!(s.request("PUT /files/new/ HTTP/1.1", b"").status, 401);
    let r = s.request(&format!("PUT /files/new/sub/ HTTP/1.1{auth}"), b"");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["path"], "new/sub/");
    assert!(s.root.join("new/sub").is_dir());
    let again = s.request(&format!("PUT /files/new/sub/ HTTP/1.1{auth}"), b"");
    assert_eq!(
        (again.status, again.json()["created"].as_bool()),
        (200, Some(false))
    );
    let listing = s.request(&format!("GET /files/new/ HTTP/1.1{auth}"), b"");
    assert_eq!(listing.json()["entries"][0]["name"], "sub");
    assert_eq!(listing.json()["entries"][0]["type"], "dir");
    // A body is refused, not dropped; a file in the way is not a folder.
    let body = s.request(&format!("PUT /files/other/ HTTP/1.1{auth}"), b"data");
    assert_eq!(body.status, 400, "{}", body.text());
    assert!(!s.root.join("other").exists());
    assert_eq!(
        s.request(&format!("PUT /files/f HTTP/1.1{auth}"), b"x")
            .status,
        201
    );
    let blocked = s.request(&format!("PUT /files/f/ HTTP/1.1{auth}"), b"");
    assert_eq!(blocked.status, 409, "{}", blocked.text());
    assert!(s.root.join("f").is_file());
    // The root is not a folder one creates.
    assert_eq!(
        s.request(&format!("PUT /files/ HTTP/1.1{auth}"), b"")
            .status,
        405
    );
}

#[test]
fn a_delete_of_a_folder_url_removes_an_empty_folder() {
    let s = Server::start(&[]);
    assert_eq!(s.request("PUT /files/d/sub/ HTTP/1.1", b"").status, 201);
    assert_eq!(s.request("PUT /files/d/f HTTP/1.1", b"x").status, 201);
    // Anything in it: refused, nothing removed.
    let r = s.request("DELETE /files/d/ HTTP/1.1", b"");
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["type"], "https://weir.dev/problems/path-conflict");
    assert!(s.root.join("d/sub").is_dir() && s.root.join("d/f").is_file());
    // A file is not a folder; no folder is 404.
    assert_eq!(s.request("DELETE /files/d/f/ HTTP/1.1", b"").status, 409);
    assert!(s.root.join("d/f").is_file());
    assert_eq!(s.request("DELETE /files/nope/ HTTP/1.1", b"").status, 404);
    // Empty: 204, and gone from its parent's listing.
    let r = s.request("DELETE /files/d/sub/ HTTP/1.1", b"");
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(!s.root.join("d/sub").exists());
    let listing = s.request("GET /files/d/ HTTP/1.1", b"");
    let names: Vec<_> = listing.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["f"]);
    // The root is not a folder one deletes.
    assert_eq!(s.request("DELETE /files/ HTTP/1.1", b"").status, 405);
}
