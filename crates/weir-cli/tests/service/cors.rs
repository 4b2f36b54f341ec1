//! CORS (`--cors-origin`, `serve/cors.rs`): off by default; preflights from an allowed origin
//! answered before the token check; every answer to that origin (errors too) carrying the
//! allowed origin and the exposed resumable-upload fields; other origins get nothing. A
//! browser's view of it: `tests/browser/page.py`.

use crate::support::*;

const APP: &str = "https://app.example";

fn preflight(s: &Server, path: &str, origin: &str) -> Resp {
    s.request(
        &format!(
            "OPTIONS {path} HTTP/1.1\r\norigin: {origin}\r\naccess-control-request-method: PATCH\r\naccess-control-request-headers: authorization, upload-offset"
        ),
        b"",
    )
}

#[test]
fn cors_is_off_by_default() {
    let s = Server::start(&[]);
    for path in ["/files/a", "/uploads/x", "/tus/"] {
        let r = preflight(&s, path, APP);
        assert_eq!(r.header("access-control-allow-origin"), None, "{path}");
        assert_eq!(r.header("access-control-allow-methods"), None, "{path}");
    }
    let r = s.request(&format!("GET /files/ HTTP/1.1\r\norigin: {APP}"), b"");
    assert_eq!(
        (r.status, r.header("access-control-allow-origin")),
        (200, None)
    );
}

#[test]
fn allowed_origins_get_preflights_and_every_answer_marked() {
    let s = Server::start(&[
        "--cors-origin",
        APP,
        "--cors-origin",
        "http://LOCALHOST:3000",
        "--token",
        "t",
    ]);
    // A preflight needs no token, wherever it goes.
    for path in ["/files/a", "/uploads/x", "/tus/", "/"] {
        let r = preflight(&s, path, APP);
        assert_eq!(r.status, 204, "{path}");
        assert_eq!(r.header("access-control-allow-origin"), Some(APP));
        let methods = r.header("access-control-allow-methods").unwrap();
        assert!(methods.contains("PATCH") && methods.contains("DELETE"));
        let headers = r.header("access-control-allow-headers").unwrap();
        for h in [
            "authorization",
            "upload-offset",
            "upload-complete",
            "upload-length",
        ] {
            assert!(headers.contains(h), "{h}");
        }
        assert_eq!(r.header("access-control-max-age"), Some("600"));
        assert_eq!(r.header("vary"), Some("origin"));
    }
    let other = preflight(&s, "/files/a", "https://evil.example");
    assert_eq!(other.header("access-control-allow-origin"), None);
    let local = preflight(&s, "/files/a", "http://localhost:3000");
    assert_eq!(
        local.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );

    // Errors are readable by the page too, so it can ask for the token.
    let refused = s.request(
        &format!("PUT /files/a HTTP/1.1\r\norigin: {APP}\r\nupload-complete: ?0"),
        b"",
    );
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("access-control-allow-origin"), Some(APP));

    // The creation's final answer (after its 104, which has no CORS fields: browsers never
    // show an interim response to a page).
    let out = curl(&[
        "-si",
        "-X",
        "PUT",
        "-H",
        &format!("origin: {APP}"),
        "-H",
        "authorization: Bearer t",
        "-H",
        "upload-complete: ?0",
        "-H",
        "upload-length: 2",
        "--data-binary",
        "",
        &s.url("/files/a"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let final_head = text.rsplit("HTTP/1.1 ").next().unwrap();
    let created = parse_response(format!("HTTP/1.1 {final_head}").as_bytes());
    assert_eq!(created.status, 201, "{text}");
    assert_eq!(created.header("access-control-allow-origin"), Some(APP));
    let exposed = created.header("access-control-expose-headers").unwrap();
    for h in [
        "location",
        "upload-offset",
        "upload-complete",
        "upload-length",
        "upload-limit",
    ] {
        assert!(exposed.split(", ").any(|e| e == h), "{h}");
    }
    let location = created.header("location").unwrap();
    let done = s.request(
        &format!(
            "PATCH {location} HTTP/1.1\r\norigin: {APP}\r\nauthorization: Bearer t\r\ncontent-type: application/partial-upload\r\nupload-offset: 0\r\nupload-complete: ?1"
        ),
        b"ok",
    );
    assert_eq!(done.status, 201);
    assert_eq!(done.header("access-control-allow-origin"), Some(APP));
    assert_eq!(done.json()["sha256"], sha256(b"ok"));

    // Another origin's requests are served as before, without CORS fields.
    let r = s.request(
        "GET /files/a HTTP/1.1\r\norigin: https://evil.example\r\nauthorization: Bearer t",
        b"",
    );
    assert_eq!(
        (r.status, r.header("access-control-allow-origin")),
        (200, None)
    );
}

#[test]
fn a_malformed_origin_stops_the_start() {
    for bad in ["*", "app.example", "https://app.example/"] {
        let out = weir(&["serve", "--listen", "127.0.0.1:0", "--cors-origin", bad]);
        assert!(!out.status.success(), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--cors-origin"),
            "{bad}"
        );
    }
}
