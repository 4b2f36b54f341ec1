//! `--pre-upload-hook`: asked before every upload, before any body byte is read: exit 0 takes
//! the upload, another status refuses it (403, the hook's first line as `detail`), a hook past
//! its timeout gets 503. Checked on raw sockets: no `100 Continue` for a refused upload, and
//! the answer comes (and the connection closes) without the body being sent.

use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// A hook that records its input and environment in `DIR/seen`, refuses paths containing
/// `forbidden` (with a reason) and sleeps on paths containing `slow`.
fn start(extra: &[&str]) -> (Server, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let hook = dir.path().join("hook");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\njson=$(cat)\n\
             echo \"$WEIR_HOOK_EVENT|$WEIR_HOOK_KIND|$WEIR_HOOK_METHOD|$WEIR_HOOK_PATH|$WEIR_HOOK_LENGTH|$json\" >> {}\n\
             case \"$WEIR_HOOK_PATH\" in\n\
               *forbidden*) echo 'no uploads here, sorry'; echo 'second line'; exit 1;;\n\
               *slow*) exec sleep 60;;\n\
             esac\nexit 0\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut args = vec!["--pre-upload-hook", hook.to_str().unwrap()];
    args.extend_from_slice(extra);
    let root = dir.path().join("root");
    let s = Server::start_at(dir, root, &args);
    (s, seen)
}

fn seen(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Sends `head` (with its final empty line) and no body; returns everything the server sends
/// until it closes the connection.
fn answer_without_body(s: &Server, head: &str) -> Vec<u8> {
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got)
        .expect("the server closes the connection");
    got
}

#[test]
fn an_accepted_upload_is_stored_and_the_hook_saw_it() {
    let (s, seen_at) = start(&[]);
    assert_eq!(
        s.request("PUT /files/d/ok.txt HTTP/1.1", b"hello").status,
        201
    );
    let lines = seen(&seen_at);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let fields: Vec<&str> = lines[0].splitn(6, '|').collect();
    assert_eq!(fields[..5], ["pre-upload", "put", "PUT", "d/ok.txt", "5"]);
    let json: serde_json::Value = serde_json::from_str(fields[5]).unwrap();
    assert_eq!(json["event"], "pre-upload");
    assert_eq!(json["path"], "d/ok.txt");
    assert_eq!(json["length"], 5);
    assert_eq!(json["token"], serde_json::Value::Null);
    assert!(
        json["client"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{json}"
    );
    assert_eq!(
        s.request("GET /files/d/ok.txt HTTP/1.1", b"").body,
        b"hello"
    );
    // Not asked for reads and deletes.
    assert_eq!(
        s.request("DELETE /files/d/ok.txt HTTP/1.1", b"").status,
        204
    );
    assert_eq!(seen(&seen_at).len(), 1);
}

#[test]
fn a_refusal_comes_before_any_body_byte() {
    let (s, _) = start(&[]);
    // With Expect: 100-continue: the final answer, never a 100.
    let got = answer_without_body(
        &s,
        "PUT /files/forbidden/a HTTP/1.1\r\nhost: t\r\nexpect: 100-continue\r\n\
         content-length: 1000000\r\nconnection: close\r\n\r\n",
    );
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 403 "), "{text}");
    assert!(!text.contains("100 Continue"), "{text}");
    let r = parse_response(&got);
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    let problem = r.json();
    assert_eq!(problem["type"], "https://weir.dev/problems/upload-refused");
    assert_eq!(problem["detail"], "no uploads here, sorry");
    // Without Expect, a large declared body that is never sent: answered, then closed (the
    // server does not wait for, nor read, 1 GiB).
    let got = answer_without_body(
        &s,
        "PUT /files/forbidden/b HTTP/1.1\r\nhost: t\r\ncontent-length: 1073741824\r\n\r\n",
    );
    assert_eq!(parse_response(&got).status, 403);
    assert!(!s.root.join("forbidden").exists());
    assert!(s.temps().is_empty());
}

#[test]
fn every_kind_of_upload_is_asked() {
    let (s, seen_at) = start(&[]);
    // A form, a resumable creation (PUT and POST), a tus creation.
    let form =
        "--b\r\ncontent-disposition: form-data; name=\"f\"; filename=\"x\"\r\n\r\nx\r\n--b--\r\n";
    let r = s.request(
        "POST /files/forbidden/ HTTP/1.1\r\ncontent-type: multipart/form-data; boundary=b",
        form.as_bytes(),
    );
    assert_eq!(r.status, 403);
    let r = s.request(
        "PUT /files/forbidden/r HTTP/1.1\r\nupload-complete: ?1",
        b"abc",
    );
    assert_eq!(r.status, 403);
    let r = s.request(
        "POST /files/forbidden/ HTTP/1.1\r\nupload-complete: ?1\r\n\
         content-disposition: inline; filename=\"p\"",
        b"abc",
    );
    assert_eq!(r.status, 403);
    // base64("forbidden.txt")
    let r = s.request(
        "POST /tus/ HTTP/1.1\r\ntus-resumable: 1.0.0\r\nupload-length: 3\r\n\
         upload-metadata: filename Zm9yYmlkZGVuLnR4dA==",
        b"",
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.header("tus-resumable"), Some("1.0.0"));
    let kinds: Vec<String> = seen(&seen_at)
        .iter()
        .map(|l| l.split('|').nth(1).unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["form", "resumable", "resumable", "tus"]);
    assert!(!s.root.join("forbidden").exists());
    assert!(!s.root.join("forbidden.txt").exists());
}

#[test]
fn a_hook_past_its_timeout_gets_503() {
    let (s, _) = start(&["--pre-upload-timeout", "1s"]);
    let r = s.request("PUT /files/slow/a HTTP/1.1", b"abc");
    assert_eq!(r.status, 503);
    assert_eq!(
        r.json()["type"],
        "https://weir.dev/problems/hook-unavailable"
    );
    assert!(r.header("retry-after").is_some());
    assert!(!s.root.join("slow").exists());
}

#[test]
fn a_hook_killed_at_its_timeout_takes_its_children_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (hook_pid, child_pid) = (dir.path().join("hook.pid"), dir.path().join("child.pid"));
    let hook = dir.path().join("hook");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho $$ > {}\nsleep 300 &\necho $! > {}\nsleep 300\n",
            hook_pid.display(),
            child_pid.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args = [
        "--pre-upload-hook",
        hook.to_str().unwrap(),
        "--pre-upload-timeout",
        "1s",
    ];
    let root = dir.path().join("root");
    let s = Server::start_at(tempfile::tempdir().unwrap(), root, &args);
    assert_eq!(s.request("PUT /files/a HTTP/1.1", b"abc").status, 503);
    let (hook, child) = (pid_in(&hook_pid), pid_in(&child_pid));
    // Answered: the hook was killed; so is all of its group (the child that held its stdout).
    wait_for("the hook's child to be killed", || !running(child));
    assert!(!running(hook));
}

/// The hook sees who asks: the token's name (never the token), scopes and prefix.
#[test]
fn the_hook_sees_the_tokens_name() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "lab-s3cret read,create lab name=lab-pc\n").unwrap();
    let (s, seen_at) = start(&["--token-file", tokens.to_str().unwrap()]);
    let r = s.request(
        "PUT /files/lab/a.txt HTTP/1.1\r\nauthorization: Bearer lab-s3cret\r\nif-none-match: *",
        b"hello",
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let lines = seen(&seen_at);
    let json: serde_json::Value =
        serde_json::from_str(lines[0].splitn(6, '|').nth(5).unwrap()).unwrap();
    assert_eq!(
        json["token"],
        serde_json::json!({"name": "lab-pc", "scopes": ["read", "create"], "prefix": "lab"})
    );
    assert!(!lines[0].contains("s3cret"));
}
