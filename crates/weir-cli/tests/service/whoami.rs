//! `GET /whoami`: what the request's credential may do (the page hides what a token could not
//! use), by name and never by secret; an unknown token is 401; without a credential, what
//! anyone may do on this server.

use crate::support::*;

/// The JSON of `GET /whoami` with `token` (none: anonymous), or the status when not 200.
fn whoami(s: &Server, token: Option<&str>) -> Result<serde_json::Value, u16> {
    let auth = token.map_or(String::new(), |t| format!("\r\nauthorization: Bearer {t}"));
    let resp = s.request(&format!("GET /whoami HTTP/1.1{auth}"), b"");
    if resp.status != 200 {
        return Err(resp.status);
    }
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    assert_eq!(resp.header("content-type"), Some("application/json"));
    Ok(serde_json::from_slice(&resp.body).unwrap())
}

fn start_with(tokens: &str, args: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(&file, tokens).unwrap();
    let root = dir.path().join("root");
    let mut all = vec!["--token-file", file.to_str().unwrap()];
    all.extend_from_slice(args);
    Server::start_at(dir, root, &all)
}

#[test]
fn each_token_learns_its_name_scopes_and_prefix() {
    let s = start_with(
        "reader-secret read name=reader\nmaker-secret read,create photos name=maker\n\
         admin-secret read,write,delete\n",
        &[],
    );
    let json = |v: &str| serde_json::from_str::<serde_json::Value>(v).unwrap();
    assert_eq!(
        whoami(&s, Some("reader-secret")),
        Ok(json(
            r#"{"token":"reader","scopes":["read"],"prefix":null}"#
        ))
    );
    assert_eq!(
        whoami(&s, Some("maker-secret")),
        Ok(json(
            r#"{"token":"maker","scopes":["read","create"],"prefix":"photos"}"#
        ))
    );
    assert_eq!(
        whoami(&s, Some("admin-secret")),
        Ok(json(
            r#"{"token":"line-3","scopes":["read","write","delete"],"prefix":null}"#
        ))
    );
    // Reads are private once tokens exist: anonymous may do nothing.
    assert_eq!(
        whoami(&s, None),
        Ok(json(r#"{"token":null,"scopes":[],"prefix":null}"#))
    );
    assert_eq!(whoami(&s, Some("no-such-secret")), Err(401));
    let post = s.request("POST /whoami HTTP/1.1\r\ncontent-length: 0", b"");
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
}

#[test]
fn anonymous_learns_what_anyone_may_do() {
    let open = Server::start(&[]);
    assert_eq!(
        whoami(&open, None).unwrap()["scopes"],
        serde_json::json!(["read", "write", "delete"])
    );
    let public = start_with("writer-secret read,write\n", &["--public-read"]);
    assert_eq!(
        whoami(&public, None).unwrap()["scopes"],
        serde_json::json!(["read"])
    );
    assert_eq!(whoami(&public, Some("nope")), Err(401));
}
